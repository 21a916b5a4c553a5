"""exercises/exercise.sh before it builds anything: which exercise, and
which directories it may empty. (The labs themselves run in make
exercises-check.)"""
import os
import subprocess
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
SCRIPT = TOP / 'exercises' / 'exercise.sh'


def exercise(tmp_path, *args):
    # No testcases: the script stops where it would start building.
    env = dict(os.environ, TESTCASES=str(tmp_path / 'no-testcases'))
    return subprocess.run(['bash', str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_ex_as_1_01_or_01_echo(tmp_path):
    for ex in ('1', '01', '01-echo'):
        proc = exercise(tmp_path, ex, '--out', str(tmp_path / f'out{ex}'))
        assert 'no testcases in' in proc.stderr, (ex, proc.stderr)
    assert 'no exercise 09' in exercise(tmp_path, '9').stderr
    assert 'not ../x' in exercise(tmp_path, '../x').stderr


def test_out_with_files_of_its_own_is_refused_untouched(tmp_path):
    """--out ~ ran rm -rf ~/bin."""
    home = tmp_path / 'home'
    (home / 'bin').mkdir(parents=True)
    (home / 'bin' / 'mine').write_text('precious')
    lab_runner = tmp_path / 'tc' / 'lab_runner'
    lab_runner.parent.mkdir()
    lab_runner.write_text('#!/bin/sh\n')
    lab_runner.chmod(0o755)
    env = dict(os.environ, TESTCASES=str(lab_runner.parent), HDR='/nonexistent', KSRC='/nonexistent')
    proc = subprocess.run(['bash', str(SCRIPT), '01', '--out', str(home)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert (home / 'bin' / 'mine').read_text() == 'precious'
    assert 'holds files this script did not make' in proc.stderr
    # A directory the script made it empties again the next time.
    out = tmp_path / 'out'
    exercise(tmp_path, '01', '--out', str(out))
    assert (out / '.kevent-exercise-out').exists()
