"""Reads a lab's topology file (lab.conf) into typed objects.

Every error names the file, the line and what is wrong, and is reported
before anything starts.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

NAME_RE = re.compile(r'^[a-z][a-z0-9_-]{0,15}$')
IFACE_RE = re.compile(r'^eth[0-9]$')
MEM_RE = re.compile(r'^[1-9][0-9]*[MG]$')
VAR_RE = re.compile(r'^\$[A-Za-z_][A-Za-z0-9_]*$')
# Upper bounds: a typo (disk=99999G, mem=64G) is refused with a clear
# message rather than failing deep inside mkfs or UML, or eating the machine.
MAX_MEM = 4 << 30
MAX_DISK = 64 << 30
MIN_DISK = 8 << 20          # mkfs.ext4 wants room for its journal
MAX_HOSTS = 32
# CPUs of a host that QEMU runs (smp=N; a UML host has one): the x86_64
# kernel of make smp-check is built with NR_CPUS=8.
MAX_SMP = 8
# A run without timeout= ends this long before its host's timeout at the
# latest, so that lab_runner, not the host's killer, records how it ended.
RUN_TIMEOUT = 120
RUN_MARGIN = 10
CONTROL_RE = re.compile('[\x00-\x08\x0a-\x1f\x7f-\x9f]')
MAX_LINE = 4096

# slirp's own network: the guest is 10.0.2.15 (slirp's suggestion), 10.0.2.2
# is slirp (never this machine's loopback), 10.0.2.3 its DNS proxy, 10.0.2.7
# the uplink's echo service (uplink.py), 10.0.2.8 the ports `reach` opens.
SLIRP_NET = ipaddress.IPv4Network('10.0.2.0/24')
SLIRP_GUEST = ipaddress.IPv4Interface('10.0.2.15/24')
SLIRP_HOST = ipaddress.IPv4Address('10.0.2.2')
# Where a host with `reach HOST PORT` finds this machine's 127.0.0.1:PORT
# (libslirp runs commands only for addresses other than its own, 10.0.2.2).
REACH_ADDR = ipaddress.IPv4Address('10.0.2.8')

# Variables a run line may name as a whole word ($NAME): the driver sets them
# in the guest. LAB_ECHO_ADDR and LAB_ECHO_PORT are the uplink's TCP echo
# service (uplink.py), which a host reaches only through its uplink.
RUN_VARS = {'LAB_ECHO_ADDR': 'uplink', 'LAB_ECHO_PORT': 'uplink'}


class TopologyError(Exception):
    """A mistake in a topology file, with where it is."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f'{path}:{line}: {message}')
        self.path = path
        self.line = line
        self.message = message


@dataclass
class Link:
    iface: str
    segment: str
    address: ipaddress.IPv4Interface
    mtu: int | None = None  # the interface's MTU, if not Ethernet's 1500


@dataclass
class Run:
    suite: str
    argv: list[str]
    timeout: int = 120
    background: bool = False
    env: list[str] = field(default_factory=list)   # KEY=VALUE for the program
    part: str = ''          # 'echo' of 'socket/echo': one of several runs of a suite
    line: int = 0           # where it is in lab.conf
    trace: list[str] = field(default_factory=list)  # tracepoints enabled while it runs
    user: bool = True       # runs as an unprivileged user of the guest; False: `root`
    answer: bool = False    # a student's answer: a user of its own, apart from the checkers

    @property
    def variables(self) -> list[str]:
        """The driver's variables ($NAME words) the program's arguments name."""
        return [a[1:] for a in self.argv[1:] if VAR_RE.match(a)]

    @property
    def key(self) -> str:
        """Unique on its host: names the run's log file."""
        return f'{self.suite}.{self.part}' if self.part else self.suite


def size_bytes(size: str) -> int:
    """128M, 1G, 4096K (MEM_RE's forms) in bytes."""
    return int(size[:-1]) << {'K': 10, 'M': 20, 'G': 30}[size[-1].upper()]


@dataclass
class PortForward:
    """`forward [ADDR:]PORT HOST:GUEST_PORT`: this machine's ADDR:PORT (on
    loopback; PORT 0 is a free port chosen at start) leads to GUEST_PORT of
    HOST, through its uplink (port_forward.py)."""
    addr: str
    port: int
    guest_port: int
    line: int = 0

    def __str__(self) -> str:
        return f'{self.addr}:{self.port or "(any free port)"} -> guest port {self.guest_port}'


@dataclass
class Host:
    name: str
    mem: str = '128M'
    timeout: int = 300
    disk: str = ''          # size of an ext4 disk at /dev/ubda, mounted on /mnt/disk
    cpu: int | None = None  # the CPU the host's UML processes are pinned to (benchmarks)
    smp: int = 1            # CPUs of a host whose kernel QEMU boots (an x86_64 one: qemu_host.py)
    forward: bool = False   # routes IPv4 between its interfaces
    tools: bool = False     # sees this machine's root read-only at /host (machine_tools.py)
    uplink: str = ''        # the interface on a slirp uplink, or ''
    uplink_mode: str = 'lab'  # what the uplink reaches: uplink.py
    port_forwards: list[PortForward] = field(default_factory=list)  # through the uplink
    reaches: list[int] = field(default_factory=list)  # this machine's loopback ports it may reach
    links: list[Link] = field(default_factory=list)
    routes: list[tuple[ipaddress.IPv4Network, ipaddress.IPv4Address]] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)


@dataclass
class Topology:
    name: str
    hosts: dict[str, Host]

    @property
    def segments(self) -> list[str]:
        seen: list[str] = []
        for host in self.hosts.values():
            for link in host.links:
                if link.segment not in seen:
                    seen.append(link.segment)
        return seen


def _options(words: list[str], allowed: dict[str, str], err,
             repeatable: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Parses key=value words (and bare flags listed with value '')."""
    out: dict[str, list[str]] = {}
    for word in words:
        key, eq, value = word.partition('=')
        if key not in allowed or bool(eq) != bool(allowed[key]):
            err(f'unknown option {word!r} (expected one of: '
                + ', '.join(k + ('=' + v if v else '') for k, v in allowed.items()) + ')')
        if key in out and key not in repeatable:
            err(f'option {key} is given twice')
        out.setdefault(key, []).append(value)
    return out


RUN_USAGE = ('run needs: HOST SUITE [timeout=S] [background] [root|answer] [env=NAME=VALUE] [trace[=EVENTS]] '
             '-- PROGRAM [ARGS...]')

# What `trace` alone enables: every kevent tracepoint (include/trace/events/kevent.h).
DEFAULT_TRACE = 'kevent'
TRACE_RE = re.compile(r'^[a-z0-9_]+(:[a-z0-9_]+)?$')


def parse_trace(value: str, err) -> list[str]:
    """trace=kevent,net:netif_receive_skb: tracepoint systems or system:event."""
    names = value.split(',')
    for name in names:
        if not TRACE_RE.match(name):
            err(f'trace wants tracepoints as SYSTEM or SYSTEM:EVENT separated by commas '
                f'(like kevent,net:netif_receive_skb), not {name!r}')
    return names


# Numbers are ASCII digits, at most 9 of them: str.isdigit() is also true
# for '²' or '٣', which int() then refuses (or reads) behind the user's back.
NUMBER_RE = re.compile(r'[0-9]{1,9}', re.ASCII)


def number(value: str) -> int | None:
    """@value as a number if it is one written in ASCII digits, else None."""
    return int(value) if NUMBER_RE.fullmatch(value) else None


def _seconds(value: str, err) -> int:
    n = number(value)
    if n is None or not 0 < n <= 3600:
        err(f'timeout must be 1..3600 seconds, not {value!r}')
    return n


FORWARD_USAGE = ('forward needs: [ADDR:]PORT HOST:PORT (this machine\'s loopback ADDR, 127.0.0.1 '
                 'if not given, port PORT, 0 for any free one, to a port of HOST, through its uplink)')


def parse_forward(machine: str, guest: str, err) -> PortForward:
    """The two ends of a forward line: [ADDR:]PORT and HOST:PORT."""
    addr, _, port = machine.rpartition(':')
    addr = addr or '127.0.0.1'
    try:
        ip = ipaddress.IPv4Address(addr)
    except ValueError:
        err(f'bad address {addr!r} in {machine!r} (an IPv4 address of this machine\'s loopback)')
    if not ip.is_loopback:
        # Only this machine's own tools reach a guest: nothing from a network.
        err(f'{addr} is not a loopback address: a forward listens on 127.0.0.0/8 only')
    mport = number(port)
    if mport is None or mport > 65535:
        err(f'bad port {port!r} in {machine!r} (0..65535, 0 for any free port)')
    gport = number(guest.rsplit(':', 1)[1])
    if gport is None or not 0 < gport <= 65535:
        err(f'bad port {guest.rsplit(":", 1)[1]!r} in {guest!r} (1..65535)')
    return PortForward(str(ip), mport, gport)


def parse(text: str, path: str = '<lab.conf>', name: str = 'lab') -> Topology:
    hosts: dict[str, Host] = {}
    addresses: dict[str, int] = {}
    for lineno, raw in enumerate(text.split('\n'), 1):
        raw = raw[:-1] if raw.endswith('\r') else raw
        def err(message: str, lineno: int = lineno) -> None:
            raise TopologyError(path, lineno, message)

        if len(raw) > MAX_LINE:
            err(f'the line is {len(raw)} characters long; at most {MAX_LINE}')
        bad = CONTROL_RE.search(raw)
        if bad:
            err(f'a control character ({bad.group(0)!r}) is not allowed in lab.conf')
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        try:
            words = shlex.split(line)
        except ValueError as e:
            err(str(e))
        keyword, args = words[0], words[1:]

        if keyword == 'host':
            if not args:
                err('host needs a name')
            hname = args[0]
            if not NAME_RE.match(hname):
                err(f'bad host name {hname!r} (lower case letters, digits, - and _, at most 16)')
            if hname in hosts:
                err(f'host {hname!r} is declared twice')
            opts = _options(args[1:], {'mem': 'SIZE', 'timeout': 'SECONDS', 'disk': 'SIZE',
                                       'cpu': 'N', 'smp': 'N', 'forward': '', 'tools': ''}, err)
            host = Host(hname, forward='forward' in opts, tools='tools' in opts)
            if len(hosts) == MAX_HOSTS:
                err(f'a lab has at most {MAX_HOSTS} hosts')
            for key in ('mem', 'disk'):
                if key in opts:
                    if not MEM_RE.match(opts[key][0]) or len(opts[key][0]) > 10:
                        err(f'{key} must look like 128M or 1G, not {opts[key][0]!r}')
                    setattr(host, key, opts[key][0])
            if size_bytes(host.mem) > MAX_MEM:
                err(f'mem={host.mem} is more than a lab host may have ({MAX_MEM >> 30}G)')
            if host.disk and not MIN_DISK <= size_bytes(host.disk) <= MAX_DISK:
                err(f'disk={host.disk}: a disk is {MIN_DISK >> 20}M to {MAX_DISK >> 30}G')
            if 'timeout' in opts:
                host.timeout = _seconds(opts['timeout'][0], err)
            if 'cpu' in opts:
                cpu = number(opts['cpu'][0])
                if cpu is None or cpu > 1023:
                    err(f'cpu must be a CPU number 0..1023, not {opts["cpu"][0]!r}')
                host.cpu = cpu
            if 'smp' in opts:
                smp = number(opts['smp'][0])
                if smp is None or not 1 <= smp <= MAX_SMP:
                    err(f'smp must be 1..{MAX_SMP} CPUs, not {opts["smp"][0]!r}')
                host.smp = smp
            hosts[hname] = host

        elif keyword == 'link':
            if len(args) not in (4, 5):
                err('link needs: HOST IFACE SEGMENT ADDRESS/PREFIX [mtu=BYTES]')
            hname, iface, segment, addr = args[:4]
            mtu = None
            if len(args) == 5:
                mtu = number(args[4][4:]) if args[4].startswith('mtu=') else None
                if mtu is None or not 576 <= mtu <= 65535:
                    err(f'{args[4]!r}: the last word of a link is mtu=BYTES, 576..65535')
            if hname not in hosts:
                err(f'link names host {hname!r}, which is not declared above')
            if not IFACE_RE.match(iface):
                err(f'bad interface {iface!r} (eth0 .. eth9)')
            if not NAME_RE.match(segment):
                err(f'bad segment name {segment!r}')
            if any(link.iface == iface for link in hosts[hname].links) or hosts[hname].uplink == iface:
                err(f'host {hname!r} has {iface} twice')
            try:
                address = ipaddress.IPv4Interface(addr)
            except ValueError:
                err(f'bad address {addr!r} (expected like 10.42.0.1/24)')
            if '/' not in addr:
                err(f'address {addr!r} needs a prefix length, like /24')
            if str(address.ip) in addresses:
                err(f'address {address.ip} is also used on line {addresses[str(address.ip)]}')
            if hosts[hname].uplink and address.network.overlaps(SLIRP_NET):
                err(f'{address} overlaps {SLIRP_NET}, the network of host {hname!r}\'s uplink')
            addresses[str(address.ip)] = lineno
            hosts[hname].links.append(Link(iface, segment, address, mtu))

        elif keyword == 'uplink':
            # Opt-in: libslirp gives this host the echo service, and with
            # `outside` what this machine reaches (uplink.py).
            if len(args) not in (2, 3) or (len(args) == 3 and args[2] != 'outside'):
                err('uplink needs: HOST IFACE [outside] (a slirp uplink: the echo service '
                    '10.0.2.7:7, and with outside what this machine reaches)')
            hname, iface = args[:2]
            if hname not in hosts:
                err(f'uplink names host {hname!r}, which is not declared above')
            if not IFACE_RE.match(iface):
                err(f'bad interface {iface!r} (eth0 .. eth9)')
            if hosts[hname].uplink:
                err(f'host {hname!r} has an uplink already')
            if any(link.iface == iface for link in hosts[hname].links):
                err(f'host {hname!r} has {iface} twice')
            for link in hosts[hname].links:
                if link.address.network.overlaps(SLIRP_NET):
                    err(f'host {hname!r} has {link.address} on {link.iface}, which overlaps '
                        f'{SLIRP_NET}, the network of an uplink')
            hosts[hname].uplink = iface
            hosts[hname].uplink_mode = 'outside' if len(args) == 3 else 'lab'

        elif keyword == 'forward':
            # A port of this machine's loopback into a guest, through its
            # uplink (libslirp's tcpfwd): tools on this machine reach it.
            if len(args) != 2 or ':' not in args[1]:
                err(FORWARD_USAGE)
            fwd = parse_forward(args[0], args[1], err)
            hname = args[1].rsplit(':', 1)[0]
            if hname not in hosts:
                err(f'forward names host {hname!r}, which is not declared above')
            if not hosts[hname].uplink:
                err(f'forward leads into host {hname!r} through its uplink, and it has none '
                    f'(declare it first: uplink {hname} IFACE)')
            if fwd.port:
                for other in hosts.values():
                    for f in other.port_forwards:
                        if (f.addr, f.port) == (fwd.addr, fwd.port):
                            err(f'{fwd.addr}:{fwd.port} is forwarded already on line {f.line}')
            fwd.line = lineno
            hosts[hname].port_forwards.append(fwd)

        elif keyword == 'reach':
            # The other way: a guest may reach this machine's 127.0.0.1:PORT,
            # as 10.0.2.8:PORT through its uplink, for the ports listed only.
            if len(args) != 2:
                err('reach needs: HOST PORT (HOST reaches this machine\'s 127.0.0.1:PORT as 10.0.2.8:PORT)')
            hname, port = args
            if hname not in hosts:
                err(f'reach names host {hname!r}, which is not declared above')
            if not hosts[hname].uplink:
                err(f'host {hname!r} reaches this machine through its uplink, and it has none '
                    f'(declare it first: uplink {hname} IFACE)')
            n = number(port)
            if n is None or not 0 < n <= 65535:
                err(f'bad port {port!r} (1..65535)')
            if n in hosts[hname].reaches:
                err(f'host {hname!r} reaches port {n} already')
            hosts[hname].reaches.append(n)

        elif keyword == 'route':
            if len(args) != 3:
                err('route needs: HOST NETWORK/PREFIX GATEWAY')
            hname, net, gw = args
            if hname not in hosts:
                err(f'route names host {hname!r}, which is not declared above')
            try:
                network = ipaddress.IPv4Network(net)
            except ValueError:
                err(f'bad network {net!r} (expected like 10.42.2.0/24, host bits zero)')
            try:
                gateway = ipaddress.IPv4Address(gw)
            except ValueError:
                err(f'bad gateway {gw!r}')
            nets = [link.address.network for link in hosts[hname].links]
            nets += [SLIRP_NET] if hosts[hname].uplink else []
            if not any(gateway in net for net in nets):
                err(f'gateway {gateway} is on none of host {hname!r}\'s links (declare the link first)')
            hosts[hname].routes.append((network, gateway))

        elif keyword == 'run':
            if '--' not in args:
                err(RUN_USAGE)
            cut = args.index('--')
            head, argv = args[:cut], args[cut + 1:]
            if len(head) < 2 or not argv:
                err(RUN_USAGE)
            hname, suite = head[0], head[1]
            suite, _, part = suite.partition('/')
            if hname not in hosts:
                err(f'run names host {hname!r}, which is not declared above')
            if not NAME_RE.match(suite) or (part and not NAME_RE.match(part)):
                err(f'bad suite name {head[1]!r} (SUITE or SUITE/PART)')
            key = f'{suite}.{part}' if part else suite
            if any(r.key == key for r in hosts[hname].runs):
                err(f'{head[1]!r} runs twice on host {hname!r}')
            if '/' in argv[0]:
                err(f'program {argv[0]!r} must be a testcase name, not a path')
            # A bare `trace` traces the kevent tracepoints.
            opt_words = ['trace=' + DEFAULT_TRACE if w == 'trace' else w for w in head[2:]]
            opts = _options(opt_words, {'timeout': 'SECONDS', 'background': '', 'user': '', 'root': '',
                                        'answer': '', 'env': 'KEY=VALUE', 'trace': 'EVENTS'},
                            err, repeatable=('env',))
            run = Run(suite, argv, background='background' in opts, part=part, line=lineno,
                      user='root' not in opts, answer='answer' in opts)
            if 'root' in opts and ('user' in opts or 'answer' in opts):
                err('a run is either root or user (or answer), not both')
            for word in argv[1:]:
                if '$' in word and not (VAR_RE.match(word) and word[1:] in RUN_VARS):
                    err(f'{word!r}: a run line may name only the driver\'s variables, each as a '
                        'whole word: ' + ', '.join('$' + v for v in RUN_VARS))
            host_timeout = hosts[hname].timeout
            if 'timeout' in opts:
                run.timeout = _seconds(opts['timeout'][0], err)
                if run.timeout >= host_timeout:
                    err(f'timeout={run.timeout} is not below host {hname!r}\'s timeout of '
                        f'{host_timeout} s: the host would be killed first, and how the run '
                        'ended never recorded (give the host a longer timeout=)')
            else:
                run.timeout = min(RUN_TIMEOUT, max(1, host_timeout - RUN_MARGIN))
            if 'trace' in opts:
                run.trace = parse_trace(opts['trace'][0], err)
                if any(r.trace for r in hosts[hname].runs):
                    err(f'host {hname!r} traces a run already: its trace buffer is one for the '
                        'whole host, so one run per host may have trace')
            for pair in opts.get('env', []):
                if not re.match(r'^[A-Z_][A-Z0-9_]*=\S*$', pair):
                    err(f'env must look like NAME=value, not {pair!r}')
                run.env.append(pair)
            hosts[hname].runs.append(run)

        else:
            err(f'unknown keyword {keyword!r} (expected host, link, uplink, forward, reach, route or run)')

    if not hosts:
        raise TopologyError(path, 0, 'no hosts declared')
    for host in hosts.values():
        for run in host.runs:
            for var in run.variables:
                if RUN_VARS[var] == 'uplink' and not host.uplink:
                    raise TopologyError(path, run.line, f'${var} is reached through an uplink, '
                                        f'and host {host.name!r} has none (uplink {host.name} IFACE)')
    return Topology(name, hosts)


def load(path: Path) -> Topology:
    return parse(path.read_text(), str(path), path.parent.name)
