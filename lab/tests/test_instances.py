"""Run directories of their own: claim, prune, clean (no UML needed)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kevent_lab import instances

LAB_DIR = Path(__file__).resolve().parent.parent


def test_claims_are_distinct_and_locked(tmp_path):
    a = instances.claim(tmp_path, 'pair')
    b = instances.claim(tmp_path, 'pair')
    try:
        assert (a.id, b.id) == ('1', '2')
        assert a.path == tmp_path.resolve() / 'pair' / '1'
        assert instances.owned(a.path) and instances.owned(b.path)
    finally:
        a.release()
        b.release()
    assert not instances.owned(a.path)
    # A finished run's directory stays for a look until the next claim.
    (a.path / 'server').mkdir()
    c = instances.claim(tmp_path, 'pair')
    try:
        assert c.id == '1' and not (c.path / 'server').exists()
        assert not b.path.exists()
    finally:
        c.release()


def test_prune_removes_older_layouts_but_not_instances_in_use(tmp_path):
    base = tmp_path / 'pair'
    (base / 'server').mkdir(parents=True)          # build/lab/NAME/HOST of before
    (base / 'state.json').write_text('{}')
    a = instances.claim(tmp_path, 'pair')
    try:
        assert sorted(p.name for p in base.iterdir()) == ['.lock', '1']
        b = instances.claim(tmp_path, 'pair')
        b.release()
        assert a.path.exists() and b.id == '2'
    finally:
        a.release()


def test_started_lab_with_live_hosts_stays_in_use(tmp_path):
    # Its supervisor is gone (the lock is free), but a process of a group it
    # names still runs: crash must still find it, prune must keep it.
    inst = instances.claim(tmp_path, 'pair')
    inst.release()
    sleeper = subprocess.Popen(['sleep', '30'], start_new_session=True)
    try:
        (inst.path / 'state.json').write_text(json.dumps(
            {'lab': 'pair', 'id': inst.id, 'pid': 999999999, 'switches': [],
             'hosts': {'x': {'pid': sleeper.pid, 'console': '/dev/null'}},
             'starts': instances.starts_of([sleeper.pid])}))
        assert instances.in_use(inst.path)
        assert [i.id for i in instances.started(tmp_path, 'pair')] == ['1']
        assert instances.claim(tmp_path, 'pair').id == '2'
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not instances.in_use(inst.path)
    assert instances.started(tmp_path, 'pair') == []


def test_lock_follows_the_owner_process(tmp_path):
    # Another process claims; its lock lasts exactly as long as it does.
    code = ('import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; '
            'from kevent_lab import instances; i = instances.claim(Path(sys.argv[2]), "pair"); '
            'print(i.id, flush=True); time.sleep(30)')
    proc = subprocess.Popen([sys.executable, '-c', code, str(LAB_DIR), str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    try:
        ident = proc.stdout.readline().strip()
        assert ident == '1'
        mine = instances.claim(tmp_path, 'pair')
        assert mine.id == '2'
        mine.release()
        assert instances.owned(tmp_path / 'pair' / '1')
    finally:
        proc.kill()
        proc.wait()
    assert not instances.owned(tmp_path / 'pair' / '1')


def test_clean_keeps_what_is_in_use(tmp_path):
    busy = instances.claim(tmp_path, 'pair')
    instances.claim(tmp_path, 'pair').release()
    instances.claim(tmp_path, 'star').release()
    said = []
    try:
        instances.clean(tmp_path, said.append)
        assert busy.path.exists()
        assert sorted(p.name for p in (tmp_path / 'pair').iterdir()) == ['.lock', '1']
        assert not (tmp_path / 'star').exists()
        assert any('kept' in s and 'a labctl run is using it' in s for s in said)
    finally:
        busy.release()
    instances.clean(tmp_path, said.append)
    assert not tmp_path.exists()


def test_a_state_json_cannot_make_crash_kill_a_stranger(tmp_path):
    """crash killed every pid state.json listed: a stale file (pids used
    again since) or a forged one took any process of the user with it."""
    from kevent_lab import session
    stranger = subprocess.Popen(['sleep', '30'], start_new_session=True)
    inst = instances.claim(tmp_path, 'pair')        # held: the instance is in use
    try:
        for starts in ({}, {str(stranger.pid): 1}):  # none recorded; another process's
            (inst.path / 'state.json').write_text(json.dumps(
                {'lab': 'pair', 'id': inst.id, 'pid': stranger.pid, 'switches': [stranger.pid],
                 'hosts': {'x': {'pid': stranger.pid, 'console': '/dev/null'}}, 'starts': starts}))
            session.crash('pair', tmp_path, lambda m: None)
            time.sleep(0.2)
            assert stranger.poll() is None, 'crash killed a process the lab never started'
        # The process the lab did start (its start time recorded) is killed.
        (inst.path / 'state.json').write_text(json.dumps(
            {'lab': 'pair', 'id': inst.id, 'pid': 999999999, 'switches': [],
             'hosts': {'x': {'pid': stranger.pid, 'console': '/dev/null'}},
             'starts': instances.starts_of([stranger.pid])}))
        session.crash('pair', tmp_path, lambda m: None)
        assert stranger.wait(timeout=10) == -9
    finally:
        inst.release()
        if stranger.poll() is None:
            stranger.kill()
            stranger.wait()


def _orphaned_group(env=None) -> tuple[int, int]:
    """A process group whose leader has ended: (group, its one member)."""
    leader = subprocess.Popen(['sh', '-c', 'sleep 30 & echo $!'], start_new_session=True,
                              stdout=subprocess.PIPE, text=True, env=env)
    member = int(leader.stdout.readline())
    leader.wait()
    # Until the member is sleep itself, not the shell's child on its way there.
    deadline = time.monotonic() + 10
    while Path(f'/proc/{member}/comm').read_text().strip() != 'sleep' and time.monotonic() < deadline:
        time.sleep(0.01)
    return leader.pid, member


def test_a_group_whose_leader_is_gone_is_the_labs_only_with_its_token(tmp_path):
    """A group whose leader had ended was always taken as the lab's: its
    leader's pid, used again by a stranger who made a group and ended too,
    made crash kill the stranger's group."""
    from kevent_lab import session
    token = 'lab-token-' + os.urandom(4).hex()
    inst = instances.claim(tmp_path, 'pair')
    groups = []
    try:
        for env, killed in ((None, False), (dict(os.environ, KEVENT_LAB_SUPERVISOR=token), True)):
            group, member = _orphaned_group(env)
            groups.append(member)
            (inst.path / 'state.json').write_text(json.dumps(
                {'lab': 'pair', 'id': inst.id, 'pid': 999999999, 'switches': [],
                 'hosts': {'x': {'pid': group, 'console': '/dev/null'}},
                 'starts': {str(group): 1}, 'token': token}))
            assert (group in instances.state_groups(json.loads((inst.path / 'state.json').read_text()))) \
                == killed
            session.crash('pair', tmp_path, lambda m: None)
            time.sleep(0.2)
            assert (not os.path.exists(f'/proc/{member}') or
                    open(f'/proc/{member}/stat').read().rsplit(')', 1)[1].split()[0] == 'Z') == killed
    finally:
        inst.release()
        for pid in groups:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def test_a_lab_name_that_is_a_path_is_refused(tmp_path):
    import pytest
    for name in ('/some/dir', '../../X', '..', 'a/b', ''):
        with pytest.raises(ValueError, match='not a lab name'):
            instances.claim(tmp_path, name)
    assert list(tmp_path.iterdir()) == []


def labctl(*args):
    return subprocess.run([sys.executable, str(LAB_DIR / 'labctl'), *args],
                          capture_output=True, text=True, timeout=60)


def test_labctl_refuses_a_path_for_a_lab_before_touching_it(tmp_path):
    """`labctl start /some/dir` pruned that folder (its lab.conf, README,
    notes/) as if it were a lab's run directories."""
    victim = tmp_path / 'victim'
    (victim / 'notes').mkdir(parents=True)
    (victim / 'lab.conf').write_text('host a\nrun a s -- kevent_core_test\n')
    (victim / 'README').write_text('mine')
    rel = os.path.relpath(victim, LAB_DIR / 'labs')
    for cmd in (['start', str(victim)], ['start', rel], ['check', str(victim)],
                ['status', str(victim)], ['crash', str(victim)], ['stop', rel],
                ['exec', '--lab', str(victim), 'a', '--', 'true'], ['run', '--lab', rel]):
        proc = labctl(*cmd)
        assert proc.returncode == 2 and 'a lab is the name of a directory of lab/labs/' in proc.stderr, cmd
    assert sorted(p.name for p in victim.iterdir()) == ['README', 'lab.conf', 'notes']


def test_labctl_check_refuses_an_unknown_program(tmp_path, monkeypatch):
    """check accepted kevent_core_tset; the run then failed in the guest
    with "printed no KTAP results (exit: status=127)"."""
    from kevent_lab import programs, topology
    top = LAB_DIR.parent
    topo = topology.parse('host a\nrun a core -- kevent_core_tset\n', name='x')
    import pytest
    with pytest.raises(topology.TopologyError, match="did you mean kevent_core_test") as e:
        programs.check(topo, top, 'lab.conf')
    assert e.value.line == 2
    # An exercise's lab has its checkers and the answer too; other labs do not.
    ex = topology.parse('host a\nrun a s -- ex01_answer 7001 3\nrun a t -- ex01_check x 1\n',
                        name='ex-01-echo')
    programs.check(ex, top, 'lab.conf')
    ex.name = 'pair'
    with pytest.raises(topology.TopologyError):
        programs.check(ex, top, 'lab.conf')
    for lab in sorted((LAB_DIR / 'labs').iterdir()):
        if (lab / 'lab.conf').exists():
            assert labctl('check', lab.name).returncode == 0, lab.name


def test_labctl_check_looks_at_the_program_ksft_run_runs():
    """A misspelt selftest behind ksft_run would fail alike on both kernels
    of lab suites, so the comparison would never show it: check refuses it."""
    from kevent_lab import programs, topology
    import pytest
    top = LAB_DIR.parent
    ok = topology.parse('host a\nrun a e -- ksft_run -- epoll_wakeup_test\n'
                        'run a s -- ksft_run --chdir /opt/kevent -- sh short_splice_read.sh\n', name='x')
    programs.check(ok, top, 'lab.conf')
    for line, why in (('ksft_run -- epoll_wakeup_tset', 'did you mean epoll_wakeup_test'),
                      ('ksft_run epoll_wakeup_test', 'needs -- PROGRAM'),
                      # This machine's programs only where the host has tools.
                      ('ksft_run -- python3 -c 1', "no program 'python3'")):
        topo = topology.parse(f'host a\nrun a e -- {line}\n', name='x')
        with pytest.raises(topology.TopologyError, match=why):
            programs.check(topo, top, 'lab.conf')
    tools = topology.parse('host a tools\nrun a e -- ksft_run -- python3 -c 1\n', name='x')
    programs.check(tools, top, 'lab.conf')
