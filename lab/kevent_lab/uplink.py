"""The optional uplink: libslirp between a guest and the world outside the lab.

A host with `uplink HOST IFACE [outside]` in its lab.conf gets
`IFACE=vde,slirp:///...` on its UML command line. UML's vde transport opens
that locator with libvdeplug (Debian's vdeplug4), which starts `vde_plug`
as a helper; for `slirp://` vde_plug loads libvdeplug_slirp (Debian package
libvdeplug-slirp), whose libslirp is the slirp QEMU maintains. vde_plug is
UML's child, in its process group and its confinement (confine.py), and ends
with it.

On the guest's side the uplink is 10.0.2.15/24; 10.0.2.2 is slirp itself
and never this machine's loopback (libslirp's disable_host_loopback). What
lies beyond depends on the mode:

  lab (the default)  the echo service at 10.0.2.7 port 7, and nothing else.
                     libslirp answers each connection there by running `cat`
                     (cmdfwd), and the host's process lives in a network
                     namespace of its own whose only interface is its own
                     loopback (confine.py --own-network): no route, default
                     or not, leads out of it.
  outside            in addition, whatever this machine reaches, through
                     libslirp's NAT, once the guest has a route there
                     (route HOST 0.0.0.0/0 10.0.2.2): for a lab on a machine
                     with a network, reaching a mirror or a package archive.
                     This machine's own loopback stays out of reach.

Port forwards (lab.conf `forward`) lead the other way, from this machine's
loopback into the guest: port_forward.py; `reach` opens one port of this
machine's loopback to a guest: reach.py.
"""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

ECHO_ADDR = '10.0.2.7'
ECHO_PORT = 7
MODES = ('lab', 'outside')
PLUGIN_GLOB = '/usr/lib/*/vdeplug/libvdeplug_slirp.so'


def check_installed() -> None:
    """Raises FileNotFoundError, saying what to install, if a piece is missing."""
    if not shutil.which('vde_plug', path='/usr/bin:/bin:/usr/local/bin'):
        raise FileNotFoundError('vde_plug is not installed (Debian package vdeplug; make deps); '
                                'a host of this lab has an uplink')
    if not glob.glob(PLUGIN_GLOB) and not glob.glob(PLUGIN_GLOB.replace('/*/', '/')):
        raise FileNotFoundError('libvdeplug_slirp is not installed (Debian package libvdeplug-slirp; '
                                'make deps); a host of this lab has an uplink')


def locator(mode: str, options: tuple[str, ...] = (), commands: tuple[str, ...] = ()) -> str:
    """The vdeplug4 locator of an uplink, with libslirp @options (tcpfwd=)
    and more @commands for cmdfwd= (ADDR:PORT:'COMMAND', the reaches)."""
    if mode not in MODES:
        raise ValueError(f'uplink mode {mode!r} is not one of {", ".join(MODES)}')
    cmdfwd = ','.join([f'{ECHO_ADDR}:{ECHO_PORT}:cat', *commands])
    return '/'.join([f'slirp:///v4/disable_host_loopback/cmdfwd={cmdfwd}', *options])


def uml_arg(iface: str, mode: str, locator_file: Path | None = None) -> str:
    """UML's option for the uplink: the locator itself, which must have no
    commas (UML's option parser splits at them), or a file holding it."""
    return f'{iface}=vde,{locator_file or locator(mode)}'


def describe(mode: str) -> str:
    """What a guest reaches through an uplink of @mode, in one line."""
    reach = f'the echo service {ECHO_ADDR}:{ECHO_PORT}'
    if mode == 'outside':
        return (f'{reach}, and what this machine reaches (not its loopback) through NAT '
                f'once the guest routes there via 10.0.2.2')
    return f'{reach} only (a network namespace of its own)'
