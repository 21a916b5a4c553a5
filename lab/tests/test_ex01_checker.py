"""Exercise 01's client checker, run natively against stand-in servers:
a server that crashes (resets its connections) and no server at all.
It needs only sockets, so it runs on this machine; it is built with the
kernel tree's kselftest.h ($KSRC, or build/src)."""
import os
import shutil
import socket
import struct
import subprocess
import threading
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
KSRC = Path(os.environ.get('KSRC', TOP / 'build' / 'src'))


@pytest.fixture(scope='module')
def checker(tmp_path_factory):
    selftests = KSRC / 'tools' / 'testing' / 'selftests'
    uapi = KSRC / 'include' / 'uapi' / 'linux' / 'kevent.h'
    if not (selftests / 'kselftest.h').exists() or not uapi.exists() or not shutil.which('gcc'):
        pytest.skip(f'no kernel tree with kevent at {KSRC} (make kernel-dev, or KSRC=...)')
    d = tmp_path_factory.mktemp('ex01')
    (d / 'inc' / 'linux').mkdir(parents=True)
    shutil.copy(uapi, d / 'inc' / 'linux' / 'kevent.h')
    subprocess.run(['gcc', '-O2', '-isystem', str(d / 'inc'), '-I', str(TOP / 'testcases' / 'include'),
                    '-I', str(TOP / 'exercises' / 'include'), '-I', str(selftests), '-o', str(d / 'ex01_check'),
                    str(TOP / 'exercises' / '01-echo' / 'ex01_check.c')], check=True)
    return d / 'ex01_check'


def crashing_server():
    """Accepts one connection, then resets it and stops listening, as a
    server killed by SIGSEGV does."""
    ls = socket.socket()
    ls.bind(('127.0.0.1', 0))
    ls.listen(8)

    def serve():
        c, _ = ls.accept()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        c.recv(1)
        c.close()
        ls.close()
    threading.Thread(target=serve, daemon=True).start()
    return ls.getsockname()[1]


def test_a_crashing_server_fails_the_checks_not_the_checker(checker):
    """The checker died of SIGPIPE (clients.(incomplete)) when the server
    it talked to crashed; now every check reports."""
    port = crashing_server()
    proc = subprocess.run([str(checker), '127.0.0.1', str(port)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1, proc.returncode          # not -13 (SIGPIPE)
    results = [l for l in proc.stdout.splitlines() if l.startswith(('ok ', 'not ok '))]
    assert len(results) == 6 and results[0] == 'ok 1 server_accepts'


def test_no_server_says_refused(checker):
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]          # bound, never listening: refused
    proc = subprocess.run([str(checker), '127.0.0.1', str(port)], capture_output=True, text=True,
                          timeout=60)
    s.close()
    assert 'Connection refused: nothing listens there' in proc.stdout
