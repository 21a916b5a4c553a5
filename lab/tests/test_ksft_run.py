"""ksft_run (testcases/ksft_run.c), built for this machine and run here: the
kernel's selftests print KTAP, half of it, or nothing, and whichever it is,
a failure must reach the lab as a failure and a pass only as a pass."""
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import build_testcase
from kevent_lab import ktap

TOP = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def wrapper(tmp_path_factory):
    return build_testcase(tmp_path_factory, 'ksft_run')


def verdicts(wrapper, script, *opts):
    """{test path: status} of what the lab makes of ksft_run's output."""
    proc = subprocess.run([str(wrapper), '--name', 'prog', *opts, '--', 'sh', '-c', script],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    out = {}
    for top in ktap.parse(proc.stdout):
        for path, r in (top.leaves(top.name) if top.children else [(top.name, top)]):
            out[path] = (r.status, r.message)
    return out


def status(v):
    return {k: s for k, (s, _) in v.items()}


def test_a_program_without_ktap_is_its_exit_status(wrapper):
    assert status(verdicts(wrapper, 'echo fine')) == {'prog': 'pass'}
    failed = verdicts(wrapper, 'echo "socket: Address family not supported"; exit 1')
    assert status(failed) == {'prog': 'fail'}
    # The failure says what the program said, and how it ended.
    assert 'Address family not supported' in failed['prog'][1]
    assert 'exited with status 1' in failed['prog'][1]
    assert status(verdicts(wrapper, 'kill -9 $$')) == {'prog': 'fail'}


def test_kselftest_skip_and_the_skip_codes_asked_for(wrapper):
    assert status(verdicts(wrapper, 'exit 4')) == {'prog': 'skip'}
    assert status(verdicts(wrapper, 'exit 3')) == {'prog': 'fail'}
    assert status(verdicts(wrapper, 'exit 3', '--skip-exit', '3')) == {'prog': 'skip'}


def test_results_of_the_program_are_kept_and_its_status_counts_too(wrapper):
    # kselftest.h's way: a plan without a version line, then results.
    script = 'echo 1..2; echo "ok 1 first"; echo "ok 2 second"; exit %d'
    assert status(verdicts(wrapper, script % 0)) == {
        'prog.first': 'pass', 'prog.second': 'pass', 'prog.exit': 'pass'}
    # Every printed result passed, the status did not: still a failure.
    assert status(verdicts(wrapper, script % 1))['prog.exit'] == 'fail'


def test_a_failed_result_fails_whatever_the_status(wrapper):
    v = status(verdicts(wrapper, 'echo "TAP version 13"; echo 1..1; echo "not ok 1 broken"; exit 0'))
    assert v['prog.broken'] == 'fail'
    # A skip status does not hide it either: the exit is a result of its own.
    v = status(verdicts(wrapper, 'echo "not ok 1 broken"; exit 4'))
    assert v["prog.broken"] == "fail" and v["prog.exit"] == "skip"


def test_output_that_ends_before_its_plan_fails(wrapper):
    v = status(verdicts(wrapper, 'echo 1..3; echo "ok 1 a"; exit 1'))
    assert v['prog.a'] == 'pass' and v['prog.(incomplete)'] == 'fail' and v['prog.exit'] == 'fail'


def test_chdir_and_waiting_for_a_listener(wrapper, tmp_path):
    assert status(verdicts(wrapper, 'test -f here', '--chdir', str(tmp_path))) == {'prog': 'fail'}
    (tmp_path / 'here').write_text('')
    assert status(verdicts(wrapper, 'test -f here', '--chdir', str(tmp_path))) == {'prog': 'pass'}
    v = verdicts(wrapper, 'true', '--chdir', str(tmp_path / 'none'))
    assert status(v) == {'prog': 'fail'} and 'cannot enter' in v['prog'][1]


def test_usage_errors(wrapper):
    for argv in ([], ['--'], ['--skip-exit', 'x', '--', 'true'], ['--wait-listen', '0', '--', 'true'],
                 ['--bogus', '--', 'true']):
        assert subprocess.run([str(wrapper), *argv], capture_output=True).returncode == 2, argv


def test_the_program_is_asked_to_print_line_by_line(wrapper):
    """So that one killed at its timeout shows how far it got (stdbuf's way,
    where this machine's coreutils are there to preload)."""
    if not Path('/usr/libexec/coreutils/libstdbuf.so').exists():
        pytest.skip('no coreutils libstdbuf here')
    v = verdicts(wrapper, 'echo "buffering=$_STDBUF_O preload=$LD_PRELOAD"; exit 1')
    assert 'buffering=L preload=/usr/libexec/coreutils/libstdbuf.so' in v['prog'][1]
