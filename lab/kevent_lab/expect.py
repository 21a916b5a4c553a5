"""A lab's expected outcome (its signature), as Netkit's ltest keeps one.

A signature is a text file with one line per test, `HOST SUITE NAME STATUS`,
sorted. Comparing a run against it tells which tests changed status, which
are missing and which are new, so a lab whose outcome is known (a crash on
purpose included) is checked as a whole, and a test that silently stops
running is noticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .results import HostResult


@dataclass
class Comparison:
    matched: int = 0
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.new)

    def report(self) -> str:
        lines = [f'signature: {self.matched} tests as expected']
        for title, items in (('changed', self.changed), ('missing', self.missing),
                             ('new (not in the signature)', self.new)):
            if items:
                lines.append(f'{title}:')
                lines += [f'  {i}' for i in items]
        return '\n'.join(lines)


NUMBERED = re.compile(r' \[[0-9]{1,6}\]$', re.ASCII)


def _numbered(pairs) -> dict[str, str]:
    """(key, status) pairs as a signature; a key seen again gets [2], [3], ...

    Tests with one name (a program may print `not ok 1 x` and `ok 2 x`)
    stay apart: a later `ok` cannot hide an earlier `not ok`. Run and file
    are numbered alike: a number already there is taken off first."""
    sig: dict[str, str] = {}
    seen: dict[str, int] = {}
    for key, status in pairs:
        key = NUMBERED.sub('', ' '.join(key.split()))
        seen[key] = seen.get(key, 0) + 1
        sig[key if seen[key] == 1 else f'{key} [{seen[key]}]'] = status
    return sig


def signature(hosts: list[HostResult]) -> dict[str, str]:
    return _numbered((f'{t.host} {t.suite} {t.name}', t.status) for h in hosts for t in h.tests)


def render(sig: dict[str, str]) -> str:
    return ''.join(f'{key} {status}\n' for key, status in sorted(sig.items()))


def parse(text: str, path: str = '<signature>') -> dict[str, str]:
    pairs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if len(words) < 4 or words[-1] not in ('pass', 'fail', 'skip'):
            raise ValueError(f'{path}:{lineno}: expected HOST SUITE NAME pass|fail|skip')
        pairs.append((' '.join(words[:-1]), words[-1]))
    return _numbered(pairs)


def compare(expected: dict[str, str], actual: dict[str, str]) -> Comparison:
    c = Comparison()
    for key, status in sorted(expected.items()):
        if key not in actual:
            c.missing.append(f'{key} (expected {status})')
        elif actual[key] != status:
            c.changed.append(f'{key}: expected {status}, got {actual[key]}')
        else:
            c.matched += 1
    c.new = [f'{key} {actual[key]}' for key in sorted(actual) if key not in expected]
    return c


def load(path: Path) -> dict[str, str]:
    return parse(path.read_text(), str(path))
