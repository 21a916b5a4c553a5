"""labctl exec against a stand-in for a started host: a pty held by this
process (UML's console), bridged to a second pty (the guest's tty) on which
an interactive shell runs with that tty as its controlling terminal, as
lab_console gives the guest's shell."""
import json
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from kevent_lab import guest_shell, instances, session


class FakeHost:
    """UML's side of a console: this process holds the master of the pty
    labctl opens, and copies to and from the guest's terminal."""

    def __init__(self, tmp: Path, hostname: str, shell: tuple[str, ...] = ('sh', '-i')):
        self.uml_master, slave = os.openpty()
        self.pts = os.ttyname(slave)
        os.close(slave)
        guest_master, guest_slave = os.openpty()
        rc = tmp / f'{hostname}.rc'
        rc.write_text(f'hostname() {{ echo {hostname}; }}\nPS1="{hostname} # "\n')
        self.shell = subprocess.Popen(
            list(shell), stdin=guest_slave, stdout=guest_slave, stderr=guest_slave,
            start_new_session=True, env={'ENV': str(rc), 'PATH': os.environ['PATH']},
            preexec_fn=lambda: __import__('fcntl').ioctl(0, __import__('termios').TIOCSCTTY, 1))
        os.close(guest_slave)
        self.guest = guest_master
        self.stop = False
        self.wait_for_prompt(f'{hostname} # '.encode())
        threading.Thread(target=self.bridge, daemon=True).start()

    def wait_for_prompt(self, prompt: bytes, timeout: float = 20) -> None:
        """Until the shell has printed its first prompt: a Ctrl-C that
        reaches a shell still starting, before it has made itself
        interactive, ends it (the default action of SIGINT), and the test
        then finds no shell. A started lab's shell has long been up."""
        seen, deadline = b'', time.monotonic() + timeout
        while prompt not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.guest], [], [], left)[0]:
                raise RuntimeError(f'the stand-in shell printed no prompt: {seen[-200:]!r}')
            try:
                seen += os.read(self.guest, 4096)
            except OSError as e:
                raise RuntimeError(f'the stand-in shell ended at start: {seen[-200:]!r}') from e

    def bridge(self):
        ends = {self.uml_master: self.guest, self.guest: self.uml_master}
        while not self.stop:
            r, _, _ = select.select(list(ends), [], [], 0.1)
            for fd in r:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b''
                if data:
                    os.write(ends[fd], data)

    def close(self):
        self.stop = True
        self.shell.kill()
        self.shell.wait()


@pytest.fixture
def host(tmp_path):
    h = FakeHost(tmp_path, 'c1')
    yield h
    h.close()


def shell_run(h, words, timeout=10, name='c1'):
    fd = guest_shell.open_pts(h.pts)
    try:
        return guest_shell.run(fd, name, words, timeout)
    finally:
        os.close(fd)


def test_output_and_status(host):
    assert shell_run(host, ['echo hello; exit 3']) == (3, b'hello\n')
    assert shell_run(host, ['printf', '%s|', 'a b', '$HOME']) == (0, b'a b|$HOME|')


def test_output_cannot_fake_the_end_or_the_status(host):
    """`exec a -- 'echo __LABEND__0; false'` used to exit 0."""
    status, out = shell_run(host, ['echo __LABEND__0; echo "__LAB""END__0"; false'])
    assert status == 1 and b'__LABEND__0' in out


def test_a_stuck_command_is_interrupted_and_the_next_exec_works(host):
    """`exec a -- cat` waited for ever, and every later exec returned 124."""
    assert shell_run(host, ['cat']) == (0, b'')              # stdin is /dev/null
    status, _ = shell_run(host, ['sleep 30'], timeout=1)
    assert status == 124
    t0 = time.monotonic()
    assert shell_run(host, ['echo next']) == (0, b'next\n')
    assert time.monotonic() - t0 < 5


def test_a_command_that_ignores_ctrl_c_is_killed_and_the_next_exec_works(host, tmp_path):
    """`trap '' INT; sleep 20` outlived exec's Ctrl-C: every later exec said
    'no answer from the shell'. Its process group is killed now; a server
    left in the background by a command that ended runs on."""
    started = tmp_path / 'bg'
    assert shell_run(host, [f"(sleep 300 & echo $! > {started})"]) == (0, b'')
    status, _ = shell_run(host, ["trap '' INT HUP; sh -c 'echo $$ > " + str(tmp_path / 'stuck')
                                 + "; exec sleep 300'"], timeout=1)
    assert status == 124
    t0 = time.monotonic()
    assert shell_run(host, ['echo next']) == (0, b'next\n')
    assert time.monotonic() - t0 < 5
    stuck = int((tmp_path / 'stuck').read_text())
    deadline = time.monotonic() + 5
    while os.path.exists(f'/proc/{stuck}') and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f'/proc/{stuck}') or \
        Path(f'/proc/{stuck}/stat').read_text().rsplit(')', 1)[1].split()[0] == 'Z'
    background = int(started.read_text())
    assert os.path.exists(f'/proc/{background}')
    os.kill(background, 9)


def test_a_shell_of_another_host_runs_nothing(host, tmp_path):
    marker = tmp_path / 'ran'
    with pytest.raises(guest_shell.ShellError, match="says it is 'c1', not 'c3'"):
        shell_run(host, [f'touch {marker}'], name='c3')
    assert not marker.exists()


def test_the_last_pty_uml_announced_counts_and_must_be_held_by_uml(tmp_path, host):
    """UML takes a new pty when the old one hangs up; the first line of the
    console log named a pty that was c3's, or a terminal's, by then."""
    other_master, other_slave = os.openpty()            # someone else's pty, not UML's
    other = int(os.ttyname(other_slave).rsplit('/', 1)[1])
    mine = int(host.pts.rsplit('/', 1)[1])
    log = tmp_path / 'console.log'
    log.write_text(f"Virtual console 2 assigned device '/dev/pts/{other}'\n"
                   "Virtual console 1 assigned device '/dev/pts/999'\n"
                   f"Virtual console 2 assigned device '/dev/pts/{mine}'\n")
    assert guest_shell.last_pts(log.read_text(), 2) == mine
    # As UML writes it (printk's time stamp), and never from mid-line or
    # with more after it, where a program's output could put it.
    stamped = f"[    8.180000] Virtual console 2 assigned device '/dev/pts/{mine}'\r\n"
    for forged in (f"x Virtual console 2 assigned device '/dev/pts/{other}'\n",
                   f"Virtual console 2 assigned device '/dev/pts/{other}' x\n"):
        assert guest_shell.last_pts(stamped + forged, 2) == mine
    assert guest_shell.find_pts(log, os.getpid(), 2) == host.pts
    # A pty this process does not hold is refused, even when announced last.
    pid = host.shell.pid
    with pytest.raises(guest_shell.ShellError, match='no pty its UML process holds'):
        guest_shell.find_pts(log, pid, 2, wait_s=0.3)
    os.close(other_master)
    os.close(other_slave)


def test_labctl_exec_end_to_end_on_the_stand_in(tmp_path, host, capsys):
    """labctl exec as a user runs it. Before: the output faked the end
    marker (exit 0), `cat` returned 124 and so did every exec after it."""
    inst = instances.claim(tmp_path, 'star')
    try:
        log = tmp_path / 'c1.console.log'
        log.write_text(f"{session.READY_MARK}\nVirtual console 1 assigned device '{host.pts}'\n"
                       f"Virtual console 2 assigned device '{host.pts}'\n")
        state = {'lab': 'star', 'id': inst.id, 'pid': os.getpid(), 'switches': [],
                 'hosts': {'c1': {'pid': os.getpid(), 'console': str(log)}}}
        state['starts'] = instances.starts_of([os.getpid()])
        (inst.path / 'state.json').write_text(json.dumps(state))
        assert session.exec_command('star', tmp_path, 'c1', ['hostname; exit 5']) == 5
        assert capsys.readouterr().out == 'c1\n'
        assert session.exec_command('star', tmp_path, 'c1', ['echo __LABEND__0; false'], timeout=5) == 1
        assert session.exec_command('star', tmp_path, 'c1', ['cat'], timeout=5) == 0
        assert session.exec_command('star', tmp_path, 'c1', ['echo', 'a  b']) == 0
        assert capsys.readouterr().out.endswith('a  b\n')
    finally:
        inst.release()


@pytest.mark.skipif(not shutil.which('busybox'), reason='no busybox here (make deps installs busybox-static)')
def test_a_long_command_reaches_busybox_whole(tmp_path):
    """The guest's shell is busybox's, whose line editing keeps 1024 bytes of
    a typed line: an exec of about a kilobyte hung (124, no output)."""
    h = FakeHost(tmp_path, 'c1', ('busybox', 'sh', '-i'))
    try:
        arg = 'a b $HOME `x` \'q\' "d" \\ ; | & ' * 150        # 5 KB of what a shell would take apart
        status, out = shell_run(h, ['printf', '%s\n', arg])
        assert status == 0 and out == arg.encode() + b'\n'
        status, out = shell_run(h, ['sh -c "exit 7"; ' + 'true; ' * 300 + 'echo fine'])
        assert status == 0 and out == b'fine\n'
        status, out = shell_run(h, ['exit 5 # ' + 'x' * 2000])
        assert status == 5
        assert list(Path('/tmp').glob('.lab-exec-*')) == []     # nothing left behind
    finally:
        h.close()
