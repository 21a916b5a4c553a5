"""A host with `tools` sees this machine's root read-only at /host, runs the
machine's programs (python3, strace, curl), and still reaches nothing of
the machine's but its system directories, even as root in the guest."""

import shutil

import pytest

from kevent_lab import confine, run, topology
from test_interrupt import KERNEL, ROOTFS, TOP, labctl
from pathlib import Path


def test_tools_is_a_host_option_and_drops_the_hostfs_prefix():
    topo = topology.parse('host a tools\nhost b\n')
    a, b = topo.hosts['a'], topo.hosts['b']
    assert a.tools and not b.tools
    argv = run.uml_argv(Path('/k'), Path('/r'), a, 'u', Path('/t/uml'), {}, Path('/lab'))
    assert 'LAB_TOOLS=1' in argv and 'LAB_OWN=/lab/a' in argv
    assert not any(x.startswith('hostfs=') for x in argv)
    argv = run.uml_argv(Path('/k'), Path('/r'), b, 'u', Path('/t/uml'), {}, Path('/lab'))
    assert 'hostfs=/lab/b' in argv and 'LAB_TOOLS=1' not in argv


def test_tools_needs_landlock(monkeypatch):
    monkeypatch.setattr(confine, 'abi', lambda: 0)
    with pytest.raises(RuntimeError, match='host a has tools .* needs Landlock'):
        run.check_tools(topology.parse('host a tools\n'))
    run.check_tools(topology.parse('host a\n'))


needs = [name for name in ('strace', 'curl', 'python3') if not shutil.which(name)]


@pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')
@pytest.mark.skipif(confine.abi() <= 0, reason='this kernel has no Landlock: lab tools refuses to start')
@pytest.mark.skipif(bool(needs), reason=f'not installed here: {" ".join(needs)} (make deps)')
def test_a_host_runs_the_machines_tools_and_reaches_no_more():
    up = labctl('start', 'tools')
    assert up.returncode == 0, up

    def on(host, command):
        out = labctl('exec', '--lab', 'tools', host, '--', command)
        return out.stdout
    try:
        assert on('a', 'python3 -c "print(6 * 7)"') == '42\n'
        assert 'curl ' in on('a', 'curl --version | head -n 1')
        # strace from the machine, on a testcase of the guest's.
        out = on('a', 'strace -f -o /tmp/st kevent_core_test >/dev/null; echo rc=$?; grep -c execve /tmp/st')
        assert out.split('\n')[0] == 'rc=0' and int(out.split('\n')[1]) > 0, out
        # Read-only, and only the system's directories.
        out = on('a', 'echo x > /host/usr/probe; echo w=$?; cat /host/etc/shadow; echo shadow=$?; '
                      'ls /host/root; echo root=$?')
        assert 'w=1' in out and 'Read-only file system' in out, out
        assert 'shadow=1' in out and 'root=1' in out, out
        # Root in the guest mounting the checkout itself, read-write: refused
        # to read and to write by the host's confinement.
        out = on('a', f'mkdir -p /tmp/m && mount -t hostfs -o {TOP} hostfs /tmp/m; '
                      'ls /tmp/m; echo ls=$?; echo x > /tmp/m/probe; echo w=$?; umount /tmp/m')
        assert 'ls=1' in out and 'w=1' in out, out
        assert not (TOP / 'probe').exists()
        # b has no tools.
        assert 'no-host' in on('b', 'ls /host >/dev/null 2>&1 || echo no-host')
        assert labctl('stop', 'tools').returncode == 0
    finally:
        labctl('crash', 'tools')


def web_byte(f: int, i: int) -> int:
    # testcases/include/web.h
    return (i * 167 + (i >> 8) * 13 + f * 71 + 1) & 0xff


@pytest.mark.skipif(not (KERNEL.exists() and ROOTFS.exists()), reason='kernel and rootfs not built')
@pytest.mark.skipif(confine.abi() <= 0, reason='this kernel has no Landlock: lab web refuses to start')
@pytest.mark.skipif(not shutil.which('curl'), reason='curl is not installed here (make deps)')
def test_a_guests_web_server_answers_curl_on_this_machine():
    # Lab web forwards free ports of this machine's loopback to srv's
    # servers, which a started lab starts itself (srv.startup): kevent_httpd
    # in each loop and nginx answer this machine's curl.
    import json
    import subprocess
    import time
    from test_interrupt import instance_dir
    up = labctl('start', 'web')
    assert up.returncode == 0, up
    try:
        state = json.loads((instance_dir(up.stdout) / 'state.json').read_text())
        ports = {int(l.rsplit(':', 1)[1]): int(l.split(' -> ')[0].rsplit(':', 1)[1])
                 for l in state['hosts']['srv']['forwards'] if l.startswith('forward ')}
        assert sorted(ports) == [8001, 8002, 8003, 8004]
        large = bytes(web_byte(1, i) for i in range(256 * 1024))
        for guest_port, port in sorted(ports.items()):
            for _ in range(30):         # the servers start as the host comes up
                out = subprocess.run(['curl', '-sS', '--fail', f'http://127.0.0.1:{port}/large'],
                                     capture_output=True, timeout=60)
                if out.returncode == 0:
                    break
                time.sleep(0.5)
            assert out.returncode == 0, (guest_port, out.stderr)
            assert out.stdout == large, guest_port
        assert labctl('stop', 'web').returncode == 0
    finally:
        labctl('crash', 'web')
