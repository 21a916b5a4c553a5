"""lab_console (testcases/lab_console.c), the guest's shell for labctl
console and exec, here on a pty of this machine: the shell has every signal
at its default, and when it ends, nothing of its session runs on.

A command that ignored SIGINT and SIGHUP outlived both exec's Ctrl-C and
the hangup UML gives the terminal once exec closes its pty: it ran on
behind every later exec."""
import os
import pty
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / 'testcases' / 'lab_console.c'


@pytest.fixture(scope='module')
def lab_console(tmp_path_factory):
    if not shutil.which('gcc'):
        pytest.skip('no gcc')
    out = tmp_path_factory.mktemp('console') / 'lab_console'
    subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror', '-o', str(out), str(SRC)], check=True)
    return out


def _read_until(fd: int, want: bytes, timeout: float = 10) -> bytes:
    buf, deadline = b'', time.monotonic() + timeout
    while want not in buf:
        left = deadline - time.monotonic()
        assert left > 0, f'no {want!r} in {buf!r}'
        if select.select([fd], [], [], left)[0]:
            try:
                buf += os.read(fd, 4096)
            except OSError:
                break
    return buf


def _alive(marker: str) -> list[int]:
    """Live processes whose command line holds @marker."""
    found = []
    for d in Path('/proc').iterdir():
        if not d.name.isdigit():
            continue
        try:
            if marker.encode() in (d / 'cmdline').read_bytes() and \
                    (d / 'stat').read_text().rsplit(')', 1)[1].split()[0] not in 'ZX':
                found.append(int(d.name))
        except (OSError, IndexError):
            continue
    return found


def test_nothing_of_the_session_outlives_the_shell(lab_console):
    master, slave = pty.openpty()
    name = os.ttyname(slave)
    os.close(slave)
    proc = subprocess.Popen([str(lab_console), name], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marker = f'{4000 + os.getpid() % 1000}.5'
    try:
        # Ctrl-C reaches the shell's foreground command (SIGINT at default).
        os.write(master, b'sleep 100; echo "after""sleep"\n')
        time.sleep(0.5)
        os.write(master, b'\x03echo "in""terrupted"\n')
        _read_until(master, b'interrupted')
        # One that ignores SIGINT and SIGHUP, in the foreground and behind,
        # in a subshell as exec runs each command.
        os.write(master, f"(trap '' INT HUP; sleep {marker}) & "
                         f"(trap '' INT HUP; echo st\"arted\"; sleep {marker})\n".encode())
        _read_until(master, b'started')
        deadline = time.monotonic() + 5
        while len(_alive(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_alive(marker)) == 2
        os.close(master)                       # the hangup, as when exec lets go of its pty
        master = -1
        assert proc.wait(timeout=10) == 0
        assert _alive(marker) == []
    finally:
        if master >= 0:
            os.close(master)
        proc.kill()
        for pid in _alive(marker):
            os.kill(pid, 9)
