"""docs/internals.md names every tracepoint of the series, and where each is
emitted: a student must find each function the trace names in the patches."""
import re
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
PATCHES = TOP / 'kernel-patches'
DOC = TOP / 'docs' / 'internals.md'


def series_text() -> str:
    names = [l.split('#')[0].strip() for l in (PATCHES / 'series').read_text().splitlines()]
    return '\n'.join((PATCHES / n).read_text() for n in names if n)


def defined_tracepoints(text: str) -> set[str]:
    """TRACE_EVENT(name, and DEFINE_EVENT(class, name, lines the series adds."""
    found = set(re.findall(r'^\+TRACE_EVENT\((\w+),', text, re.M))
    found |= set(re.findall(r'^\+DEFINE_EVENT\(\w+, (\w+),', text, re.M))
    return found


def doc_table() -> dict[str, str]:
    """tracepoint -> the 'emitted by' cell of the table in docs/internals.md."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r'^\| `(kevent_\w+)` \| `([^`]+)` \|', line)
        if m:
            rows[m[1]] = m[2]
    return rows


def test_the_series_defines_tracepoints_and_calls_them():
    text = series_text()
    tps = defined_tracepoints(text)
    assert len(tps) >= 10
    for tp in tps:
        assert re.search(rf'^\+.*\btrace_{tp}\(', text, re.M), f'trace_{tp}() is never called'


def test_doc_table_names_every_tracepoint():
    assert set(doc_table()) == defined_tracepoints(series_text())


def test_every_function_the_table_names_is_in_the_series():
    text = series_text()
    for tp, where in doc_table().items():
        name = where.rstrip('()')
        if name.startswith('SYSCALL_DEFINE'):
            assert f'+{name}' in text, name
            continue
        # Defined (at the start of a line the series adds) and calling the tracepoint.
        assert re.search(rf'^\+(?:static )?[\w\s\*]*\b{name}\(', text, re.M), f'{tp}: no {name}()'


def check_excerpts(section: str, golden_name: str, at_least: int) -> list[str]:
    """Each code block of @section is the story's header and lines of the
    story the driver prints for golden trace @golden_name; returns that story."""
    from kevent_lab import trace
    golden = TOP / 'lab' / 'tests' / 'golden' / 'trace' / golden_name
    story = trace.story(trace.parse(golden.read_text())).splitlines()
    blocks = re.findall(r'```\n(.*?)```', section, re.S)
    assert len(blocks) >= at_least
    for block in blocks:
        lines = block.rstrip('\n').splitlines()
        assert lines[0] == story[0]
        for line in lines[1:]:
            assert line in story, line
    return story


def test_the_docs_trace_excerpts_are_what_make_lab_trace_prints():
    """docs/internals.md quoted raw trace lines, cut down, in a format no
    command prints: each excerpt line must be a line of the story the driver
    prints for the golden trace, with its header."""
    doc = DOC.read_text()
    section = doc[doc.index('### Reading the trace of `make lab-trace`'):
                  doc.index('### The same exchange on the wire')]
    check_excerpts(section, 'echo_server.trace', 5)
    assert 'one run' in section and 'other' in section   # timings vary, and it says so


def test_the_ring_trace_excerpts_are_what_the_driver_prints():
    """The same for the request/response exchange on the ready ring: each
    excerpt line is a line of the story of its golden trace."""
    doc = DOC.read_text()
    story = check_excerpts(doc[doc.index('### Request and response on the ring, traced'):],
                           'ring_rr_server.trace', 4)
    # What the section claims: one receive posted, none per request.
    starts = [l for l in story if 'kevent_naio_start' in l]
    assert sum('op=recv' in l for l in starts) == 1
    assert sum('op=send' in l for l in starts) == 3
