"""The slirp uplink on real UML hosts: it reaches the driver's echo service on
127.0.0.1 as 10.0.2.2, only from the host that has it, and every slirp
process goes with its lab (stop, crash, a killed supervisor).

Needs the built kernel and slirp; skipped without them, as test_interrupt.py.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from test_interrupt import KERNEL, ROOTFS, TOP, in_sessions, instance_dir, labctl

pytestmark = pytest.mark.skipif(
    not (KERNEL.exists() and ROOTFS.exists() and shutil.which('slirp-fullbolt')),
    reason='kernel, rootfs or slirp-fullbolt (Debian package slirp) missing')


def slirps_in(sessions: set[int]) -> list[int]:
    out = []
    for pid in in_sessions(sessions):
        try:
            with open(f'/proc/{pid}/comm') as f:
                if f.read().strip() == 'slirp-fullbolt':
                    out.append(pid)
        except OSError:
            pass
    return out


def start_uplink():
    out = labctl('start', 'uplink')
    assert out.returncode == 0, out
    d = instance_dir(out.stdout)
    state = json.loads((d / 'state.json').read_text())
    sessions = {state['pid'], *state['switches'], *(h['pid'] for h in state['hosts'].values())}
    return d, state, sessions


def test_run_uplink_lab(tmp_path):
    proc = subprocess.run([sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', 'uplink',
                           '--results', str(tmp_path), '--expect'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'echo service on 127.0.0.1:' in proc.stdout
    console = (tmp_path / 'a.console.log').read_text(errors='replace')
    assert 'eth1=slirp,,' in console and 'SLiRP Ready' in console


def test_uplink_reaches_host_loopback_and_stops_with_the_lab():
    d, state, sessions = start_uplink()
    try:
        port = state['echo_port']
        # slirp runs in host a's process group, so it dies with it.
        slirps = slirps_in({state['hosts']['a']['pid']})
        assert len(slirps) == 1 and slirps_in({state['hosts']['b']['pid']}) == []
        st = labctl('status', 'uplink')
        assert 'uplink eth1 (slirp)' in st.stdout and f'127.0.0.1:{port}' in st.stdout, st
        ex = labctl('exec', '--lab', 'uplink', 'a', '--', 'echo hello-from-$(hostname) | nc -w 5 10.0.2.2 $LAB_ECHO_PORT')
        assert (ex.returncode, ex.stdout) == (0, 'hello-from-a\n'), ex
        # No default route: the uplink reaches slirp's network, not the world.
        ex = labctl('exec', '--lab', 'uplink', 'a', '--', 'ip route | grep -c default')
        assert ex.stdout.strip() == '0', ex
        # slirp's control and exec addresses refuse the guest.
        ex = labctl('exec', '--lab', 'uplink', 'a', '--', '(echo help; sleep 1) | nc -w 3 10.0.2.0 23')
        assert 'Permission denied' in ex.stdout, ex
        # b has no uplink: 10.0.2.2 is nowhere it can reach.
        ex = labctl('exec', '--lab', 'uplink', 'b', '--', f'nc -w 3 10.0.2.2 {port} </dev/null')
        assert ex.returncode != 0, ex
        stopped = labctl('stop', 'uplink')
        assert stopped.returncode == 0, stopped
    finally:
        labctl('crash', 'uplink', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []
    assert all(not os.path.exists(f'/proc/{p}') or open(f'/proc/{p}/stat').read().split()[2] == 'Z'
               for p in slirps)


def test_killed_supervisor_leaves_no_slirp():
    d, state, sessions = start_uplink()
    try:
        assert slirps_in(sessions)
        # The supervisor dies without cleaning up (a power cut of the driver):
        # its watchdog kills the hosts, slirp with them, and crash finds
        # nothing running any more.
        os.kill(state['pid'], signal.SIGKILL)
        for _ in range(50):
            if not in_sessions(sessions):
                break
            time.sleep(0.1)
        assert in_sessions(sessions) == []
        crashed = labctl('crash', 'uplink')
        assert 'is not running' in crashed.stderr, crashed
    finally:
        labctl('crash', 'uplink', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []
    assert labctl('status', 'uplink').returncode != 0
