"""Runs a lab host on an x86_64 kernel in QEMU, where UML cannot go.

UML 6.1 is one CPU without preemption: two threads of a guest interleave
only where one sleeps, and a spin lock never spins. The multiprocessor
check (make smp-check, issue 33) builds the same series for x86_64 with
CONFIG_PREEMPT and boots it with QEMU on several virtual CPUs. Such a
host is a lab host like any other for the rest of the driver: the same
initramfs and /init, the same run.sh in its directory of the run, the same
logs back, parsed and reported the same way. What differs is here:

  - the kernel is a bzImage (kernel_image.kind()), started by
    qemu-system-x86_64 with -smp N (lab.conf `smp=N`) and the initramfs;
  - the host's directory of the run reaches the guest over virtio 9p
    (mount tag `lab`) where a UML host has hostfs. Its security model is
    mapped-xattr: the owners and modes the guest gives its files are kept
    in extended attributes, so a program running as nobody in the guest
    cannot rewrite the logs root's lab_runner wrote, as under hostfs;
  - the console is the first serial port, on QEMU's standard output;
  - the guest ends with a reboot and QEMU (-no-reboot) exits then; a
    panic reboots at once (panic=-1), so a crashed host ends as a
    powered-off one does and its console says why.

The hosts have no network devices (lab.conf links, uplinks, disks and
tools are refused with the reason): their programs talk over loopback.
QEMU is confined like a UML process (confine.py): it may read the kernel,
the root file system and the system's files, and write only below its own
directories.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .topology import Host, Topology

QEMU = 'qemu-system-x86_64'
# The mount tag of a host's directory of the run (rootfs/init mounts it).
MOUNT_TAG = 'lab'


def check(topo: Topology) -> None:
    """Refuses, before anything starts, what an x86_64 host cannot have."""
    if shutil.which(QEMU) is None:
        raise FileNotFoundError(f'{QEMU} is not installed: an x86_64 kernel runs in QEMU '
                                '(Debian package qemu-system-x86; make deps)')
    for host in topo.hosts.values():
        have = [what for what, on in (('links', host.links), ('an uplink', host.uplink),
                                      ('a disk', host.disk), ('tools', host.tools)) if on]
        if have:
            raise ValueError(f'host {host.name} of lab {topo.name} has {", ".join(have)}: a host of an '
                             'x86_64 kernel (QEMU) has no network devices, disks or machine tools; '
                             'its programs talk over loopback')


def argv(kernel: Path, rootfs: Path, host: Host, own_dir: Path | None, accel: str = 'tcg') -> list[str]:
    """The command that boots @host's x86_64 kernel; @own_dir is the host's
    directory of the run (None: a boot without a lab, for KUnit)."""
    # no_hash_pointers: a report's addresses as they are, to compare with
    # the ones KASAN and lockdep print beside them.
    # pci=noacpi: ACPI's tables give the CPUs, the MP table routes PCI
    # interrupts: under emulation the _PRT method of QEMU's ACPI tables ran
    # into the AML interpreter's 30 s loop timeout, and the virtio devices
    # got no interrupt (uml-config/x86-smp.config).
    # oops=panic: a kernel that oopsed goes no further (a UML host goes on,
    # its console check fails all the same); panic=-1 ends the host at once.
    append = ['console=ttyS0', 'pci=noacpi', 'oops=panic', 'panic=-1', 'no_hash_pointers', 'LAB_END=reboot',
              f'LAB_HOST={host.name}']
    share = []
    if own_dir is not None:
        append += ['LAB_DIR=9p', f'LAB_9P={MOUNT_TAG}']
        share = ['-virtfs', f'local,path={own_dir},mount_tag={MOUNT_TAG},security_model=mapped-xattr']
    return [QEMU, '-accel', 'tcg,thread=multi' if accel == 'tcg' else accel, '-cpu', 'max',
            '-smp', str(host.smp), '-m', host.mem,
            '-nodefaults', '-no-reboot', '-display', 'none', '-serial', 'stdio',
            '-device', 'virtio-rng-pci',
            '-kernel', str(kernel), '-initrd', str(rootfs),
            '-append', ' '.join(append)] + share
