from pathlib import Path

import pytest

from kevent_lab import topology

LABS = Path(__file__).resolve().parent.parent / 'labs'


def test_default_lab_parses():
    topo = topology.load(LABS / 'default' / 'lab.conf')
    assert list(topo.hosts) == ['a', 'b']
    assert topo.segments == ['net0']
    a = topo.hosts['a']
    assert str(a.links[0].address) == '10.42.0.1/24'
    assert [r.key for r in a.runs][:2] == ["tcp_echo", "socket.echo_server"]
    assert a.runs[1].suite == 'socket' and a.runs[1].part == 'echo_server'
    assert a.runs[0].background and a.runs[3].background
    assert not [r for r in a.runs if r.key == 'core'][0].background
    assert a.runs[0].argv == ['tcp_echo', 'server', '7000', '1']


@pytest.mark.parametrize('name, hosts', [('pair', 2), ('star', 4), ('routed', 3), ('uplink', 3), ('naio', 2), ('fuzz', 1)])
def test_shipped_labs_parse(name, hosts):
    topo = topology.load(LABS / name / 'lab.conf')
    assert len(topo.hosts) == hosts


def test_routes():
    topo = topology.parse('host a\nlink a eth0 n 10.42.1.1/24\nroute a 10.42.2.0/24 10.42.1.254\n')
    assert [(str(n), str(g)) for n, g in topo.hosts['a'].routes] == [('10.42.2.0/24', '10.42.1.254')]


def test_disk_and_env():
    topo = topology.parse('host x disk=64M\nrun x s env=A=1 env=B_2=/x -- prog\n')
    assert topo.hosts['x'].disk == '64M'
    assert topo.hosts['x'].runs[0].env == ['A=1', 'B_2=/x']


def test_options():
    topo = topology.parse('host x mem=256M timeout=90\nrun x s timeout=5 -- prog a "b c"\n')
    assert topo.hosts['x'].mem == '256M'
    assert topo.hosts['x'].timeout == 90
    assert topo.hosts['x'].runs[0].timeout == 5
    assert topo.hosts['x'].runs[0].argv == ['prog', 'a', 'b c']


@pytest.mark.parametrize('text, line, words', [
    ('host a\nfrobnicate a\n', 2, 'unknown keyword'),
    ('host a\nlink b eth0 n 10.0.0.1/24\n', 2, 'not declared'),
    ('host a\nhost a\n', 2, 'declared twice'),
    ('host a mem=lots\n', 1, 'mem must'),
    ('host a colour=red\n', 1, 'unknown option'),
    ('host a mem=1M mem=2M\n', 1, 'given twice'),
    ('host a disk=big\n', 1, 'disk must'),
    ('host a\nrun a s env=lower=1 -- p\n', 2, 'env must'),
    ('host A\n', 1, 'bad host name'),
    ('host a\nlink a eth0 n 10.0.0.1\n', 2, 'prefix length'),
    ('host a\nlink a eth0 n 10.0.0.300/24\n', 2, 'bad address'),
    ('host a\nhost b\nlink a eth0 n 10.0.0.1/24\nlink b eth0 n 10.0.0.1/24\n', 4, 'also used on line 3'),
    ('host a\nlink a eth0 n 10.0.0.1/24\nlink a eth0 m 10.0.1.1/24\n', 3, 'eth0 twice'),
    ('host a\nrun a s prog\n', 2, 'run needs'),
    ('host a\nrun a s --\n', 2, 'run needs'),
    ('host a\nrun a s -- p\nrun a s -- q\n', 3, 'runs twice'),
    ('host a\nrun a s/x -- p\nrun a s/x -- q\n', 3, 'runs twice'),
    ('host a\nrun a s/X -- p\n', 2, 'bad suite name'),
    ('host a\nrun a s -- /bin/p\n', 2, 'not a path'),
    ('host a\nrun a s timeout=0 -- p\n', 2, 'timeout must'),
    ('host a\nrun a s "unclosed -- p\n', 2, 'quotation'),
    ('# nothing\n', 0, 'no hosts'),
    ('host a\nroute a 10.42.2.0/24 10.42.1.254\n', 2, 'on none of host'),
    ('host a\nlink a eth0 n 10.42.1.1/24\nroute a 10.42.2.1/24 10.42.1.254\n', 3, 'bad network'),
    ('host a\nroute a 10.42.2.0/24\n', 2, 'route needs'),
])
def test_errors_name_file_and_line(text, line, words):
    with pytest.raises(topology.TopologyError) as e:
        topology.parse(text, 'labs/x/lab.conf')
    assert e.value.line == line
    assert words in e.value.message
    assert str(e.value).startswith(f'labs/x/lab.conf:{line}: ')


def test_uplink():
    topo = topology.parse('host a\nlink a eth0 n 10.42.0.1/24\nuplink a eth1\n'
                          'route a 0.0.0.0/0 10.0.2.2\n'
                          'run a up -- tcp_echo client $LAB_ECHO_ADDR $LAB_ECHO_PORT 100\n')
    a = topo.hosts['a']
    assert a.uplink == 'eth1'
    assert topo.segments == ['n']          # the uplink is no segment: no vde_switch
    assert [(str(n), str(g)) for n, g in a.routes] == [('0.0.0.0/0', '10.0.2.2')]
    assert a.runs[0].variables == ['LAB_ECHO_ADDR', 'LAB_ECHO_PORT']
    assert a.uplink_mode == 'lab'


def test_no_uplink_unless_asked():
    for name in ('default', 'pair', 'star', 'routed', 'crash'):
        assert not any(h.uplink for h in topology.load(LABS / name / 'lab.conf').hosts.values())
    topo = topology.load(LABS / 'uplink' / 'lab.conf')
    assert {h.name: h.uplink for h in topo.hosts.values()} == {'a': 'eth1', 'b': '', 'c': 'eth0'}


@pytest.mark.parametrize('text, line, words', [
    ('host a\nuplink a\n', 2, 'uplink needs'),
    ('host a\nuplink a eth1 wide\n', 2, 'uplink needs: HOST IFACE [outside]'),
    ('host a\nuplink b eth0\n', 2, 'not declared'),
    ('host a\nuplink a wlan0\n', 2, 'bad interface'),
    ('host a\nuplink a eth0\nuplink a eth1\n', 3, 'has an uplink already'),
    ('host a\nlink a eth0 n 10.42.0.1/24\nuplink a eth0\n', 3, 'eth0 twice'),
    ('host a\nuplink a eth0\nlink a eth0 n 10.42.0.1/24\n', 3, 'eth0 twice'),
    ('host a\nlink a eth0 n 10.0.2.1/24\nuplink a eth1\n', 3, 'overlaps 10.0.2.0/24'),
    ('host a\nuplink a eth1\nlink a eth0 n 10.0.0.1/16\n', 3, 'overlaps 10.0.2.0/24'),
    ('host a\nroute a 0.0.0.0/0 10.0.2.2\nuplink a eth0\n', 2, 'on none of host'),
    ('host a\nrun a s -- tcp_echo client 10.0.2.2 $LAB_ECHO_PORT 1\n', 2, 'has none'),
    ('host a\nuplink a eth0\nrun a s -- p $HOME\n', 3, 'whole word'),
    ('host a\nuplink a eth0\nrun a s -- p 10.0.2.2:$LAB_ECHO_PORT\n', 3, 'whole word'),
    # forward and reach lines, which lead through an uplink
    ('host a\nuplink a eth0\nforward 8080\n', 3, 'forward needs: [ADDR:]PORT HOST:PORT'),
    ('host a\nuplink a eth0\nforward 8080 a\n', 3, 'forward needs'),
    ('host a\nforward 8080 a:80\n', 2, "host 'a' through its uplink, and it has none"),
    ('host a\nuplink a eth0\nforward 8080 b:80\n', 3, "host 'b', which is not declared"),
    ('host a\nuplink a eth0\nforward 0.0.0.0:8080 a:80\n', 3, 'not a loopback address'),
    ('host a\nuplink a eth0\nforward 10.0.0.1:8080 a:80\n', 3, 'not a loopback address'),
    ('host a\nuplink a eth0\nforward localhost:8080 a:80\n', 3, "bad address 'localhost'"),
    ('host a\nuplink a eth0\nforward 65536 a:80\n', 3, "bad port '65536'"),
    ('host a\nuplink a eth0\nforward -1 a:80\n', 3, "bad port '-1'"),
    ('host a\nuplink a eth0\nforward 8080 a:0\n', 3, "bad port '0'"),
    ('host a\nuplink a eth0\nforward 8080 a:http\n', 3, "bad port 'http'"),
    ('host a\nhost b\nuplink a eth0\nuplink b eth0\nforward 8080 a:80\nforward 127.0.0.1:8080 b:80\n',
     6, 'forwarded already on line 5'),
    ('host a\nuplink a eth0\nreach a\n', 3, 'reach needs: HOST PORT'),
    ('host a\nreach a 5432\n', 2, "host 'a' reaches this machine through its uplink, and it has none"),
    ('host a\nuplink a eth0\nreach b 5432\n', 3, "host 'b', which is not declared"),
    ('host a\nuplink a eth0\nreach a 0\n', 3, "bad port '0'"),
    ('host a\nuplink a eth0\nreach a 5432\nreach a 5432\n', 4, 'reaches port 5432 already'),
])
def test_uplink_errors(text, line, words):
    with pytest.raises(topology.TopologyError) as e:
        topology.parse(text, 'labs/x/lab.conf')
    assert e.value.line == line, e.value
    assert words in e.value.message
    assert str(e.value).startswith(f'labs/x/lab.conf:{line}: ')


def test_link_mtu():
    topo = topology.parse('host a\nlink a eth0 n 10.42.0.1/24 mtu=1458\nlink a eth1 m 10.42.1.1/24\n')
    assert [l.mtu for l in topo.hosts['a'].links] == [1458, None]
    from kevent_lab import run
    assert 'ip link set eth0 mtu 1458' in run.setup_lines(topo.hosts['a'])
    assert not any('eth1 mtu' in l for l in run.setup_lines(topo.hosts['a']))
    for bad in ('mtu=100', 'mtu=', 'mtu=1e3', 'mtux=1500', '1500'):
        with pytest.raises(topology.TopologyError, match='mtu=BYTES, 576..65535'):
            topology.parse(f'host a\nlink a eth0 n 10.42.0.1/24 {bad}\n')


def test_forward():
    topo = topology.parse('host a\nuplink a eth0\nforward 8080 a:80\nforward 127.0.0.2:0 a:443\n')
    fwds = topo.hosts['a'].port_forwards
    assert [(f.addr, f.port, f.guest_port, f.line) for f in fwds] == [
        ('127.0.0.1', 8080, 80, 3), ('127.0.0.2', 0, 443, 4)]
    assert str(fwds[1]) == '127.0.0.2:(any free port) -> guest port 443'


@pytest.mark.parametrize('name, cpus', [('bench', [0, 1]), ('bench-smoke', [0, 1])])
def test_bench_labs_pin_their_hosts(name, cpus):
    topo = topology.load(LABS / name / 'lab.conf')
    assert [h.cpu for h in topo.hosts.values()] == cpus


def test_cpu_option():
    topo = topology.parse('host x cpu=3\nhost y\n')
    assert topo.hosts['x'].cpu == 3 and topo.hosts['y'].cpu is None


@pytest.mark.parametrize('value', ['-1', 'one', '1024', ''])
def test_cpu_option_rejects(value):
    with pytest.raises(topology.TopologyError, match='cpu must|unknown option'):
        topology.parse(f'host x cpu={value}\n')


def test_trace_option():
    topo = topology.parse('host x\nrun x a trace -- p\nhost y\nrun y b trace=kevent,net:netif_receive_skb -- p\n'
                          'run y c -- p\n')
    assert topo.hosts['x'].runs[0].trace == ['kevent']
    assert topo.hosts['y'].runs[0].trace == ['kevent', 'net:netif_receive_skb']
    assert topo.hosts['y'].runs[1].trace == []


def test_trace_lab_parses():
    topo = topology.load(LABS / 'trace' / 'lab.conf')
    assert [r.key for r in topo.hosts['a'].runs if r.trace] == ['socket.echo_server']


@pytest.mark.parametrize('text, words', [
    ('host x\nrun x a trace=Kevent -- p\n', 'SYSTEM or SYSTEM:EVENT'),
    ('host x\nrun x a trace=kevent,,net -- p\n', 'SYSTEM or SYSTEM:EVENT'),
    ('host x\nrun x a trace=a:b:c -- p\n', 'SYSTEM or SYSTEM:EVENT'),
    ('host x\nrun x a trace -- p\nrun x b trace -- p\n', 'one run per host'),
    ('host x\nrun x a trace trace -- p\n', 'twice'),
])
def test_trace_option_rejects(text, words):
    with pytest.raises(topology.TopologyError, match=words):
        topology.parse(text)
