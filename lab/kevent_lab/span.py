"""Labs that span machines: each machine runs the hosts named for it, and the
segments they share are carried between the machines by VDE's transports.

    machine 1:  labctl run --lab pair --only server --carry 'lan=udp://5000->m2:5000'
    machine 2:  labctl run --lab pair --only client --carry 'lan=udp://5000->m1:5000'
    either:     labctl merge --lab pair --expect RESULTS1 RESULTS2

A carried segment is not a vde_switch but one `vde_plug switch:///DIR
LOCATOR`: vdeplug4's own switch (libvdeplug_switch), which the local hosts
join as they would join vde_switch, plugged into the transport in the same
process. So a segment is still one process. The locator is any vdeplug4 one:
`udp://[ADDR:]PORT->HOST:PORT` (point to point, two machines),
`vxvde://GROUP[/port=P/if=IFACE]` (a multicast group: any number of
machines), `cmd://...` (for example ssh to the other machine, running
`vde_plug` there).

A carried segment that is also captured keeps its vde_switch (the capture
plugin lives there) and gets `vde_plug vde://DIR LOCATOR` beside it: two
processes, only then.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from .processes import Child, Supervisor, wait_for_paths
from .topology import Topology

# The transports a carried segment may use: vdeplug4 modules that reach
# another machine (not a local switch, a tap or a file).
TRANSPORTS = ('udp', 'vxvde', 'vxlan', 'cmd')
SEGMENT_RE = re.compile(r'^([a-z][a-z0-9_-]{0,15})=(([a-z0-9]+)://.*)$')


class SpanError(ValueError):
    pass


def parse_carry(text: str) -> tuple[str, str]:
    """SEGMENT=LOCATOR from the command line."""
    m = SEGMENT_RE.match(text)
    if not m:
        raise SpanError(f'--carry wants SEGMENT=LOCATOR (like lan=udp://5000->other:5000), not {text!r}')
    if m.group(3) not in TRANSPORTS:
        raise SpanError(f'--carry {text}: {m.group(3)}:// does not reach another machine '
                        f'(one of: {", ".join(t + "://" for t in TRANSPORTS)})')
    if any(c in m.group(2) for c in '\n\0'):
        raise SpanError(f'--carry {text!r}: a locator is one line')
    return m.group(1), m.group(2)


def only(topo: Topology, names: list[str], carry: dict[str, str]) -> Topology:
    """@topo with only the hosts @names (all if empty). A segment that joins
    a host here to one elsewhere must be carried; a carried segment must
    be one of the lab's."""
    every = topo.segments
    for seg in carry:
        if seg not in every:
            raise SpanError(f'lab {topo.name} has no segment {seg} to carry '
                            f'(its segments: {", ".join(every) or "none"})')
    if not names:
        return topo
    unknown = [n for n in names if n not in topo.hosts]
    if unknown:
        raise SpanError(f'lab {topo.name} has no host {", ".join(unknown)} '
                        f'(its hosts: {", ".join(topo.hosts)})')
    here = Topology(topo.name, {n: h for n, h in topo.hosts.items() if n in names})
    for seg in here.segments:
        there = [n for n, h in topo.hosts.items() if n not in names and any(
            link.segment == seg for link in h.links)]
        if there and seg not in carry:
            raise SpanError(f'segment {seg} joins hosts here to {", ".join(there)}, which run elsewhere: '
                            f'carry it (--carry {seg}=udp://PORT->OTHER-MACHINE:PORT, docs/lab.md)')
    if not any(h.runs for h in here.hosts.values()):
        raise SpanError(f'hosts {", ".join(names)} have no run lines: nothing would keep them up')
    return here


def start_carried(sup: Supervisor, seg: str, sockdir: Path, locator: str, log: Path,
                  switch_running: bool = False) -> Child:
    """The segment's switch, plugged into @locator, as one vde_plug process;
    or, if a vde_switch serves @sockdir already, a plug from it to @locator."""
    if shutil.which('vde_plug') is None:
        raise FileNotFoundError('vde_plug is not installed (Debian package vdeplug; make deps); '
                                f'segment {seg} is carried to another machine')
    out = open(log, 'ab')
    local = f'vde://{sockdir}' if switch_running else f'switch://{sockdir}'
    child = sup.start(f'carried segment {seg}', ['vde_plug', local, locator], stdout=out)
    out.close()
    what = f'vde_plug for segment {seg} ({locator})'
    if switch_running:
        time.sleep(0.2)
        if not child.running():
            raise RuntimeError(f'{what} exited: ' + log.read_text(errors='replace')[-500:])
        return child
    wait_for_paths(child, [sockdir / 'ctl'], what, log)
    return child
