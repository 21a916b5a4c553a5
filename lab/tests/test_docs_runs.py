"""The runs the docs show are real: docs/quickstart.md's result table must
agree with the default lab's signature (lab/labs/default/expected), which
make test compares every run of that lab with, and be what the driver
printed for a real run, whose summary.json is kept in docs/runs/."""
import re
import sys
from collections import Counter
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]


def signature_counts(lab: str) -> Counter:
    counts: Counter = Counter()
    for line in (TOP / 'lab' / 'labs' / lab / 'expected').read_text().splitlines():
        if line.strip() and not line.startswith('#'):
            host, suite, *_ = line.split()
            counts[host, suite] += 1
    return counts


def test_quickstart_table_matches_the_default_labs_signature():
    doc = (TOP / 'docs' / 'quickstart.md').read_text()
    block = doc[doc.index('host  suite        passed'):]
    block = block[:block.index('```')]
    rows = re.findall(r'^(\w+)\s+(\w+)\s+(\d+)\s+0\s+0\s+[\d.]+s', block, re.M)
    assert len(rows) >= 10
    expected = signature_counts('default')
    for host, suite, passed in rows:
        assert expected[host, suite] == int(passed), f'{host} {suite}: doc {passed}, signature {expected[host, suite]}'
    total = int(re.search(r'^(\d+) passed, 0 failed$', block, re.M).group(1))
    assert total == sum(expected.values())


def test_quickstart_output_is_what_the_driver_printed_for_the_run_it_names():
    """a75a983 edited the table by hand (new counts under an old run's stamp
    and times). The block must be results.table() of the summary.json the
    run wrote, kept as docs/runs/STAMP-default.summary.json: to update it,
    copy a fresh run's summary.json there and the table from its output."""
    sys.path.insert(0, str(TOP / 'lab'))
    from kevent_lab import results
    doc = (TOP / 'docs' / 'quickstart.md').read_text()
    block = doc[doc.index('host  suite        passed'):]
    block = block[:block.index('```')]
    stamp = re.search(r'^results: build/results/runs/(\d{8}-\d{6}-default)/summary\.json', block, re.M).group(1)
    kept = TOP / 'docs' / 'runs' / f'{stamp}.summary.json'
    assert kept.exists(), f'the run {stamp} the docs show has no summary in docs/runs/'
    assert sorted(p.name for p in kept.parent.glob('*-default.summary.json')) == [kept.name], \
        'docs/runs/ keeps the summary of the run the docs show, and no other'
    lab, hosts, duration = results.load(kept)
    printed = results.table(hosts).splitlines()
    shown = [re.sub(r'\s+<- .*$', '', line) for line in block.splitlines()]
    table_rows = [line for line in shown if re.match(r'^(host|-+$|[ab]\s+\w+\s+\d)', line)]
    assert table_rows[:2] == printed[:2]
    for row in table_rows[2:]:
        assert row in printed, f'{row!r} is not what the run printed'
    assert f'lab {lab} took {duration:.1f} s' in shown
    assert f'{sum(len(h.tests) for h in hosts)} passed, 0 failed' in shown
