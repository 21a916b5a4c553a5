"""Labs that span machines: the command line's checks, and two driver
instances on this machine, each running half of lab pair, joined over
udp:// on 127.0.0.1, whose merged report matches the lab's signature."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kevent_lab import capture, span, topology
from test_interrupt import KERNEL, ROOTFS, TOP, labctl

LABS = TOP / 'lab' / 'labs'


def test_parse_carry():
    assert span.parse_carry('lan=udp://5000->10.0.0.2:5000') == ('lan', 'udp://5000->10.0.0.2:5000')
    assert span.parse_carry('net0=vxvde://239.1.2.3/port=5000')[1].startswith('vxvde://')
    for bad, words in (('lan', 'SEGMENT=LOCATOR'), ('lan=/tmp/x', 'SEGMENT=LOCATOR'),
                       ('Lan=udp://1->h:2', 'SEGMENT=LOCATOR'),
                       ('lan=tap://tap0', 'does not reach another machine'),
                       ('lan=vde:///tmp/sw', 'does not reach another machine')):
        with pytest.raises(span.SpanError, match=words):
            span.parse_carry(bad)


def test_only_keeps_the_named_hosts_and_wants_shared_segments_carried():
    pair = topology.load(LABS / 'pair' / 'lab.conf')
    half = span.only(pair, ['server'], {'lan': 'udp://1->h:2'})
    assert list(half.hosts) == ['server'] and half.segments == ['lan']
    assert span.only(pair, [], {}) is pair
    with pytest.raises(span.SpanError, match='segment lan joins hosts here to client, which run elsewhere'):
        span.only(pair, ['server'], {})
    with pytest.raises(span.SpanError, match=r'no host nosuch \(its hosts: server, client\)'):
        span.only(pair, ['nosuch'], {})
    with pytest.raises(span.SpanError, match=r'no segment wan to carry \(its segments: lan\)'):
        span.only(pair, ['server'], {'wan': 'udp://1->h:2'})


def test_only_refuses_expect_on_a_part(tmp_path):
    out = labctl('run', '--lab', 'pair', '--only', 'server', '--carry', 'lan=udp://1->127.0.0.1:2',
                 '--expect', '--results', str(tmp_path))
    assert out.returncode != 0 and 'labctl merge --expect' in out.stderr, out


def free_udp_ports(n: int) -> list[int]:
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    for s in socks:
        s.bind(('127.0.0.1', 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def plugs_of(locator: str) -> list[int]:
    """The vde_plug processes whose command line holds @locator (a carried
    segment's), zombies not counted."""
    out = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f, open(f'/proc/{pid}/stat') as st:
                argv = f.read().split(b'\0')
                state = st.read().rsplit(')', 1)[1].split()[0]
            if argv[0].endswith(b'vde_plug') and locator.encode() in argv and state != 'Z':
                out.append(int(pid))
        except (OSError, IndexError):
            pass
    return out


@pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')
def test_two_instances_joined_over_udp_pass_the_cross_host_suites(tmp_path):
    p1, p2 = free_udp_ports(2)
    one = f'udp://127.0.0.1:{p1}->127.0.0.1:{p2}'
    two = f'udp://127.0.0.1:{p2}->127.0.0.1:{p1}'

    def part(host, locator, results, *extra):
        return subprocess.Popen([sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', 'pair',
                                 '--only', host, '--carry', f'lan={locator}', '--results', str(results),
                                 *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # The server's half also captures the carried segment: its switch is then
    # a vde_switch, joined to the transport by a vde_plug.
    server = part('server', one, tmp_path / 'server', '--capture', 'lan')
    client = part('client', two, tmp_path / 'client')
    outs = [p.communicate(timeout=150)[0] for p in (server, client)]
    assert [server.returncode, client.returncode] == [0, 0], '\n'.join(outs)
    assert f'segment lan is carried to the other machines by {one}' in outs[0]

    merged = labctl('merge', '--lab', 'pair', '--expect', '--results', str(tmp_path / 'all'),
                    str(tmp_path / 'server'), str(tmp_path / 'client'))
    assert merged.returncode == 0, merged.stdout + merged.stderr
    recorded = [l for l in (TOP / 'lab' / 'labs' / 'pair' / 'expected').read_text().splitlines()
                if l.strip() and not l.startswith('#')]
    assert f'signature: {len(recorded)} tests as expected' in merged.stdout
    summary = json.loads((tmp_path / 'all' / 'summary.json').read_text())
    assert set(summary['hosts']) == {'server', 'client'} and summary['failed'] == 0
    assert (tmp_path / 'all' / 'client.socket.echo_clients.log').exists()

    # The client's connections, made on the other instance, crossed the
    # server's switch: its capture has them, from their SYN on.
    frames = capture.frames((tmp_path / 'server' / 'lan.pcap').read_bytes())
    accepted = {s.dst for s in map(capture.tcp_segments, frames)
                if s and s.src == ('10.42.0.1', 7001) and s.flags & 0x12 == 0x12}
    assert len(accepted) == 2
    for client_end in accepted:
        assert len(capture.tcp_payload(frames, client_end, ('10.42.0.1', 7001))) == 262144
    # Nothing of either half is left running.
    assert plugs_of(one) == [] and plugs_of(two) == []


def test_merge_refuses_parts_that_do_not_fit(tmp_path):
    def summary(d: Path, lab: str, host: str):
        d.mkdir()
        (d / 'summary.json').write_text(json.dumps({
            'lab': lab, 'duration_s': 1, 'tests': [{'host': host, 'suite': 's', 'name': 't',
                                                     'status': 'pass', 'duration_s': 0}],
            'hosts': {host: {'console': '', 'userspace_s': 1, 'ended_s': 2, 'problems': [],
                             'failures': {}}}}))
    summary(tmp_path / 'a', 'pair', 'server')
    summary(tmp_path / 'b', 'pair', 'server')
    summary(tmp_path / 'c', 'star', 'client')
    out = labctl('merge', '--lab', 'pair', '--results', str(tmp_path / 'm'), str(tmp_path / 'a'),
                 str(tmp_path / 'b'))
    assert out.returncode != 0 and 'host server ran in two of the parts' in out.stderr
    out = labctl('merge', '--lab', 'pair', '--results', str(tmp_path / 'm'), str(tmp_path / 'a'),
                 str(tmp_path / 'c'))
    assert out.returncode != 0 and 'a run of lab star is not a part of lab pair' in out.stderr
    out = labctl('merge', '--lab', 'pair', '--results', str(tmp_path / 'm'), str(tmp_path / 'a'))
    assert out.returncode == 1 and 'no part ran host client' in out.stderr


@pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')
def test_a_killed_part_leaves_no_plug(tmp_path):
    # A part whose other half never comes: its server waits. The driver is
    # killed outright (SIGKILL): its watchdog takes the carried segment's
    # vde_plug down with the hosts.
    import signal
    import time
    p1, p2 = free_udp_ports(2)
    locator = f'udp://127.0.0.1:{p1}->127.0.0.1:{p2}'
    proc = subprocess.Popen([sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', 'pair',
                             '--only', 'server', '--carry', f'lan={locator}', '--results', str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if 'server: userspace after' in line:
                break
        assert len(plugs_of(locator)) == 1
        def cmdline(p):
            # Another process may end between listdir() and open().
            try:
                with open(f'/proc/{p}/cmdline', 'rb') as f:
                    return f.read()
            except OSError:
                return b''
        hosts = [p for p in filter(str.isdigit, os.listdir('/proc'))
                 if b'LAB_HOST=server' in cmdline(p) and b'umid=pair-server' in cmdline(p)]
        assert hosts
        proc.kill()
        proc.wait(10)
        for _ in range(100):
            if not plugs_of(locator):
                break
            time.sleep(0.1)
        assert plugs_of(locator) == []
        def running(p):
            try:
                return open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z'
            except FileNotFoundError:
                return False
        for _ in range(100):
            if not any(map(running, hosts)):
                break
            time.sleep(0.1)
        assert [p for p in hosts if running(p)] == []
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
