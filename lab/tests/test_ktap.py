from pathlib import Path

from kevent_lab import ktap

GOLDEN = Path(__file__).resolve().parent / 'golden'


def golden(name: str) -> str:
    return (GOLDEN / name).read_text()


def test_console_kunit_pass():
    suites = ktap.parse(golden('console_kunit_pass.log'))
    assert [s.name for s in suites] == ['kevent_core']
    core = suites[0]
    assert core.status == 'pass'
    assert len(core.children) == 12
    assert all(c.status == 'pass' for c in core.children)
    assert core.children[0].name == 'kevent_test_add_remove'
    # User-space lines prefixed by lab_runner are not mistaken for KTAP.
    assert not any('global.' in c.name for c in core.children)


def test_console_kunit_failure_has_message():
    core = ktap.parse(golden('console_kunit_fail.log'))[0]
    assert core.status == 'fail'
    bad = [c for c in core.children if c.status == 'fail']
    assert [c.name for c in bad] == ['kevent_test_ready_once']
    assert 'EXPECTATION FAILED' in bad[0].message


def test_runner_pass_with_durations():
    log = ktap.parse_runner_log(golden('runner_core_pass.log'))
    assert log.started and log.exit == 'status=0'
    assert len(log.results) == 22
    assert all(r.status == 'pass' for r in log.results)
    assert all(r.duration_s is not None and r.duration_s >= 0 for r in log.results)
    # The signal test waits one second for its alarm.
    sig = [r for r in log.results if r.name.endswith('interrupted_by_a_signal')][0]
    assert 0.9 < sig.duration_s < 5


def test_runner_fail_and_skip():
    log = ktap.parse_runner_log(golden('runner_fail_skip.log'))
    assert [(r.name, r.status) for r in log.results] == [
        ('timer.oneshot_fires_once', 'fail'), ('timer.needs_feature', 'skip'), ('timer.fine', 'pass')]
    assert 'Expected 1 (1) == kevent_wait' in log.results[0].message
    assert log.results[1].message == 'SKIP not configured'
    assert abs(log.results[2].duration_s - 0.5002) < 1e-6
    assert log.exit == 'status=1'


def test_runner_crash_is_a_failure():
    log = ktap.parse_runner_log(golden('runner_crash.log'))
    assert log.exit == 'signal=11'
    assert [r.status for r in log.results[:2]] == ['pass'] * 2
    assert log.results[-1].status == 'fail'
    assert 'plan was 1..22 but only 2' in log.results[-1].message


def test_runner_timeout():
    log = ktap.parse_runner_log(golden('runner_timeout.log'))
    assert log.exit == 'timeout=60'
    assert log.results[-1].status == 'fail'


def test_nested_failure_propagates_and_unfinished_subtest():
    text = '\n'.join([
        'KTAP version 1', '1..2',
        '    KTAP version 1', '    # Subtest: s1', '    1..2',
        '    ok 1 a', '    not ok 2 b', 'ok 1 s1',
        '    KTAP version 1', '    # Subtest: s2', '    1..3', '    ok 1 c',
    ])
    suites = ktap.parse(text)
    assert suites[0].status == 'fail'         # a failing child fails the group
    assert suites[-1].status == 'fail'
    leaves = [p for s in suites for p, _ in s.leaves(s.name)]
    assert 's1.b' in leaves


def test_empty_and_noise():
    assert ktap.parse('') == []
    assert ktap.parse('random kernel noise\nok 1 not in a document\n') == []


def test_runner_harness_skip_takes_the_name_of_its_run_line():
    # Linux 6.1's kselftest_harness.h prints a skipped test as `ok N # SKIP
    # reason`, without its name; a signature needs the name (fpu_state_test
    # on a host without AVX-512 read as test_1 and test_3).
    log = ktap.parse_runner_log(golden('runner_harness_skip.log'))
    assert [(r.name, r.status) for r in log.results] == [
        ('global.processes_keep_their_own_zmm', 'skip'),
        ('global.sse_registers_survive_a_signal', 'pass'),
        ('global.exec_hands_no_zmm_to_the_next_program', 'skip'),
    ]
    assert 'no AVX-512' in log.results[0].message
