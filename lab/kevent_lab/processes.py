"""Starts and stops the processes of a lab: vde_switch and UML hosts.

Each process is started in a session of its own, so that it and every
helper it forks (UML's userspace stubs, slirp) can be killed as one
process group. A Supervisor remembers all of them and kills what is still
running when the lab ends, whichever way it ends.

Even by SIGKILL, which the driver cannot catch: a watchdog process, in a
session of its own, learns each group through a pipe from the driver and
kills the groups it was told of when that pipe ends without a goodbye.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Child:
    name: str
    popen: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL to the whole process group, then reap."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


# The watchdog: reads "+PGID" for each group the driver starts, and "bye"
# when the driver has stopped them itself. At the end of its input without
# a "bye", the driver is gone: it kills every group it was told of.
WATCHDOG = '''
import os, signal, sys
groups, bye = [], False
for line in sys.stdin:
    line = line.strip()
    if line == 'bye':
        bye = True
    elif line.startswith('+'):
        groups.append(int(line[1:]))
if not bye:
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
'''


@dataclass
class Supervisor:
    children: list[Child] = field(default_factory=list)
    watchdog: subprocess.Popen | None = None

    def _watch(self, pgid: int) -> None:
        if self.watchdog is None:
            self.watchdog = subprocess.Popen([sys.executable, '-c', WATCHDOG],
                                             stdin=subprocess.PIPE, text=True,
                                             start_new_session=True)
        try:
            self.watchdog.stdin.write(f'+{pgid}\n')
            self.watchdog.stdin.flush()
        except OSError:
            pass

    def start(self, name: str, argv: list[str], *, stdout=None, stdin=subprocess.DEVNULL,
              cwd: Path | None = None, env: dict | None = None) -> Child:
        popen = subprocess.Popen(argv, stdin=stdin, stdout=stdout,
                                 stderr=subprocess.STDOUT if stdout else None,
                                 cwd=cwd, env=env, start_new_session=True)
        child = Child(name, popen)
        self.children.append(child)
        self._watch(popen.pid)
        return child

    def stop_all(self) -> None:
        for child in reversed(self.children):
            child.kill()
        # A group whose leader is gone can still hold members: sweep them.
        for child in self.children:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.children.clear()
        if self.watchdog is not None:
            try:
                self.watchdog.stdin.write('bye\n')
                self.watchdog.stdin.close()
            except OSError:
                pass
            self.watchdog.wait()
            self.watchdog = None


def start_switch(sup: Supervisor, name: str, sockdir: Path, log: Path) -> Child:
    """A vde_switch for one segment, with its control socket in @sockdir.

    vde_switch exits when its stdin reaches EOF, so it gets a pipe that only
    this process holds: if the driver dies, the switch goes with it.
    """
    out = open(log, 'wb')
    child = sup.start(name, ['vde_switch', '--sock', str(sockdir)],
                      stdout=out, stdin=subprocess.PIPE)
    out.close()
    deadline = time.monotonic() + 10
    while not (sockdir / 'ctl').exists():
        if not child.running():
            raise RuntimeError(f'vde_switch for {name} exited: {log.read_text()[-500:]}')
        if time.monotonic() > deadline:
            raise RuntimeError(f'vde_switch for {name} did not create {sockdir}/ctl')
        time.sleep(0.02)
    return child
