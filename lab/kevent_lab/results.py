"""Writes a lab's results: summary.json, junit.xml, HOST.ktap and a table."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .guest_text import printable


@dataclass
class TestRecord:
    __test__ = False             # not a pytest class
    host: str
    suite: str
    name: str
    status: str                  # 'pass', 'fail', 'skip'
    duration_s: float | None
    message: str = ''


@dataclass
class HostResult:
    name: str
    console: str
    userspace_s: float | None
    ended_s: float | None
    tests: list[TestRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def counts(tests: list[TestRecord]) -> dict[str, int]:
    return {word: sum(t.status == status for t in tests)
            for word, status in (('passed', 'pass'), ('failed', 'fail'), ('skipped', 'skip'))}


def count_line(c: dict[str, int]) -> str:
    line = f'{c["passed"]} passed, {c["failed"]} failed'
    if c.get('skipped'):
        line += f', {c["skipped"]} skipped'
    return line


def suites_of(tests: list[TestRecord]) -> dict[str, list[TestRecord]]:
    out: dict[str, list[TestRecord]] = {}
    for t in tests:
        out.setdefault(t.suite, []).append(t)
    return out


def summary(lab: str, hosts: list[HostResult], duration_s: float) -> dict:
    tests = [t for h in hosts for t in h.tests]
    out = {'lab': lab, 'duration_s': round(duration_s, 3),
           'tests': [{'host': t.host, 'suite': t.suite, 'name': t.name, 'status': t.status,
                      'duration_s': t.duration_s} for t in tests]}
    out.update(counts(tests))
    out['hosts'] = {h.name: {'console': h.console, 'userspace_s': h.userspace_s,
                             'ended_s': h.ended_s, 'problems': h.problems,
                             'failures': {f'{t.suite}.{t.name}': t.message
                                          for t in h.tests if t.status == 'fail'}}
                    for h in hosts}
    return out


def _x(text: str) -> str:
    """Text XML 1.0 can carry (the parsers escape what a guest printed; this
    holds for any other source too)."""
    return printable(text)


def junit(lab: str, hosts: list[HostResult]) -> ET.ElementTree:
    root = ET.Element('testsuites', name=_x(f'kevent-lab {lab}'))
    for h in hosts:
        for suite, tests in suites_of(h.tests).items():
            c = counts(tests)
            el = ET.SubElement(root, 'testsuite', name=_x(f'{h.name}.{suite}'), tests=str(len(tests)),
                               failures=str(c['failed']), skipped=str(c['skipped']),
                               time=f'{sum(t.duration_s or 0 for t in tests):.6f}')
            for t in tests:
                case = ET.SubElement(el, 'testcase', classname=_x(f'{h.name}.{suite}'), name=_x(t.name),
                                     time=f'{t.duration_s or 0:.6f}')
                if t.status == 'fail':
                    ET.SubElement(case, 'failure', message=_x((t.message.split('\n') or ['failed'])[0])
                                  ).text = _x(t.message)
                elif t.status == 'skip':
                    ET.SubElement(case, 'skipped', message=_x(t.message))
    ET.indent(root)
    return ET.ElementTree(root)


def host_ktap(h: HostResult) -> str:
    """One KTAP document for a host: a subtest per suite."""
    suites = suites_of(h.tests)
    out = ['KTAP version 1', f'1..{len(suites)}']
    for i, (suite, tests) in enumerate(suites.items(), 1):
        out += ['    KTAP version 1', f'    # Subtest: {suite}', f'    1..{len(tests)}']
        for j, t in enumerate(tests, 1):
            for line in t.message.splitlines() if t.status == 'fail' else []:
                out.append(f'    # {line}')
            word = 'not ok' if t.status == 'fail' else 'ok'
            skip = ' # SKIP ' + t.message if t.status == 'skip' else ''
            out.append(f'    {word} {j} {t.name}{skip}')
        bad = any(t.status == 'fail' for t in tests)
        out.append(f'{"not ok" if bad else "ok"} {i} {suite}')
    return '\n'.join(out) + '\n'


def table(hosts: list[HostResult]) -> str:
    """The table the terminal shows; nothing a guest printed reaches the
    terminal raw (an escape sequence in a test name is shown as \\x1b)."""
    return printable(_table(hosts))


def _table(hosts: list[HostResult]) -> str:
    rows = [('host', 'suite', 'passed', 'failed', 'skipped', 'time')]
    for h in hosts:
        for suite, tests in suites_of(h.tests).items():
            c = counts(tests)
            rows.append((h.name, suite, str(c['passed']), str(c['failed']), str(c['skipped']),
                         f'{sum(t.duration_s or 0 for t in tests):.2f}s'))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ['  '.join(cell.ljust(w) if i < 2 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, '-' * len(lines[0]))
    fails = [t for h in hosts for t in h.tests if t.status == 'fail']
    if fails:
        lines.append('')
        lines.append('FAILED:')
        for t in fails:
            lines.append(f'  {t.host}: {t.suite}: {t.name}')
            for m in t.message.splitlines()[:30]:
                lines.append(f'      {m}')
    for h in hosts:
        for p in h.problems:
            lines.append(f'  {h.name}: {p}')
    return '\n'.join(lines)


def write_all(results: Path, lab: str, hosts: list[HostResult], duration_s: float) -> dict:
    results.mkdir(parents=True, exist_ok=True)
    data = summary(lab, hosts, duration_s)
    (results / 'summary.json').write_text(json.dumps(data, indent=2) + '\n')
    junit(lab, hosts).write(results / 'junit.xml', encoding='unicode', xml_declaration=True)
    for h in hosts:
        (results / f'{h.name}.ktap').write_text(host_ktap(h))
    return data


def load(path: Path) -> tuple[str, list[HostResult], float]:
    """A run's summary.json back as (lab, hosts, duration): what labctl merge
    joins. A skipped test's reason is not in the summary and comes back empty."""
    data = json.loads(path.read_text())
    hosts = {}
    for name, h in data['hosts'].items():
        hosts[name] = HostResult(name, h.get('console', ''), h.get('userspace_s'), h.get('ended_s'),
                                 problems=list(h.get('problems', [])))
    for t in data['tests']:
        h = hosts.get(t['host'])
        if h is None:
            raise ValueError(f'{path}: test of host {t["host"]!r}, which the summary does not list')
        message = data['hosts'][t['host']].get('failures', {}).get(f'{t["suite"]}.{t["name"]}', '')
        h.tests.append(TestRecord(t['host'], t['suite'], t['name'], t['status'], t.get('duration_s'),
                                  message))
    return data['lab'], list(hosts.values()), float(data.get('duration_s', 0))


def merge(parts: list[tuple[str, list[HostResult], float]], lab: str) -> tuple[list[HostResult], float]:
    """The hosts of several runs of one lab's parts, each host from one run."""
    hosts: dict[str, HostResult] = {}
    for part_lab, part_hosts, _ in parts:
        if part_lab != lab:
            raise ValueError(f'a run of lab {part_lab} is not a part of lab {lab}')
        for h in part_hosts:
            if h.name in hosts:
                raise ValueError(f'host {h.name} ran in two of the parts')
            hosts[h.name] = h
    return list(hosts.values()), max((d for _, _, d in parts), default=0.0)
