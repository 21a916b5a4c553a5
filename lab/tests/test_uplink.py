"""The slirp uplink on real UML hosts: it reaches the echo service and,
by default, nothing of this machine (neither its loopback, TCP or UDP, nor
its other addresses, even when root in the guest adds a default route); an
`outside` uplink reaches this machine's network but not its loopback; and
every slirp process goes with its lab (stop, crash, a killed supervisor).

Needs the built kernel, vde_plug and libvdeplug_slirp; skipped without them.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from kevent_lab import uplink
from test_interrupt import KERNEL, ROOTFS, TOP, in_sessions, instance_dir, labctl


def _plug_missing() -> str:
    try:
        uplink.check_installed()
        return ''
    except FileNotFoundError as e:
        return str(e)


pytestmark = pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()) or bool(_plug_missing()),
                                reason=f'kernel or rootfs not built, or {_plug_missing()}')


def slirps_in(sessions: set[int]) -> list[int]:
    out = []
    for pid in in_sessions(sessions):
        try:
            # UML's own processes carry its command line: slirp:// included,
            # or the file that holds it (a host with port forwards).
            with open(f'/proc/{pid}/comm') as comm, open(f'/proc/{pid}/cmdline', 'rb') as cmd:
                line = cmd.read()
                if comm.read().strip() == 'vde_plug' and (b'slirp://' in line or b'uplink.vde' in line):
                    out.append(pid)
        except OSError:
            pass
    return out


def start_uplink():
    out = labctl('start', 'uplink')
    assert out.returncode == 0, out
    d = instance_dir(out.stdout)
    state = json.loads((d / 'state.json').read_text())
    sessions = {state['pid'], *state['switches'], *(h['pid'] for h in state['hosts'].values())}
    return d, state, sessions


def lab_exec(host, command):
    return labctl('exec', '--lab', 'uplink', host, '--', command)


def global_address() -> str:
    """An IPv4 address of this machine that is not loopback, or '' if it has
    none: asked of each interface (SIOCGIFADDR), without `ip`, which a
    minimal Debian root does not have."""
    import fcntl
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                ifreq = fcntl.ioctl(s, 0x8915, struct.pack('256s', name.encode()[:15]))
            except OSError:
                continue                      # no IPv4 address
            addr = socket.inet_ntoa(ifreq[20:24])
            if not addr.startswith('127.'):
                return addr
    return ''


def test_run_uplink_lab(tmp_path):
    proc = subprocess.run([sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', 'uplink',
                           '--results', str(tmp_path), '--expect'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'a: uplink eth1 reaches the echo service 10.0.2.7:7 only' in proc.stdout
    # a has port forwards: its locator, with their commas, is in a file.
    console = (tmp_path / 'a.console.log').read_text(errors='replace')
    assert 'eth1=vde,/' in console and 'uplink.vde' in console
    assert 'a: forward 127.0.0.1:' in proc.stdout and ' -> a:8080' in proc.stdout


class Listeners:
    """A TCP and a UDP socket of this machine, on every address, that record
    what reaches them (a TCP connection is closed at once, so nc ends)."""

    def __init__(self):
        self.tcp = socket.socket()
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(('0.0.0.0', 0))
        self.tcp.listen()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(('0.0.0.0', 0))
        self.tcp_port, self.udp_port = self.tcp.getsockname()[1], self.udp.getsockname()[1]
        self.got: list[str] = []
        for what, sock in (('tcp', self.tcp), ('udp', self.udp)):
            threading.Thread(target=self._wait, args=(what, sock), daemon=True).start()

    def _wait(self, what, sock):
        while True:
            try:
                if what == 'tcp':
                    sock.accept()[0].close()
                else:
                    sock.recv(100)
            except OSError:
                return
            self.got.append(what)

    def reached(self) -> list[str]:
        time.sleep(0.5)
        return sorted(set(self.got))

    def close(self):
        for sock in (self.tcp, self.udp):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def test_uplink_reaches_the_echo_service_only_and_stops_with_the_lab():
    d, state, sessions = start_uplink()
    listen = Listeners()
    try:
        # slirp (vde_plug with libvdeplug_slirp) runs in its host's process group.
        slirps = slirps_in({state['hosts']['a']['pid']})
        assert len(slirps) == 1 and slirps_in({state['hosts']['b']['pid']}) == []
        st = labctl('status', 'uplink')
        assert 'uplink eth1 (slirp) reaching the echo service 10.0.2.7:7 only' in st.stdout, st
        ex = lab_exec('a', 'echo hello-from-$(hostname) | nc -w 5 $LAB_ECHO_ADDR $LAB_ECHO_PORT')
        assert (ex.returncode, ex.stdout) == (0, 'hello-from-a\n'), ex
        # No default route unless lab.conf adds one.
        ex = lab_exec('a', 'ip route | grep -c default')
        assert ex.stdout.strip() == '0', ex
        # Nothing of this machine: not its loopback as 10.0.2.2, TCP or UDP;
        # not, after root adds a default route, its other addresses.
        where = ['10.0.2.2'] + ([global_address()] if global_address() else [])
        probes = '; '.join(f'nc -w 2 {ip} {listen.tcp_port} </dev/null; echo tcp=$?; '
                           f'echo x | nc -u -w 1 {ip} {listen.udp_port}' for ip in where)
        ex = lab_exec('a', f'ip route add default via 10.0.2.2; {probes}')
        assert listen.reached() == [], ex.stdout
        assert ex.stdout.count('tcp=1') == len(where), ex.stdout
        # b has no uplink: 10.0.2.7 is nowhere it can reach.
        ex = lab_exec('b', 'nc -w 3 10.0.2.7 7 </dev/null')
        assert ex.returncode != 0, ex
        stopped = labctl('stop', 'uplink')
        assert stopped.returncode == 0, stopped
    finally:
        listen.close()
        labctl('crash', 'uplink', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []
    assert all(not os.path.exists(f'/proc/{p}') or open(f'/proc/{p}/stat').read().split()[2] == 'Z'
               for p in slirps)


@pytest.mark.skipif(not global_address(), reason='this machine has no address besides loopback')
def test_outside_uplink_reaches_this_machines_network_but_not_its_loopback():
    d, state, sessions = start_uplink()
    listen = Listeners()
    try:
        ex = lab_exec('c', f'nc -w 2 10.0.2.2 {listen.tcp_port} </dev/null; echo loop=$?; '
                      f'echo x | nc -u -w 1 10.0.2.2 {listen.udp_port}')
        assert 'loop=1' in ex.stdout and listen.reached() == [], ex.stdout
        ex = lab_exec('c', f'ip route add default via 10.0.2.2; '
                      f'nc -w 3 {global_address()} {listen.tcp_port} </dev/null; echo out=$?')
        assert 'out=0' in ex.stdout and listen.reached() == ['tcp'], ex.stdout
    finally:
        listen.close()
        labctl('crash', 'uplink', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []


def test_killed_supervisor_leaves_no_slirp():
    d, state, sessions = start_uplink()
    try:
        assert slirps_in(sessions)
        # The supervisor dies without cleaning up (a power cut of the driver):
        # its watchdog kills the hosts, slirp with them, and crash finds
        # nothing running any more.
        os.kill(state['pid'], signal.SIGKILL)
        for _ in range(50):
            if not in_sessions(sessions):
                break
            time.sleep(0.1)
        assert in_sessions(sessions) == []
        crashed = labctl('crash', 'uplink')
        assert 'is not running' in crashed.stderr, crashed
    finally:
        labctl('crash', 'uplink', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []
    assert labctl('status', 'uplink').returncode != 0


def forwarded_ports(state: dict, host: str) -> dict[int, int]:
    """{guest port: this machine's port} of @host's forwards, from state.json."""
    out = {}
    for line in state['hosts'][host].get('forwards', []):
        if not line.startswith('forward '):
            continue
        machine, _, guest = line.partition(' -> ')
        out[int(guest.rsplit(':', 1)[1])] = int(machine.rsplit(':', 1)[1])
    return out


def echo_through(port: int, data: bytes) -> bytes:
    """What comes back from this machine's 127.0.0.1:@port for @data."""
    with socket.create_connection(('127.0.0.1', port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = bytearray()
        while chunk := s.recv(1 << 16):
            got += chunk
    return bytes(got)


def test_forwarded_ports_reach_guest_servers_from_this_machine():
    # a's uplink is of the default mode (a network of its own: the driver's
    # relay), c's `outside` (libslirp listens here itself); each forwards
    # its port 8080, which an echo server in the guest answers.
    d, state, sessions = start_uplink()
    try:
        st = labctl('status', 'uplink')
        a, c = forwarded_ports(state, 'a'), forwarded_ports(state, 'c')
        assert set(a) == {8080, 8081} and set(c) == {8080}, state
        assert f'forward 127.0.0.1:{a[8080]} -> a:8080' in st.stdout, st.stdout
        for host in ('a', 'c'):
            ex = lab_exec(host, '(/opt/kevent/tcp_echo server 8080 1 >/tmp/echo.log 2>&1 &); sleep 0.5')
            assert ex.returncode == 0, ex
        data = os.urandom(1 << 20)
        assert echo_through(a[8080], data) == data
        assert echo_through(c[8080], data) == data
        for host in ('a', 'c'):
            ex = lab_exec(host, 'cat /tmp/echo.log')
            assert 'ok 3 all_clients_served' in ex.stdout, ex.stdout
        # Nothing listens on a's 8081: the connection ends with no data.
        try:
            assert echo_through(a[8081], b'x') == b''
        except ConnectionResetError:
            pass
        # The machine's side listens on loopback only.
        for port in (a[8080], c[8080]):
            assert f'127.0.0.1:{port}' in forwards_listening()
        stopped = labctl('stop', 'uplink')
        assert stopped.returncode == 0, stopped
    finally:
        labctl('crash', 'uplink', '--id', d.name)
    time.sleep(0.5)
    # The relay and libslirp went with their hosts; the ports are free again.
    assert in_sessions(sessions) == []
    listening = forwards_listening()
    assert all(f'127.0.0.1:{p}' not in listening for p in (*a.values(), *c.values()))


def forwards_listening() -> set[str]:
    """ADDR:PORT of this machine's listening IPv4 TCP sockets (/proc/net/tcp)."""
    out = set()
    with open('/proc/net/tcp') as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] == '0A':
                hexaddr, hexport = fields[1].split(':')
                addr = socket.inet_ntoa(int(hexaddr, 16).to_bytes(4, 'little'))
                out.add(f'{addr}:{int(hexport, 16)}')
    return out


REACH_PORT = 47012      # lab/labs/uplink/lab.conf: reach a 47012


def test_reach_opens_one_loopback_port_to_one_host():
    try:
        server = socket.create_server(('127.0.0.1', REACH_PORT))
    except OSError as e:
        pytest.skip(f'127.0.0.1:{REACH_PORT}, which the uplink lab reaches, is taken here: {e}')
    got = []

    def echo():
        while True:
            try:
                conn, peer = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(4096):
                    got.append(data)
                    conn.sendall(data.upper())
    threading.Thread(target=echo, daemon=True).start()
    d, state, sessions = start_uplink()
    try:
        assert any(line == f"reach 10.0.2.8:{REACH_PORT} -> this machine's 127.0.0.1:{REACH_PORT}"
                   for line in state['hosts']['a'].get('forwards', [])), state
        ex = lab_exec('a', f'echo hello-machine | nc -w 5 10.0.2.8 {REACH_PORT}')
        assert ex.stdout == 'HELLO-MACHINE\n', ex
        assert b''.join(got) == b'hello-machine\n'
        # Only that port: another one of this machine's loopback stays out of reach.
        other = socket.create_server(('127.0.0.1', 0))
        ex = lab_exec('a', f'nc -w 2 10.0.2.8 {other.getsockname()[1]} </dev/null; echo rc=$?')
        other.close()
        assert 'rc=1' in ex.stdout, ex
        # Only that host: c has an uplink too, and no reach line.
        ex = lab_exec('c', f'echo x | nc -w 2 10.0.2.8 {REACH_PORT}; echo rc=$?')
        assert 'X' not in ex.stdout, ex
        assert labctl('stop', 'uplink').returncode == 0
    finally:
        server.close()
        labctl('crash', 'uplink', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []
