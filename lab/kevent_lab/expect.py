"""A lab's expected outcome (its signature), as Netkit's ltest keeps one.

A signature is a text file with one line per test, `HOST SUITE NAME STATUS`,
sorted. Comparing a run against it tells which tests changed status, which
are missing and which are new, so a lab whose outcome is known (a crash on
purpose included) is checked as a whole, and a test that silently stops
running is noticed.

A line may end in `cpu=FLAG`: the test needs that CPU feature of the host
(a flag of /proc/cpuinfo, which the guests' CPUID reports too, as `avx512f`).
Where the host has it the STATUS is expected; where not, `skip`. So a
signature holds on every host, and a test that skips where the host has the
feature still fails it.
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


def render(sig: dict[str, str], kept: dict[str, tuple[str, str]] | None = None) -> str:
    """@sig as a signature; a test of @kept (conditions()) keeps its line."""
    kept = kept or {}
    lines = []
    for key, status in sorted(sig.items()):
        if key in kept:
            lines.append(f'{key} {kept[key][0]} cpu={kept[key][1]}\n')
        else:
            lines.append(f'{key} {status}\n')
    return ''.join(lines)


CPU_FLAG = re.compile(r'cpu=([a-z0-9_]+)', re.ASCII)


def host_cpu_flags(cpuinfo: Path = Path('/proc/cpuinfo')) -> frozenset[str]:
    """The CPU features of this machine, from the first `flags` line."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith('flags'):
            return frozenset(line.split(':', 1)[1].split())
    return frozenset()


def _words(text: str, path: str):
    """(lineno, key words, status, cpu flag or None) of each signature line."""
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        words = line.split()
        flag = None
        if words and words[-1].startswith('cpu='):
            m = CPU_FLAG.fullmatch(words.pop())
            if not m:
                raise ValueError(f'{path}:{lineno}: cpu= takes one flag of /proc/cpuinfo')
            flag = m.group(1)
        if len(words) < 4 or words[-1] not in ('pass', 'fail', 'skip'):
            raise ValueError(f'{path}:{lineno}: expected HOST SUITE NAME pass|fail|skip [cpu=FLAG]')
        yield lineno, words[:-1], words[-1], flag


def parse(text: str, path: str = '<signature>',
          cpu_flags: frozenset[str] | None = None) -> dict[str, str]:
    """The signature in @text; a `cpu=FLAG` line expects `skip` unless FLAG
    is in @cpu_flags (this machine's, when not given)."""
    pairs = []
    for _, key, status, flag in _words(text, path):
        if flag is not None:
            if cpu_flags is None:
                cpu_flags = host_cpu_flags()
            if flag not in cpu_flags:
                status = 'skip'
        pairs.append((' '.join(key), status))
    return _numbered(pairs)


def conditions(text: str, path: str = '<signature>') -> dict[str, tuple[str, str]]:
    """The `cpu=` lines of a signature: key -> (status, flag), so that a new
    signature written on any host keeps them as they are."""
    return {' '.join(key): (status, flag)
            for _, key, status, flag in _words(text, path) if flag is not None}


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
