"""The runs the docs show are real: docs/quickstart.md's result table must
agree with the default lab's signature (lab/labs/default/expected), which
make test compares every run of that lab with."""
import re
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
