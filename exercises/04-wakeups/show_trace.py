#!/usr/bin/env python3
"""show_trace.py: the trace of exercise 04, read with lab/kevent_lab/trace.py.

  exercises/04-wakeups/show_trace.py [TRACE] [--task NAME] [--all]

TRACE defaults to build/exercises/04/results/a.wake.servers.trace, which
`make exercise EX=04` leaves. Prints the tracepoints counted per task, the
life of each kevent, and the story (every event with its time since the
first and since the one before); --task keeps the events of one task and
the kevents, --all shows the whole story instead of its first 80 lines.
It counts nothing for you that the exercise asks: read the story.
"""

import argparse
import sys
from collections import Counter
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / 'lab'))

from kevent_lab import trace  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('trace', nargs='?',
                   default=str(TOP / 'build/exercises/04/results/a.wake.servers.trace'))
    p.add_argument('--task', help='only the events of this task (kevent_echo, ex04_epoll_echo, ...)')
    p.add_argument('--all', action='store_true', help='the whole story')
    args = p.parse_args()
    path = Path(args.trace)
    if not path.exists():
        raise SystemExit(f'show_trace: no trace at {path}: run make exercise EX=04 first')
    events = trace.parse(path.read_text(errors='replace'))
    if args.task:
        events = [e for e in events if e.task == args.task or e.kevent is not None]
    by_task = Counter(e.task for e in events)
    print('events per task: ' + ', '.join(f'{t} {n}' for t, n in by_task.most_common()))
    print(trace.summary(events, 0 if args.all else 80))
    return 0


if __name__ == '__main__':
    sys.exit(main())
