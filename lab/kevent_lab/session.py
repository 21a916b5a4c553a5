"""A lab left running: start, status, console, exec, stop, crash.

`labctl start` spawns a detached supervisor (`labctl _serve`) that boots the
lab's hosts without their testcases and keeps them up. Each host gets a
second console, con1=pts, with a shell on /dev/tty1 in the guest: `console`
attaches the terminal to it, `exec` runs one command through it. The
supervisor writes build/lab/NAME/ID/state.json and, on SIGTERM (`stop`),
stops every process it started; `crash` kills them all at once.

A lab can be started more than once: each instance has its own run
directory (instances.py), switches, umids and consoles. The commands find
a lab's instance by its name; when several run, they take --id.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import termios
import threading
import time
import tty
from pathlib import Path

from . import capture, guest_shell, instances, uml_paths, uplink
from .console_follow import ConsoleFollower
from .instances import Instance, groups_alive, state_groups
from .processes import Supervisor, start_switch
from .run import USERSPACE_MARK, check_tools, guest_variables, make_disk, setup_lines, start_uml
from .topology import Host, Topology

READY_MARK = 'lab: ready for console and exec'


def interactive_script(host: Host, startup: str, variables: dict[str, str] | None = None) -> str:
    lines = ['# Written by labctl start; runs inside the guest.'] + setup_lines(host, variables)
    # A HOST.startup tells a started lab from a run by it (docs/lab.md).
    lines.append('LAB_STARTED=1')
    if startup:
        lines.append(startup.rstrip('\n'))
    # lab_console: a shell with its tty as controlling terminal and every
    # signal at its default (Ctrl-C works); tty1 for console, tty2 for exec.
    lines += [f'echo "{READY_MARK} on /dev/tty1"',
              'while :; do lab_console /dev/tty1; done &',
              'while :; do lab_console /dev/tty2; done &',
              'while :; do sleep 3600; done']
    return '\n'.join(lines) + '\n'


def _stop(signum, frame):
    raise KeyboardInterrupt


def serve(topo: Topology, labdir: Path, kernel: Path, rootfs: Path, inst: Instance) -> int:
    """The detached supervisor: runs until SIGTERM, then stops everything."""
    run_dir = inst.path
    state_path = run_dir / instances.STATE
    if any(h.uplink for h in topo.hosts.values()):
        uplink.check_installed()
    check_tools(topo)
    for host in topo.hosts.values():
        hdir = run_dir / host.name
        hdir.mkdir(parents=True, exist_ok=True)
        startup = labdir / f'{host.name}.startup'
        (hdir / 'run.sh').write_text(interactive_script(
            host, startup.read_text() if startup.exists() else '',
            guest_variables(host)))
        if host.disk:
            make_disk(hdir / 'disk.img', host.disk)
    tmp = uml_paths.private_dir(f'kevent-lab-{topo.name}-')
    (tmp / 'uml').mkdir()
    sup = Supervisor(cleanup=tmp)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _stop)
    try:
        sockets = {seg: tmp / seg for seg in topo.segments}
        # Each switch takes commands on a management socket: labctl capture.
        mgmt = {seg: tmp / f'{seg}.mgmt' for seg in topo.segments}
        switches = [start_switch(sup, f'switch {seg}', path, tmp / f'{seg}.log', mgmt=mgmt[seg]).pid
                    for seg, path in sockets.items()]
        hosts = {}
        for host in topo.hosts.values():
            console = run_dir / host.name / 'console.log'
            forwards: list[str] = []
            with open(console, 'wb') as out:
                child = start_uml(sup, kernel, rootfs, host, f'{topo.name}-{host.name}-{tmp.name[-8:]}',
                                  tmp, sockets, run_dir, out, extra=('con1=pts', 'con2=pts'),
                                  forwards=forwards)
            hosts[host.name] = {'pid': child.pid, 'console': str(console)}
            if host.uplink:
                hosts[host.name]['uplink'] = host.uplink
                hosts[host.name]['uplink_reaches'] = uplink.describe(host.uplink_mode)
            if forwards:
                hosts[host.name]['forwards'] = forwards
        state = {'lab': topo.name, 'id': inst.id, 'pid': os.getpid(), 'started': time.time(),
                 'switches': switches, 'hosts': hosts,
                 'segments': {seg: {'mgmt': str(path)} for seg, path in mgmt.items()}}
        # What stop and crash check before they signal a pid of this file.
        state['starts'] = instances.starts_of(instances.state_pids(state))
        # What every process the lab started carries in its environment: a
        # group whose leader is gone is the lab's only if a member has it.
        state['token'] = sup.token
        tmp_state = state_path.with_suffix('.tmp')
        tmp_state.write_text(json.dumps(state, indent=2) + '\n')
        tmp_state.rename(state_path)
        while any(c.running() for c in sup.children if c.name in hosts):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        sup.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
        state_path.unlink(missing_ok=True)
        inst.release()
    return 0


def alive(pid: int) -> bool:
    """True while @pid runs; a zombie waiting to be reaped counts as gone."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[-1].split()[0] != 'Z'
    except OSError:
        return False


def _describe(inst: Instance, state: dict) -> str:
    started = time.strftime('%H:%M:%S', time.localtime(state.get('started', 0)))
    return (f'--id {inst.id}: supervisor {state["pid"]}, started {started}, '
            f'hosts {", ".join(state["hosts"])}, in {inst.path}')


def running(work: Path, lab: str) -> list[tuple[Instance, dict]]:
    """The started instances of @lab, each with its state."""
    out = []
    for inst in instances.started(work, lab):
        state = instances.read_state(inst.path)
        if state:
            out.append((inst, state))
    return out


def find_instance(work: Path, lab: str, ident: str | None) -> tuple[Instance, dict]:
    """The instance of @lab that a command means: the one running, or --id's."""
    found = running(work, lab)
    if ident is not None:
        for inst, state in found:
            if inst.id == ident:
                return inst, state
        if found:
            raise SystemExit(f'labctl: lab {lab} has no running instance {ident}; it has:\n'
                             + '\n'.join('  ' + _describe(i, s) for i, s in found))
        raise SystemExit(f'labctl: lab {lab} is not running (no instance {ident}); labctl start {lab}')
    if not found:
        raise SystemExit(f'labctl: lab {lab} is not running; labctl start {lab}')
    if len(found) > 1:
        raise SystemExit(f'labctl: lab {lab} runs {len(found)} instances; say which with --id:\n'
                         + '\n'.join('  ' + _describe(i, s) for i, s in found))
    return found[0]


def host_pts(state: dict, host: str, console: int = guest_shell.CONSOLE) -> str:
    """The pty of a host's console 1 (console) or 2 (exec), checked to be
    the host's: its UML process holds the pty's master."""
    if host not in state['hosts']:
        raise SystemExit(f'labctl: no host {host!r} in lab {state["lab"]} '
                         f'(hosts: {", ".join(state["hosts"])})')
    h = state['hosts'][host]
    log = Path(h['console'])
    if READY_MARK not in log.read_text(errors='replace'):
        raise SystemExit(f'labctl: host {host} is not ready yet (see {log})')
    if not instances.is_ours(state, h['pid']):
        raise SystemExit(f'labctl: host {host} (pid {h["pid"]}) is not running')
    try:
        return guest_shell.find_pts(log, h['pid'], console)
    except guest_shell.ShellError as e:
        raise SystemExit(f'labctl: host {host}: {e}')


def start(labctl: Path, lab: str, work: Path, timeout: float = 60, say=print,
          kernel: Path | None = None, rootfs: Path | None = None) -> int:
    others = [i.id for i, _ in running(work, lab)]
    inst = instances.claim(work, lab)
    log = open(inst.path / 'supervisor.log', 'wb')
    # The supervisor takes over the lock on the run directory: the lab is
    # in use for as long as the supervisor lives.
    images = ([f'--kernel={kernel}'] if kernel else []) + ([f'--rootfs={rootfs}'] if rootfs else [])
    proc = subprocess.Popen([sys.executable, str(labctl), '_serve', '--lab', lab, '--id', inst.id,
                             '--owner-fd', str(inst.fd)] + images,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, pass_fds=(inst.fd,))
    log.close()
    inst.release()
    hint = f' --id {inst.id}' if others else ''
    deadline = time.monotonic() + timeout
    path = inst.path / instances.STATE
    followers: dict[str, ConsoleFollower] = {}
    ready: list[str] = []
    while time.monotonic() < deadline:
        if path.exists():
            state = json.loads(path.read_text())
            # Each console is read once through, not whole at every look.
            for h, v in state['hosts'].items():
                follower = followers.setdefault(h, ConsoleFollower(Path(v['console'])))
                if h not in ready and any(READY_MARK in line for line in follower.new_lines()):
                    ready.append(h)
            if len(ready) == len(state['hosts']):
                say(f'lab {lab} is up (instance {inst.id}, {inst.path}): {", ".join(state["hosts"])}; '
                    f'labctl console{hint} --lab {lab} HOST, labctl exec{hint} --lab {lab} HOST -- CMD, '
                    f'labctl stop {lab}{hint}')
                for host, h in state['hosts'].items():
                    for line in h.get('forwards', []):
                        say(f'{host}: {line}')
                if others:
                    say(f'lab {lab} has other instances running: --id {", ".join(others)}')
                return 0
        elif proc.poll() is not None:
            text = (inst.path / 'supervisor.log').read_text(errors='replace')
            say(f'labctl: the supervisor of lab {lab} ended (status {proc.returncode}) before the lab '
                f'was up: see {inst.path / "supervisor.log"}\n{text[-2000:]}')
            return 1
        time.sleep(0.2)
    say(f'labctl: lab {lab} did not come up in {timeout:.0f} s; see {inst.path}; stopping it')
    stop(lab, work, say, inst.id)
    return 1


def status(lab: str, work: Path, say=print, ident: str | None = None) -> int:
    found = [find_instance(work, lab, ident)] if ident is not None else running(work, lab)
    if not found:
        find_instance(work, lab, None)     # says that it is not running
    for inst, state in found:
        say(f'lab {lab} instance {inst.id} ({inst.path}): supervisor {state["pid"]} '
            f'{"running" if alive(state["pid"]) else "GONE"}')
        for name, h in state['hosts'].items():
            text = Path(h['console']).read_text(errors='replace')
            pts = guest_shell.last_pts(text, guest_shell.CONSOLE)
            up = 'ready' if READY_MARK in text else ('booted' if USERSPACE_MARK in text else 'booting')
            say(f'  {name}: pid {h["pid"]} {"running" if alive(h["pid"]) else "GONE"}, {up}, '
                f'console {"/dev/pts/%d" % pts if pts is not None else "-"}'
                + (f', uplink {h["uplink"]} (slirp) reaching {h.get("uplink_reaches", "?")}'
                   if h.get('uplink') else ''))
            for line in h.get('forwards', []):
                say(f'    {line}')
    return 0


def capture_segment(lab: str, work: Path, segment: str, out: Path, plugin: Path,
                    seconds: float | None = None, say=print, ident: str | None = None) -> int:
    """Writes a started lab's segment's frames to @out until Ctrl-C, the end
    of @seconds or of the lab; the switch writes them (capture.py)."""
    inst, state = find_instance(work, lab, ident)
    segments = state.get('segments', {})
    if segment not in segments:
        raise SystemExit(f'labctl capture: lab {lab} has no segment {segment!r} '
                         f'(segments: {", ".join(segments) or "none"})')
    mgmt = Path(segments[segment]['mgmt'])
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        capture.start_live(mgmt, plugin, out.resolve())
    except capture.CaptureError as e:
        raise SystemExit(f'labctl capture: {e}')
    say(f'capturing segment {segment} of lab {lab} into {out}'
        + (f' for {seconds:g} s' if seconds else ' until Ctrl-C'))
    deadline = time.monotonic() + seconds if seconds else None
    ended = 'stopped'
    try:
        while deadline is None or time.monotonic() < deadline:
            if not alive(state['pid']):
                ended = 'the lab stopped'
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        ended = 'interrupted'
    try:
        capture.stop_live(mgmt)
    except capture.CaptureError:
        pass                    # the switch is gone with its lab: its file is complete
    try:
        count = len(capture.frames(out.read_bytes()))
    except (OSError, ValueError):
        count = 0
    say(f'capture {ended}: {count} frame(s) in {out} (tcpdump -r {out})')
    return 0


def stop(lab: str, work: Path, say=print, ident: str | None = None) -> int:
    inst, state = find_instance(work, lab, ident)
    sup = state['pid']
    if instances.is_ours(state, sup):
        try:
            os.kill(sup, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 20
        while instances.is_ours(state, sup) and alive(sup) and time.monotonic() < deadline:
            time.sleep(0.1)
    if (instances.is_ours(state, sup) and alive(sup)) or groups_alive(state_groups(state)):
        say(f'labctl: supervisor of {lab} (instance {inst.id}) did not stop everything: crashing the lab')
        return _kill(lab, inst, state, say)
    say(f'lab {lab} (instance {inst.id}) stopped')
    return 0


def crash(lab: str, work: Path, say=print, ident: str | None = None) -> int:
    """Kills every process of the lab now, as a power cut would."""
    inst, state = find_instance(work, lab, ident)
    return _kill(lab, inst, state, say)


def _kill(lab: str, inst: Instance, state: dict, say) -> int:
    # Only groups still the lab's (state_groups checks each leader's start
    # time): a pid of a stale or forged state.json may be anyone's now.
    groups = state_groups(state)
    for pid in groups:
        for kill in (lambda p: os.killpg(p, signal.SIGKILL), lambda p: os.kill(p, signal.SIGKILL)):
            try:
                kill(pid)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + 10
    while groups_alive(groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    (inst.path / instances.STATE).unlink(missing_ok=True)
    say(f'lab {lab} (instance {inst.id}) crashed: every host and switch was killed')
    return 0


def exec_command(lab: str, work: Path, host: str, command: list[str], timeout: float = 60,
                 ident: str | None = None) -> int:
    """Runs one command on a host's exec console; prints its output, returns its status."""
    inst, state = find_instance(work, lab, ident)
    path = host_pts(state, host, guest_shell.EXEC)
    # One exec at a time per host: two on one shell would mix their lines.
    lock = os.open(inst.path / f'{host}.exec.lock', os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fd = guest_shell.open_pts(path)
        try:
            status, out = guest_shell.run(fd, host, command, timeout)
        except guest_shell.ShellError as e:
            raise SystemExit(f'labctl: {e}')
        finally:
            os.close(fd)
    finally:
        os.close(lock)
    sys.stdout.write(out.decode(errors='replace'))
    sys.stdout.flush()
    if status == 124:
        print(f'labctl: {host}: no end after {timeout:.0f} s; interrupted it (Ctrl-C)', file=sys.stderr)
    return status


def _size_console(lab: str, work: Path, host: str, ident: str | None, size: os.terminal_size) -> None:
    """Gives the host's console terminal (/dev/tty1) this terminal's size.

    Through the exec console (/dev/tty2), never typed into the console
    itself, where it would go to whatever runs in the foreground there: the
    guest's tty then tells that foreground program (SIGWINCH), as a local
    terminal does."""
    inst, state = find_instance(work, lab, ident)
    lock = os.open(inst.path / f'{host}.exec.lock', os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fd = guest_shell.open_pts(host_pts(state, host, guest_shell.EXEC))
        try:
            status, _ = guest_shell.run(fd, host, ['stty', '-F', f'/dev/tty{guest_shell.CONSOLE}',
                                                   'rows', str(size.lines), 'cols', str(size.columns)], 10)
        finally:
            os.close(fd)
        if status:
            raise guest_shell.ShellError(f'stty on {host} said {status}')
    finally:
        os.close(lock)


def console(lab: str, work: Path, host: str, ident: str | None = None) -> int:
    """The host's shell on this terminal, until Ctrl-]."""
    fd = guest_shell.open_pts(host_pts(find_instance(work, lab, ident)[1], host))
    print(f'[{host}: console, Ctrl-] to leave]\r')
    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin) if os.isatty(stdin) else None
    # SIGWINCH says "resized" down a pipe: a handler that took a lock (an
    # Event's) deadlocked when a second SIGWINCH ran it again inside the
    # first, as two come at once when a terminal and a program both signal.
    wake_r, wake_w = os.pipe2(os.O_CLOEXEC)
    os.set_blocking(wake_w, False)

    def resized() -> None:
        try:
            os.write(wake_w, b'.')
        except (BlockingIOError, OSError):
            pass                # a resize is pending already, or we are done

    def sizer() -> None:
        # One resize at a time, the latest size: a window dragged wide sends
        # many. UML gives the exec console a new pty each time its last user
        # closes it (an exec just ended): until it has, try again, and a
        # resize that still fails leaves the old size, not this thread dead.
        while os.read(wake_r, 4096):
            for _ in range(20):
                try:
                    _size_console(lab, work, host, ident, os.get_terminal_size(stdin))
                    break
                except (OSError, SystemExit, guest_shell.ShellError):
                    if select.select([wake_r], [], [], 0.25)[0]:
                        break           # a newer size came: that one counts
        os.close(wake_r)
    old_winch = None
    try:
        if saved:
            tty.setraw(stdin)
            # The guest's terminal gets this one's size (stty size, editors),
            # now and whenever this one changes.
            threading.Thread(target=sizer, daemon=True).start()
            resized()
            old_winch = signal.signal(signal.SIGWINCH, lambda *_: resized())
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
        if old_winch is not None:
            signal.signal(signal.SIGWINCH, old_winch)
        os.close(wake_w)        # the sizer reads the end and stops
        if saved:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        os.close(fd)
    print(f'\n[{host}: left the console]')
    return 0
