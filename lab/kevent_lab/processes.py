"""Starts and stops the processes of a lab: vde_switch and UML hosts.

Each process is started in a session of its own, so that it and every
helper it forks (UML's userspace stubs, slirp) can be killed as one
process group. A Supervisor remembers all of them and kills what is still
running when the lab ends, whichever way it ends.

Even by SIGKILL, which the driver cannot catch: a watchdog process, in a
session of its own, learns each group through a pipe from the driver and
kills the groups it was told of when that pipe ends without a goodbye. A
SIGKILL can also land between a child's fork and the line that tells the
watchdog of it; so each child also carries a token of its supervisor in its
environment (KEVENT_LAB_SUPERVISOR), and the watchdog kills the group of
every process that has it, too. Then it removes the run's private
directory, which the driver would have removed itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Child:
    """A process the lab started, leader of its own process group.

    The leader is reaped only once its group was killed: while it is a
    zombie its pid, which is the group's id, cannot be given to another
    process, so killpg() reaches this group and no other. running() and
    wait_exit() look without reaping (waitid WNOWAIT) for that reason."""
    name: str
    popen: subprocess.Popen
    on_reaped: object = None        # called with the pid once reaped

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _exited(self) -> bool:
        if self.popen.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def running(self) -> bool:
        return not self._exited()

    def wait_exit(self, timeout: float) -> bool:
        """True once the leader has ended (not reaped), False after @timeout s."""
        deadline = time.monotonic() + timeout
        while not self._exited():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def kill(self) -> None:
        """SIGKILL to the whole process group, then reap the leader."""
        if self.popen.returncode is not None:
            return                      # reaped already: its group id may be anyone's now
        _killpg(self.pid)
        self.wait_exit(10)
        # What a member forked while the first signal was on its way.
        _killpg(self.pid)
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return
        if self.on_reaped:
            self.on_reaped(self.pid)


# The watchdog: reads "+PGID" for each group the driver starts, "-PGID" when
# the driver has ended and reaped one (its id may be reused from then on),
# and "bye" when the driver has stopped them all itself. At the end of its
# input without a "bye", the driver is gone: it kills the groups it still
# holds, and only those.
WATCHDOG = '''
import os, signal, sys
mark = b'\\0KEVENT_LAB_SUPERVISOR=' + sys.argv[1].encode() + b'\\0'
groups, bye = set(), False
for line in sys.stdin:
    line = line.strip()
    if line == 'bye':
        bye = True
    elif line.startswith('+'):
        groups.add(int(line[1:]))
    elif line.startswith('-'):
        groups.discard(int(line[1:]))
if not bye:
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
    # Children the driver had started but not told of yet. One forked but
    # not yet executed still shows the driver's environment: look again
    # for a moment, until it has executed.
    import time
    for _ in range(20):
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                with open('/proc/' + pid + '/environ', 'rb') as f:
                    env = b'\\0' + f.read()
                if mark in env:
                    os.killpg(os.getpgid(int(pid)), signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.1)
    # The run's private directory (sockets, the guests' memory files).
    if len(sys.argv) > 2 and os.path.basename(sys.argv[2]).startswith('kevent-lab-'):
        import shutil
        shutil.rmtree(sys.argv[2], ignore_errors=True)
'''

# Signals that end the driver by raising in it (KeyboardInterrupt): held
# back between starting a process and telling the watchdog of it, so that
# no process is ever started that the watchdog does not know.
_DEFERRED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@dataclass
class Supervisor:
    children: list[Child] = field(default_factory=list)
    watchdog: subprocess.Popen | None = None
    token: str = field(default_factory=lambda: f'{os.getpid()}-{os.urandom(8).hex()}')
    cleanup: Path | None = None     # removed by the watchdog if the driver dies

    def _tell(self, line: str) -> None:
        if self.watchdog is None:
            return
        try:
            self.watchdog.stdin.write(line + '\n')
            self.watchdog.stdin.flush()
        except OSError:
            pass

    def _start_watchdog(self) -> None:
        if self.watchdog is None:
            extra = [str(self.cleanup)] if self.cleanup else []
            self.watchdog = subprocess.Popen([sys.executable, '-c', WATCHDOG, self.token] + extra,
                                             stdin=subprocess.PIPE, text=True,
                                             start_new_session=True)

    def _watch(self, pgid: int) -> None:
        self._start_watchdog()
        self._tell(f'+{pgid}')

    def start(self, name: str, argv: list[str], *, stdout=None, stdin=subprocess.DEVNULL,
              cwd: Path | None = None, env: dict | None = None, pass_fds: tuple = ()) -> Child:
        # The watchdog runs before the first child does.
        self._start_watchdog()
        env = dict(os.environ if env is None else env, KEVENT_LAB_SUPERVISOR=self.token)
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
        try:
            popen = subprocess.Popen(argv, stdin=stdin, stdout=stdout,
                                     stderr=subprocess.STDOUT if stdout else None,
                                     cwd=cwd, env=env, start_new_session=True,
                                     pass_fds=pass_fds)
            child = Child(name, popen, on_reaped=lambda pid: self._tell(f'-{pid}'))
            self.children.append(child)
            self._watch(popen.pid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return child

    def stop_all(self) -> None:
        # Each group is killed while its leader is unreaped (Child.kill).
        for child in reversed(self.children):
            child.kill()
        self.children.clear()
        if self.watchdog is not None:
            self._tell('bye')
            try:
                self.watchdog.stdin.close()
            except OSError:
                pass
            self.watchdog.wait()
            self.watchdog = None


def wait_for_paths(child: Child, paths: list[Path], what: str, log: Path | None = None,
                   timeout: float = 10) -> None:
    """Until every one of @paths exists (a socket, a file the process makes);
    an error naming @what if @child ends first (with the end of its @log)
    or after @timeout s."""
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        tail = ': ' + log.read_text(errors='replace')[-500:] if log else ''
        if not child.running():
            raise RuntimeError(f'{what} exited{tail}')
        if time.monotonic() > deadline:
            raise RuntimeError(f'{what} did not create {", ".join(map(str, paths))} '
                               f'in {timeout:.0f} s{tail}')
        time.sleep(0.02)


def start_switch(sup: Supervisor, name: str, sockdir: Path, log: Path,
                 rcfile: Path | None = None, mgmt: Path | None = None) -> Child:
    """A vde_switch for one segment, with its control socket in @sockdir,
    running the commands of @rcfile first (a capture: capture.py) and
    taking more on a management socket @mgmt, if given.

    vde_switch exits when its stdin reaches EOF, so it gets a pipe that only
    this process holds: if the driver dies, the switch goes with it.
    """
    out = open(log, 'wb')
    argv = ['vde_switch', '--sock', str(sockdir)]
    if rcfile is not None:
        argv += ['--rcfile', str(rcfile)]
    if mgmt is not None:
        argv += ['--mgmt', str(mgmt), '--mgmtmode', '0600']
    child = sup.start(name, argv, stdout=out, stdin=subprocess.PIPE)
    out.close()
    wait_for_paths(child, [sockdir / 'ctl'], f'vde_switch for {name}', log)
    return child
