import os
import shutil
import time
from pathlib import Path

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


def state_of(pid: int) -> str | None:
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[-1].split()[0]
    except OSError:
        return None


def test_a_leader_that_ended_stays_unreaped_until_its_group_is_killed(tmp_path):
    """running() used to reap an ended leader (Popen.poll): from then on its
    pid, the group's id, could be given to a stranger, whom the sweep of
    stop_all() then killed. Now the leader stays a zombie, holding the
    group's id, until kill() has killed the group."""
    import subprocess
    sup = Supervisor()
    pidfile = tmp_path / 'left'
    child = sup.start('sh', ['sh', '-c', f'sleep 300 & echo $! > {pidfile}'])
    for _ in range(250):
        if not child.running():
            break
        time.sleep(0.02)
    assert not child.running()
    assert state_of(child.pid) == 'Z'            # ended, not reaped: the id stays ours
    left = int(pidfile.read_text())
    assert alive(left)
    sup.stop_all()
    assert state_of(child.pid) is None and not alive(left)


def test_watchdog_forgets_a_group_the_driver_ended():
    """The watchdog killed every group it was ever told of, those of hosts
    long gone (whose ids may belong to others by then) included."""
    import subprocess
    import sys
    from kevent_lab.processes import WATCHDOG
    stranger = subprocess.Popen(['sleep', '30'], start_new_session=True)
    try:
        dog = subprocess.Popen([sys.executable, '-c', WATCHDOG, 'tok'], stdin=subprocess.PIPE, text=True)
        dog.communicate(f'+{stranger.pid}\n-{stranger.pid}\n', timeout=10)   # no goodbye
        time.sleep(0.1)
        assert stranger.poll() is None
        dog = subprocess.Popen([sys.executable, '-c', WATCHDOG, 'tok'], stdin=subprocess.PIPE, text=True)
        dog.communicate(f'+{stranger.pid}\n', timeout=10)
        assert stranger.wait(timeout=10) == -9                                # still told: killed
    finally:
        if stranger.poll() is None:
            stranger.kill()
            stranger.wait()


def test_supervisor_tells_the_watchdog_when_it_reaped(tmp_path):
    sup = Supervisor()
    told = []
    sup._tell = told.append
    child = sup.start('sleep', ['sleep', '30'])
    child.kill()
    assert f'-{child.pid}' in told
    sup.stop_all()


def test_a_child_the_watchdog_was_not_told_of_dies_with_the_driver(tmp_path):
    """SIGKILL between a child's fork and the line that tells the watchdog
    of it: the child's environment names its supervisor, and the watchdog
    kills its group anyway."""
    import subprocess
    import sys
    lab = Path(__file__).resolve().parent.parent
    private = tmp_path / 'kevent-lab-test-x'
    (private / 'sub').mkdir(parents=True)
    driver = subprocess.Popen([sys.executable, '-c', f'''
import sys, time
from pathlib import Path
sys.path.insert(0, {str(lab)!r})
from kevent_lab import processes
sup = processes.Supervisor(cleanup=Path({str(private)!r}))
sup._watch = lambda pgid: None          # the driver dies before it tells
child = sup.start('sleeper', ['sleep', '60'])
print(child.pid, flush=True)
time.sleep(60)
'''], stdout=subprocess.PIPE, text=True)
    pid = int(driver.stdout.readline())
    driver.kill()
    driver.wait()
    for _ in range(100):
        try:
            with open(f'/proc/{pid}/stat') as f:
                if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        raise AssertionError('the child outlived its killed driver')
    # And the run's private directory went with it.
    for _ in range(100):
        if not private.exists():
            break
        time.sleep(0.05)
    assert not private.exists()


def test_wait_for_paths_says_why_it_gave_up(tmp_path):
    from kevent_lab.processes import wait_for_paths
    log = tmp_path / 'log'
    log.write_text('no such plugin\n')
    sup = Supervisor()
    try:
        ended = sup.start('ender', ['true'])
        with pytest.raises(RuntimeError, match='the ender exited: no such plugin'):
            wait_for_paths(ended, [tmp_path / 'never'], 'the ender', log)
        sleeper = sup.start('sleeper', ['sleep', '30'])
        with pytest.raises(RuntimeError, match=r'did not create .*never in 0 s: no such plugin'):
            wait_for_paths(sleeper, [tmp_path / 'never'], 'the sleeper', log, timeout=0.2)
        (tmp_path / 'there').touch()
        wait_for_paths(sleeper, [tmp_path / 'there'], 'the sleeper')
    finally:
        sup.stop_all()
