"""Run directories: each run of a lab has its own, so runs of one lab never collide.

    build/lab/NAME/.lock        taken while an instance is claimed or pruned
    build/lab/NAME/ID/          one run (`labctl run`) or one started lab
                                (`labctl start`): run.sh, logs and disks of its
                                hosts, and for a started lab state.json and
                                supervisor.log
    build/lab/NAME/ID/.owner    locked (flock) by the instance's owner while it runs

ID is the smallest free number (1, 2, ...). The owner of an instance holds
an exclusive flock on its .owner file for its whole life, so the kernel
releases it however the owner ends: an instance whose lock is free is over.
A started lab whose supervisor died while its hosts still run (state.json
names them) also counts as in use, so that `labctl crash` can still end
them. Whatever is not in use is removed when the next instance of the lab
is claimed, so a finished run's directory stays for a look until then,
as before (and `labctl clean` removes it).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

OWNER = '.owner'
STATE = 'state.json'


@dataclass
class Instance:
    lab: str
    id: str
    path: Path
    fd: int = -1        # holds the lock on .owner while >= 0

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def live_processes() -> dict[int, int]:
    """Every live process (not a zombie) of this machine, with its process group."""
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                fields = f.read().rsplit(')', 1)[-1].split()
        except OSError:
            continue
        if fields[0] != 'Z':
            found[int(entry)] = int(fields[2])
    return found


def groups_alive(groups: set[int]) -> bool:
    """True while a live process belongs to one of the process groups."""
    return any(group in groups for group in live_processes().values())


def start_time(pid: int) -> int | None:
    """When process @pid started (clock ticks since boot), or None if there is none.

    A pid and this time name one process for good: a pid used again later
    belongs to a process that started later."""
    try:
        with open(f'/proc/{int(pid)}/stat') as f:
            return int(f.read().rsplit(')', 1)[-1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def starts_of(pids) -> dict[str, int]:
    """The start times to record in state.json beside @pids."""
    return {str(p): t for p in pids if (t := start_time(p)) is not None}


def state_pids(state: dict) -> list[int]:
    """The leaders a started lab's state.json names: supervisor, switches, hosts."""
    pids = [state.get('pid'), *state.get('switches', []),
            *(h.get('pid') for h in state.get('hosts', {}).values())]
    return [p for p in pids if isinstance(p, int) and not isinstance(p, bool) and p > 1]


def is_ours(state: dict, pid: int) -> bool:
    """True if process @pid is still the one the lab started: its start time
    is the one state.json recorded. A state.json without them (written by
    someone else, or by hand) names nothing that may be signalled."""
    recorded = state.get('starts', {}).get(str(pid)) if isinstance(state.get('starts'), dict) else None
    return recorded is not None and start_time(pid) == recorded


def carries_token(pid: int, token: str) -> bool:
    """True if process @pid has the lab supervisor's @token in its environment
    (processes.Supervisor gives it to every child)."""
    want = f'KEVENT_LAB_SUPERVISOR={token}'.encode()
    # A process in the middle of an exec reads as having no environment
    # for a moment: an empty answer is asked again.
    for _ in range(20):
        try:
            with open(f'/proc/{pid}/environ', 'rb') as f:
                env = f.read()
        except OSError:
            return False
        if env:
            return want in env.split(b'\0')
        time.sleep(0.01)
    return False


def group_members(group: int) -> list[int]:
    """The live processes of process group @group."""
    return [pid for pid, g in live_processes().items() if g == group]


def state_groups(state: dict) -> set[int]:
    """The process groups of a started lab (each its leader's pid) that may
    still hold its processes: those whose leader is the process the lab
    started, or is gone while a member carries the lab's token. A leader's
    pid now used by another process (its start time differs) names a group
    that is not ours; so does a group whose leader is gone and none of whose
    members carries the token (the pid was reused, and that group is a
    stranger's whose leader ended too)."""
    groups = set()
    token = state.get('token')
    for pid in state_pids(state):
        if str(pid) not in state.get('starts', {}):
            continue
        if is_ours(state, pid):
            groups.add(pid)
        elif start_time(pid) is None and isinstance(token, str) and token and \
                any(carries_token(m, token) for m in group_members(pid)):
            groups.add(pid)
    return groups


def owned(path: Path) -> bool:
    """True while some process holds the owner lock of the instance at @path."""
    try:
        fd = os.open(path / OWNER, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def read_state(path: Path) -> dict | None:
    try:
        state = json.loads((path / STATE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get('hosts'), dict) else None


def in_use(path: Path) -> bool:
    if owned(path):
        return True
    state = read_state(path)
    return bool(state) and groups_alive(state_groups(state))


@contextmanager
def _lab_lock(base: Path, create: bool = True):
    """Serialises claim, prune and clean of one lab's run directories."""
    while True:
        if create:
            base.mkdir(parents=True, exist_ok=True)
        fd = os.open(base / '.lock', os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            # `clean` may have removed the lab's directory while we waited.
            if os.path.samestat(os.fstat(fd), os.stat(base / '.lock')):
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _ids(base: Path) -> list[str]:
    if not base.is_dir():
        return []
    return sorted((p.name for p in base.iterdir()
                   if p.is_dir() and p.name.isascii() and p.name.isdigit()), key=int)


def prune(base: Path) -> list[Path]:
    """Removes what no instance of the lab uses (older layouts' files too); returns it."""
    removed = []
    for entry in sorted(base.iterdir()):
        if entry.name == '.lock' or (entry.is_dir() and entry.name.isdigit() and in_use(entry)):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


# A lab's name becomes a directory of build/lab whose contents a claim
# prunes: a path ('/some/dir', '../../X') must never get that far.
PLAIN_NAME = re.compile(r'[a-z0-9][a-z0-9_-]{0,63}', re.ASCII)


def _base(work: Path, lab: str) -> Path:
    if not PLAIN_NAME.fullmatch(lab):
        raise ValueError(f'{lab!r} is not a lab name (a directory name of lab/labs/, not a path)')
    return work / lab


def claim(work: Path, lab: str) -> Instance:
    """A new run directory for @lab, locked by this process until release()."""
    base = _base(work, lab)
    base.mkdir(parents=True, exist_ok=True)
    if ' ' in str(base.resolve()):
        raise ValueError(f'the run directory {base} has a space, which the kernel command line cannot carry')
    with _lab_lock(base):
        prune(base)
        n = 1
        while (base / str(n)).exists():
            n += 1
        path = (base / str(n)).resolve()
        path.mkdir()
        fd = os.open(path / OWNER, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f'{os.getpid()}\n'.encode())
    return Instance(lab, str(n), path, fd)


def adopt(work: Path, lab: str, ident: str, fd: int) -> Instance:
    """The instance a parent claimed and handed over with its locked fd (labctl start)."""
    os.set_inheritable(fd, False)
    if not (ident.isascii() and ident.isdigit()):
        raise ValueError(f'{ident!r} is not an instance number')
    return Instance(lab, ident, (_base(work, lab) / ident).resolve(), fd)


def started(work: Path, lab: str) -> list[Instance]:
    """The started (labctl start) instances of @lab that are still in use."""
    base = _base(work, lab)
    return [Instance(lab, i, base / i) for i in _ids(base)
            if (base / i / STATE).exists() and in_use(base / i)]


def clean(work: Path, say=print) -> None:
    """Removes every lab's run directories, except those of instances in use."""
    if not work.is_dir():
        return
    for base in sorted(p for p in work.iterdir() if p.is_dir()):
        with _lab_lock(base, create=False):
            for path in prune(base):
                say(f'removed {path}')
            kept = _ids(base)
            if not kept:
                shutil.rmtree(base, ignore_errors=True)
        for i in kept:
            how = (f'started, labctl stop {base.name} --id {i}' if (base / i / STATE).exists()
                   else 'a labctl run is using it')
            say(f'kept {base / i}: lab {base.name} instance {i} is in use ({how})')
    if not any(work.iterdir()):
        work.rmdir()
