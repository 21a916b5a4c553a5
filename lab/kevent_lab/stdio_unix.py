"""Joins standard input and output to a UNIX socket: the command libslirp
runs for each connection a guest makes to a `reach` port (uplink.py). Its
input and output are the guest's connection; the socket is the host's
relay to this machine's loopback (forward_relay.py). Standard library only:
the driver copies this file into the host's own directory, which is all of
the checkout a confined host may read."""

import os
import selectors
import socket
import sys


def _end_output() -> None:
    """The guest's side learns of the end: libslirp gives the command one
    socket as input and output, where closing fd 1 alone ends nothing."""
    try:
        socket.socket(fileno=os.dup(1)).shutdown(socket.SHUT_WR)
    except OSError:
        os.close(1)


def main(path: str) -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as e:
        print(f'stdio_unix: {path}: {e.strerror}', file=sys.stderr)
        return 1
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ)
    sel.register(sock, selectors.EVENT_READ)
    open_ends = 2
    while open_ends:
        for key, _ in sel.select():
            if key.fileobj == 0:
                data = os.read(0, 1 << 16)
                if data:
                    sock.sendall(data)
                else:
                    sel.unregister(0)
                    sock.shutdown(socket.SHUT_WR)
                    open_ends -= 1
            else:
                data = sock.recv(1 << 16)
                if data:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(1, view):]
                else:
                    sel.unregister(sock)
                    _end_output()
                    open_ends -= 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
