"""The exercises of docs/exercises/ are complete and consistent: each has a
page, a starter, a reference solution kept apart, a lab that parses, and a
signature saying that the untouched starter fails; the index lists them;
the pages' links into internals.md and abi.md lead to real sections and the
kernel functions they name are in the series; exercise 05's bug applies.

The labs themselves run in `make exercises-check` (part of `make test`)."""
import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kevent_lab import expect, topology

TOP = Path(__file__).resolve().parents[2]
EXERCISES = sorted(p for p in (TOP / 'exercises').iterdir() if re.match(r'^\d\d-', p.name))
DOCS = TOP / 'docs' / 'exercises'
LABS = TOP / 'lab' / 'labs'
SRC = TOP / 'build' / 'src'

ids = [p.name for p in EXERCISES]


def starter_of(ex: Path) -> Path:
    found = [ex / n for n in ('answer.c', 'answer.txt') if (ex / n).exists()]
    assert len(found) == 1, f'{ex.name}: one starter, answer.c or answer.txt'
    return found[0]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    s = heading.strip().lower().replace('`', '')
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(doc: Path) -> set[str]:
    return {slug(m) for m in re.findall(r'^#+ (.+)$', doc.read_text(), re.M)}


def test_at_least_five_exercises():
    assert len(EXERCISES) >= 5


@pytest.mark.parametrize('ex', EXERCISES, ids=ids)
def test_page_starter_solution_and_lab(ex):
    page = DOCS / f'{ex.name}.md'
    assert page.exists(), f'no page {page}'
    num = ex.name[:2]
    assert f'make exercise EX={num}' in page.read_text(), 'the page gives its check command'
    starter = starter_of(ex)
    solution = ex / 'solution' / starter.name
    assert solution.exists(), f'no reference solution {solution}'
    assert 'REFERENCE SOLUTION' in solution.read_text(), 'the solution is marked for teachers'
    assert 'REFERENCE SOLUTION' not in starter.read_text()
    assert 'TODO' in starter.read_text(), 'the starter says what the student writes'
    assert list(ex.glob('ex*.c')), 'a checker program'


@pytest.mark.parametrize('ex', EXERCISES, ids=ids)
def test_lab_parses_and_runs_what_exists(ex):
    lab = LABS / f'ex-{ex.name}'
    topo = topology.load(lab / 'lab.conf')
    programs = {p.stem for p in ex.glob('ex*.c')} | {f'ex{ex.name[:2]}_answer'}
    progs_line = (TOP / 'testcases' / 'Makefile').read_text()
    for host in topo.hosts.values():
        for run in host.runs:
            prog = run.argv[0]
            assert prog in programs or re.search(rf'\b{prog}\b', progs_line), \
                f'{lab.name}: {prog} is neither a checker, the answer nor a testcase'
    answer_runs = [r for h in topo.hosts.values() for r in h.runs
                   if any(f'ex{ex.name[:2]}_answer' in a for a in r.argv)]
    assert answer_runs, 'the lab runs or checks the answer'


@pytest.mark.parametrize('ex', EXERCISES, ids=ids)
def test_starter_signature_records_failures(ex):
    """A check that cannot fail is a defect: the starter's recorded outcome
    has failures in the exercise's own suites, not only in the kernel's."""
    sig = expect.load(LABS / f'ex-{ex.name}' / 'expected')
    own = {k: v for k, v in sig.items() if k.split()[1] not in ('kernel', 'kevent_core')}
    assert 'fail' in own.values()
    assert all(v == 'pass' for k, v in sig.items() if k.split()[1] == 'kernel')


def test_index_lists_every_exercise():
    index = (DOCS / 'README.md').read_text()
    for ex in EXERCISES:
        assert f']({ex.name}.md)' in index, f'the index does not link {ex.name}.md'
    for page in DOCS.glob('[0-9][0-9]-*.md'):
        assert (TOP / 'exercises' / page.stem).is_dir(), f'{page.name} has no exercise'


def test_links_into_the_docs_lead_to_sections():
    targets = {'internals.md': anchors(TOP / 'docs' / 'internals.md'),
               'abi.md': anchors(TOP / 'docs' / 'abi.md')}
    seen = 0
    for page in sorted(DOCS.glob('*.md')):
        for doc, anchor in re.findall(r'\]\(\.\./(internals\.md|abi\.md)#([^)]+)\)', page.read_text()):
            assert anchor in targets[doc], f'{page.name}: no section #{anchor} in {doc}'
            seen += 1
    assert seen >= 10


def test_functions_named_exist():
    """Each kevent_*() a page names is in the series or in the user-space
    helpers (testcases/include/kevent_user.h)."""
    series = '\n'.join(p.read_text() for p in (TOP / 'kernel-patches').glob('*.patch'))
    helpers = (TOP / 'testcases' / 'include' / 'kevent_user.h').read_text()
    for page in sorted(DOCS.glob('[0-9][0-9]-*.md')):
        for fn in set(re.findall(r'`(kevent_\w+)\(\)`', page.read_text())):
            assert (re.search(rf'^\+.*\b{fn}\(', series, re.M)
                    or re.search(rf'\b{fn}\(', helpers)), f'{page.name}: {fn}() exists nowhere'


def test_makefile_wires_the_check_into_make_test():
    mk = (TOP / 'Makefile').read_text()
    test_recipe = mk[mk.index('\ntest:'):mk.index('\n# ---- benchmarks')]
    assert 'exercises-check' in test_recipe
    assert re.search(r'^exercise: ', mk, re.M) and re.search(r'^exercises-check: ', mk, re.M)


def test_bug_patch_applies_to_build_src():
    patch = TOP / 'exercises' / '05-bug' / 'bug.patch.gz'
    text = gzip.decompress(patch.read_bytes())
    assert b'kernel/kevent/' in text
    if not (SRC / '.git').exists() or shutil.which('git') is None:
        pytest.skip(f'{SRC} is not a git tree (make kernel-dev makes one): cannot try the bug patch')
    proc = subprocess.run(['git', '-C', str(SRC), 'apply', '--check', '-'], input=text,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
