"""Which programs a lab's run lines may name, checked before anything starts.

A guest has the testcases (testcases/*.c, built into /opt/kevent) and, for
an exercise's lab (ex-NN-NAME), that exercise's checkers (exercises/NN-NAME/
ex*.c) and the student's answer (exNN_answer). A run line naming anything
else (kevent_core_tset) would only fail inside the guest, with
"printed no KTAP results (exit: status=127)".
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from .topology import Topology, TopologyError

EXERCISE_LAB = re.compile(r'ex-(([0-9]{2})-[a-z0-9-]+)', re.ASCII)


def known(top: Path, lab: str) -> set[str]:
    """The programs a guest of lab @lab has, by name; @top is the checkout."""
    progs = {p.stem for p in (top / 'testcases').glob('*.c')}
    m = EXERCISE_LAB.fullmatch(lab)
    if m:
        progs |= {p.stem for p in (top / 'exercises' / m.group(1)).glob('ex*.c')}
        progs.add(f'ex{m.group(2)}_answer')
    return progs


def check(topo: Topology, top: Path, path: str) -> None:
    """Raises TopologyError at the first run line naming an unknown program."""
    progs = known(top, topo.name)
    for host in topo.hosts.values():
        for run in host.runs:
            prog = run.argv[0]
            if prog in progs:
                continue
            near = difflib.get_close_matches(prog, sorted(progs), n=1)
            hint = f'; did you mean {near[0]}?' if near else ''
            raise TopologyError(path, run.line, f'no program {prog!r} in the guest: a run names a '
                                f'testcase of testcases/ (or of the exercise, in an ex- lab){hint}')
