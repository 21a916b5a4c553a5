import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shutil
import subprocess

TESTCASES = Path(__file__).resolve().parents[2] / 'testcases'


def build_testcase(tmp_path_factory, name: str) -> Path:
    """testcases/NAME.c built for this machine (gcc -Wall -Wextra -Werror),
    for the tests of the testcases that run here as well as in guests;
    skips the test where there is no gcc."""
    import pytest
    if not shutil.which('gcc'):
        pytest.skip('no gcc')
    out = tmp_path_factory.mktemp(name) / name
    subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror', '-o', str(out),
                    str(TESTCASES / f'{name}.c')], check=True)
    return out
