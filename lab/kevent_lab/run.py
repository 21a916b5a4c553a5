"""Runs a lab: boots its hosts in parallel, waits for them, collects results."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import (capture, confine, guest_text, host_fpu, instances, kcsan, kernel_image, ktap, port_forward,
               qemu_host, reach, span, trace, uml_paths, uplink)
from .console_follow import ConsoleFollower
from .processes import Child, Supervisor, start_switch, wait_for_paths
from .results import HostResult, TestRecord
from .topology import SLIRP_GUEST, VAR_RE, Host, Topology, size_bytes

USERSPACE_MARK = 'lab: userspace reached on '
POWEROFF_MARK = 'lab: powering off'

# Lines in a console that mean the kernel is in trouble. No unbounded
# wildcard between two words: a long line must not make the search quadratic.
KERNEL_TROUBLE = re.compile(
    r'Kernel panic|Oops[:\s]|\bBUG[: ]|WARNING:|KASAN:|UBSAN:|kmemleak: [0-9]{1,9} new suspected|'
    r'Kernel memory leak detector disabled|'
    r'general protection fault|possible (circular|recursive) locking|'
    r'INFO: task [^ ]{1,64} blocked|Unable to handle kernel')


def pinned_cpu(cpu: int, available: list[int]) -> int:
    """The CPU a host asking for @cpu gets among @available ones.

    A lab names CPUs 0, 1, ...; on a machine (or in a cpuset) that has fewer,
    or other numbers, the n-th one asked for is the n-th one there, wrapping
    around: hosts still get a CPU each as far as there are enough.
    """
    cpus = sorted(available)
    return cpus[cpu % len(cpus)]


# The guest user a `user` run runs as (nobody): no file of the run
# directory is its, so it cannot rewrite results; it cannot mount.
GUEST_USER = 65534
# The user a student's answer (an `answer` run) runs as: not the checkers'
# user, so that an answer can neither signal nor trace the program that
# judges it. exercises/include/ex_answer.h drops to the same uid (it reads
# LAB_ANSWER_UID) where a checker starts the answer itself.
ANSWER_USER = 1000


def guest_uids(machine_uid: int | None = None) -> tuple[int, int]:
    """(guest user, answer user) for a lab run by @machine_uid (this
    process's). hostfs shows each file of /lab/HOST with the owner it has
    on this machine, the user running the lab: a guest user with that uid
    would own every log of its host and could rewrite its checker's
    results. So neither guest user is ever the machine's uid."""
    uid = os.geteuid() if machine_uid is None else machine_uid
    return (GUEST_USER if uid != GUEST_USER else GUEST_USER - 1,
            ANSWER_USER if uid != ANSWER_USER else ANSWER_USER + 1)


def guest_mem(kernel: Path, host: Host) -> str:
    """UML's mem= for @host: lab.conf's, plus what a debug kernel keeps
    for its checkers (kernel_image.py)."""
    extra = kernel_image.mem_extra(kernel)
    return f'{(size_bytes(host.mem) + extra) >> 20}M' if extra else host.mem


def uml_argv(kernel: Path, rootfs: Path, host: Host, umid: str, uml_dir: Path,
             sockets: dict[str, Path], run_dir: Path | None,
             uplink_file: Path | None = None) -> list[str]:
    # A host with cpu=N runs under taskset: UML's processes (the kernel and
    # the ptrace'd userspace it switches to on every system call) inherit the
    # affinity, and a system call on one CPU costs about a quarter as much.
    pin = (['taskset', '-c', str(pinned_cpu(host.cpu, list(os.sched_getaffinity(0))))]
           if host.cpu is not None else [])
    # The kernel's command line is split at spaces: the initramfs and the
    # run directory go through links where their paths have a separator.
    initrd = uml_paths.reachable(rootfs, uml_dir.parent / 'rootfs.cpio')
    argv = pin + [str(kernel), f'mem={guest_mem(kernel, host)}', f'initrd={initrd}', f'umid={umid}',
                  f'uml_dir={uml_dir}', 'con0=null,fd:1', 'con=null', 'ssl=null']
    if host.disk and run_dir is not None:
        disk = uml_paths.reachable(run_dir / host.name / 'disk.img', uml_dir.parent / f'{host.name}.disk.img')
        argv.append(f'ubd0={disk}')
    for link in host.links:
        argv.append(f'{link.iface}=vde,{sockets[link.segment]}')
    if host.uplink:
        argv.append(uplink.uml_arg(host.uplink, host.uplink_mode, uplink_file))
    argv.append(f'LAB_HOST={host.name}')
    if run_dir is not None:
        # hostfs reaches only below this host's own directory: a guest's
        # `mount -t hostfs -o /any/dir` lands in it too (UML prefixes every
        # hostfs mount with it). That alone does not stop root in the guest
        # (`..` still leads out): runs are unprivileged unless lab.conf says
        # `root`, and the UML process itself is confined (confine.py).
        own = uml_paths.reachable(run_dir / host.name, uml_dir.parent / f'{host.name}.hostfs')
        if host.tools:
            # Its init mounts this machine's root read-only at /host: no
            # prefix, and confine.py (required) is what keeps it read-only
            # and out of the rest of the machine (machine_tools.py).
            argv += ['LAB_TOOLS=1', f'LAB_OWN={own}']
        else:
            argv.append(f'hostfs={own}')
        argv.append(f'LAB_DIR={uml_paths.reachable(run_dir, uml_dir.parent / "run_dir")}')
    return argv


def make_disk(path: Path, size: str) -> None:
    """An empty ext4 file system in a sparse file, made without root."""
    mkfs = shutil.which('mkfs.ext4') or shutil.which('mkfs.ext4', path='/usr/sbin:/sbin')
    if not mkfs:
        raise FileNotFoundError('mkfs.ext4 is not installed (Debian package e2fsprogs; make deps)')
    with open(path, 'wb') as f:
        f.truncate(int(size[:-1]) << (20 if size[-1] == 'M' else 30))
    proc = subprocess.run([mkfs, '-q', '-F', '-E', 'nodiscard', str(path)],
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f'mkfs.ext4 {path}: {proc.stderr.strip()}')


def uml_env(host: Host, tmp: Path) -> dict:
    """The environment of a host's UML process, with directories of its own in @tmp.

    TMPDIR is where UML keeps the guest's memory (an unlinked file): a
    directory of this host's, the one place outside its run directory that
    confine.py lets it create files in. vde_plug, which UML starts with its
    environment, gets a fresh HOME too: nothing of the user's configuration
    reaches an uplink.
    """
    env = dict(os.environ, TMPDIR=str(memory_dir(tmp, host)))
    if host.uplink:
        env['HOME'] = str(home_dir(tmp, host))
    for d in (env['TMPDIR'], env.get('HOME')):
        if d:
            os.makedirs(d, mode=0o700, exist_ok=True)
    return env


def memory_dir(tmp: Path, host: Host) -> Path:
    return tmp / f'mem-{host.name}'


def home_dir(tmp: Path, host: Host) -> Path:
    return tmp / f'home-{host.name}'


def confined(argv: list[str], host: Host, tmp: Path, sockets: dict[str, Path], run_dir: Path | None,
             files: list[Path], relay: list[tuple[int, int]] = ()) -> list[str]:
    """@argv run under confine.py: the host's UML process may write only its
    own directories. A host without an uplink may use no TCP port of this
    machine; one with an uplink of the default mode lives in a network
    namespace of its own (libslirp needs TCP on loopback for its echo
    forward, and there nothing else is); `outside` is what it says."""
    own = [tmp / 'uml', memory_dir(tmp, host)]
    if run_dir is not None:
        own.append(run_dir / host.name)
    if host.uplink:
        own.append(home_dir(tmp, host))
    rules = confine.host_rules(own, [sockets[link.segment] for link in host.links], files,
                               None if host.uplink else [],
                               own_network=bool(host.uplink) and host.uplink_mode == 'lab')
    rules.relay = list(relay)
    return confine.command(rules, argv)


def start_uml(sup: Supervisor, kernel: Path, rootfs: Path, host: Host, umid: str, tmp: Path,
              sockets: dict[str, Path], run_dir: Path | None, out, extra: tuple = (),
              forwards: list[str] | None = None) -> Child:
    """Starts @host's UML process, confined, with its own environment and
    its console on @out; UML's own directory is @tmp/uml, which must exist.
    Each of its port forwards (with the port it got) and reaches is added
    to @forwards, as a line to show."""
    env = uml_env(host, tmp)
    home = home_dir(tmp, host)
    if host.reaches:
        # Its relay to this machine's loopback listens before the guest runs.
        relay = sup.start(f'{host.name} reach', reach.relay_argv(host, home), stdout=out)
        wait_for_paths(relay, reach.sockets(host, home), f'the reach relay of host {host.name}')
    opened = port_forward.open_all(host)
    try:
        locator_file = None
        if opened or host.reaches:
            # Several forwards or commands have commas: the locator goes in a file.
            locator_file = port_forward.write_locator(
                home / 'uplink.vde',
                uplink.locator(host.uplink_mode, (port_forward.tcpfwd(opened),) if opened else (),
                               reach.commands(host, home)))
        argv = uml_argv(kernel, rootfs, host, umid, tmp / 'uml', sockets, run_dir,
                        locator_file) + list(extra)
        relay = port_forward.relay(opened)
        child = sup.start(host.name, confined(argv, host, tmp, sockets, run_dir, [kernel, rootfs], relay),
                          stdout=out, env=env, pass_fds=tuple(fd for fd, _ in relay))
    finally:
        port_forward.close_all(opened)
    if forwards is not None:
        forwards += [f'forward {o.describe(host.name)}' for o in opened]
        forwards += [f'reach {line}' for line in reach.describe(host)]
    return child


def start_qemu(sup: Supervisor, kernel: Path, rootfs: Path, host: Host, tmp: Path,
               run_dir: Path | None, out) -> Child:
    """Starts @host on an x86_64 kernel in QEMU (qemu_host.py), confined as
    a UML host is: it reads the kernel, the root and the system's files, and
    writes only its directory of the run (the 9p share) and its own
    temporary directory."""
    own = run_dir / host.name if run_dir is not None else None
    env = uml_env(host, tmp)
    rules = confine.host_rules([memory_dir(tmp, host)] + ([own] if own else []), [], [kernel, rootfs])
    return sup.start(host.name, confine.command(rules, qemu_host.argv(kernel, rootfs, host, own)),
                     stdout=out, env=env)


def start_host_process(sup: Supervisor, kernel: Path, rootfs: Path, host: Host, umid: str, tmp: Path,
                       sockets: dict[str, Path], run_dir: Path | None, out,
                       forwards: list[str] | None = None) -> Child:
    """Starts @host's kernel: QEMU for an x86_64 image, UML otherwise."""
    if kernel_image.is_x86_image(kernel):
        return start_qemu(sup, kernel, rootfs, host, tmp, run_dir, out)
    return start_uml(sup, kernel, rootfs, host, umid, tmp, sockets, run_dir, out, forwards=forwards)


def guest_variables(host: Host) -> dict[str, str]:
    """The driver's variables ($NAME in run lines) that a host gets."""
    if not host.uplink:
        return {}
    return {'LAB_ECHO_ADDR': uplink.ECHO_ADDR, 'LAB_ECHO_PORT': str(uplink.ECHO_PORT)}


def setup_lines(host: Host, variables: dict[str, str] | None = None) -> list[str]:
    """Shell lines that bring a host's network and disk up."""
    guest, answer = guest_uids()
    lines = ['set -u', f'export LAB_GUEST_UID={guest} LAB_ANSWER_UID={answer}']
    for name, value in (variables or {}).items():
        lines.append(f'export {name}={shlex.quote(value)}')
    for link in host.links:
        if link.mtu:
            lines.append(f'ip link set {link.iface} mtu {link.mtu}')
        lines.append(f'ip link set {link.iface} up')
        lines.append(f'ip addr add {link.address.with_prefixlen} dev {link.iface}')
    if host.uplink:
        # slirp's network: 10.0.2.2 is slirp, 10.0.2.7 the echo service.
        # No default route unless lab.conf has one (route HOST 0.0.0.0/0
        # 10.0.2.2), which leads somewhere only for an `outside` uplink.
        lines.append(f'ip link set {host.uplink} up')
        lines.append(f'ip addr add {SLIRP_GUEST.with_prefixlen} dev {host.uplink}')
    for net, gw in host.routes:
        lines.append(f'ip route add {net} via {gw}')
    if host.forward:
        lines.append('echo 1 > /proc/sys/net/ipv4/ip_forward')
    if host.disk:
        # The guest user runs the tests (runs are unprivileged unless `root`).
        lines.append('mkdir -p /mnt/disk && mount -t ext4 /dev/ubda /mnt/disk && '
                     f'chown {guest}:{guest} /mnt/disk')
    return lines


def _word(arg: str) -> str:
    """A shell word for a program argument: $NAME (a driver's variable) expands."""
    return f'"{arg}"' if VAR_RE.match(arg) else shlex.quote(arg)


def run_script(host: Host, startup: str = '', variables: dict[str, str] | None = None) -> str:
    """The shell script the host's /init runs from /lab/HOST/run.sh."""
    lines = ['# Written by the lab driver for this run; runs inside the guest.']
    lines += setup_lines(host, variables)
    guest, answer = guest_uids()
    if startup:
        lines.append(startup.rstrip('\n'))
    lines.append(f'cd /lab/{host.name}')

    def runner(run) -> str:
        prog = ['/opt/kevent/' + run.argv[0]] + run.argv[1:]
        env = ''.join(f'{shlex.quote(pair)} ' for pair in run.env)
        user = f'-u {answer if run.answer else guest} ' if run.user else ''
        return ((f'env {env}' if env else '') + f'lab_runner -o /lab/{host.name}/{run.key}.log -t {run.timeout} '
                f'-p {shlex.quote(f"[{host.name}:{run.key}] ")} {user}-- '
                + ' '.join(_word(a) for a in prog))

    # The host's one trace buffer records while the traced run runs: from
    # just before it starts until it ended (a background run: until all did).
    def trace_start(run) -> list[str]:
        return [f'lab_trace start {" ".join(run.trace)}'] if run.trace else []

    def trace_stop(run) -> list[str]:
        return [f'lab_trace stop /lab/{host.name}/{run.key}.trace'] if run.trace else []

    # Servers first, in the background; their clients wait for them to accept.
    for run in host.runs:
        if run.background:
            lines += trace_start(run)
            lines.append(runner(run) + ' &')
    for run in host.runs:
        if not run.background:
            lines += trace_start(run)
            lines.append(runner(run))
            lines += trace_stop(run)
    if not host.runs:
        # A router or other service host: up until the lab driver ends it.
        lines.append('echo "lab: serving until the other hosts are done"')
        lines.append('while :; do sleep 3600; done')
    lines.append('wait')
    for run in host.runs:
        if run.background:
            lines += trace_stop(run)
    return '\n'.join(lines) + '\n'


@dataclass
class HostRun:
    host: Host
    console: Path
    child: Child | None = None
    started: float = 0.0
    userspace_s: float | None = None
    ended_s: float | None = None
    timed_out: bool = False
    seen: int = 0
    notes: list[str] = field(default_factory=list)


def _stop_on_signal(signum, frame):
    raise KeyboardInterrupt(f'signal {signum}')


# lab_runner's exit record on the console: its prefix without the space,
# which no line of a program's output (the prefix, then the line) can be.
CONSOLE_EXIT = re.compile(r'\[([a-z0-9_-]{1,16}):([a-z0-9_.-]{1,40})\]#lab-exit ([a-z]{1,8}=[0-9]{1,9})$',
                          re.ASCII)


def boot_and_wait(hosts: list[HostRun], start_host, sup: Supervisor, say) -> None:
    """Starts every host, then follows their consoles until all have ended."""
    for hr in hosts:
        hr.started = time.monotonic()
        hr.child = start_host(hr)
    say(f'booting {len(hosts)} host(s): ' + ', '.join(h.host.name for h in hosts))
    follow = {id(hr): ConsoleFollower(hr.console) for hr in hosts}
    while True:
        alive = 0
        for hr in hosts:
            if hr.ended_s is not None:
                continue
            now = time.monotonic() - hr.started
            for line in follow[id(hr)].new_lines():
                if hr.userspace_s is None and USERSPACE_MARK in line:
                    hr.userspace_s = now
                    say(f'{hr.host.name}: userspace after {now:.1f} s, '
                        f'running {len(hr.host.runs)} testcase(s)')
                m = CONSOLE_EXIT.match(line)
                if m:
                    say(f'{m.group(1)}: {m.group(2)} done ({ktap.describe_exit(m.group(3))})')
            if not hr.child.running():
                hr.ended_s = now
                say(f'{hr.host.name}: ended after {now:.1f} s')
                continue
            if now > hr.host.timeout:
                hr.timed_out = True
                hr.child.kill()
                hr.ended_s = now
                say(f'{hr.host.name}: killed after its timeout of {hr.host.timeout} s')
                continue
            alive += 1
        if not alive:
            return
        # Hosts without testcases (routers) serve the others: end them
        # once every host with testcases has ended.
        if all(hr.ended_s is not None for hr in hosts if hr.host.runs):
            for hr in hosts:
                if hr.ended_s is None:
                    hr.child.kill()
                    hr.ended_s = time.monotonic() - hr.started
                    say(f'{hr.host.name}: stopped, the hosts it served are done')
            return
        time.sleep(0.1)


def console_trouble(text: str) -> str:
    """An excerpt around the first sign of kernel trouble, or ''."""
    lines = guest_text.lines(text)
    for i, line in enumerate(lines):
        if KERNEL_TROUBLE.search(line):
            return guest_text.printable('\n'.join(lines[max(0, i - 2):i + 25]))
    return ''


def prefix_of(run) -> str:
    return f'{run.part}.' if run.part else ''


def collect_trace(src: Path, dst: Path, host: str, run, timed_out: bool) -> TestRecord:
    """Copies a run's trace beside the results; a trace asked for and not
    there, or that recorded none of the tracepoints asked for, fails."""
    name = prefix_of(run) + '(trace)'
    if not src.exists():
        why = 'the host timed out first' if timed_out else 'see the console (lab_trace)'
        return TestRecord(host, run.suite, name, 'fail', None, f'no trace was written: {why}')
    shutil.copy(src, dst)
    events = trace.parse(src.read_text(errors='replace'))
    # Event names do not show their system, but every kevent one is kevent_*.
    wanted = [e for e in events if e.name.startswith('kevent_')] if 'kevent' in run.trace else events
    if not wanted:
        return TestRecord(host, run.suite, name, 'fail', None,
                          f'the trace {dst} recorded no event of {",".join(run.trace)}')
    return TestRecord(host, run.suite, name, 'pass', None, f'{len(events)} events in {dst}')


def collect_host(hr: HostRun, run_dir: Path, decode_hint: str = '') -> HostResult:
    host = hr.host
    text = hr.console.read_text(errors='replace') if hr.console.exists() else ''
    result = HostResult(host.name, str(hr.console), hr.userspace_s, hr.ended_s)
    tests = result.tests

    # KUnit suites print KTAP on the console at boot.
    for suite in ktap.parse(text):
        if suite.children:
            for path, leaf in suite.leaves():
                tests.append(TestRecord(host.name, suite.name, path, leaf.status,
                                        leaf.duration_s, leaf.message))
        else:
            tests.append(TestRecord(host.name, 'kunit', suite.name, suite.status,
                                    suite.duration_s, suite.message))

    # KCSAN's reports of Linux's own data races are listed, not failed (kcsan.py).
    checked, races_elsewhere = kcsan.split(text)
    if races_elsewhere:
        tests.append(TestRecord(host.name, 'kernel', 'kcsan_reports_outside_kevent', 'pass', None,
                                f'{len(races_elsewhere)} KCSAN report(s) naming no kevent code, '
                                'Linux\'s own:\n' + '\n'.join(guest_text.printable(h) for h in races_elsewhere)))
    trouble = console_trouble(checked)
    if trouble and decode_hint:
        trouble += '\n' + decode_hint.format(console=hr.console)
    tests.append(TestRecord(host.name, 'kernel', 'console_clean', 'fail' if trouble else 'pass',
                            None, 'the console shows kernel trouble:\n' + trouble if trouble else ''))
    if hr.userspace_s is None:
        tests.append(TestRecord(host.name, 'kernel', 'reached_userspace', 'fail', None,
                                'the host never reached /init: see ' + str(hr.console)))
    if hr.timed_out:
        # A hang is a failure in its own right, whatever the runs printed.
        result.problems.append(f'killed after its timeout of {host.timeout} s')
        tests.append(TestRecord(host.name, 'kernel', 'finished_in_time', 'fail', None,
                                f'the host still ran after its timeout of {host.timeout} s and was '
                                'killed: a testcase hung, or the host did'))

    for run in host.runs:
        log = run_dir / host.name / f'{run.key}.log'
        if not log.exists():
            why = ('the host timed out before it ran' if hr.timed_out else
                   'it never started (see the console)')
            tests.append(TestRecord(host.name, run.suite, prefix_of(run) + '(not run)', 'fail', None,
                                    f'{" ".join(run.argv)}: {why}'))
            continue
        rl = ktap.parse_runner_log(log.read_text(errors='replace'))
        shutil.copy(log, Path(result.console).with_name(f'{host.name}.{run.key}.log'))
        prefix = prefix_of(run)
        if run.trace:
            tests.append(collect_trace(run_dir / host.name / f'{run.key}.trace',
                                       Path(result.console).with_name(f'{host.name}.{run.key}.trace'),
                                       host.name, run, hr.timed_out))
        leaves = [(prefix + p, r) for top in rl.results for p, r in
                  (top.leaves(top.name) if top.children else [(top.name, top)])]
        for path, leaf in leaves:
            tests.append(TestRecord(host.name, run.suite, path, leaf.status,
                                    leaf.duration_s, leaf.message))
        if not leaves:
            tests.append(TestRecord(host.name, run.suite, prefix + '(no results)', 'fail', rl.duration_s,
                                    f'{" ".join(run.argv)} printed no KTAP results: '
                                    f'{ktap.describe_exit(rl.exit)}'))
        elif ((rl.exit != 'status=0' and not any(t.status == 'fail' for _, t in leaves))
              or (rl.exit or '').startswith('forged=')):
            tests.append(TestRecord(host.name, run.suite, prefix + '(exit)', 'fail', rl.duration_s,
                                    f'{" ".join(run.argv)}: {ktap.describe_exit(rl.exit)}'))
    return result


def check_memory(topo: Topology, rootfs_bytes: int) -> None:
    """A host unpacks its initramfs while the packed copy is still in memory:
    one with less than twice the rootfs and the kernel's own needs dies of
    OOM at boot. Say so before starting anything. The kernel's needs were
    measured: at mem=96M a 35 MiB rootfs left the lab kernel 37 MiB free
    before unpacking, and the unpacking ran out (about 22 MiB for the kernel
    and its tables, and room for /init and the runs)."""
    need = 2 * rootfs_bytes + (40 << 20)
    small = [h for h in topo.hosts.values() if size_bytes(h.mem) < need]
    if small:
        raise ValueError(', '.join(f'host {h.name} (mem={h.mem})' for h in small)
                         + f' cannot boot with this rootfs of {rootfs_bytes >> 20} MiB: '
                         f'give it mem={-(-need >> 20)}M or more in lab.conf')


def check_tools(topo: Topology) -> None:
    """A host with `tools` mounts this machine's root: only Landlock keeps
    that read-only and to the system's directories. No Landlock, no tools."""
    tools = [h.name for h in topo.hosts.values() if h.tools]
    if tools and confine.abi() <= 0:
        raise RuntimeError(f'host {", ".join(tools)} has tools (this machine\'s root at /host), which '
                           'needs Landlock (Linux 5.13 or later) to stay read-only and to the system\'s '
                           'directories; this kernel has none: remove `tools` from lab.conf')


def run_lab(topo: Topology, kernel: Path, rootfs: Path, results: Path, work: Path,
            say=print, decode_hint: str = '', labdir: Path | None = None,
            captures: list[str] = (), carry: dict[str, str] | None = None) -> list[HostResult]:
    """Runs @topo's hosts (span.only() may have cut it to this machine's
    share; @carry then carries segments to the other machines)."""
    for what, path in (('kernel', kernel), ('rootfs', rootfs)):
        if not path.exists():
            raise FileNotFoundError(f'no {what} at {path}: run make first')
    if shutil.which('vde_switch') is None and topo.segments:
        raise FileNotFoundError('vde_switch is not installed (Debian package vde2; make deps)')
    check_memory(topo, rootfs.stat().st_size)
    if kernel_image.is_x86_image(kernel):
        qemu_host.check(topo)
    else:
        host_fpu.check(kernel)
    extra = kernel_image.mem_extra(kernel)
    if extra:
        say(f'a debug kernel: each host gets {extra >> 20} MiB more than its mem= '
            'for KASAN, lockdep and kmemleak')
    if not any(h.runs for h in topo.hosts.values()):
        # Nothing would keep its hosts up: the driver would stop them at once.
        raise ValueError(f'lab {topo.name} has no run lines: nothing to run '
                         f'(labctl start {topo.name} boots it to explore by hand)')

    uplinks = [h for h in topo.hosts.values() if h.uplink]
    if uplinks:
        uplink.check_installed()
    check_tools(topo)
    captures = topo.segments if list(captures) == ['all'] else list(captures)
    capture.check_segments(captures, topo.segments, topo.name)
    plugin = capture.plugin(work) if captures else None

    # A run directory of its own: other runs of this lab may be going on.
    inst = instances.claim(work, topo.name)
    run_dir = inst.path
    try:
        say(f'run directory {run_dir} (instance {inst.id} of lab {topo.name})')
        for host in uplinks:
            say(f'{host.name}: uplink {host.uplink} reaches {uplink.describe(host.uplink_mode)}')
        for host in topo.hosts.values():
            (run_dir / host.name).mkdir(parents=True)
            startup = labdir / f'{host.name}.startup' if labdir else None
            (run_dir / host.name / 'run.sh').write_text(run_script(
                host, startup.read_text() if startup and startup.exists() else '',
                guest_variables(host)))
            if host.disk:
                make_disk(run_dir / host.name / 'disk.img', host.disk)
        for seg, locator in (carry or {}).items():
            say(f'segment {seg} is carried to the other machines by {locator}')
        return _boot_collect(topo, kernel, rootfs, results, run_dir, say, decode_hint,
                             {seg: plugin for seg in captures}, carry or {})
    finally:
        inst.release()


def _boot_collect(topo: Topology, kernel: Path, rootfs: Path, results: Path, run_dir: Path,
                  say, decode_hint: str, captures: dict[str, Path],
                  carry: dict[str, str]) -> list[HostResult]:
    # Sockets live under a short private path: UNIX socket paths are limited to 108 bytes.
    tmp = uml_paths.private_dir(f'kevent-lab-{topo.name}-')
    sup = Supervisor(cleanup=tmp)
    old = {s: signal.signal(s, _stop_on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    hosts = [HostRun(h, results / f'{h.name}.console.log') for h in topo.hosts.values()]
    t0 = time.monotonic()
    phases: dict[str, float] = {}
    try:
        sockets = {}
        for seg in topo.segments:
            sockets[seg] = tmp / seg
            rc = None
            if seg in captures:
                # The switch writes the segment's frames from its start.
                rc = tmp / f'{seg}.rc'
                rc.write_text(capture.rc_lines(captures[seg], results / f'{seg}.pcap'))
            if seg not in carry or rc is not None:
                switch = start_switch(sup, f'switch {seg}', sockets[seg], tmp / f'{seg}.log', rc)
            if seg in carry:
                span.start_carried(sup, seg, sockets[seg], carry[seg], tmp / f'{seg}.log',
                                   switch_running=rc is not None)
            if rc is not None:
                # The plugin makes the file once the switch ran its rc file.
                wait_for_paths(switch, [results / f'{seg}.pcap'], f'the switch of segment {seg}',
                               tmp / f'{seg}.log', timeout=5)
                say(f'capturing segment {seg} into {results / f"{seg}.pcap"}')
        phases['switches'] = time.monotonic() - t0
        say(f'{len(sockets)} segment(s) up in {phases["switches"]:.2f} s')

        def start_host(hr: HostRun) -> Child:
            forwards: list[str] = []
            with open(hr.console, 'wb') as out:
                child = start_host_process(sup, kernel, rootfs, hr.host,
                                           f'{topo.name}-{hr.host.name}-{tmp.name[-8:]}', tmp, sockets,
                                           run_dir, out, forwards=forwards)
            for line in forwards:
                say(f'{hr.host.name}: {line}')
            return child

        (tmp / 'uml').mkdir()
        say(confine.describe(confine.abi()))
        boot_and_wait(hosts, start_host, sup, say)
    finally:
        t1 = time.monotonic()
        sup.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
        for s, handler in old.items():
            signal.signal(s, handler)
        phases['teardown'] = time.monotonic() - t1
    t2 = time.monotonic()
    collected = [collect_host(hr, run_dir, decode_hint) for hr in hosts]
    phases['collect'] = time.monotonic() - t2
    say(phase_line(hosts, phases))
    return collected


def phase_line(hosts: list[HostRun], phases: dict[str, float]) -> str:
    """Where the time went: switches, boot to userspace, tests, teardown, collect."""
    booted = [hr.userspace_s for hr in hosts if hr.userspace_s is not None]
    ended = [hr.ended_s for hr in hosts if hr.ended_s is not None]
    boot = max(booted) if booted else 0.0
    tests = max(ended) - boot if ended else 0.0
    return (f'phases: switches {phases.get("switches", 0):.2f} s, boot {boot:.2f} s '
            f'(slowest host to userspace), tests {tests:.2f} s, '
            f'teardown {phases.get("teardown", 0):.2f} s, collect {phases.get("collect", 0):.2f} s')


def boot_once(kernel: Path, rootfs: Path, console: Path, timeout: int = 120) -> bool:
    """Boots one host without a lab (KUnit only); True if it powered off by itself."""
    host = Host('kunit', timeout=timeout)
    tmp = uml_paths.private_dir('kevent-lab-kunit-')
    try:
        sup = Supervisor(cleanup=tmp)
        try:
            with open(console, 'wb') as out:
                (tmp / 'uml').mkdir()
                child = start_host_process(sup, kernel, rootfs, host, 'kunit-' + tmp.name[-8:], tmp, {},
                                           None, out)
            # Not popen.wait(): the leader stays unreaped until stop_all()
            # has killed what is left of its group (processes.Child).
            if child.wait_exit(timeout):
                return True
            print(f'kunit boot: no power-off after {timeout} s', file=sys.stderr)
            return False
        finally:
            sup.stop_all()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
