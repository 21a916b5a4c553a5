"""A lab left running: start, status, console, exec, stop, crash.

`labctl start` spawns a detached supervisor (`labctl _serve`) that boots the
lab's hosts without their testcases and keeps them up. Each host gets a
second console, con1=pts, with a shell on /dev/tty1 in the guest: `console`
attaches the terminal to it, `exec` runs one command through it. The
supervisor writes build/lab/NAME/state.json and, on SIGTERM (`stop`),
stops every process it started; `crash` kills them all at once.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time
import tty
from pathlib import Path

from .processes import Supervisor, start_switch
from .run import USERSPACE_MARK, make_disk, setup_lines, uml_argv
from .topology import Host, Topology

PTS_RE = re.compile(r"Virtual console 1 assigned device '(/dev/pts/\d+)'")
READY_MARK = 'lab: ready for console and exec'


def state_path(work: Path, lab: str) -> Path:
    return work / lab / 'state.json'


def interactive_script(host: Host, startup: str) -> str:
    lines = ['# Written by labctl start; runs inside the guest.'] + setup_lines(host)
    if startup:
        lines.append(startup.rstrip('\n'))
    lines += [f'echo "{READY_MARK} on /dev/tty1"',
              "while :; do setsid sh -c 'exec sh </dev/tty1 >/dev/tty1 2>&1'; done &",
              'while :; do sleep 3600; done']
    return '\n'.join(lines) + '\n'


def _stop(signum, frame):
    raise KeyboardInterrupt


def serve(topo: Topology, labdir: Path, kernel: Path, rootfs: Path, work: Path) -> int:
    """The detached supervisor: runs until SIGTERM, then stops everything."""
    run_dir = work / topo.name
    for host in topo.hosts.values():
        hdir = run_dir / host.name
        hdir.mkdir(parents=True, exist_ok=True)
        startup = labdir / f'{host.name}.startup'
        (hdir / 'run.sh').write_text(interactive_script(
            host, startup.read_text() if startup.exists() else ''))
        if host.disk:
            make_disk(hdir / 'disk.img', host.disk)
    tmp = Path(tempfile.mkdtemp(prefix=f'kevent-lab-{topo.name}-'))
    (tmp / 'uml').mkdir()
    sup = Supervisor()
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _stop)
    try:
        sockets = {seg: tmp / seg for seg in topo.segments}
        switches = [start_switch(sup, f'switch {seg}', path, tmp / f'{seg}.log').pid
                    for seg, path in sockets.items()]
        hosts = {}
        for host in topo.hosts.values():
            console = run_dir / host.name / 'console.log'
            with open(console, 'wb') as out:
                argv = uml_argv(kernel, rootfs, host, f'{topo.name}-{host.name}-{tmp.name[-8:]}',
                                tmp / 'uml', sockets, run_dir) + ['con1=pts']
                child = sup.start(host.name, argv, stdout=out)
            hosts[host.name] = {'pid': child.pid, 'console': str(console)}
        state_path(work, topo.name).write_text(json.dumps(
            {'lab': topo.name, 'pid': os.getpid(), 'switches': switches, 'hosts': hosts},
            indent=2) + '\n')
        while any(c.running() for c in sup.children if c.name in hosts):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        sup.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
        state_path(work, topo.name).unlink(missing_ok=True)
    return 0


def load_state(work: Path, lab: str) -> dict:
    path = state_path(work, lab)
    if not path.exists():
        raise SystemExit(f'labctl: lab {lab} is not running (no {path}); labctl start {lab}')
    return json.loads(path.read_text())


def alive(pid: int) -> bool:
    """True while @pid runs; a zombie waiting to be reaped counts as gone."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[-1].split()[0] != 'Z'
    except OSError:
        return False


def groups_alive(groups: set[int]) -> bool:
    """True while a live process belongs to one of the process groups."""
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                fields = f.read().rsplit(')', 1)[-1].split()
        except OSError:
            continue
        if fields[0] != 'Z' and int(fields[2]) in groups:
            return True
    return False


def host_pts(state: dict, host: str) -> str:
    if host not in state['hosts']:
        raise SystemExit(f'labctl: no host {host!r} in lab {state["lab"]} '
                         f'(hosts: {", ".join(state["hosts"])})')
    text = Path(state['hosts'][host]['console']).read_text(errors='replace')
    m = PTS_RE.search(text)
    if not m or READY_MARK not in text:
        raise SystemExit(f'labctl: host {host} is not ready yet (see {state["hosts"][host]["console"]})')
    return m.group(1)


def start(labctl: Path, lab: str, work: Path, timeout: float = 60, say=print) -> int:
    if state_path(work, lab).exists() and alive(json.loads(state_path(work, lab).read_text())['pid']):
        raise SystemExit(f'labctl: lab {lab} is already running (labctl status {lab})')
    (work / lab).mkdir(parents=True, exist_ok=True)
    log = open(work / lab / 'supervisor.log', 'wb')
    subprocess.Popen([sys.executable, str(labctl), '_serve', '--lab', lab],
                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                     start_new_session=True)
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = state_path(work, lab)
        if path.exists():
            state = json.loads(path.read_text())
            ready = [h for h, v in state['hosts'].items()
                     if READY_MARK in Path(v['console']).read_text(errors='replace')]
            if len(ready) == len(state['hosts']):
                say(f'lab {lab} is up: {", ".join(ready)}; labctl console HOST, '
                    f'labctl exec HOST -- CMD, labctl stop {lab}')
                return 0
        time.sleep(0.2)
    say(f'labctl: lab {lab} did not come up in {timeout:.0f} s; see {work / lab}; stopping it')
    stop(lab, work, say)
    return 1


def status(lab: str, work: Path, say=print) -> int:
    state = load_state(work, lab)
    say(f'lab {lab}: supervisor {state["pid"]} {"running" if alive(state["pid"]) else "GONE"}')
    for name, h in state['hosts'].items():
        text = Path(h['console']).read_text(errors='replace')
        m = PTS_RE.search(text)
        up = 'ready' if READY_MARK in text else ('booted' if USERSPACE_MARK in text else 'booting')
        say(f'  {name}: pid {h["pid"]} {"running" if alive(h["pid"]) else "GONE"}, {up}, '
            f'console {m.group(1) if m else "-"}')
    return 0


def stop(lab: str, work: Path, say=print) -> int:
    state = load_state(work, lab)
    try:
        os.kill(state['pid'], signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 20
    while alive(state['pid']) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(state['pid']):
        say(f'labctl: supervisor of {lab} did not stop: crashing the lab')
        return crash(lab, work, say)
    say(f'lab {lab} stopped')
    return 0


def crash(lab: str, work: Path, say=print) -> int:
    """Kills every process of the lab now, as a power cut would."""
    state = load_state(work, lab)
    for pid in [h['pid'] for h in state['hosts'].values()] + state['switches'] + [state['pid']]:
        for kill in (lambda p: os.killpg(p, signal.SIGKILL), lambda p: os.kill(p, signal.SIGKILL)):
            try:
                kill(pid)
            except (ProcessLookupError, PermissionError):
                pass
    groups = set([h['pid'] for h in state['hosts'].values()] + state['switches'] + [state['pid']])
    deadline = time.monotonic() + 10
    while groups_alive(groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    state_path(work, lab).unlink(missing_ok=True)
    say(f'lab {lab} crashed: every host and switch was killed')
    return 0


def _open_pts(path: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    return fd


def exec_command(lab: str, work: Path, host: str, command: list[str], timeout: float = 60) -> int:
    """Runs one shell command on a host's console; prints its output, returns its status."""
    fd = _open_pts(host_pts(load_state(work, lab), host))
    # The markers are split in the command, so the console's echo of it never
    # matches; the command runs in a subshell, so `exit` ends only itself.
    line = f'echo "__LAB""BEGIN__"; ( {" ".join(command)} ); echo "__LAB""END__$?"\n'
    os.write(fd, line.encode())
    buf, deadline = b'', time.monotonic() + timeout
    while b'__LABEND__' not in buf or not re.search(rb'__LABEND__\d+', buf):
        if time.monotonic() > deadline:
            os.close(fd)
            print(f'labctl: no answer from {host} in {timeout:.0f} s', file=sys.stderr)
            return 124
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            buf += os.read(fd, 65536)
    os.close(fd)
    out = buf.split(b'__LABBEGIN__\r\n', 1)[-1]
    body, _, rest = out.partition(b'__LABEND__')
    sys.stdout.write(body.replace(b'\r\n', b'\n').decode(errors='replace'))
    return int(re.match(rb'\d+', rest).group(0))


def console(lab: str, work: Path, host: str) -> int:
    """The host's shell on this terminal, until Ctrl-]."""
    fd = _open_pts(host_pts(load_state(work, lab), host))
    print(f'[{host}: console, Ctrl-] to leave]\r')
    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin) if os.isatty(stdin) else None
    try:
        if saved:
            tty.setraw(stdin)
        os.write(fd, b'\n')
        while True:
            r, _, _ = select.select([fd, stdin], [], [])
            if fd in r:
                os.write(sys.stdout.fileno(), os.read(fd, 65536))
            if stdin in r:
                data = os.read(stdin, 1024)
                if not data or b'\x1d' in data:
                    break
                os.write(fd, data)
    finally:
        if saved:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        os.close(fd)
    print(f'\n[{host}: left the console]')
    return 0
