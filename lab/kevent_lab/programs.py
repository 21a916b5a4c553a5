"""Which programs a lab's run lines may name, checked before anything starts.

A guest has the testcases (testcases/*.c, built into /opt/kevent), the
kernel's own selftests that testcases/selftests.list names (there too), and, for
an exercise's lab (ex-NN-NAME), that exercise's checkers (exercises/NN-NAME/
ex*.c) and the student's answer (exNN_answer). A run line naming anything
else (kevent_core_tset) would only fail inside the guest, with
"printed no KTAP results (exit: status=127)".
"""

from __future__ import annotations

import difflib
import re
import shutil
from pathlib import Path

from .topology import Topology, TopologyError

EXERCISE_LAB = re.compile(r'ex-(([0-9]{2})-[a-z0-9-]+)', re.ASCII)


def known(top: Path, lab: str) -> set[str]:
    """The programs a guest of lab @lab has, by name; @top is the checkout."""
    progs = {p.stem for p in (top / 'testcases').glob('*.c')}
    progs |= selftests(top / 'testcases' / 'selftests.list')
    m = EXERCISE_LAB.fullmatch(lab)
    if m:
        progs |= {p.stem for p in (top / 'exercises' / m.group(1)).glob('ex*.c')}
        progs.add(f'ex{m.group(2)}_answer')
    return progs


def selftests(path: Path) -> set[str]:
    """The programs of a selftests list: `DIR PROGRAM` lines, # comments."""
    if not path.exists():
        return set()
    return {words[1] for line in path.read_text().splitlines()
            if len(words := line.split('#', 1)[0].split()) == 2}


# The program a wrapper runs (testcases/ksft_run.c: ksft_run [OPTIONS] --
# PROGRAM ...) is checked too: a misspelt selftest would fail alike on both
# kernels that lab suites compares, and so would never show.
WRAPPER = 'ksft_run'
# What every guest has besides the testcases: its busybox's shell.
GUEST_BUILTINS = {'sh'}


def _unknown(prog: str, progs: set[str], tools: bool) -> str | None:
    """Why a guest cannot run @prog, or None when it can."""
    if prog in progs or prog in GUEST_BUILTINS:
        return None
    if tools and '/' not in prog and shutil.which(prog):
        return None          # this machine's program, on a tools host's PATH
    near = difflib.get_close_matches(prog, sorted(progs), n=1)
    hint = f'; did you mean {near[0]}?' if near else ''
    where = ' or of this machine (the host has tools)' if tools else ''
    return (f'no program {prog!r} in the guest: a run names a testcase of testcases/, a selftest '
            f'of testcases/selftests.list{where} (or of the exercise, in an ex- lab){hint}')


def check(topo: Topology, top: Path, path: str) -> None:
    """Raises TopologyError at the first run line naming an unknown program."""
    progs = known(top, topo.name)
    for host in topo.hosts.values():
        for run in host.runs:
            prog = run.argv[0]
            why = None if prog in progs else _unknown(prog, progs, False)
            if why is None and prog == WRAPPER:
                if '--' not in run.argv[1:-1]:
                    why = f'{WRAPPER} needs -- PROGRAM [ARGS...]'
                else:
                    why = _unknown(run.argv[run.argv.index('--') + 1], progs, host.tools)
            if why:
                raise TopologyError(path, run.line, why)
