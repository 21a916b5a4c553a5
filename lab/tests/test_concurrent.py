"""One lab run twice at the same time, in one checkout: no collision.

Boots real labs (pair: two small hosts each); skipped without the built
kernel and rootfs, as test_interrupt.py.
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_interrupt import KERNEL, ROOTFS, TOP, in_sessions, instance_dir, labctl, sessions_of_children

needs_uml = pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')


def run_twice(tmp_path, lab):
    procs = [subprocess.Popen([sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', lab,
                               '--results', str(tmp_path / name)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name in ('one', 'two')]
    sessions = set()
    deadline = time.monotonic() + 60
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for p in procs:
            sessions |= sessions_of_children(p.pid)
        time.sleep(0.05)
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, deadline - time.monotonic()))[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outs.append(p.communicate()[0])
    return procs, outs, sessions


@needs_uml
def test_same_lab_twice_at_once(tmp_path):
    procs, outs, sessions = run_twice(tmp_path, 'pair')
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out
    dirs = [instance_dir(out) for out in outs]
    assert dirs[0] != dirs[1] and dirs[0].parent == dirs[1].parent == TOP / 'build' / 'lab' / 'pair'
    # Both really ran at the same time: each one's hosts were up while the other's were.
    assert len(sessions) >= 2 * 3, 'fewer processes than two switches and four hosts'

    seen = {}
    for name, run_dir in zip(('one', 'two'), dirs):
        results = tmp_path / name
        summary = json.loads((results / 'summary.json').read_text())
        assert summary['failed'] == 0 and summary['passed'] > 0, summary
        for host in ('server', 'client'):
            console = (results / f'{host}.console.log').read_text(errors='replace')
            # The guest mounted its own run's directory and joined its own switch.
            assert f'LAB_DIR={run_dir} ' in console
            seen.setdefault(host, []).append(re.search(r'eth0=vde,(\S+)', console).group(1))
            for log in (run_dir / host).glob('*.log'):
                assert (results / f'{host}.{log.name}').read_bytes() == log.read_bytes()
        # Nothing but its own hosts' files in its run directory.
        assert sorted(p.name for p in run_dir.iterdir()) == ['.owner', 'client', 'server']
    assert seen['server'][0] != seen['server'][1]
    assert seen['server'][0] == seen['client'][0] and seen['server'][1] == seen['client'][1]
    time.sleep(0.5)
    assert in_sessions(sessions) == []


def start(lab):
    out = labctl('start', lab)
    assert out.returncode == 0, out
    return instance_dir(out.stdout)


@needs_uml
def test_same_lab_started_twice():
    first = start('pair')
    second = None
    sessions = set()
    try:
        second = start('pair')
        assert first != second
        for d in (first, second):
            state = json.loads((d / 'state.json').read_text())
            sessions |= {state['pid'], *state['switches'], *(h['pid'] for h in state['hosts'].values())}
        one, two = first.name, second.name
        st = labctl('status', 'pair')
        assert st.returncode == 0 and f'instance {one}' in st.stdout and f'instance {two}' in st.stdout, st
        # Which one? Commands that act on one instance refuse to guess.
        for cmd in (['exec', '--lab', 'pair', 'server', '--', 'hostname'], ['stop', 'pair'],
                    ['crash', 'pair'], ['console', '--lab', 'pair', 'server']):
            out = labctl(*cmd)
            assert out.returncode != 0 and '--id' in out.stderr and f'--id {two}' in out.stderr, (cmd, out)
        ex = labctl('exec', '--lab', 'pair', '--id', two, 'client', '--', 'ping -c 1 -W 5 10.42.0.1 >/dev/null && hostname')
        assert (ex.returncode, ex.stdout) == (0, 'client\n'), ex
        assert labctl('status', 'pair', '--id', '99').returncode != 0
        stopped = labctl('stop', 'pair', '--id', one)
        assert stopped.returncode == 0, stopped
        # One left: the commands find it without --id again.
        ex = labctl('exec', '--lab', 'pair', 'server', '--', 'hostname')
        assert (ex.returncode, ex.stdout) == (0, 'server\n'), ex
        # clean keeps the instance in use, removes the stopped one.
        cl = labctl('clean', '--results', str(TOP / 'build' / 'no-such-results'))
        assert cl.returncode == 0 and second.exists() and not first.exists(), cl
    finally:
        for d in (first, second):
            if d is not None:
                labctl('crash', 'pair', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []
    assert labctl('status', 'pair').returncode != 0
