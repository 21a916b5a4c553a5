"""Packet captures of a lab's segments, as pcap files.

A segment is one vde_switch, and every frame on it passes through the
switch: the switch itself writes them, through a plugin of ours
(lab/vde/lab_pcap.c), each frame once and whole, when it receives it. No
process is added. `labctl run --capture SEG` loads the plugin from the
switch's rc file at its start; `labctl capture` loads it into a started
lab's switch through its management socket, and stops it again.

The pcap files (Ethernet, microsecond timestamps) read with `tcpdump -r` and
Wireshark; frames() and tcp_payload() below read them for the tests.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / 'vde' / 'lab_pcap.c'
PCAP_MAGIC = 0xa1b2c3d4


class CaptureError(RuntimeError):
    pass


def plugin(build: Path) -> Path:
    """The switch plugin, compiled into @build when missing or older than its source."""
    out = build / 'lab_pcap.so'
    if out.exists() and out.stat().st_mtime >= SOURCE.stat().st_mtime:
        return out
    cc = shutil.which('cc') or shutil.which('gcc')
    if cc is None:
        raise CaptureError('a capture needs a C compiler for the switch plugin (Debian package gcc; '
                           'make deps)')
    build.mkdir(parents=True, exist_ok=True)
    # Built beside and renamed: runs started together never load half a file.
    fd, tmp = tempfile.mkstemp(prefix='.lab_pcap.', suffix='.so', dir=build)
    os.close(fd)
    proc = subprocess.run([cc, '-O2', '-Wall', '-shared', '-fPIC', '-o', tmp, str(SOURCE)],
                          capture_output=True, text=True)
    if proc.returncode:
        os.unlink(tmp)
        raise CaptureError(f'cannot build the capture plugin: {proc.stderr.strip()}')
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)
    return out


def rc_lines(plugin_path: Path, pcap: Path) -> str:
    """vde_switch --rcfile commands that capture from the switch's start."""
    return f'plugin/add {plugin_path}\nlab_pcap/file {pcap}\n'


def check_segments(wanted: list[str], segments: list[str], lab: str) -> None:
    unknown = [s for s in wanted if s not in segments]
    if unknown:
        raise ValueError(f'lab {lab} has no segment {", ".join(unknown)} to capture '
                         f'(its segments: {", ".join(segments) or "none"})')


class Management:
    """A started switch's management socket (vde_switch --mgmt): a command
    per line, answered by a line `1000 Success` or `NNNN error text`."""

    def __init__(self, path: Path, timeout: float = 5):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError as e:
            self.sock.close()
            raise CaptureError(f'cannot reach the switch at {path}: {e.strerror}') from None
        self.buf = b''
        self._until(b'vde$ ')

    def _until(self, mark: bytes) -> bytes:
        while mark not in self.buf:
            data = self.sock.recv(4096)
            if not data:
                raise CaptureError('the switch closed its management socket')
            self.buf += data
        out, _, self.buf = self.buf.partition(mark)
        return out

    def command(self, line: str) -> tuple[int, str]:
        self.sock.sendall(line.encode() + b'\n')
        reply = self._until(b'vde$ ').decode(errors='replace').strip().split('\n')[-1]
        code, _, text = reply.partition(' ')
        return int(code), text

    def close(self) -> None:
        self.sock.close()


def start_live(mgmt: Path, plugin_path: Path, pcap: Path) -> None:
    m = Management(mgmt)
    try:
        code, text = m.command(f'plugin/add {plugin_path}')
        if code not in (1000, 1017):          # 1017: EEXIST, loaded by an earlier capture
            raise CaptureError(f'the switch cannot load {plugin_path}: {text}')
        code, text = m.command(f'lab_pcap/file {pcap}')
        if code == 1016:                      # EBUSY
            raise CaptureError('this segment is being captured already (labctl capture elsewhere)')
        if code != 1000:
            raise CaptureError(f'the switch cannot write {pcap}: {text}')
    finally:
        m.close()


def stop_live(mgmt: Path) -> None:
    m = Management(mgmt)
    try:
        m.command('lab_pcap/stop')
    finally:
        m.close()


# Reading pcap files: a pure parser for the tests and summaries.

@dataclass
class Frame:
    time: float
    data: bytes


def frames(data: bytes) -> list[Frame]:
    """The frames of a pcap file (classic format, this machine's byte order or swapped)."""
    if len(data) < 24:
        raise ValueError('not a pcap file: shorter than its header')
    for order in '<>':
        if struct.unpack(order + 'I', data[:4])[0] == PCAP_MAGIC:
            break
    else:
        raise ValueError('not a pcap file (magic number)')
    out, off = [], 24
    while off + 16 <= len(data):
        sec, usec, caplen, _ = struct.unpack(order + 'IIII', data[off:off + 16])
        if off + 16 + caplen > len(data):
            break                     # the last record, still being written
        out.append(Frame(sec + usec / 1e6, data[off + 16:off + 16 + caplen]))
        off += 16 + caplen
    return out


@dataclass
class Segment:
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    flags: int
    payload: bytes


def tcp_segments(frame: Frame) -> Segment | None:
    """The TCP segment an Ethernet/IPv4 frame carries, or None."""
    d = frame.data
    if len(d) < 34 or d[12:14] != b'\x08\x00' or d[23] != 6:
        return None
    ihl = (d[14] & 0x0f) * 4
    total = struct.unpack('!H', d[16:18])[0]
    ip = d[14:14 + total]
    tcp = ip[ihl:]
    if len(tcp) < 20:
        return None
    sport, dport, seq = struct.unpack('!HHI', tcp[:8])
    off = (tcp[12] >> 4) * 4
    return Segment((socket.inet_ntoa(ip[12:16]), sport), (socket.inet_ntoa(ip[16:20]), dport),
                   seq, tcp[13], bytes(tcp[off:]))


def tcp_payload(frames_: list[Frame], src: tuple[str, int], dst: tuple[str, int]) -> bytes:
    """The bytes one side of a TCP connection sent, in order, each once
    (retransmissions overlap and are dropped), from its first SYN on."""
    segs = [s for s in map(tcp_segments, frames_) if s and s.src == src and s.dst == dst]
    syn = next((s for s in segs if s.flags & 0x02), None)
    if syn is None:
        raise ValueError(f'no SYN from {src[0]}:{src[1]} to {dst[0]}:{dst[1]} in the capture')
    base = (syn.seq + 1) & 0xffffffff
    chunks = {}
    for s in segs:
        if s.payload:
            chunks.setdefault((s.seq - base) & 0xffffffff, s.payload)
    out = bytearray()
    for off in sorted(chunks):
        piece = chunks[off]
        if off > len(out):
            raise ValueError(f'the capture misses bytes {len(out)}..{off} of the stream')
        out += piece[len(out) - off:]
    return bytes(out)

