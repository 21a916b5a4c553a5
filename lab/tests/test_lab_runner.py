"""lab_runner, built for this machine and run here: what it records, and
that a program's output cannot pass for its records."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import build_testcase
from kevent_lab import ktap

TOP = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def runner(tmp_path_factory):
    return build_testcase(tmp_path_factory, 'lab_runner')


def run_prog(runner, tmp_path, script, timeout=5, extra=()):
    prog = tmp_path / 'prog'
    prog.write_text('#!/bin/sh\n' + script)
    prog.chmod(0o755)
    log = tmp_path / 'out.log'
    console = subprocess.run([str(runner), '-o', str(log), '-t', str(timeout), '-p', '[a:s] ', *extra,
                              '--', str(prog)], capture_output=True, timeout=60)
    return ktap.parse_runner_log(log.read_text(errors='replace')), console.stdout


def test_a_printed_exit_record_then_a_hang_is_a_timeout(runner, tmp_path):
    """The program prints a whole KTAP block and `#lab-exit status=0`,
    then hangs: the old framing took that for a program that ended well."""
    rl, console = run_prog(runner, tmp_path, 'echo "TAP version 13"; echo 1..1; echo "ok 1 fine"\n'
                           'echo "#lab-exit status=0"; printf "x\\v#lab-exit status=0\\n"; sleep 30\n',
                           timeout=1)
    assert rl.exit == 'timeout=1'
    assert [r.status for r in rl.results] == ['pass']
    assert b'[a:s]#lab-exit timeout=1\n' in console


def test_exit_status_signal_and_nul_bytes(runner, tmp_path):
    rl, console = run_prog(runner, tmp_path, 'printf "a\\000b\\n"; exit 3\n')
    assert rl.exit == 'status=3'
    rl, _ = run_prog(runner, tmp_path, 'kill -SEGV $$\n')
    assert rl.exit == 'signal=11' and 'SIGSEGV' in ktap.describe_exit(rl.exit)


@pytest.mark.skipif(os.geteuid() != 0, reason='dropping to another user needs root')
def test_user_runs_the_program_as_nobody(runner):
    import tempfile
    d = Path(tempfile.mkdtemp())          # pytest's own directory is closed to others
    try:
        d.chmod(0o755)
        rl, _ = run_prog(runner, d, 'echo "# uid $(id -u)"; touch "$0.written" 2>/dev/null; '
                         'echo "# wrote $?"\n', extra=('-u', '65534'))
        log = (d / 'out.log').read_text()
        assert '# uid 65534' in log and '# wrote 1' in log
        assert rl.exit == 'status=0'
    finally:
        shutil.rmtree(d)


def test_the_program_cannot_write_to_the_runners_log(runner, tmp_path):
    """The log was open in the program at descriptor 3: a program wrote its
    own `#lab-exit ... status=0` there and hung, and the run passed."""
    rl, _ = run_prog(runner, tmp_path, 'echo "TAP version 13"; echo 1..1; echo "ok 1 fine"\n'
                     'for fd in 3 4 5 6 7 8 9; do\n'
                     '  (printf "#lab-exit 9.9 status=0\\n" >&$fd) 2>/dev/null && echo "# wrote to $fd"\n'
                     'done\nsleep 30\n', timeout=1)
    assert rl.exit == 'timeout=1'
    log = (tmp_path / 'out.log').read_text()
    assert '# wrote to' not in log and log.count('#lab-exit') == 1


@pytest.mark.parametrize('forged, why', [
    ('#lab-exit 2.0 status=0\n#lab-exit 3.0 timeout=1\n', '2 exits'),
    ('#lab-exit 2.0 status=0\n1.5 ok 2 late\n', '1 lines after'),
    ('#lab-start 2.0 /bin/true\n#lab-exit 3.0 status=0\n', '2 starts'),
])
def test_a_log_with_a_forged_record_is_not_believed(forged, why):
    """Should anything else write to a log after all, two exit records, a
    second start or output after the exit make the whole log a failure."""
    text = '#lab-start 1.0 /opt/kevent/x\n1.1 TAP version 13\n1.2 1..1\n1.3 ok 1 fine\n' + forged
    rl = ktap.parse_runner_log(text)
    assert rl.exit.startswith('forged=')
    assert why in ktap.describe_exit(rl.exit)
    honest = ktap.parse_runner_log('#lab-start 1.0 /opt/kevent/x\n1.1 1..1\n1.2 ok 1 fine\n'
                                   '#lab-exit 2.0 status=0\n')
    assert honest.exit == 'status=0'
