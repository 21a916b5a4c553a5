"""Reads what a host's trace buffer recorded (the text of
/sys/kernel/tracing/trace, saved by lab_trace), and tells it as a story.

A line of that text looks like

    kevent_echo-52      [000] .....    31.005021: kevent_ready: q=000000008d2f3c1b type=socket id=4,0 event=0x1

task-pid, CPU, flags (absent when the irq-info option is off), the time
in seconds since boot, the tracepoint and its fields. `parse` is pure; the
golden tests in lab/tests/test_trace.py hold it to saved traces.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from . import guest_text

# A line is cut in two: the task name may hold spaces and dashes, so the
# first "-PID [CPU]" (or "-PID (TGID) [CPU]") ends it; the rest has a fixed
# shape. Found with search() on a pattern that starts with a literal, and
# with possessive runs of spaces, rather than one pattern with a lazy `.+?`
# for the task: that one retried the rest of the line at every position of
# a long line (20 000 spaces took seconds). ASCII digits only.
TASK_END = re.compile(r'-(?P<pid>[0-9]{1,9}) ++(?:\( *+[-0-9]{1,9}\) ++)?\[(?P<cpu>[0-9]{1,5})\]', re.ASCII)
REST_RE = re.compile(r' ++(?:(?P<flags>[^ :]{4,6}) ++)?(?P<ts>[0-9]{1,12}\.[0-9]{1,9}): ++'
                     r'(?P<name>[A-Za-z0-9_]{1,128}):(?: (?P<body>.*))?$', re.ASCII)
FIELD_RE = re.compile(r'([A-Za-z0-9_]{1,64})=([^ ]+)', re.ASCII)


@dataclass
class Event:
    task: str
    pid: int
    cpu: int
    ts: float                   # seconds since boot
    name: str                   # the tracepoint: kevent_ready, netif_receive_skb, ...
    fields: dict[str, str] = field(default_factory=dict)
    body: str = ''

    @property
    def kevent(self) -> tuple[str, str, str] | None:
        """(queue, type, id) of the kevent this event is about, if it names one."""
        f = self.fields
        if 'q' in f and 'type' in f and 'id' in f:
            return f['q'], f['type'], f['id']
        return None


def parse(text: str) -> list[Event]:
    """The events of a trace; header lines (#) and lines it cannot read are left out."""
    events = []
    for line in guest_text.lines(text):
        line = guest_text.printable(line)
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        head = TASK_END.search(line)
        if not head:
            continue
        m = REST_RE.match(line, head.end())
        if not m:
            continue
        body = (m['body'] or '').strip()
        events.append(Event(line[:head.start()].strip(), int(head['pid']), int(head['cpu']),
                            float(m['ts']), m['name'], dict(FIELD_RE.findall(body)), body))
    return events


def counts(events: list[Event]) -> Counter:
    return Counter(e.name for e in events)


def story(events: list[Event], limit: int = 0) -> str:
    """The events one per line, with the time since the first in
    microseconds and since the one before, so waits and wake-ups stand out."""
    if not events:
        return '(no events)'
    t0 = events[0].ts
    prev = t0
    lines = [f'{"+us":>10} {"step":>8}  {"task-pid":<20} {"tracepoint":<22} fields']
    for e in events[:limit or None]:
        lines.append(f'{(e.ts - t0) * 1e6:10.0f} {(e.ts - prev) * 1e6:8.0f}  '
                     f'{f"{e.task}-{e.pid}":<20} {e.name:<22} {e.body}')
        prev = e.ts
    if limit and len(events) > limit:
        lines.append(f'... {len(events) - limit} more')
    return '\n'.join(lines)


def lives(events: list[Event]) -> dict[tuple[str, str, str], list[str]]:
    """For each kevent the trace names, the tracepoints it went through, in order
    (repeats folded: kevent_ready x3)."""
    runs: dict[tuple[str, str, str], list[list]] = {}
    for e in events:
        key = e.kevent
        if key is None:
            continue
        steps = runs.setdefault(key, [])
        if steps and steps[-1][0] == e.name:
            steps[-1][1] += 1
        else:
            steps.append([e.name, 1])
    return {key: [name if n == 1 else f'{name} x{n}' for name, n in steps]
            for key, steps in runs.items()}


def summary(events: list[Event], limit: int = 40) -> str:
    """What `labctl trace` prints: counts per tracepoint, the life of each
    kevent, and the first events as a story."""
    if not events:
        return 'the trace recorded no events'
    out = ['tracepoints: ' + ', '.join(f'{n} {c}' for n, c in sorted(counts(events).items()))]
    span = events[-1].ts - events[0].ts
    out.append(f'{len(events)} events over {span * 1e3:.1f} ms')
    life = lives(events)
    if life:
        out.append('')
        out.append('kevents (queue type id: what happened to it):')
        for (q, typ, ident), steps in list(life.items())[:20]:
            out.append(f'  {q} {typ} {ident}: ' + ' -> '.join(steps))
        if len(life) > 20:
            out.append(f'  ... {len(life) - 20} more kevents')
    out.append('')
    out.append(story(events, limit))
    return '\n'.join(out)
