"""A pure KTAP/TAP parser for the logs a lab run collects.

It reads two kinds of text:
- a host's console, where the kernel prints KTAP (the KUnit suites) behind
  printk timestamps like ``[    0.812345] ``;
- a testcase log written by lab_runner, where every line starts with the
  CLOCK_MONOTONIC time it arrived, and which ends with ``#lab-exit``.

Times, where the text has them, give each test a duration: the time from
the previous result (or the plan) to its own result line. Output that ends
before its plan is complete yields a failing result saying so, so that a
crash is never counted as a pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CONSOLE_TS = re.compile(r'^\[\s*(\d+\.\d+)\] ?(.*)$')
RUNNER_TS = re.compile(r'^(\d+\.\d+) (.*)$')
VERSION = re.compile(r'^(KTAP version \d+|TAP version \d+)\s*$')
PLAN = re.compile(r'^1\.\.(\d+)\s*$')
RESULT = re.compile(r'^(ok|not ok) (\d+)(?: -)?(?: ([^#]*?))?\s*(?:#\s*(.*))?$')
SUBTEST = re.compile(r'^# Subtest: (.*)$')


@dataclass
class Result:
    """One test, or one group of tests with children."""
    name: str
    status: str                     # 'pass', 'fail' or 'skip'
    duration_s: float | None = None
    message: str = ''
    children: list['Result'] = field(default_factory=list)

    def leaves(self, prefix: str = '') -> list[tuple[str, 'Result']]:
        """(path, result) of every test without children, groups joined by '.'."""
        if not self.children:
            return [(prefix, self)]
        out = []
        for child in self.children:
            out.extend(child.leaves(child.name if not prefix else prefix + '.' + child.name))
        return out


def split_time(line: str) -> tuple[float | None, str]:
    """Takes a console or lab_runner timestamp off a line."""
    m = CONSOLE_TS.match(line) or RUNNER_TS.match(line)
    if m:
        return float(m.group(1)), m.group(2)
    return None, line


@dataclass
class _Frame:
    indent: int
    plan: int | None = None
    name: str = ''
    results: list[Result] = field(default_factory=list)
    diag: list[str] = field(default_factory=list)
    last_ts: float | None = None


def _status(word: str, directive: str | None) -> str:
    if directive and directive.upper().startswith('SKIP'):
        return 'skip'
    return 'pass' if word == 'ok' else 'fail'


def _close(frame: _Frame) -> list[Result]:
    """The results of a finished frame, with a failure for missing ones."""
    results = list(frame.results)
    if frame.plan is not None and len(results) < frame.plan:
        # Named the same as output without a plan, so a crash reads alike
        # however much of the output made it to disk.
        results.append(Result(
            '(incomplete)' if results else '(no results)', 'fail', None,
            f'plan was 1..{frame.plan} but only {len(results)} results arrived: '
            'the output ended early (crash, hang or kill?)'))
    return results


def parse(text: str) -> list[Result]:
    """Parses every KTAP document in @text into top-level results."""
    stack: list[_Frame] = []
    top: list[Result] = []

    for raw in text.splitlines():
        ts, line = split_time(raw.rstrip('\n'))
        stripped = line.lstrip(' ')
        indent = (len(line) - len(stripped)) // 4
        if '\t' in line[:len(line) - len(stripped)]:
            continue

        if VERSION.match(stripped):
            while stack and stack[-1].indent >= indent:
                finished = stack.pop()
                if not stack:
                    top.extend(_close(finished))
            stack.append(_Frame(indent, last_ts=ts))
            continue
        if not stack:
            continue
        frame = stack[-1]

        m = PLAN.match(stripped)
        if m and indent == frame.indent:
            frame.plan = int(m.group(1))
            frame.last_ts = ts if ts is not None else frame.last_ts
            continue

        m = SUBTEST.match(stripped)
        if m:
            continue

        m = RESULT.match(stripped)
        if m and indent <= frame.indent:
            # A result at a shallower indent closes the deeper frames:
            # their results are this result's children.
            children: list[Result] = []
            while stack and stack[-1].indent > indent:
                children = _close(stack.pop())
            if not stack or stack[-1].indent != indent:
                continue
            frame = stack[-1]
            word, _num, name, directive = m.groups()
            status = _status(word, directive)
            if children and status == 'pass' and any(
                    leaf.status == 'fail' for _, leaf in Result('', 'pass', children=children).leaves()):
                status = 'fail'
            duration = None
            if ts is not None and frame.last_ts is not None:
                duration = round(max(0.0, ts - frame.last_ts), 6)
            frame.last_ts = ts if ts is not None else frame.last_ts
            message = '\n'.join(frame.diag) if status == 'fail' else ''
            if directive and status == 'skip':
                message = directive
            frame.results.append(Result((name or f'test_{_num}').strip(), status,
                                        duration, message, children))
            frame.diag = []
            continue

        if stripped.startswith('#') and indent >= frame.indent:
            frame.diag.append(stripped[1:].strip())
            frame.diag = frame.diag[-20:]

    while stack:
        finished = stack.pop()
        if stack:
            # A subtest that never got its closing result line.
            stack[-1].results.append(Result('(unfinished)', 'fail', None,
                                            'a subtest never finished',
                                            _close(finished)))
        else:
            top.extend(_close(finished))
    return top


@dataclass
class RunnerLog:
    """What lab_runner recorded for one testcase."""
    results: list[Result]
    exit: str | None                 # 'status=0', 'signal=11', 'timeout=60', None
    started: bool
    duration_s: float | None


def parse_runner_log(text: str) -> RunnerLog:
    exit_how = None
    started = False
    first = last = None
    for raw in text.splitlines():
        ts, line = split_time(raw)
        if ts is not None:
            first = ts if first is None else first
            last = ts
        if line.startswith('#lab-start'):
            started = True
        elif line.startswith('#lab-exit '):
            exit_how = line.split(' ', 1)[1].strip()
    duration = round(last - first, 6) if first is not None and last is not None else None
    return RunnerLog(parse(text), exit_how, started, duration)
