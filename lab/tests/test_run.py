import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kevent_lab import run, topology

GOLDEN = Path(__file__).resolve().parent / 'golden'

LAB = '''
host a
link a eth0 net0 10.42.0.1/24
run a srv background -- tcp_echo server 7000 1
run a core -- kevent_core_test
run a core/extra -- kevent_timer_test
'''


def host():
    return topology.parse(LAB).hosts['a']


def test_run_script_starts_servers_first():
    script = run.run_script(host())
    lines = script.splitlines()
    assert 'ip addr add 10.42.0.1/24 dev eth0' in lines
    srv = [i for i, l in enumerate(lines) if '/lab/a/srv.log' in l][0]
    core = [i for i, l in enumerate(lines) if '/lab/a/core.log' in l][0]
    assert srv < core and lines[srv].endswith(' &')
    assert lines[-1] == 'wait'
    assert "-- /opt/kevent/tcp_echo server 7000 1" in lines[srv]


def test_disk_and_env_in_script_and_argv():
    h = topology.parse('host a disk=64M\nrun a s env=X=/mnt/disk -- prog\n').hosts['a']
    script = run.run_script(h)
    assert 'mount -t ext4 /dev/ubda /mnt/disk' in script
    assert 'env X=/mnt/disk lab_runner' in script
    argv = run.uml_argv(Path('/k'), Path('/r'), h, 'u', Path('/t'), {}, Path('/lab'))
    assert 'ubd0=/lab/a/disk.img' in argv


def test_service_host_waits_and_routes():
    topo = topology.parse('host r forward\nhost a\nlink a eth0 n 10.42.1.1/24\n'
                          'link r eth0 n 10.42.1.254/24\nroute a 10.42.2.0/24 10.42.1.254\n'
                          'run a s -- p\n')
    r = run.run_script(topo.hosts['r'])
    assert 'echo 1 > /proc/sys/net/ipv4/ip_forward' in r
    assert 'while :; do sleep 3600; done' in r
    a = run.run_script(topo.hosts['a'])
    assert 'ip route add 10.42.2.0/24 via 10.42.1.254' in a
    assert 'sleep 3600' not in a


def test_startup_runs_after_network_before_tests():
    lines = run.run_script(host(), 'echo startup-of-a\n').splitlines()
    assert lines.index('echo startup-of-a') > lines.index('ip addr add 10.42.0.1/24 dev eth0')
    assert lines.index('echo startup-of-a') < [i for i, l in enumerate(lines) if 'lab_runner' in l][0]


def test_uml_argv():
    argv = run.uml_argv(Path('/k/linux'), Path('/k/root.cpio'), host(), 'lab-a', Path('/t/uml'),
                        {'net0': Path('/t/net0')}, Path('/r/lab'))
    assert argv[0] == '/k/linux'
    assert 'eth0=vde,/t/net0' in argv and 'LAB_DIR=/r/lab' in argv and 'LAB_HOST=a' in argv


def hostrun(tmp_path, console: str, userspace=0.5):
    results = tmp_path / 'results'
    results.mkdir()
    shutil.copy(GOLDEN / console, results / 'a.console.log')
    (tmp_path / 'lab' / 'a').mkdir(parents=True)
    return run.HostRun(host(), results / 'a.console.log', userspace_s=userspace, ended_s=3.0)


def by_name(result):
    return {(t.suite, t.name): t for t in result.tests}


def test_collect_good_host(tmp_path):
    hr = hostrun(tmp_path, 'console_kunit_pass.log')
    shutil.copy(GOLDEN / 'runner_core_pass.log', tmp_path / 'lab' / 'a' / 'core.log')
    res = run.collect_host(hr, tmp_path / 'lab')
    tests = by_name(res)
    assert tests[('kevent_core', 'kevent_test_add_remove')].status == 'pass'
    assert tests[('kernel', 'console_clean')].status == 'pass'
    assert tests[('core', 'global.ukevent_layout')].status == 'pass'
    # The server never wrote a log: that is a failure, not a silent gap.
    assert tests[('srv', '(not run)')].status == 'fail'
    assert (tmp_path / 'results' / 'a.core.log').exists()


def test_collect_panic_before_userspace(tmp_path):
    hr = hostrun(tmp_path, 'console_no_userspace.log', userspace=None)
    res = run.collect_host(hr, tmp_path / 'lab', 'decode: x.sh < {console}')
    assert 'decode: x.sh < ' + str(hr.console) in by_name(res)[('kernel', 'console_clean')].message
    tests = by_name(res)
    assert tests[('kernel', 'reached_userspace')].status == 'fail'
    clean = tests[('kernel', 'console_clean')]
    assert clean.status == 'fail' and 'Kernel panic - not syncing' in clean.message


def test_collect_crashed_testcase(tmp_path):
    hr = hostrun(tmp_path, 'console_kunit_fail.log')
    shutil.copy(GOLDEN / 'runner_crash.log', tmp_path / 'lab' / 'a' / 'core.log')
    shutil.copy(GOLDEN / 'runner_timeout.log', tmp_path / 'lab' / 'a' / 'srv.log')
    tests = by_name(run.collect_host(hr, tmp_path / 'lab'))
    assert tests[('kevent_core', 'kevent_test_ready_once')].status == 'fail'
    assert tests[('core', '(incomplete)')].status == 'fail'
    assert tests[('srv', '(incomplete)')].status == 'fail'


def test_parts_of_a_suite(tmp_path):
    hr = hostrun(tmp_path, 'console_kunit_pass.log')
    shutil.copy(GOLDEN / 'runner_core_pass.log', tmp_path / 'lab' / 'a' / 'core.log')
    shutil.copy(GOLDEN / 'runner_fail_skip.log', tmp_path / 'lab' / 'a' / 'core.extra.log')
    tests = by_name(run.collect_host(hr, tmp_path / 'lab'))
    assert tests[('core', 'global.ukevent_layout')].status == 'pass'
    assert tests[('core', 'extra.timer.oneshot_fires_once')].status == 'fail'
    assert tests[('core', 'extra.timer.fine')].status == 'pass'
    assert '/lab/a/core.extra.log' in run.run_script(hr.host)


def test_exit_status_counts(tmp_path):
    hr = hostrun(tmp_path, 'console_kunit_pass.log')
    text = (GOLDEN / 'runner_core_pass.log').read_text().replace('status=0', 'status=3')
    (tmp_path / 'lab' / 'a' / 'core.log').write_text(text)
    tests = by_name(run.collect_host(hr, tmp_path / 'lab'))
    assert tests[('core', '(exit)')].status == 'fail'
    assert 'it exited with status 3' in tests[('core', '(exit)')].message


def test_phase_line():
    a = run.HostRun(host(), Path('/x'), userspace_s=0.4, ended_s=9.5)
    b = run.HostRun(host(), Path('/y'), userspace_s=0.6, ended_s=10.0)
    line = run.phase_line([a, b], {'switches': 0.02, 'teardown': 0.05, 'collect': 0.1})
    assert line == ('phases: switches 0.02 s, boot 0.60 s (slowest host to userspace), '
                    'tests 9.40 s, teardown 0.05 s, collect 0.10 s')


def test_console_trouble_patterns():
    assert run.console_trouble('fine\nall good\n') == ''
    assert 'BUG: KASAN' in run.console_trouble('x\n[ 1.0] BUG: KASAN: use-after-free in foo\n')
    assert run.console_trouble('[ 1.0] WARNING: CPU: 0 PID: 1 at kernel/x.c:1\n')


UPLINK_LAB = '''
host a
link a eth0 n 10.42.0.1/24
uplink a eth1
run a up -- tcp_echo client $LAB_ECHO_ADDR $LAB_ECHO_PORT 100
'''


def test_uplink_argv_env_and_script(tmp_path):
    a = topology.parse(UPLINK_LAB).hosts['a']
    argv = run.uml_argv(Path('/k'), Path('/r'), a, 'u', Path('/t'), {'n': Path('/t/n')}, Path('/lab'))
    assert 'eth0=vde,/t/n' in argv
    slirp = [x for x in argv if x.startswith('eth1=vde,slirp:///')]
    assert len(slirp) == 1 and ',' not in slirp[0][len('eth1=vde,'):]   # UML splits at commas
    assert 'disable_host_loopback' in slirp[0] and 'cmdfwd=10.0.2.7:7:cat' in slirp[0]
    env = run.uml_env(a, tmp_path)
    assert env['HOME'] == str(tmp_path / 'home-a') and (tmp_path / 'home-a').is_dir()
    assert env['TMPDIR'] == str(tmp_path / 'mem-a') and (tmp_path / 'mem-a').is_dir()
    other = tmp_path / 'other'
    env = run.uml_env(host(), other)
    assert env['HOME'] == os.environ['HOME'] and not (other / 'home-a').exists()
    assert env['TMPDIR'] == str(other / 'mem-a')
    variables = run.guest_variables(a)
    assert variables == {'LAB_ECHO_ADDR': '10.0.2.7', 'LAB_ECHO_PORT': '7'}
    lines = run.run_script(a, '', variables).splitlines()
    assert "export LAB_ECHO_PORT=7" in lines
    assert lines.index('ip addr add 10.0.2.15/24 dev eth1') > lines.index('ip link set eth1 up')
    assert not any('route' in l for l in lines)        # no default route unless lab.conf asks
    runner = [l for l in lines if 'lab_runner' in l][0]
    assert runner.endswith('-- /opt/kevent/tcp_echo client "$LAB_ECHO_ADDR" "$LAB_ECHO_PORT" 100')
    # No uplink, no variables and no slirp.
    assert run.guest_variables(host()) == {}
    assert not any('slirp' in a for a in run.uml_argv(Path('/k'), Path('/r'), host(), 'u', Path('/t'),
                                                       {'net0': Path('/t/net0')}, None))


def test_uplink_confinement_by_mode(tmp_path):
    def rules(conf):
        h = topology.parse(conf).hosts['a']
        argv = run.confined(['/k'], h, tmp_path, {'n': tmp_path / 'n'}, tmp_path / 'lab', [])
        return argv[argv.index('--') - 3:argv.index('--')]
    # No uplink: no TCP at all; the default uplink: a network of its own;
    # outside: this machine's network, TCP unlimited.
    plain = 'host a\nlink a eth0 n 10.42.0.1/24\nrun a up -- tcp_echo client 10.42.0.2 7 1\n'
    assert '--own-network' not in rules(plain) and '--any-tcp' not in rules(plain)
    assert rules(UPLINK_LAB)[-2:] == ['--any-tcp', '--own-network']
    assert rules(UPLINK_LAB.replace('eth1\n', 'eth1 outside\n'))[-1] == '--any-tcp'


def test_uplink_plug_missing(monkeypatch):
    from kevent_lab import uplink
    monkeypatch.setattr(uplink.shutil, 'which', lambda *a, **k: None)
    with pytest.raises(FileNotFoundError, match='Debian package vdeplug'):
        uplink.check_installed()
    monkeypatch.setattr(uplink.shutil, 'which', lambda *a, **k: '/usr/bin/vde_plug')
    monkeypatch.setattr(uplink.glob, 'glob', lambda *a, **k: [])
    with pytest.raises(FileNotFoundError, match='libvdeplug-slirp'):
        uplink.check_installed()


def test_pinned_cpu_wraps_onto_the_cpus_there_are():
    assert run.pinned_cpu(0, [0, 1]) == 0
    assert run.pinned_cpu(1, [0, 1]) == 1
    assert run.pinned_cpu(2, [0, 1]) == 0
    assert run.pinned_cpu(1, [6, 4]) == 6        # the second of those allowed, in order
    assert run.pinned_cpu(0, [3]) == 3


def test_uml_argv_pins_a_host_with_cpu():
    h = topology.parse('host a\n').hosts['a']
    plain = run.uml_argv(Path('/k/linux'), Path('/r'), h, 'u', Path('/t'), {}, None)
    h.cpu = 1
    argv = run.uml_argv(Path('/k/linux'), Path('/r'), h, 'u', Path('/t'), {}, None)
    cpus = sorted(os.sched_getaffinity(0))
    assert argv[:3] == ['taskset', '-c', str(cpus[1 % len(cpus)])]
    assert argv[3:] == plain


def test_trace_brackets_a_foreground_run():
    h = topology.parse('host a\nrun a one -- p\nrun a two trace=kevent,net -- q\nrun a three -- r\n').hosts['a']
    lines = run.run_script(h).splitlines()
    start = lines.index('lab_trace start kevent net')
    stop = lines.index('lab_trace stop /lab/a/two.trace')
    two = [i for i, l in enumerate(lines) if '/lab/a/two.log' in l][0]
    three = [i for i, l in enumerate(lines) if '/lab/a/three.log' in l][0]
    assert start + 1 == two and stop == two + 1 and stop < three


def test_trace_of_a_background_run_lasts_until_all_ended():
    h = topology.parse('host a\nrun a srv background trace -- p\nrun a cl -- q\n').hosts['a']
    lines = run.run_script(h).splitlines()
    srv = [i for i, l in enumerate(lines) if '/lab/a/srv.log' in l][0]
    assert lines[srv - 1] == 'lab_trace start kevent'
    assert lines[-2:] == ['wait', 'lab_trace stop /lab/a/srv.trace']


def test_collect_trace(tmp_path):
    r = topology.parse('host a\nrun a s/p trace -- p\n').hosts['a'].runs[0]
    rec = run.collect_trace(tmp_path / 'missing', tmp_path / 'out', 'a', r, False)
    assert rec.status == 'fail' and 'no trace was written' in rec.message
    assert rec.name == 'p.(trace)'
    empty = tmp_path / 'empty.trace'
    empty.write_text('# tracer: nop\n')
    assert run.collect_trace(empty, tmp_path / 'o1', 'a', r, False).status == 'fail'
    good = tmp_path / 'good.trace'
    shutil.copy(GOLDEN / 'trace' / 'echo_server.trace', good)
    rec = run.collect_trace(good, tmp_path / 'o2', 'a', r, False)
    assert rec.status == 'pass' and (tmp_path / 'o2').exists()


def test_a_host_too_small_for_the_rootfs_is_refused():
    topo = topology.parse('host r mem=64M\nhost a mem=96M\nhost b\n')
    with pytest.raises(ValueError, match=r'host r \(mem=64M\) cannot boot .* 23 MiB: give it mem=86M'):
        run.check_memory(topo, 23 << 20)
    run.check_memory(topo, 12 << 20)
    assert topology.size_bytes('1G') == 1 << 30 and topology.size_bytes('4096K') == 4 << 20


def test_each_host_reaches_only_its_own_directory_with_hostfs():
    """Without hostfs= on UML's command line root in a guest mounted any
    directory of this machine (mount -t hostfs -o /any/dir)."""
    argv = run.uml_argv(Path('/k'), Path('/r'), host(), 'u', Path('/t/uml'), {'net0': Path('/t/n')},
                        Path('/runs/lab/1'))
    assert 'hostfs=/runs/lab/1/a' in argv
    init = (Path(__file__).resolve().parents[2] / 'rootfs' / 'init').read_text()
    # The prefix is the host's own directory; only a tools host (no prefix)
    # names its directory, LAB_OWN, itself.
    assert 'mount -t hostfs $own hostfs "/lab/$LAB_HOST"' in init
    assert '[ -z "$LAB_TOOLS" ] || { own="-o $LAB_OWN"; machine_tools; }' in init
    assert '-o "$LAB_DIR"' not in init


def test_runs_drop_root_unless_they_say_root(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 0)
    h = topology.parse('host a disk=64M\nrun a s user -- p\nrun a t -- q\nrun a u root -- r\n').hosts['a']
    lines = run.run_script(h).splitlines()
    line = {k: [l for l in lines if f'/lab/a/{k}.log' in l][0] for k in 'stu'}
    assert ' -u 65534 -- /opt/kevent/p' in line['s'] and ' -u 65534 -- /opt/kevent/q' in line['t']
    assert ' -u ' not in line['u']
    # The disk is the unprivileged user's to write.
    assert any('mount -t ext4 /dev/ubda /mnt/disk && chown 65534:65534 /mnt/disk' in l for l in lines)
    with pytest.raises(topology.TopologyError, match='either root or user'):
        topology.parse('host a\nrun a s root user -- p\n')


def test_only_the_programs_that_need_root_have_it():
    """Every shipped run is unprivileged but those that mount, write sysctls,
    crash the kernel, read /proc/timer_list (kevent_reliability_test and
    kevent_smp_race_test: no timer left armed), write vm.stat_refresh for
    exact pin counts on several CPUs (naio_xfer in lab smp), switch users themselves or
    give a child a pid back, and the kernel's own selftests and stress-ng
    (ksft_run, labs suites and suites-quick), which expect root as they do
    on any kernel (ptrace of other users, setns, sysctls)."""
    labs = Path(__file__).resolve().parents[1] / 'labs'
    root = sorted({r.argv[0] for conf in labs.glob('*/lab.conf')
                   for h in topology.load(conf).hosts.values() for r in h.runs if not r.user})
    assert root == ['ex01_uses_kevent', 'ex02_check', 'ex03_check', 'ex04_servers',
                    'kevent_limits_test', 'kevent_naio_test', 'kevent_posix_timer_test',
                    'kevent_reliability_test', 'kevent_smp_race_test', 'ksft_run', 'naio_xfer',
                    'sysrq_crash']


def test_exercise_answers_run_as_a_user_of_their_own(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 0)
    """Answers and their checkers both ran as nobody: an answer could trace
    its checker and make it print ok. An answer now runs as ANSWER_USER,
    started so by lab_runner (ex01) or by its root checker (ex02, ex03)."""
    labs = Path(__file__).resolve().parents[1] / 'labs'
    topo = topology.load(labs / 'ex-01-echo' / 'lab.conf')
    runs = {r.key: r for r in topo.hosts['a'].runs}
    assert runs['echo.server'].answer and runs['echo.server'].user
    assert f'-u {run.ANSWER_USER} -- /opt/kevent/ex01_answer' in run.run_script(topo.hosts['a'])
    assert not any(r.answer for h in topo.hosts.values() for r in h.runs if r.key != 'echo.server')
    header = (Path(__file__).resolve().parents[2] / 'exercises' / 'include' / 'ex_answer.h').read_text()
    assert f'#define EX_ANSWER_UID\t{run.ANSWER_USER}\n' in header
    assert run.ANSWER_USER != run.GUEST_USER
    for lab, key in (('ex-02-inode', 'inode'), ('ex-03-timer', 'timer')):
        topo = topology.load(labs / lab / 'lab.conf')
        checker = [r for r in topo.hosts['a'].runs if r.key == key][0]
        assert not checker.user and checker.argv[1] == f"/opt/kevent/ex{lab[3:5]}_answer"
    with pytest.raises(topology.TopologyError, match='either root or user'):
        topology.parse('host a\nrun a s root answer -- p\n')


@pytest.mark.parametrize('machine, guest, answer', [(0, 65534, 1000), (1000, 65534, 1001),
                                                    (65534, 65533, 1000), (4321, 65534, 1000)])
def test_no_guest_user_is_the_machines_user(monkeypatch, machine, guest, answer):
    """hostfs shows /lab/HOST's files with their owner on this machine. A
    student at uid 1000 running the lab gave every log the answer's uid: the
    answer (uid 1000 in the guest) owned its checker's log and could rewrite
    it. Neither guest user is ever the uid running the lab."""
    monkeypatch.setattr(os, 'geteuid', lambda: machine)
    assert run.guest_uids() == (guest, answer)
    topo = topology.parse('host a disk=64M\nrun a s user -- p\nrun a t user answer -- q\n')
    script = run.run_script(topo.hosts['a'])
    assert f'export LAB_GUEST_UID={guest} LAB_ANSWER_UID={answer}\n' in script
    assert f' -u {guest} -- /opt/kevent/p' in script and f' -u {answer} -- /opt/kevent/q' in script
    assert f'chown {guest}:{guest} /mnt/disk' in script
    assert machine not in (guest, answer)


def test_a_checker_starts_the_answer_as_the_uid_the_driver_chose(tmp_path):
    """ex_answer.h's ex_answer_uid() reads LAB_ANSWER_UID (the driver's
    choice), and falls back to 1000 for nothing, garbage or root."""
    if not shutil.which('gcc'):
        pytest.skip('no gcc')
    inc = Path(__file__).resolve().parents[2] / 'exercises' / 'include'
    src = tmp_path / 'uid.c'
    src.write_text('#include "ex_answer.h"\nint main(void) { printf("%u\\n", ex_answer_uid()); return 0; }\n')
    subprocess.run(['gcc', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-Werror', '-I', str(inc), '-o', str(tmp_path / 'uid'), str(src)], check=True)
    for value, want in ((None, 1000), ('1001', 1001), ('0', 1000), ('12x', 1000), ('', 1000), ('70000', 1000)):
        env = {k: v for k, v in os.environ.items() if k != 'LAB_ANSWER_UID'}
        if value is not None:
            env['LAB_ANSWER_UID'] = value
        out = subprocess.run([str(tmp_path / 'uid')], env=env, capture_output=True, text=True, check=True)
        assert out.stdout == f'{want}\n', value
