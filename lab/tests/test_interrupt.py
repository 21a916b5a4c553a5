"""Ctrl-C during a real lab run leaves no process behind.

Needs the built kernel and rootfs (make builds them before it runs these
tests); skipped, and said so, without them.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
KERNEL, ROOTFS = TOP / 'build' / 'linux', TOP / 'build' / 'rootfs.cpio'


def live_processes() -> list[tuple[int, int, int]]:
    """(pid, ppid, session) of every process that is not a zombie."""
    out = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat') as f:
                    fields = f.read().rsplit(')', 1)[-1].split()
            except OSError:
                continue
            if fields[0] != 'Z':
                out.append((int(entry), int(fields[1]), int(fields[3])))
    return out


def sessions_of_children(pid: int) -> set[int]:
    """The sessions the lab driver @pid started its processes in."""
    return {sid for p, ppid, sid in live_processes() if ppid == pid and sid == p}


def in_sessions(sessions: set[int]) -> list[int]:
    return [p for p, _, sid in live_processes() if sid in sessions]


@pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')
def test_ctrl_c_stops_everything(tmp_path):
    # As a terminal's Ctrl-C: SIGINT to the whole foreground process group.
    proc = subprocess.Popen(
        [sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', 'default',
         '--results', str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: (os.setsid(), signal.signal(signal.SIGINT, signal.SIG_DFL)))
    deadline = time.monotonic() + 30
    seen = ''
    while 'booting' not in seen and time.monotonic() < deadline:
        seen += proc.stdout.readline()
    assert 'booting' in seen, seen
    time.sleep(1)
    # Its own processes only: other labs may run at the same time.
    sessions = sessions_of_children(proc.pid)
    assert len(sessions) >= 3, 'the lab was not running (a switch and two hosts)'
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    time.sleep(0.5)
    assert in_sessions(sessions) == []


def instance_dir(out: str) -> Path:
    """The run directory `labctl start` or `labctl run` says it uses."""
    m = re.search(r'\(instance (\d+), (\S+)\)|run directory (\S+) \(instance', out)
    assert m, out
    return Path(m.group(2) or m.group(3))


def labctl(*args, **kw):
    return subprocess.run([sys.executable, str(TOP / 'lab' / 'labctl'), *args],
                          capture_output=True, text=True, timeout=90, **kw)


@pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')
def test_start_exec_console_crash():
    import pty

    started = labctl('start', 'pair')
    assert started.returncode == 0, started
    state = json.loads((instance_dir(started.stdout) / 'state.json').read_text())
    sessions = {state['pid'], *state['switches'], *(h['pid'] for h in state['hosts'].values())}
    try:
        st = labctl('status', 'pair')
        assert 'server: pid' in st.stdout and 'ready' in st.stdout, st.stdout
        ex = labctl('exec', '--lab', 'pair', 'server', '--', 'hostname')
        assert (ex.returncode, ex.stdout) == (0, 'server\n'), ex
        ex = labctl('exec', '--lab', 'pair', 'client', '--', 'ping -c 1 -W 5 10.42.0.1 >/dev/null; exit 3')
        assert ex.returncode == 3, ex
        # The console, as a person would use it: type, read, leave with Ctrl-].
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.executable, [sys.executable, str(TOP / 'lab' / 'labctl'),
                                      'console', '--lab', 'pair', 'client'])
        import select
        time.sleep(1)
        os.write(fd, b'echo hello-from-$(hostname)\n')
        seen, deadline = b'', time.monotonic() + 20
        while b'hello-from-client' not in seen and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    break
        os.write(fd, b'\x1d')
        _, status = os.waitpid(pid, 0)
        assert b'hello-from-client' in seen, seen
        assert os.WEXITSTATUS(status) == 0
    finally:
        crashed = labctl('crash', 'pair')
    assert crashed.returncode == 0, crashed
    assert in_sessions(sessions) == []
    assert labctl('status', 'pair').returncode != 0


@pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')
def test_sigkill_of_the_driver_stops_everything(tmp_path):
    # SIGKILL cannot be caught: the kernel must take the lab's processes down.
    proc = subprocess.Popen(
        [sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', 'pair',
         '--results', str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    seen = ''
    while 'userspace after' not in seen and time.monotonic() < deadline:
        seen += proc.stdout.readline()
    assert 'userspace after' in seen, seen
    sessions = sessions_of_children(proc.pid)
    assert len(sessions) >= 3, 'the lab was not running (a switch and two hosts)'
    proc.kill()
    proc.communicate(timeout=30)
    left = in_sessions(sessions)
    for _ in range(50):
        if not left:
            break
        time.sleep(0.1)
        left = in_sessions(sessions)
    assert left == [], 'processes of the lab outlived its driver'
