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


@dataclass
class Run:
    suite: str
    argv: list[str]
    timeout: int = 120
    background: bool = False
    env: list[str] = field(default_factory=list)   # KEY=VALUE for the program
    part: str = ''          # 'echo' of 'socket/echo': one of several runs of a suite

    @property
    def key(self) -> str:
        """Unique on its host: names the run's log file."""
        return f'{self.suite}.{self.part}' if self.part else self.suite


@dataclass
class Host:
    name: str
    mem: str = '128M'
    timeout: int = 300
    disk: str = ''          # size of an ext4 disk at /dev/ubda, mounted on /mnt/disk
    forward: bool = False   # routes IPv4 between its interfaces
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


def _seconds(value: str, err) -> int:
    if not value.isdigit() or not 0 < int(value) <= 3600:
        err(f'timeout must be 1..3600 seconds, not {value!r}')
    return int(value)


def parse(text: str, path: str = '<lab.conf>', name: str = 'lab') -> Topology:
    hosts: dict[str, Host] = {}
    addresses: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        def err(message: str, lineno: int = lineno) -> None:
            raise TopologyError(path, lineno, message)

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
                                       'forward': ''}, err)
            host = Host(hname, forward='forward' in opts)
            for key in ('mem', 'disk'):
                if key in opts:
                    if not MEM_RE.match(opts[key][0]):
                        err(f'{key} must look like 128M or 1G, not {opts[key][0]!r}')
                    setattr(host, key, opts[key][0])
            if 'timeout' in opts:
                host.timeout = _seconds(opts['timeout'][0], err)
            hosts[hname] = host

        elif keyword == 'link':
            if len(args) != 4:
                err('link needs: HOST IFACE SEGMENT ADDRESS/PREFIX')
            hname, iface, segment, addr = args
            if hname not in hosts:
                err(f'link names host {hname!r}, which is not declared above')
            if not IFACE_RE.match(iface):
                err(f'bad interface {iface!r} (eth0 .. eth9)')
            if not NAME_RE.match(segment):
                err(f'bad segment name {segment!r}')
            if any(link.iface == iface for link in hosts[hname].links):
                err(f'host {hname!r} has {iface} twice')
            try:
                address = ipaddress.IPv4Interface(addr)
            except ValueError:
                err(f'bad address {addr!r} (expected like 10.42.0.1/24)')
            if '/' not in addr:
                err(f'address {addr!r} needs a prefix length, like /24')
            if str(address.ip) in addresses:
                err(f'address {address.ip} is also used on line {addresses[str(address.ip)]}')
            addresses[str(address.ip)] = lineno
            hosts[hname].links.append(Link(iface, segment, address))

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
            if not any(gateway in link.address.network for link in hosts[hname].links):
                err(f'gateway {gateway} is on none of host {hname!r}\'s links (declare the link first)')
            hosts[hname].routes.append((network, gateway))

        elif keyword == 'run':
            if '--' not in args:
                err('run needs: HOST SUITE [timeout=S] [background] -- PROGRAM [ARGS...]')
            cut = args.index('--')
            head, argv = args[:cut], args[cut + 1:]
            if len(head) < 2 or not argv:
                err('run needs: HOST SUITE [timeout=S] [background] -- PROGRAM [ARGS...]')
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
            opts = _options(head[2:], {'timeout': 'SECONDS', 'background': '', 'env': 'KEY=VALUE'},
                            err, repeatable=('env',))
            run = Run(suite, argv, background='background' in opts, part=part)
            if 'timeout' in opts:
                run.timeout = _seconds(opts['timeout'][0], err)
            for pair in opts.get('env', []):
                if not re.match(r'^[A-Z_][A-Z0-9_]*=\S*$', pair):
                    err(f'env must look like NAME=value, not {pair!r}')
                run.env.append(pair)
            hosts[hname].runs.append(run)

        else:
            err(f'unknown keyword {keyword!r} (expected host, link, route or run)')

    if not hosts:
        raise TopologyError(path, 0, 'no hosts declared')
    return Topology(name, hosts)


def load(path: Path) -> Topology:
    return parse(path.read_text(), str(path), path.parent.name)
