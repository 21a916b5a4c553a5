"""confine.py: what a confined program may and may not touch on this machine.

Runs on this machine's kernel (no UML): skipped, and said so, where it has
no Landlock. tests/test_started_lab_shells.py checks the same from inside a
guest, through hostfs."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kevent_lab import confine

LANDLOCK = confine.abi()
pytestmark = pytest.mark.skipif(LANDLOCK == 0, reason='this kernel has no Landlock')
PY = '/usr/bin/python3'


def confined(tmp_path, code, **rules):
    # The program is Debian's python (under /usr), which host_rules lets run.
    r = confine.host_rules(rules.get('own', []), rules.get('sockets', []), [],
                           rules.get('tcp', []))
    return subprocess.run(confine.command(r, [PY, '-c', code]), capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)


def test_writes_only_below_its_own_directories(tmp_path):
    own, other = tmp_path / 'own', tmp_path / 'other'
    own.mkdir(), other.mkdir()
    code = f'''
import os
for path in ("{own}/f", "{other}/f", "{own}/../other/g"):
    try:
        open(path, "w").write("x"); print("wrote", path)
    except PermissionError:
        print("refused", path)
'''
    out = confined(tmp_path, code, own=[own])
    assert out.stdout.split('\n')[:3] == [f'wrote {own}/f', f'refused {other}/f',
                                          f'refused {own}/../other/g'], out.stderr
    assert (own / 'f').exists() and not (other / 'f').exists()


def test_reads_the_system_but_not_a_home(tmp_path):
    secret = tmp_path / 'secret'
    secret.write_text('key')
    code = f'''
for path in ("/usr/bin/env", "{secret}", "/etc/hostname"):
    try:
        open(path, "rb").read(1); print("read", path)
    except PermissionError:
        print("refused", path)
'''
    out = confined(tmp_path, code)
    assert out.stdout.split('\n')[:3] == ['read /usr/bin/env', f'refused {secret}',
                                          'refused /etc/hostname'], out.stderr


@pytest.mark.skipif(LANDLOCK < 4, reason='Landlock below ABI 4 has no TCP rules')
def test_tcp_only_to_the_ports_given(tmp_path):
    allowed, other = socket.socket(), socket.socket()
    for s in (allowed, other):
        s.bind(('127.0.0.1', 0))
        s.listen()
    ports = [s.getsockname()[1] for s in (allowed, other)]
    code = f'''
import socket
for port in {ports}:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5); print("reached", port)
    except PermissionError:
        print("refused", port)
'''
    out = confined(tmp_path, code, tcp=[ports[0]])
    assert out.stdout.split('\n')[:2] == [f'reached {ports[0]}', f'refused {ports[1]}'], out.stderr


def test_a_missing_program_is_reported(tmp_path):
    out = subprocess.run(confine.command(confine.Rules(), ['/no/such/program']),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 127 and 'cannot run /no/such/program' in out.stderr


def test_describe_says_what_is_confined():
    assert 'unconfined' in confine.describe(0)
    assert confine.describe(4).endswith('files, TCP')


@pytest.mark.parametrize('as_user', ['this user', 'nobody'])
def test_own_network_has_only_its_loopback(tmp_path, as_user):
    # A user other than root gets a user namespace first (confine.own_network).
    prefix = []
    command = confine.command
    if as_user == 'nobody':
        if os.geteuid() != 0:
            pytest.skip('only root can run a program as nobody')
        prefix = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
        # Some machines close user namespaces to users (a chroot, a sysctl,
        # an AppArmor policy): the uplink then needs root, and says so.
        probe = subprocess.run(prefix + ['unshare', '--user', '--net', 'true'],
                               capture_output=True, text=True, timeout=60)
        if probe.returncode != 0:
            pytest.skip('this machine gives no user namespace to nobody: '
                        + probe.stderr.strip())
        # A checkout in root's home (0700) is closed to nobody: a copy.
        public = Path(tempfile.mkdtemp())
        public.chmod(0o755)
        shutil.copy(confine.__file__, public / 'confine.py')
        (public / 'confine.py').chmod(0o644)
        command = lambda rules, argv: [PY, str(public / 'confine.py')] + rules.argv() + ['--'] + argv
    r = confine.host_rules([], [], [], None, own_network=True)
    # Its interfaces, and a connection over its loopback (which must be up).
    code = ('import socket\n'
            'print(" ".join(n for _, n in socket.if_nameindex()))\n'
            'l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()\n'
            'socket.create_connection(l.getsockname(), timeout=5); print("connected")\n')
    out = subprocess.run(prefix + command(r, [PY, '-c', code]),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split('\n')[:2] == ['lo', 'connected']
