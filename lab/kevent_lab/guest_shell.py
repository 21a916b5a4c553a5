"""Talks to a shell on a started host through one of its UML consoles.

A started host has two shells (lab_console in the guest): on console 1
(/dev/tty1) for `labctl console`, on console 2 (/dev/tty2) for `labctl
exec`, so that a command left running in the console never holds up an
exec. UML connects console N to a pty of this machine and says which in
the host's console log ("Virtual console N assigned device '/dev/pts/M'").
When the last user of that pty closes it, UML gets a hangup and takes a
new pty, saying so again: the first such line of the log is out of date
and its pty may be anyone's terminal by then. So the last line counts, and
the pty is used only once /proc shows that the host's UML process holds it
(the "tty-index" of its pty master).

An exec is framed by markers carrying a nonce the command cannot know, so
its output cannot fake its end or its exit status; the shell first says
its host's name, so a command never runs on another host than the one
named.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import select
import shlex
import time
import tty
from pathlib import Path

from .console_follow import ConsoleFollower

# UML's own line: at the start of a line, after printk's time stamp, so
# that what a program prints mid-line cannot pass for it.
ASSIGNED_RE = re.compile(r"^(?:\[ {0,12}[0-9]{1,12}\.[0-9]{1,9}\] )?"
                         r"Virtual console ([0-9]) assigned device '/dev/pts/([0-9]{1,6})'\r?$",
                         re.ASCII | re.MULTILINE)
CONSOLE, EXEC = 1, 2            # the guest's /dev/tty1 and /dev/tty2
NEVER = re.compile(rb'(?!)')


class ShellError(Exception):
    """The host's shell cannot be reached, or answered as another host."""


def last_pts(console_log: str, console: int) -> int | None:
    """The pty number UML gave @console last, per the host's console log."""
    found = None
    for m in ASSIGNED_RE.finditer(console_log):
        if int(m.group(1)) == console:
            found = int(m.group(2))
    return found


def held_by(pid: int, pts: int) -> bool:
    """True if process @pid holds the master of /dev/pts/@pts."""
    try:
        fds = os.listdir(f'/proc/{pid}/fdinfo')
    except OSError:
        return False
    for fd in fds:
        try:
            with open(f'/proc/{pid}/fdinfo/{fd}') as f:
                for line in f:
                    if line.startswith('tty-index:') and line.split()[1] == str(pts):
                        return True
        except OSError:
            continue
    return False


def find_pts(console_log: Path, pid: int, console: int, wait_s: float = 3.0) -> str:
    """The pty of @console of the host whose UML process is @pid.

    Waits a little: right after an exec or console closed it, UML may not
    have taken and announced its new pty yet."""
    deadline = time.monotonic() + wait_s
    follower, n = ConsoleFollower(console_log), None
    while True:
        # Each byte of the log is read once, however much a guest printed.
        while True:
            at = follower.offset
            found = last_pts('\n'.join(follower.new_lines()), console)
            n = found if found is not None else n
            if follower.offset == at:
                break
        if n is not None and held_by(pid, n):
            return f'/dev/pts/{n}'
        if time.monotonic() > deadline:
            raise ShellError(f'console {console} of this host is on no pty its UML process holds '
                             f'(last announced: {"/dev/pts/%d" % n if n is not None else "none"}); '
                             f'see {console_log}')
        time.sleep(0.1)


def open_pts(path: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    return fd


# What is typed as one line at most (busybox's line editing keeps 1024
# bytes, with the markers around the command), and the size of each line a
# longer command is sent in.
TYPED_MAX = 800
CHUNK = 512


def command_line(words: list[str]) -> str:
    """What the shell runs for `exec HOST -- WORDS`: one word is a shell
    command line (`exec a -- 'ls | wc -l'`), several are a program and its
    arguments, each passed as it is (`exec a -- printf '%s\\n' 'a b'`)."""
    return words[0] if len(words) == 1 else ' '.join(shlex.quote(w) for w in words)


def _read_until(fd: int, buf: bytearray, pattern: re.Pattern, deadline: float) -> re.Match | None:
    while True:
        m = pattern.search(buf)
        if m:
            return m
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([fd], [], [], min(left, 0.2))
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b''
            if not data:
                return None
            buf += data


def run(fd: int, host: str, words: list[str], timeout: float) -> tuple[int, bytes]:
    """Runs a command in the shell on @fd; (exit status, output). 124 and
    what came if it did not end in @timeout s (it is interrupted, so the
    next exec finds the shell waiting)."""
    nonce = secrets.token_hex(8)
    buf = bytearray()
    # Ctrl-C first: it clears a half-typed line and ends a command an
    # earlier exec left behind (the shell has the tty as its terminal).
    # The markers are split in what we type, so the terminal's echo of our
    # line never matches them; only the shell's output does.
    # Asked again each second: a shell that is just starting may drop what
    # was typed before it set its terminal up.
    host_re = re.compile(rb'__LAB' + nonce.encode() + rb'HOST__([^\r\n]*)__\r?\n')
    deadline = time.monotonic() + min(timeout, 10)
    m = None
    while not m and time.monotonic() < deadline:
        os.write(fd, b'\x03')
        # The terminal throws away what is typed along with a Ctrl-C
        # (its input is flushed with the signal): let that pass first.
        _read_until(fd, buf, NEVER, time.monotonic() + 0.2)
        os.write(fd, f'echo "__LAB{nonce}""HOST__$(hostname)__"\n'.encode())
        m = _read_until(fd, buf, host_re, min(deadline, time.monotonic() + 1))
    if not m:
        raise ShellError(f'no answer from the shell of {host}')
    if m.group(1).decode(errors='replace') != host:
        raise ShellError(f'the shell on this console says it is {m.group(1).decode(errors="replace")!r}, '
                         f'not {host!r}: nothing was run')
    del buf[:m.end()]
    line, cleanup = command_line(words), ''
    if len(line) > TYPED_MAX:
        # Busybox's line editing keeps 1024 bytes of a typed line and the
        # rest is lost (the exec hung): a longer command goes over in short
        # lines into a file, base64 so that no character means anything to
        # the shell on the way, and runs from there.
        path = f'/tmp/.lab-exec-{nonce}'
        text = base64.b64encode(line.encode()).decode()
        for i in range(0, len(text), CHUNK):
            os.write(fd, f'echo {text[i:i + CHUNK]} >>{path}.b64; echo "__LAB{nonce}""PART{i}__"\n'.encode())
            part = _read_until(fd, buf, re.compile(rb'__LAB' + nonce.encode() + f'PART{i}__\r?\n'.encode()),
                               time.monotonic() + 10)
            if not part:
                raise ShellError(f'the shell of {host} did not take the command ({len(line)} bytes)')
            del buf[:part.end()]
        line = f'base64 -d {path}.b64 >{path} && . {path}'
        # Gone before the end is told: nothing is left once exec returns.
        cleanup = f'__lab_st=$?; rm -f {path} {path}.b64; (exit $__lab_st); '
    # The command runs as a background job of the shell (a process group
    # of its own, as job control makes it) that the shell waits for: a
    # Ctrl-C then interrupts the shell's wait, never depends on the command
    # letting itself be interrupted, and the shell kills the job's group.
    # A server the command leaves running in the background (`(srv &)`)
    # is in no foreground group and outlives the exec, as intended.
    os.write(fd, (f'echo "__LAB{nonce}""BEGIN__"; ( {line} ) </dev/null & __lab_job=$!; '
                  f'wait $__lab_job; {cleanup}echo "__LAB{nonce}""END__$?"\n').encode())
    begin = _read_until(fd, buf, re.compile(rb'__LAB' + nonce.encode() + rb'BEGIN__\r?\n'),
                        time.monotonic() + timeout)
    end = None
    if begin:
        end = _read_until(fd, buf, re.compile(rb'__LAB' + nonce.encode() + rb'END__([0-9]{1,3})\r?\n'),
                          time.monotonic() + timeout)
    if not end:
        out = bytes(buf[begin.end():]) if begin else b''
        _kill_job(fd, nonce)
        return 124, out.replace(b'\r\n', b'\n')
    out = bytes(buf[begin.end():end.start()])
    return int(end.group(1)), out.replace(b'\r\n', b'\n')


def _kill_job(fd: int, nonce: str) -> None:
    """Ends a command that did not end in time: Ctrl-C brings the shell back
    from its wait, and the shell kills the command's process group, which
    ignoring SIGINT or SIGHUP cannot stop (it ran on behind later execs)."""
    os.write(fd, b'\x03')
    _read_until(fd, bytearray(), NEVER, time.monotonic() + 0.2)
    os.write(fd, f'kill -KILL -$__lab_job 2>/dev/null; echo "__LAB{nonce}""KILLED__"\n'.encode())
    _read_until(fd, bytearray(), re.compile(rb'__LAB' + nonce.encode() + rb'KILLED__\r?\n'),
                time.monotonic() + 5)
