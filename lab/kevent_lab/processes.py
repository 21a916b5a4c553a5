"""Starts and stops the processes of a lab: vde_switch and UML hosts.

Each process is started in a session of its own, so that it and every
helper it forks (UML's userspace stubs, slirp) can be killed as one
process group. A Supervisor remembers all of them and kills what is still
running when the lab ends, whichever way it ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
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


@dataclass
class Supervisor:
    children: list[Child] = field(default_factory=list)

    def start(self, name: str, argv: list[str], *, stdout=None, stdin=subprocess.DEVNULL,
              cwd: Path | None = None, env: dict | None = None) -> Child:
        popen = subprocess.Popen(argv, stdin=stdin, stdout=stdout,
                                 stderr=subprocess.STDOUT if stdout else None,
                                 cwd=cwd, env=env, start_new_session=True)
        child = Child(name, popen)
        self.children.append(child)
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
