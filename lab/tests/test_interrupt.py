"""Ctrl-C during a real lab run leaves no process behind.

Needs the built kernel and rootfs (make builds them before it runs these
tests); skipped, and said so, without them.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
KERNEL, ROOTFS = TOP / 'build' / 'linux', TOP / 'build' / 'rootfs.cpio'


def lab_processes(tag: str) -> list[str]:
    out = subprocess.run(['ps', '-eo', 'pid,args'], capture_output=True, text=True).stdout
    return [line for line in out.splitlines()
            if tag in line and ('vde_switch' in line or 'linux' in line or 'slirp' in line)]


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
    assert lab_processes('kevent-lab-default-'), 'the lab was not running'
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out
    time.sleep(0.5)
    assert lab_processes('kevent-lab-default-') == []
