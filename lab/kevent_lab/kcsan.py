"""Tells KCSAN's reports about kevent from Linux's own (make smp-check).

KCSAN (uml-config/x86-kcsan.config) instruments the whole kernel, and
Linux 6.1 has data races of its own that it reports from any program
(the scheduler's statistics, the page cache's flags...). A host of the
KCSAN profile fails on a report that names kevent code in either of its
two stacks; the others are taken out of the console check and listed in a
passing record, so that they are seen but do not fail a check of the
series. A report is the block KCSAN prints between two lines of `=`:

    ==================================================================
    BUG: KCSAN: data-race in kevent_ready / kevent_wait
    write to 0xffff888004b8e0a8 of 4 bytes by task 92 on cpu 2:
     kevent_ready+0x5a/0x140
    ...
    ==================================================================
"""

from __future__ import annotations

import re

from . import guest_text

RULE = re.compile(r'^(\[[ 0-9.]{1,20}\] )?={40,}$')
# `data-race in A / B`, `assert: race in A / B`, `race at unknown origin...`
HEADER = re.compile(r'BUG: KCSAN: (.{1,300})$')
# kevent's own code: its functions are kevent_*, and its system calls, whose
# stacks name the call (__do_sys_aio_send, __x64_sys_kevent_ctl). Only the
# functions count, in the header and in the stacks (` kevent_ready+0x5a/0x140`),
# not the task's name that KCSAN prints too (`Comm: kevent_core_test`).
KEVENT_CODE = re.compile(r'(^|_)(kevent|sys_aio_(send|recv|sendfile|submit)(\b|_))')
FRAME = re.compile(r'^(\[[ 0-9.]{1,20}\] )? ([A-Za-z0-9_.]{1,128})\+0x[0-9a-f]{1,16}/0x[0-9a-f]{1,16}')
IN_FUNCTIONS = re.compile(r'in ([A-Za-z0-9_.]{1,128})( / ([A-Za-z0-9_.]{1,128}))?$')
# The header comes at most this many lines after the opening rule.
HEADER_WITHIN = 8
# No report is longer: a block without its closing rule ends here.
MAX_BLOCK = 200


def split(text: str) -> tuple[str, list[str]]:
    """(@text without the KCSAN reports that name no kevent code, the
    headers of those reports). Reports that name kevent stay in the text."""
    lines = guest_text.lines(text)
    kept: list[str] = []
    elsewhere: list[str] = []
    i = 0
    while i < len(lines):
        block_end = _report_end(lines, i) if RULE.match(lines[i]) else None
        if block_end is None:
            kept.append(lines[i])
            i += 1
            continue
        block = lines[i:block_end]
        header = next((m.group(1) for m in map(HEADER.search, block) if m), '')
        if any(KEVENT_CODE.search(f) for f in _functions(block)):
            kept += block
        else:
            elsewhere.append(header)
        i = block_end
    return '\n'.join(kept) + ('\n' if kept else ''), elsewhere


def _functions(block: list[str]) -> list[str]:
    """The functions a report names: in its header and in its stacks."""
    names = []
    for line in block:
        m = FRAME.match(line)
        if m:
            names.append(m.group(2))
        h = HEADER.search(line)
        if h:
            f = IN_FUNCTIONS.search(h.group(1))
            names += [n for n in (f.group(1), f.group(3)) if n] if f else []
    return names


def _report_end(lines: list[str], start: int) -> int | None:
    """The index after the closing rule of a KCSAN report that opens at
    @start, or None if no KCSAN report opens there."""
    # Other CPUs' messages may come between the rule and the header
    # (`test_basic-torture: access_thread is stopping`).
    if not any(HEADER.search(line) for line in lines[start + 1:start + 1 + HEADER_WITHIN]):
        return None
    for j in range(start + 2, min(len(lines), start + MAX_BLOCK)):
        if RULE.match(lines[j]):
            return j + 1
    return min(len(lines), start + MAX_BLOCK)
