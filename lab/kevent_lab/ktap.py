"""A pure KTAP/TAP parser for the logs a lab run collects.

It reads two kinds of text:
- a host's console, where the kernel prints KTAP (the KUnit suites) behind
  printk timestamps like ``[    0.812345] ``;
- a testcase log written by lab_runner, where every line of the program's
  output starts with the CLOCK_MONOTONIC time it arrived, and lab_runner's
  own records (``#lab-start``, ``#lab-exit``) start at the beginning of a
  line, where no output of the program can be.

Times, where the text has them, give each test a duration: the time from
the previous result (or the plan) to its own result line. Output that ends
before its plan is complete yields a failing result saying so, so that a
crash is never counted as a pass.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field

from .guest_text import lines as text_lines, printable

# Every pattern here is anchored, ASCII-only ([0-9], not \d, which also
# takes Arabic-Indic or other Unicode digits) and bounded, and none has two
# quantifiers that can give the same characters to each other: one pass
# over a line, whatever the line holds. Lines are cut to MAX_LINE first.
CONSOLE_TS = re.compile(r'\[ *([0-9]{1,12}\.[0-9]{1,9})\] ?', re.ASCII)
# kselftest_harness.h's line before each test: `#  RUN           global.name ...`.
HARNESS_RUN = re.compile(r'RUN +([^ ]+) \.\.\.$', re.ASCII)
RUNNER_TS = re.compile(r'([0-9]{1,12}\.[0-9]{1,9}) ', re.ASCII)
VERSION = re.compile(r'(?:KTAP|TAP) version [0-9]{1,9} *$', re.ASCII)
PLAN = re.compile(r'1\.\.([0-9]{1,9}) *$', re.ASCII)
RESULT_HEAD = re.compile(r'(ok|not ok) ([0-9]{1,9})', re.ASCII)
SUBTEST = '# Subtest: '

# lab_runner's own records: at the start of a line of its log, where no
# output of the program can be (each of those starts with its time).
RECORD_START = '#lab-start '
RECORD_EXIT = '#lab-exit '


@dataclass
class Result:
    """One test, or one group of tests with children."""
    name: str
    status: str                     # 'pass', 'fail' or 'skip'
    duration_s: float | None = None
    message: str = ''
    children: list['Result'] = field(default_factory=list)
    # Some test below this one failed (set once, when the group is made).
    failed_child: bool = field(default=False, repr=False, compare=False)

    def leaves(self, prefix: str = '') -> list[tuple[str, 'Result']]:
        """(path, result) of every test without children, groups joined by '.'.

        A loop, not recursion: a program may nest KTAP as deep as it likes."""
        out = []
        todo = [(prefix, self)]
        while todo:
            path, node = todo.pop()
            if not node.children:
                out.append((path, node))
                continue
            for child in reversed(node.children):
                todo.append((child.name if not path else path + '.' + child.name, child))
        return out

    @property
    def failed_inside(self) -> bool:
        return self.status == 'fail' or self.failed_child


def split_time(line: str) -> tuple[float | None, str]:
    """Takes a console or lab_runner timestamp off a line."""
    m = CONSOLE_TS.match(line) or RUNNER_TS.match(line)
    if m:
        return float(m.group(1)), line[m.end():]
    return None, line


def match_result(line: str) -> tuple[str, str, str, str | None] | None:
    """(ok|not ok, number, name, directive or None) of a KTAP result line.

    By hand, not one pattern: `ok N [- ]NAME [# DIRECTIVE]` as a single
    regular expression backtracks over long runs of spaces (an `ok 1`,
    200 000 spaces and an `x` took minutes)."""
    m = RESULT_HEAD.match(line)
    if not m:
        return None
    rest = line[m.end():]
    if rest and rest[0] not in ' \t#':
        return None
    name, hash_, directive = rest.partition('#')
    name = name.strip()
    if name == '-':
        name = ''
    elif name.startswith('- '):
        name = name[2:].lstrip()
    return m.group(1), m.group(2), name, directive.strip() if hash_ else None


@dataclass
class _Frame:
    indent: int
    plan: int | None = None
    name: str = ''
    results: list[Result] = field(default_factory=list)
    diag: list[str] = field(default_factory=list)
    last_ts: float | None = None
    running: str = ''


def _status(word: str, directive: str | None) -> str:
    if directive and directive.upper().startswith('SKIP'):
        return 'skip'
    return 'pass' if word == 'ok' else 'fail'


def _group(name: str, status: str, duration: float | None, message: str,
           children: list[Result]) -> Result:
    r = Result(name, status, duration, message, children)
    r.failed_child = any(c.failed_inside for c in children)
    return r


# Where the output ends early and nothing says why; a runner log says why.
ENDED_EARLY = 'the output ended early (crash, hang or kill?)'


def _close(frame: _Frame) -> list[Result]:
    """The results of a finished frame, with a failure for missing ones."""
    results = list(frame.results)
    if frame.plan is not None and len(results) < frame.plan:
        # Named the same as output without a plan, so a crash reads alike
        # however much of the output made it to disk.
        results.append(Result(
            '(incomplete)' if results else '(no results)', 'fail', None,
            f'plan was 1..{frame.plan} but only {len(results)} results arrived: {ENDED_EARLY}'))
    return results


def parse(text: str) -> list[Result]:
    """Parses every KTAP document in @text into top-level results."""
    return parse_lines(split_time(line) for line in text_lines(text))


def parse_lines(timed_lines) -> list[Result]:
    """Parses KTAP from (time or None, line) pairs."""
    stack: list[_Frame] = []
    top: list[Result] = []

    def unfinished(finished: _Frame) -> Result:
        # A subtest that never got its closing result line.
        return _group('(unfinished)', 'fail', None, 'a subtest never finished', _close(finished))

    for ts, line in timed_lines:
        stripped = line.lstrip(' ')
        indent = (len(line) - len(stripped)) // 4
        if stripped.startswith('\t'):
            continue

        if VERSION.match(stripped):
            while stack and stack[-1].indent >= indent:
                finished = stack.pop()
                if not stack:
                    top.extend(_close(finished))
                else:
                    stack[-1].results.append(unfinished(finished))
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

        if stripped.startswith(SUBTEST):
            continue

        r = match_result(stripped) if indent <= frame.indent else None
        if r:
            # A result at a shallower indent closes the deeper frames: the
            # one just below is this result's children; any deeper one
            # never got its own result line.
            children: list[Result] = []
            while stack and stack[-1].indent > indent:
                finished = stack.pop()
                if stack and stack[-1].indent > indent:
                    stack[-1].results.append(unfinished(finished))
                else:
                    children = _close(finished)
            if not stack or stack[-1].indent != indent:
                continue
            frame = stack[-1]
            word, num, name, directive = r
            status = _status(word, directive)
            if children and status == 'pass' and any(c.failed_inside for c in children):
                status = 'fail'
            duration = None
            if ts is not None and frame.last_ts is not None:
                duration = round(max(0.0, ts - frame.last_ts), 6)
            frame.last_ts = ts if ts is not None else frame.last_ts
            message = '\n'.join(frame.diag) if status == 'fail' else ''
            if directive and status == 'skip':
                message = directive
            # Linux 6.1's kselftest_harness.h writes a skip as `ok N # SKIP
            # reason`, without the name: it is the one its `#  RUN` line gave.
            name = name or frame.running or f'test_{num}'
            frame.results.append(_group(printable(name), status, duration,
                                        printable(message), children))
            frame.diag = []
            frame.running = ''
            continue

        if stripped.startswith('#') and indent >= frame.indent:
            diag = stripped[1:].strip()[:1000]
            run = HARNESS_RUN.match(diag)
            if run:
                frame.running = run.group(1)
            frame.diag.append(diag)
            frame.diag = frame.diag[-20:]

    while stack:
        finished = stack.pop()
        if stack:
            stack[-1].results.append(unfinished(finished))
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


def describe_exit(how: str | None) -> str:
    """What lab_runner's exit record means, in words a student understands."""
    if how is None:
        return 'it never ended: the host stopped (timeout, crash or kill) while it ran'
    key, _, value = how.partition('=')
    if key == 'status':
        return 'it exited with status 0' if value == '0' else f'it exited with status {value}'
    if key == 'signal' and value.isascii() and value.isdigit():
        try:
            name = signal.Signals(int(value)).name
        except ValueError:
            name = f'signal {value}'
        return f'it was killed by {name}'
    if key == 'timeout':
        return f'it timed out after {value} s and was killed'
    if key == 'forged':
        return (f'its log holds records lab_runner did not write ({value.replace("_", " ")}): '
                'something else wrote to it, so none of it is believed')
    return f'it ended with {how}'


def parse_runner_log(text: str) -> RunnerLog:
    """Reads a log lab_runner wrote.

    The program's lines each start with their time; lab_runner's records
    (#lab-start, #lab-exit) start at the beginning of a line. The program
    cannot write a line of the second kind: what it prints as
    `#lab-exit status=0` arrives as `TIME #lab-exit status=0`, program
    output like any other, and the log's descriptor is not inherited.
    Should a record be forged anyway (a second start or exit, or a line
    after the exit), the log is not believed: its exit is `forged=...`."""
    exit_how = None
    starts = exits = after_exit = 0
    first = last = None
    output: list[tuple[float, str]] = []
    for line in text_lines(text):
        m = RUNNER_TS.match(line)
        if m:
            ts = float(m.group(1))
            output.append((ts, line[m.end():]))
            after_exit += exits > 0
        elif line.startswith(RECORD_START) or line.startswith(RECORD_EXIT):
            ts_text, _, rest = line.partition(' ')[2].partition(' ')
            t = RUNNER_TS.match(ts_text + ' ')
            ts = float(t.group(1)) if t else None
            if line.startswith(RECORD_START):
                starts += 1
                after_exit += exits > 0
            else:
                exits += 1
                exit_how = printable(rest.strip()[:100])
        else:
            continue
        if ts is not None:
            first = ts if first is None else first
            last = ts
    started = starts > 0
    if starts > 1 or exits > 1 or after_exit:
        exit_how = f'forged={starts}_starts_{exits}_exits_{after_exit}_lines_after'
    duration = round(last - first, 6) if first is not None and last is not None else None
    results = parse_lines(output)
    if exit_how != 'status=0':
        # Say how the program ended wherever its output ended early: what
        # the runner recorded, in place of a guess.
        for r in results:
            if r.name in ('(incomplete)', '(no results)') and r.status == 'fail':
                if exit_how is not None and ENDED_EARLY in r.message:
                    r.message = r.message.replace(ENDED_EARLY, f'the output ended early: {describe_exit(exit_how)}')
                else:
                    r.message += f'; {describe_exit(exit_how)}'
    return RunnerLog(results, exit_how, started, duration)
