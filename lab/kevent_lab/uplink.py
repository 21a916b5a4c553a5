"""The optional uplink: slirp between a guest and the machine the lab runs on.

A host with `uplink HOST IFACE` in its lab.conf gets IFACE=slirp,... on its
UML command line. UML starts the slirp program itself (arch/um/drivers/
slirp_user.c: run_helper, with its stdin and stdout on the interface), so
slirp runs in the UML process's group and session and is killed with it.

slirp gives the guest a route to this machine: 10.0.2.2 is an alias of
127.0.0.1 here, 10.0.2.3 forwards DNS, and any other address is reached
through slirp's NAT as this machine would reach it. The project keeps to
loopback and the lab's own networks, which is why an uplink is never there
unless lab.conf asks for one, and why the guest gets no default route
unless lab.conf adds one (route HOST 0.0.0.0/0 10.0.2.2).

So that a guest has something to reach on 127.0.0.1, the driver runs a TCP
echo service there (EchoService), in its own process: it ends with the
driver, whichever way the driver ends.
"""

from __future__ import annotations

import shutil
import socket
import threading

# Debian's slirp package has two programs. Plain `slirp` emulates a serial
# line's baud rate and exits at once (status 1) when its stdin is not a
# terminal, as under UML; `slirp-fullbolt` is the same program without that.
SLIRP_PROGRAM = 'slirp-fullbolt'

# slirp's control (10.0.2.0) and exec (10.0.2.1) addresses would let the
# guest add port redirections and run programs on this machine; with the
# control address 127.0.0.1, which the guest cannot be, both answer
# "Permission denied".
SLIRP_ARGS = ['control addr 127.0.0.1']


def slirp_command() -> str:
    path = shutil.which(SLIRP_PROGRAM) or shutil.which(SLIRP_PROGRAM, path='/usr/bin:/bin')
    if not path:
        raise FileNotFoundError(f'{SLIRP_PROGRAM} is not installed (Debian package slirp; make deps); '
                                'a host of this lab has an uplink')
    if any(c in path for c in ',_ '):
        raise ValueError(f'{path}: the UML command line cannot carry a slirp path with , _ or a space')
    return path


def uml_arg(iface: str, slirp: str) -> str:
    """ethN=slirp,MAC,PROGRAM,ARG...: UML splits at ',' and reads '_' as a space."""
    return ','.join([f'{iface}=slirp', '', slirp] + [a.replace(' ', '_') for a in SLIRP_ARGS])


class EchoService:
    """A TCP echo server on 127.0.0.1, on a port the kernel picks.

    Each connection is echoed until the peer's EOF, then closed. Threads of
    the driver, not a process: nothing is left behind when the driver ends.
    """

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.echoed = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name='echo-accept', daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._echo, args=(conn,), name='echo', daemon=True).start()

    def _echo(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(300)
            try:
                while True:
                    data = conn.recv(65536)
                    if not data:
                        return
                    conn.sendall(data)
                    with self._lock:
                        self.echoed += len(data)
            except OSError:
                return

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)   # wakes the accept() of the thread
        except OSError:
            pass
        self.sock.close()
