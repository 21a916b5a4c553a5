"""The error tables of docs/abi.md against the tests in testcases/*.c.

Every row of a table in the "## Errors" section names the tests that check
it, or says why no test can: "— (reason)". Each named test must exist, as
kselftest_harness.h names it (TEST_F(f, name) is "f.name", TEST(name) is
"global.name"); a "(poll)" after names says which program defines them
(testcases/kevent_poll_test.c), and a name that several programs define
needs one. A named test must mention an errno of its row, and every test
named "*_is_e<errno>" must be named by a row documenting that errno: so the
tables and the bad-input tests match one for one.

Pure Python: it reads files, builds nothing and boots nothing.
"""
import errno
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ABI = ROOT / 'docs' / 'abi.md'
TESTCASES = ROOT / 'testcases'

# What a missing test must say instead: a dash and a reason in parentheses.
REASON = re.compile(r'^—\s*\((?P<why>[^)]*\S[^)]*)\)\s*$')
TEST_NAME = re.compile(r'^[A-Za-z_]\w*(\.[A-Za-z_]\w*){1,2}$')
PROGRAM = re.compile(r'^\((?P<program>[a-z0-9_]+)\)')
# Every name, aliases too (errno.errorcode keeps one of EOPNOTSUPP and ENOTSUP).
ERRNO_NAMES = {name for name in dir(errno) if re.match(r'^E[A-Z0-9]+$', name)}
ERRNO_TEST = re.compile(r'_is_(?P<err>e[a-z0-9]+)$')


class Row:
    def __init__(self, line, cells, names):
        self.line = line              # line number in the document
        self.cells = cells            # condition, errno (or what happens), test
        self.names = names            # [(test name, program or None)]

    @property
    def errnos(self):
        """The errnos the row documents (none for "no error" rows)."""
        middle = ' '.join(self.cells[1:-1])
        return set(re.findall(r'\bE[A-Z0-9]+\b', middle)) & ERRNO_NAMES


def split_cells(line):
    """The cells of a table line; a | inside `code` does not split."""
    cells, cell, code = [], '', False
    for ch in line.strip().strip('|'):
        if ch == '`':
            code = not code
        if ch == '|' and not code:
            cells.append(cell.strip())
            cell = ''
        else:
            cell += ch
    cells.append(cell.strip())
    return cells


def parse_test_cell(cell):
    """[(name, program)] of a test cell, or an error message."""
    if cell.startswith('—') or not cell:
        if REASON.match(cell):
            return []
        return 'names no test and gives no reason: write "— (why not)"'
    names, pending, rest = [], [], cell
    while rest:
        rest = rest.lstrip(' ,')
        if not rest:
            break
        m = re.match(r'`([^`]*)`', rest)
        if m:
            if not TEST_NAME.match(m.group(1)):
                return f'`{m.group(1)}` is not a test name (FIXTURE.test)'
            pending.append(m.group(1))
            rest = rest[m.end():]
            continue
        m = PROGRAM.match(rest)
        if m and pending:
            # A program applies to the names since the previous one.
            names += [(n, m.group('program')) for n in pending]
            pending = []
            rest = rest[m.end():]
            continue
        return f'unexpected text {rest!r}'
    return names + [(n, None) for n in pending]


def error_tables(text):
    """Rows of the tables in the "## Errors" section, and problems found."""
    rows, problems = [], []
    lines = text.splitlines()
    try:
        start = lines.index('## Errors')
    except ValueError:
        return rows, ['no "## Errors" section']
    i = start + 1
    while i < len(lines) and not lines[i].startswith('## '):
        if not lines[i].startswith('|'):
            i += 1
            continue
        header = [c.lower() for c in split_cells(lines[i])]
        i += 2                                  # the header and |---|
        if 'test' not in header or header.index('test') != len(header) - 1:
            problems.append(f'line {i - 1}: a table without a last "test" column')
            while i < len(lines) and lines[i].startswith('|'):
                i += 1
            continue
        while i < len(lines) and lines[i].startswith('|'):
            cells = split_cells(lines[i])
            if len(cells) != len(header):
                problems.append(f'line {i + 1}: {len(cells)} cells, not {len(header)}')
            else:
                names = parse_test_cell(cells[-1])
                if isinstance(names, str):
                    problems.append(f'line {i + 1}: {names}: {lines[i]}')
                else:
                    rows.append(Row(i + 1, cells, names))
            i += 1
    return rows, problems


def strip_comments(source):
    source = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), source, flags=re.S)
    return re.sub(r'//[^\n]*', '', source)


HARNESS_TEST = re.compile(
    r'^(?P<macro>TEST|TEST_SIGNAL|TEST_F|TEST_F_SIGNAL|TEST_F_TIMEOUT)\s*'
    r'\(\s*(?P<a>\w+)\s*(?:,\s*(?P<b>\w+)\s*)?(?:,[^)]*)?\)', re.M)


FUNCTION = re.compile(r'^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w \t*]*?\b(?P<name>\w+)\s*'
                      r'\([^;{)]*(?:\)[^;{]*?)?\)\s*\{', re.M)


def body_at(source, pos):
    """The text from @pos to the end of the function (a "}" alone on a line)."""
    end = source.find('\n}', pos)
    return source[pos:end if end >= 0 else len(source)]


def with_helpers(body, functions, seen=()):
    """@body and the bodies of the file's functions it calls, transitively."""
    text = body
    for name, helper in functions.items():
        if name not in seen and re.search(rf'\b{name}\s*\(', body):
            seen = seen + (name,)
            text += with_helpers(helper, functions, seen)
    return text


def harness_tests(source):
    """{test name: its body, with the helpers it calls} of one harness program."""
    source = strip_comments(source)
    variants = {}
    for f, v in re.findall(r'^FIXTURE_VARIANT_ADD\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)', source, re.M):
        variants.setdefault(f, []).append(v)
    functions = {m.group('name'): body_at(source, m.end()) for m in FUNCTION.finditer(source)
                 if not HARNESS_TEST.match(source, m.start())}
    tests = {}
    for m in HARNESS_TEST.finditer(source):
        body = with_helpers(body_at(source, m.end()), functions)
        if m.group('macro') in ('TEST', 'TEST_SIGNAL'):
            tests[f"global.{m.group('a')}"] = body
            continue
        fixture, name = m.group('a'), m.group('b')
        for v in variants.get(fixture, [None]):
            tests['.'.join(p for p in (fixture, v, name) if p)] = body
    return tests


def program_of(path):
    """"kevent_poll_test.c" is the program "poll" (and "kevent_poll_test")."""
    stem = path.stem
    m = re.match(r'^kevent_(\w+)_test$', stem)
    return {stem, m.group(1)} if m else {stem}


def load_tests(testcases):
    """{program stem: {test: body}} of every harness program."""
    programs = {}
    for path in sorted(Path(testcases).glob('*.c')):
        source = path.read_text(errors='replace')
        if 'kselftest_harness.h' in source:
            programs[path.stem] = harness_tests(source)
    return programs


def check(text, programs):
    """Every problem of the error tables of @text against @programs."""
    rows, problems = error_tables(text)
    aliases = {}
    for stem in programs:
        for alias in program_of(Path(stem + '.c')):
            aliases[alias] = stem
    named = {}                                  # (stem, test) -> errnos of its rows
    for row in rows:
        for name, program in row.names:
            if program is not None:
                stem = aliases.get(program)
                if stem is None:
                    problems.append(f'line {row.line}: no program ({program}) in testcases/')
                    continue
                if name not in programs[stem]:
                    problems.append(f'line {row.line}: `{name}` is not a test of {stem}')
                    continue
            else:
                where = [s for s, tests in programs.items() if name in tests]
                if not where:
                    problems.append(f'line {row.line}: `{name}` is not a test in testcases/')
                    continue
                if len(where) > 1:
                    problems.append(f'line {row.line}: `{name}` is in {", ".join(where)}: '
                                    'say which, e.g. (poll)')
                    continue
                stem = where[0]
            body = programs[stem][name]
            if row.errnos and not any(re.search(rf'\b{e}\b', body) for e in row.errnos):
                problems.append(f'line {row.line}: `{name}` ({stem}) never mentions '
                                f'{" or ".join(sorted(row.errnos))}')
            named.setdefault((stem, name), set()).update(row.errnos)
    for stem, tests in programs.items():
        for name in tests:
            m = ERRNO_TEST.search(name)
            if not m or m.group('err').upper() not in ERRNO_NAMES:
                continue
            err = m.group('err').upper()
            if err not in named.get((stem, name), set()):
                problems.append(f'{stem}: `{name}` is in no row of docs/abi.md that '
                                f'documents {err}')
    return rows, problems


# The real document and tests.

def test_every_row_names_tests_that_exist():
    rows, problems = check(ABI.read_text(), load_tests(TESTCASES))
    assert not problems, '\n'.join(problems)
    # Not vacuous: the section was found and most rows name tests.
    assert len(rows) >= 50
    assert sum(1 for r in rows if r.names) >= 45


def test_the_tests_are_found():
    programs = load_tests(TESTCASES)
    assert 'queue.null_control_is_efault' in programs['kevent_core_test']
    assert 'global.closed_fd_is_ebadf' in programs['kevent_poll_test']
    assert 'naio.sockopt' in programs['kevent_naio_test']


# The checker itself, on small made-up documents and programs.

PROGRAMS = {
    'kevent_core_test': {
        'queue.null_is_efault': 'EXPECT_FAILS_WITH(EFAULT, f(NULL));',
        'queue.zero_is_accepted': 'EXPECT_EQ(0, f(0));',
        'global.bad_fd_is_ebadf': 'EXPECT_EQ(EBADF, errno);',
    },
    'kevent_poll_test': {
        'global.bad_fd_is_ebadf': 'EXPECT_EQ(EBADF, uk.ret_data[0]);',
    },
}


def doc(*rows):
    return ('# ABI\n\n## Errors\n\n| condition | errno | test |\n|---|---|---|\n'
            + ''.join(f'| {c} | {e} | {t} |\n' for c, e, t in rows)
            + '\n## Limits\n\n| a | b |\n|---|---|\n| x | y |\n')


GOOD = [
    ('NULL', '`EFAULT`', '`queue.null_is_efault`'),
    ('zero', 'no error', '`queue.zero_is_accepted`'),
    ('bad fd', '`EBADF`', '`global.bad_fd_is_ebadf` (core), `global.bad_fd_is_ebadf` (poll)'),
    ('no memory', '`ENOMEM`', '— (no fault injection)'),
]


def problems_of(*rows, programs=PROGRAMS):
    return check(doc(*rows), programs)[1]


def test_a_good_table_passes():
    rows, problems = check(doc(*GOOD), PROGRAMS)
    assert problems == []
    assert [len(r.names) for r in rows] == [1, 1, 2, 0]
    assert rows[2].names[1] == ('global.bad_fd_is_ebadf', 'poll')


def test_a_made_up_test_fails():
    problems = problems_of(*GOOD, ('made up', '`EINVAL`', '`queue.no_such_test`'))
    assert len(problems) == 1
    assert '`queue.no_such_test` is not a test' in problems[0]


@pytest.mark.parametrize('cell', ['', '—', '— ()', 'later', '`queue.null_is_efault` soon'])
def test_a_row_without_test_or_reason_fails(cell):
    problems = problems_of(*GOOD, ('untested', '`EINVAL`', cell))
    assert len(problems) == 1, problems


def test_a_name_in_several_programs_needs_one():
    rows = [r if r[0] != 'bad fd' else ('bad fd', '`EBADF`', '`global.bad_fd_is_ebadf`')
            for r in GOOD]
    problems = [p for p in problems_of(*rows) if 'say which' in p]
    assert problems == ['line 9: `global.bad_fd_is_ebadf` is in kevent_core_test, '
                        'kevent_poll_test: say which, e.g. (poll)']


def test_the_program_must_define_the_test():
    rows = GOOD + [('NULL again', '`EFAULT`', '`queue.null_is_efault` (poll)')]
    assert problems_of(*rows) == [
        'line 11: `queue.null_is_efault` is not a test of kevent_poll_test']
    rows = GOOD + [('NULL again', '`EFAULT`', '`queue.null_is_efault` (nosuch)')]
    assert problems_of(*rows) == ['line 11: no program (nosuch) in testcases/']


def test_a_test_must_mention_the_errno_of_its_row():
    problems = problems_of(*GOOD, ('other', '`EINVAL`', '`queue.null_is_efault`'))
    assert len(problems) == 1 and 'never mentions EINVAL' in problems[0]


def test_an_errno_test_must_be_in_a_row_of_its_errno():
    programs = dict(PROGRAMS, kevent_naio_test={'naio.size_is_e2big': 'E2BIG'})
    problems = problems_of(*GOOD, programs=programs)
    assert problems == ['kevent_naio_test: `naio.size_is_e2big` is in no row of '
                        'docs/abi.md that documents E2BIG']


def test_a_table_needs_a_test_column():
    text = doc(*GOOD).replace('## Limits', '| condition | errno |\n|---|---|\n| x | `EIO` |\n\n## Limits')
    problems = check(text, PROGRAMS)[1]
    assert len(problems) == 1 and 'without a last "test" column' in problems[0]


def test_a_helper_that_a_test_calls_counts_as_its_code():
    source = '''
static void expect_fault(struct __test_metadata *_metadata, int fd)
{
	EXPECT_EQ(EFAULT, errno);
}

static int unrelated(void)
{
	return ENOSPC;
}

TEST(uses_a_helper)
{
	expect_fault(_metadata, 3);
}
'''
    body = harness_tests(source)['global.uses_a_helper']
    assert 'EFAULT' in body and 'ENOSPC' not in body


def test_harness_names():
    source = '''
#include "kselftest_harness.h"
FIXTURE(q) { int fd; };
FIXTURE(v) { int fd; };
FIXTURE_VARIANT(v) { int x; };
FIXTURE_VARIANT_ADD(v, one) { .x = 1 };
/* TEST(in_a_comment) */
TEST(plain)
{
	EXPECT_EQ(EBADF, errno);
}

TEST_F(q, fixtured)
{
	EXPECT_EQ(EINVAL, errno);
}

TEST_F_TIMEOUT(q, slow, 60)
{
}

TEST_F(v, varied)
{
}
'''
    tests = harness_tests(source)
    assert sorted(tests) == ['global.plain', 'q.fixtured', 'q.slow', 'v.one.varied']
    assert 'EBADF' in tests['global.plain'] and 'EINVAL' not in tests['global.plain']
    assert 'EINVAL' in tests['q.fixtured']


def test_errno_aliases_are_errnos():
    assert {'EOPNOTSUPP', 'ENOTSUP', 'EBADFD', 'E2BIG'} <= ERRNO_NAMES


def test_cells_split_outside_code_only():
    assert split_cells('| `a | b` | c |') == ['`a | b`', 'c']
