"""exec and console on a started lab, on UML: the named host answers, the
output cannot fake the end, a stuck command does not block later execs,
Ctrl-C reaches the console's command, the console has the terminal's size,
and a host's hostfs reaches only its own directory.

Needs the built kernel and rootfs; skipped, and said so, without them."""
import fcntl
import os
import subprocess
import signal
import pty
import select
import struct
import termios
import time

import pytest

from kevent_lab import confine

from test_interrupt import KERNEL, ROOTFS, TOP, labctl

pytestmark = pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()),
                                reason='kernel and rootfs not built')


@pytest.fixture(scope='module')
def pair():
    out = labctl('start', 'pair')
    assert out.returncode == 0, out.stdout + out.stderr
    ident = out.stdout.split('(instance ')[1].split(',')[0]
    yield ident
    labctl('stop', 'pair', '--id', ident)


def lab_exec(ident, host, *words, timeout=60):
    return labctl('exec', '--lab', 'pair', '--id', ident, host, '--', *words)


def test_exec_reaches_the_named_host_every_time(pair):
    for host in ('client', 'server', 'client', 'client', 'server'):
        out = lab_exec(pair, host, 'hostname')
        assert (out.returncode, out.stdout) == (0, f'{host}\n')


def test_exec_output_cannot_fake_the_end(pair):
    out = lab_exec(pair, 'server', 'echo __LABEND__0; false')
    assert out.returncode == 1 and '__LABEND__0' in out.stdout


def test_exec_after_a_stuck_one(pair):
    assert lab_exec(pair, 'server', 'cat').returncode == 0        # stdin is /dev/null
    out = lab_exec(pair, 'server', 'printf', '%s|', 'a b', '$HOME')
    assert out.stdout == 'a b|$HOME|'


def test_a_command_that_ignores_ctrl_c_and_hangup_ends_with_its_exec(pair):
    """It outlived exec's Ctrl-C and the hangup, and ran on behind later execs."""
    out = labctl('exec', '--lab', 'pair', '--id', pair, '--timeout', '3', 'server',
                 "trap '' INT HUP QUIT; sleep 4321")
    assert out.returncode == 124, out.stdout + out.stderr
    out = lab_exec(pair, 'server', 'ps -o pid,args | grep -c "[s]leep 4321"')
    assert (out.returncode, out.stdout) == (1, '0\n'), out.stdout + out.stderr


def test_hostfs_reaches_only_the_hosts_own_directory(pair):
    out = lab_exec(pair, 'server', 'ls /lab; mkdir -p /mnt/h; mount -t hostfs -o /etc hostfs /mnt/h')
    assert out.stdout.split('\n')[0] == 'server'                  # not the client's directory
    assert out.returncode != 0                                    # no /etc below its own directory


@pytest.mark.skipif(confine.abi() == 0, reason='no Landlock on this kernel: hosts run unconfined')
def test_root_in_a_guest_cannot_leave_its_directory(pair):
    # hostfs= alone is left with `..`: the host's UML process is what is
    # confined (confine.py), so root in the guest gets nothing outside.
    probe = TOP / 'build' / f'escape-probe-{pair}'
    probe.unlink(missing_ok=True)
    up = '/'.join(['..'] * 24)
    out = lab_exec(pair, 'server', f'id -u; mkdir -p /mnt/up; mount -t hostfs -o {up} hostfs /mnt/up; '
                   f'echo mount=$?; echo escaped > /mnt/up{probe}; echo write=$?; '
                   f'cat /mnt/up/etc/hostname >/dev/null; echo read=$?; umount /mnt/up')
    try:
        assert out.stdout.split('\n')[:2] == ['0', 'mount=0'], out.stdout     # root, and it mounts
        assert 'write=1' in out.stdout and 'read=1' in out.stdout, out.stdout
        assert not probe.exists()
    finally:
        probe.unlink(missing_ok=True)


def test_console_ctrl_c_and_size(pair):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(str(TOP / 'lab' / 'labctl'),
                 ['labctl', 'console', '--lab', 'pair', '--id', pair, 'client'])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 132, 0, 0))
    out = b''

    def pump(seconds):
        nonlocal out
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    return
    try:
        pump(1.5)
        os.write(fd, b'sleep 100\n')
        pump(1)
        # A command left running in the console: exec still answers at once.
        t0 = time.monotonic()
        ex = subprocess.run([str(TOP / 'lab' / 'labctl'), 'exec', '--lab', 'pair', '--id', pair,
                             'client', '--', 'hostname'], capture_output=True, timeout=30)
        exec_took = time.monotonic() - t0
        # The window changes size while `sleep` runs: the guest's terminal follows.
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 100, 0, 0))
        os.kill(pid, signal.SIGWINCH)
        pump(1)
        os.write(fd, b'\x03')
        pump(0.5)
        os.write(fd, b'echo "ali""ve"\n')
        # The resize goes through the exec console, which UML may still be
        # handing a new pty after the exec above: give it some seconds.
        for _ in range(10):
            os.write(fd, b'stty size\n')
            pump(1)
            if b'30 100' in out:
                break
        os.write(fd, b'\x1d')
        pump(1)
    finally:
        os.waitpid(pid, 0)
    text = out.decode(errors='replace')
    assert ex.returncode == 0 and ex.stdout.strip() == b'client' and exec_took < 10, (ex, exec_took)
    assert 'alive' in text, text[-500:]            # Ctrl-C ended the sleep
    assert '30 100' in text, text[-500:]            # the size after the resize, not 40 132
    assert 'stty rows' not in text, text[-500:]     # nothing typed into the console for it
