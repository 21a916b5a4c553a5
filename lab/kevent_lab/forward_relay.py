"""Relays TCP connections from this machine's loopback into a host's own
network namespace, where libslirp listens for its port forwards.

A host whose uplink is of the default mode lives in a network namespace of
its own (confine.py --own-network), so the listening socket libslirp makes
for `tcpfwd=` is out of this machine's reach. The driver therefore makes the
machine's listening socket itself, before the namespace exists, and
confine.py hands it to a relay process forked inside the namespace: each
connection accepted on the machine's side is joined to one made to
127.0.0.1:PORT inside, where libslirp accepts it and connects to the guest.

Run as a program, the same relay serves the other direction (lab.conf
`reach`): `forward_relay.py SOCKET:PORT...` listens on each UNIX socket
SOCKET, which a host's uplink reaches through stdio_unix.py, and joins each
connection to this machine's 127.0.0.1:PORT. UNIX sockets are files, and
cross network namespaces where TCP does not.

The relay is one single-threaded process per host with forwards (selectors,
no thread per connection), in the host's process group and its Landlock
domain; it dies with the host's process (PR_SET_PDEATHSIG) or its group.
Standard library only, and no import from the package: confine.py, which
runs as a plain script, imports it.
"""

from __future__ import annotations

import ctypes
import os
import selectors
import signal
import socket

PR_SET_PDEATHSIG = 1
CHUNK = 1 << 16
# What is in flight in one direction before the relay stops reading that
# side: the sender then sees TCP's own back-pressure.
BUFFERED = 1 << 18


class _Flow:
    """One direction of a relayed connection: bytes read from src, not yet written to dst."""

    def __init__(self, src: socket.socket, dst: socket.socket):
        self.src, self.dst = src, dst
        self.buf = bytearray()
        self.eof = False        # src has ended; dst is shut for writing once buf is out
        self.shut = False


class _Pair:
    def __init__(self, outer: socket.socket, inner: socket.socket):
        self.flows = (_Flow(outer, inner), _Flow(inner, outer))
        self.closed = False

    def interest(self, sock: socket.socket) -> int:
        events = 0
        for flow in self.flows:
            if flow.src is sock and not flow.eof and len(flow.buf) < BUFFERED:
                events |= selectors.EVENT_READ
            if flow.dst is sock and flow.buf:
                events |= selectors.EVENT_WRITE
        return events

    def done(self) -> bool:
        return all(f.shut for f in self.flows)


class Relay:
    def __init__(self, listeners: list[tuple[socket.socket, int]]):
        self.sel = selectors.DefaultSelector()
        for listener, port in listeners:
            listener.setblocking(False)
            self.sel.register(listener, selectors.EVENT_READ, port)

    def _update(self, pair: _Pair) -> None:
        for sock in (pair.flows[0].src, pair.flows[1].src):
            events = pair.interest(sock)
            key = self.sel.get_map().get(sock)
            if key is None and events:
                self.sel.register(sock, events, pair)
            elif key is not None and not events:
                self.sel.unregister(sock)
            elif key is not None and key.events != events:
                self.sel.modify(sock, events, pair)

    def _close(self, pair: _Pair) -> None:
        pair.closed = True
        for flow in pair.flows:
            if self.sel.get_map().get(flow.src) is not None:
                self.sel.unregister(flow.src)
            flow.src.close()

    def _accept(self, listener: socket.socket, port: int) -> None:
        try:
            outer, _ = listener.accept()
        except (BlockingIOError, ConnectionAbortedError):
            return
        try:
            # libslirp listens on this namespace's loopback: the connection
            # is made or refused at once (refused until the guest's uplink is up).
            inner = socket.create_connection(('127.0.0.1', port), timeout=5)
        except OSError:
            outer.close()
            return
        for s in (outer, inner):
            s.setblocking(False)
            if s.family != socket.AF_UNIX:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._update(_Pair(outer, inner))

    def _step(self, pair: _Pair, sock: socket.socket, events: int) -> None:
        for flow in pair.flows:
            if flow.src is sock and events & selectors.EVENT_READ and not flow.eof:
                data = sock.recv(CHUNK)
                if data:
                    flow.buf += data
                else:
                    flow.eof = True
            if flow.dst is sock and events & selectors.EVENT_WRITE and flow.buf:
                del flow.buf[:sock.send(flow.buf)]
            if flow.eof and not flow.buf and not flow.shut:
                flow.shut = True
                flow.dst.shutdown(socket.SHUT_WR)

    def serve_forever(self) -> None:
        while True:
            for key, events in self.sel.select():
                if isinstance(key.data, int):
                    self._accept(key.fileobj, key.data)
                    continue
                pair = key.data
                if pair.closed:
                    continue
                try:
                    self._step(pair, key.fileobj, events)
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    # A reset on either side ends both.
                    self._close(pair)
                    continue
                if pair.done():
                    self._close(pair)
                else:
                    self._update(pair)


def start(listeners: list[tuple[socket.socket, int]]) -> int:
    """Forks the relay for @listeners (each with the port inside to join it
    to) and returns its pid; the caller closes the listeners afterwards."""
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(0)
        # Nothing of the terminal's: the host's process group is killed as a whole.
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        Relay(listeners).serve_forever()
    finally:
        os._exit(1)


def main(argv: list[str]) -> int:
    """SOCKET:PORT...: relay each UNIX socket made here to 127.0.0.1:PORT."""
    import sys
    listeners = []
    for item in argv:
        path, _, port = item.rpartition(':')
        if not path or not port.isdigit():
            print(f'forward_relay.py: want SOCKET:PORT, not {item!r}', file=sys.stderr)
            return 2
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        sock.listen(64)
        listeners.append((sock, int(port)))
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    Relay(listeners).serve_forever()
    return 0


if __name__ == '__main__':
    import sys
    sys.exit(main(sys.argv[1:]))
