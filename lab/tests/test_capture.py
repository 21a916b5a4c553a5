"""Packet captures: the pcap reader, the switch plugin, and captures of real
labs whose frames carry exactly the bytes the test programs sent."""

import json
import shutil
import socket
import struct
import subprocess
import sys
import time

import pytest

from kevent_lab import capture
from test_interrupt import KERNEL, ROOTFS, TOP, in_sessions, instance_dir, labctl

needs_lab = pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()),
                               reason='kernel and rootfs not built')


def wait_for(path, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def pcap(records: list[bytes], order: str = '<') -> bytes:
    out = struct.pack(order + 'IHHiIII', capture.PCAP_MAGIC, 2, 4, 0, 0, 262144, 1)
    for i, data in enumerate(records):
        out += struct.pack(order + 'IIII', 100 + i, 5, len(data), len(data)) + data
    return out


def tcp_frame(src, dst, seq, payload=b'', flags=0x18) -> bytes:
    tcp = struct.pack('!HHIIBBHHH', src[1], dst[1], seq, 0, 5 << 4, flags, 1000, 0, 0) + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0,
                     socket.inet_aton(src[0]), socket.inet_aton(dst[0])) + tcp
    return b'\x02' * 6 + b'\x04' * 6 + b'\x08\x00' + ip


A, B = ('10.42.0.2', 40000), ('10.42.0.1', 7001)


def test_frames_read_either_byte_order_and_stop_at_a_partial_record():
    for order in '<>':
        data = pcap([b'x' * 60, b'y' * 70], order)
        got = capture.frames(data + b'\x00' * 10)       # a record being written
        assert [(f.data, f.time) for f in got] == [(b'x' * 60, 100.000005), (b'y' * 70, 101.000005)]
    with pytest.raises(ValueError, match='magic'):
        capture.frames(b'\x00' * 24)


def test_tcp_payload_puts_segments_in_order_once():
    seq = 1000
    frames = capture.frames(pcap([
        tcp_frame(A, B, seq, flags=0x02),                 # SYN
        tcp_frame(A, B, seq + 1, b'hello '),
        tcp_frame(A, B, seq + 12, b'!'),                  # out of order
        tcp_frame(A, B, seq + 7, b'world'),
        tcp_frame(A, B, seq + 1, b'hello '),              # a retransmission
        tcp_frame(B, A, 5, b'other way'),
    ]))
    assert capture.tcp_payload(frames, A, B) == b'hello world!'
    with pytest.raises(ValueError, match='misses bytes'):
        capture.tcp_payload(frames[:2] + frames[2:3], A, B)
    with pytest.raises(ValueError, match='no SYN'):
        capture.tcp_payload(frames, B, A)


def test_plugin_builds_and_a_switch_writes_a_pcap_header(tmp_path):
    plugin = capture.plugin(tmp_path)
    assert plugin.exists() and capture.plugin(tmp_path) == plugin    # built once
    rc = tmp_path / 'rc'
    rc.write_text(capture.rc_lines(plugin, tmp_path / 'seg.pcap'))
    sw = subprocess.Popen(['vde_switch', '--sock', str(tmp_path / 'sw'), '--rcfile', str(rc)],
                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(tmp_path / 'seg.pcap')
        time.sleep(0.2)
        assert capture.frames((tmp_path / 'seg.pcap').read_bytes()) == []
    finally:
        sw.stdin.close()
        sw.wait(10)


@needs_lab
def test_capture_of_an_unknown_segment_is_refused(tmp_path):
    out = labctl('run', '--lab', 'pair', '--capture', 'wan', '--results', str(tmp_path))
    assert out.returncode == 1 and 'lab pair has no segment wan to capture (its segments: lan)' in out.stderr


def kevent_echo_pattern(client: int, n: int) -> bytes:
    # testcases/kevent_echo.c's pattern()
    return bytes((i * 31 + (i >> 11) + client * 97 + 5) & 0xff for i in range(n))


@needs_lab
def test_a_run_captures_the_bytes_its_programs_sent(tmp_path):
    # pair: two kevent_echo clients each send 262144 bytes, which the
    # server echoes. Each stream in the capture must be those bytes exactly.
    out = subprocess.run([sys.executable, str(TOP / 'lab' / 'labctl'), 'run', '--lab', 'pair',
                          '--capture', 'lan', '--results', str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f'capturing segment lan into {tmp_path}/runs/' in out.stdout
    frames = capture.frames((tmp_path / 'lan.pcap').read_bytes())
    # The connections the server accepted (SYN-ACK); the clients' tries
    # before it listened were refused.
    conns = {(s.dst, s.src) for s in map(capture.tcp_segments, frames)
             if s and s.src == ('10.42.0.1', 7001) and s.flags & 0x12 == 0x12}
    assert len(conns) == 2, conns
    seen = set()
    for src, dst in conns:
        sent = capture.tcp_payload(frames, src, dst)
        echoed = capture.tcp_payload(frames, dst, src)
        client = next(c for c in (0, 1) if sent == kevent_echo_pattern(c, 262144))
        assert echoed == sent
        seen.add(client)
    assert seen == {0, 1}
    # Each frame once: a switch's copy per port would double every segment.
    data = [f.data for f in frames]
    assert len(data) - len(set(data)) < len(data) // 100


@needs_lab
@pytest.mark.skipif(shutil.which('tcpdump') is None, reason='tcpdump is not installed (make deps)')
def test_tcpdump_reads_a_capture(tmp_path):
    out = labctl('run', '--lab', 'pair', '--capture', 'lan', '--results', str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    dump = subprocess.run(['tcpdump', '-n', '-r', str(tmp_path / 'lan.pcap'), 'udp port 7002'],
                          capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    # udp_ping's 200 pings and their answers.
    assert dump.stdout.count('10.42.0.2.') >= 200 and dump.stdout.count('> 10.42.0.2.') >= 200


@needs_lab
def test_capture_of_a_started_lab(tmp_path):
    up = labctl('start', 'pair')
    assert up.returncode == 0, up
    d = instance_dir(up.stdout)
    state = json.loads((d / 'state.json').read_text())
    sessions = {state['pid'], *state['switches'], *(h['pid'] for h in state['hosts'].values())}
    pcap_path = tmp_path / 'live.pcap'
    try:
        cap = subprocess.Popen([sys.executable, str(TOP / 'lab' / 'labctl'), 'capture', '--lab', 'pair',
                                'lan', '--seconds', '30', '--out', str(pcap_path)],
                               stdout=subprocess.PIPE, text=True)
        assert wait_for(pcap_path, 10)
        ex = labctl('exec', '--lab', 'pair', 'client', '--', 'ping -c 3 -i 0.2 10.42.0.1 >/dev/null; echo $?')
        assert ex.stdout.strip() == '0', ex
        # A second capture of the same segment is refused while one runs.
        again = labctl('capture', '--lab', 'pair', 'lan', '--seconds', '1', '--out', str(tmp_path / 'b.pcap'))
        assert again.returncode != 0 and 'being captured already' in again.stderr, again
        # Ctrl-C ends it; the switch closes the file, and the lab runs on.
        cap.send_signal(2)
        said = cap.communicate(timeout=30)[0]
        assert 'capture interrupted:' in said, said
        icmp = [f for f in capture.frames(pcap_path.read_bytes())
                if f.data[12:14] == b'\x08\x00' and f.data[23] == 1]
        assert len(icmp) == 6, len(icmp)            # 3 requests, 3 replies, each once
        size = pcap_path.stat().st_size
        labctl('exec', '--lab', 'pair', 'client', '--', 'ping -c 2 -i 0.2 10.42.0.1 >/dev/null')
        assert pcap_path.stat().st_size == size
        assert labctl('stop', 'pair').returncode == 0
    finally:
        labctl('crash', 'pair', '--id', d.name)
    time.sleep(0.5)
    assert in_sessions(sessions) == []
