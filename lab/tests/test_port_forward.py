"""Port forwards on this machine's side: the driver's listeners, libslirp's
option, and the relay that joins a connection to libslirp's (here, to an
echo server on loopback in its place)."""

import errno
import os
import signal
import socket
import threading

import pytest

from kevent_lab import forward_relay, port_forward, topology, uplink


def host(mode: str = 'lab', text: str = 'forward 0 a:80\nforward 0 a:443\n'):
    topo = topology.parse(f'host a\nuplink a eth0{" outside" if mode == "outside" else ""}\n' + text)
    return topo.hosts['a']


def test_default_uplink_listens_here_and_relays_inside():
    opened = port_forward.open_all(host())
    try:
        ports = [o.port for o in opened]
        assert all(ports) and all(o.listener for o in opened)
        # libslirp listens on the namespace's loopback, on the same port.
        assert port_forward.tcpfwd(opened) == (f'tcpfwd=127.0.0.1:{ports[0]}:10.0.2.15:80,'
                                               f'127.0.0.1:{ports[1]}:10.0.2.15:443')
        assert [p for _, p in port_forward.relay(opened)] == ports
        assert opened[0].describe('a') == f'127.0.0.1:{ports[0]} -> a:80'
    finally:
        port_forward.close_all(opened)
    assert all(o.listener is None for o in opened)


def test_outside_uplink_leaves_the_port_to_libslirp():
    opened = port_forward.open_all(host('outside', 'forward 127.0.0.3:0 a:80\n'))
    assert opened[0].listener is None and port_forward.relay(opened) == []
    assert port_forward.tcpfwd(opened) == f'tcpfwd=127.0.0.3:{opened[0].port}:10.0.2.15:80'
    # Free again, for libslirp to bind.
    socket.create_server(('127.0.0.3', opened[0].port)).close()


def test_a_taken_port_names_the_line():
    taken = socket.create_server(('127.0.0.1', 0))
    try:
        port = taken.getsockname()[1]
        with pytest.raises(port_forward.ForwardError) as e:
            port_forward.open_all(host(text=f'forward 0 a:80\nforward {port} a:81\n'))
        assert f'forward on lab.conf line 4: cannot listen on 127.0.0.1:{port}' in str(e.value)
    finally:
        taken.close()


def test_locator_with_forwards_goes_in_a_file(tmp_path):
    loc = uplink.locator('lab', ('tcpfwd=127.0.0.1:1:10.0.2.15:80,127.0.0.1:2:10.0.2.15:81',))
    assert loc.startswith('slirp:///v4/disable_host_loopback/cmdfwd=') and loc.endswith(':81')
    path = port_forward.write_locator(tmp_path / 'uplink.vde', loc)
    # vdeplug4 reads the first line and drops its last character (the newline).
    assert path.read_text() == loc + '\n'
    assert uplink.uml_arg('eth1', 'lab', path) == f'eth1=vde,{path}'
    assert ',' not in uplink.uml_arg('eth1', 'lab').split('=vde,', 1)[1]


class EchoServer:
    """Echoes each connection until its EOF, then closes it."""

    def __init__(self):
        self.sock = socket.create_server(('127.0.0.1', 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn):
        with conn:
            while data := conn.recv(1 << 16):
                conn.sendall(data)


def through(port: int, data: bytes) -> bytes:
    with socket.create_connection(('127.0.0.1', port), timeout=10) as s:
        got = bytearray()
        done = threading.Event()

        def read():
            try:
                while chunk := s.recv(1 << 16):
                    got.extend(chunk)
            except ConnectionResetError:
                pass        # refused behind the relay: reset, or just an end
            done.set()
        threading.Thread(target=read, daemon=True).start()
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass        # refused behind the relay: it ended ours first
        except OSError as e:
            # The same, seen by shutdown() once the reset has come in
            # (CI, once: ENOTCONN on a connection with nothing behind it).
            if e.errno != errno.ENOTCONN:
                raise
        assert done.wait(10)
    return bytes(got)


def test_relay_joins_connections_and_keeps_half_close():
    echo = EchoServer()
    outer = socket.create_server(('127.0.0.1', 0))
    port = outer.getsockname()[1]
    pid = forward_relay.start([(outer, echo.port)])
    outer.close()
    try:
        # More than the relay buffers in one direction, both ways at once,
        # on several connections; each ends by the client's half-close.
        payloads = [os.urandom(n) for n in (1, 3 << 20, 70000)]
        results = [None] * len(payloads)

        def one(i):
            results[i] = through(port, payloads[i])
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(payloads))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == payloads
        # Nothing listens behind: the client's connection just ends.
        dead = socket.create_server(('127.0.0.1', 0))
        dead_port = dead.getsockname()[1]
        dead.close()
        outer2 = socket.create_server(('127.0.0.1', 0))
        pid2 = forward_relay.start([(outer2, dead_port)])
        port2 = outer2.getsockname()[1]
        outer2.close()
        try:
            assert through(port2, b'x') == b''
        finally:
            os.kill(pid2, signal.SIGKILL)
            os.waitpid(pid2, 0)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        echo.sock.close()


def test_reach_relay_and_bridge_join_a_guest_command_to_a_loopback_port(tmp_path):
    # forward_relay.py as a program (UNIX socket -> 127.0.0.1:PORT) and
    # stdio_unix.py (standard input and output -> that socket), as a host's
    # reach uses them; an echo server stands for the machine's service.
    import subprocess
    import sys
    import time
    from kevent_lab import reach
    echo = EchoServer()
    sock = tmp_path / 'r.sock'
    relay = subprocess.Popen([sys.executable, str(reach.RELAY), f'{sock}:{echo.port}'])
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
        data = os.urandom(300000)
        out = subprocess.run([sys.executable, str(reach.BRIDGE), str(sock)], input=data,
                             capture_output=True, timeout=30)
        assert out.returncode == 0 and out.stdout == data, out.stderr
    finally:
        relay.kill()
        relay.wait()
        echo.sock.close()


def test_reach_commands_for_the_uplink(tmp_path):
    from kevent_lab import reach
    h = topology.parse('host a\nuplink a eth0\nreach a 5432\nreach a 6379\n').hosts['a']
    cmds = reach.commands(h, tmp_path)
    assert (tmp_path / 'stdio_unix.py').exists()
    assert cmds[0].startswith("10.0.2.8:5432:'") and cmds[0].endswith(f"{tmp_path}/reach-5432.sock'")
    assert len(cmds) == 2 and ',' not in ''.join(cmds)
    loc = uplink.locator('lab', (), cmds)
    assert loc.count('cmdfwd=') == 1 and 'cmdfwd=10.0.2.7:7:cat,10.0.2.8:5432:' in loc
    argv = reach.relay_argv(h, tmp_path)
    assert argv[argv.index('--tcp-connect') + 1] == '5432' and '--any-tcp' not in argv
    assert argv[-2:] == [f'{tmp_path}/reach-5432.sock:5432', f'{tmp_path}/reach-6379.sock:6379']
