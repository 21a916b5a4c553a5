import os
import shutil
import time

import pytest

from kevent_lab.processes import Supervisor, start_switch


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes.
    with open(f'/proc/{pid}/stat') as f:
        return f.read().split(')')[-1].split()[0] != 'Z'


def test_stop_all_kills_the_whole_group(tmp_path):
    sup = Supervisor()
    pidfile = tmp_path / 'grandchild'
    child = sup.start('sh', ['sh', '-c', f'sleep 300 & echo $! > {pidfile}; wait'])
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.02)
    grandchild = int(pidfile.read_text())
    assert alive(child.pid) and alive(grandchild)
    sup.stop_all()
    time.sleep(0.1)
    assert not alive(child.pid)
    assert not alive(grandchild)


@pytest.mark.skipif(shutil.which('vde_switch') is None, reason='vde2 is not installed')
def test_switch_starts_and_stops(tmp_path):
    sup = Supervisor()
    child = start_switch(sup, 'net0', tmp_path / 'net0', tmp_path / 'net0.log')
    assert (tmp_path / 'net0' / 'ctl').exists()
    assert child.running()
    sup.stop_all()
    assert not child.running()
