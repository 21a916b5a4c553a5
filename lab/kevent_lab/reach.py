"""lab.conf `reach HOST PORT`: a guest reaches this machine's 127.0.0.1:PORT.

By default nothing of this machine's loopback is in a guest's reach (the
uplink's 10.0.2.2 is libslirp itself, uplink.py; libslirp runs a command
only for other addresses, hence 10.0.2.8). A `reach` line opens one
port, to one host: the guest connects to 10.0.2.8:PORT, libslirp runs
stdio_unix.py for the connection (cmdfwd), which joins it to a UNIX socket
in the host's own directory, where a relay outside the host's network
(forward_relay.py as a program, confined to TCP connections to the listed
ports) connects to 127.0.0.1:PORT. UNIX sockets are files, so this works
whether or not the host has a network namespace of its own.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from . import confine
from .topology import REACH_ADDR, Host

HERE = Path(__file__).resolve().parent
RELAY = HERE / 'forward_relay.py'
BRIDGE = HERE / 'stdio_unix.py'


def socket_path(home: Path, port: int) -> Path:
    return home / f'reach-{port}.sock'


def commands(host: Host, home: Path) -> tuple[str, ...]:
    """libslirp cmdfwd entries for @host's reaches; copies the bridge into
    @home (the host may read nothing of the checkout)."""
    if not host.reaches:
        return ()
    shutil.copyfile(BRIDGE, home / BRIDGE.name)
    # Quoted: vdeplug4 splits a locator's options at '/'.
    return tuple(f"{REACH_ADDR}:{port}:'{sys.executable} {home / BRIDGE.name} {socket_path(home, port)}'"
                 for port in host.reaches)


def relay_argv(host: Host, home: Path) -> list[str]:
    """The relay of @host's reaches, confined: it makes its sockets in
    @home and connects over TCP to the listed ports and no other."""
    rules = confine.host_rules([home], [], [RELAY], list(host.reaches))
    return confine.command(rules, [sys.executable, str(RELAY)]
                           + [f'{socket_path(home, p)}:{p}' for p in host.reaches])


def sockets(host: Host, home: Path) -> list[Path]:
    """Where @host's relay listens (it is ready once they all exist)."""
    return [socket_path(home, p) for p in host.reaches]


def describe(host: Host) -> list[str]:
    return [f'{REACH_ADDR}:{p} -> this machine\'s 127.0.0.1:{p}' for p in host.reaches]
