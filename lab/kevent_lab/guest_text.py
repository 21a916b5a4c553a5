"""Text that came out of a guest, made safe to show and to store.

A test program's output becomes test names and failure messages, and those
reach the user's terminal, summary.json and junit.xml. A program can print
anything: escape sequences that would drive the terminal (clear it, retitle
it, hide text), control characters that XML 1.0 cannot carry at all (one
makes junit.xml unreadable), and lines of any length. Everything the driver
takes from a guest goes through here first.
"""

from __future__ import annotations

import re

# No line a testcase prints legitimately comes near this (lab_runner cuts
# lines at 8 KiB). Longer ones are cut before any pattern sees them, so no
# parser spends more than linear time on one line.
MAX_LINE = 16384

# C0 controls but tab and newline, DEL, C1 controls, lone surrogates and the
# two non-characters XML forbids.
_UNSAFE = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]')


def _escape(m: re.Match) -> str:
    code = ord(m.group(0))
    return f'\\x{code:02x}' if code < 0x100 else f'\\u{code:04x}'


def printable(text: str) -> str:
    """@text with every control character written as \\xNN: safe on a
    terminal and in XML; tab and newline stay."""
    return _UNSAFE.sub(_escape, text)


def cut(line: str) -> str:
    """@line no longer than MAX_LINE characters."""
    return line if len(line) <= MAX_LINE else line[:MAX_LINE]


def lines(text: str) -> list[str]:
    """The lines of @text split at newlines only, each cut to MAX_LINE.

    Not str.splitlines(): that also splits at \\r, \\v, \\f, \\x1c-\\x1e,
    \\x85 and U+2028/9, which lets a program start a "line" of its own in
    the middle of one lab_runner stamped (and so impersonate its records or
    the kernel's output). A \\r before the newline (a terminal's line end)
    is dropped.
    """
    out = text.split('\n')
    if out and out[-1] == '':
        out.pop()
    return [cut(line[:-1] if line.endswith('\r') else line) for line in out]
