"""Port forwards (lab.conf `forward`): this machine's loopback into a guest.

libslirp forwards a port of the machine it runs on to the guest behind it
(`tcpfwd=ADDR:PORT:10.0.2.15:GUEST_PORT` in the uplink's locator). Where
"the machine it runs on" is depends on the uplink's mode:

  lab (default)  the host's process has a network namespace of its own, so
                 libslirp's listener is there, on its loopback. The driver
                 listens on this machine's ADDR:PORT itself, before the host
                 starts, and hands the socket to a relay inside the namespace
                 (forward_relay.py), which joins each connection to libslirp's.
  outside        the host shares this machine's network: libslirp listens on
                 ADDR:PORT itself. The driver only checks the port is free
                 (and picks one for PORT 0) just before the host starts.

Either way a forward listens on loopback only (topology.py refuses other
addresses), and the guest still reaches nothing of this machine's.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from .topology import SLIRP_GUEST, Host, PortForward


class ForwardError(OSError):
    pass


@dataclass
class Opened:
    forward: PortForward
    port: int                               # the machine's port (chosen if forward.port is 0)
    listener: socket.socket | None = None   # the driver's listening socket (lab mode)

    def describe(self, host: str) -> str:
        return f'{self.forward.addr}:{self.port} -> {host}:{self.forward.guest_port}'


def open_all(host: Host) -> list[Opened]:
    """Listens on (lab mode) or reserves (outside) each of @host's forwards;
    a port that is taken is an error naming the lab.conf line."""
    opened: list[Opened] = []
    try:
        for fwd in host.port_forwards:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((fwd.addr, fwd.port))
            except OSError as e:
                s.close()
                raise ForwardError(e.errno, f'forward on lab.conf line {fwd.line}: cannot listen '
                                   f'on {fwd.addr}:{fwd.port}: {e.strerror}') from None
            port = s.getsockname()[1]
            if host.uplink_mode == 'outside':
                s.close()       # libslirp binds it itself, in a moment
                opened.append(Opened(fwd, port))
            else:
                s.listen(128)
                opened.append(Opened(fwd, port, s))
    except BaseException:
        close_all(opened)
        raise
    return opened


def close_all(opened: list[Opened]) -> None:
    for o in opened:
        if o.listener is not None:
            o.listener.close()
            o.listener = None


def tcpfwd(opened: list[Opened]) -> str:
    """libslirp's tcpfwd= option for @opened: inside a namespace of its own
    (a listener is relayed) on 127.0.0.1, else on the forward's address."""
    return 'tcpfwd=' + ','.join(
        f'{"127.0.0.1" if o.listener else o.forward.addr}:{o.port}:{SLIRP_GUEST.ip}:{o.forward.guest_port}'
        for o in opened)


def relay(opened: list[Opened]) -> list[tuple[int, int]]:
    """(fd, port inside) for confine.py's relay: the same port number inside."""
    return [(o.listener.fileno(), o.port) for o in opened if o.listener is not None]


def write_locator(path: Path, locator: str) -> Path:
    """vdeplug4 reads a locator from a regular file given instead of one
    (its first line): the way past UML's option parser, which splits at the
    commas of several forwards."""
    path.write_text(locator + '\n')
    return path
