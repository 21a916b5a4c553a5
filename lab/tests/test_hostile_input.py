"""The parsers against what a test program (or a student's answer) may print:
very long lines, deep nesting, control characters and escape sequences,
digits that are not ASCII. Nothing may take more than linear time, raise,
or reach the terminal or junit.xml raw."""
import json
import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kevent_lab import ktap, results, run, topology, trace
from kevent_lab.results import HostResult, TestRecord


def timed(fn, *args):
    t0 = time.monotonic()
    out = fn(*args)
    return out, time.monotonic() - t0


# --- KTAP -------------------------------------------------------------------

def test_result_line_with_a_long_run_of_spaces_is_linear():
    # `ok 1 ` + 20 000 spaces + `x` took 4.8 s with the old single pattern
    # (200 000 spaces: 488 s). 16 000 stays under the cut of long lines.
    text = 'KTAP version 1\n1..1\nok 1 ' + ' ' * 16000 + 'x\n'
    suites, took = timed(ktap.parse, text)
    assert took < 0.5, f'{took:.2f} s for one line'
    assert [(s.name, s.status) for s in suites] == [('x', 'pass')]


def test_a_megabyte_line_is_cut_not_parsed_whole():
    text = 'KTAP version 1\n1..2\nok 1 ' + ' ' * 1_000_000 + 'x\nok 2 second\n'
    suites, took = timed(ktap.parse, text)
    assert took < 0.5
    assert [s.status for s in suites] == ['pass', 'pass'] and suites[1].name == 'second'


def test_result_line_forms_still_read():
    assert ktap.match_result('ok 1 - name # SKIP why') == ('ok', '1', 'name', 'SKIP why')
    assert ktap.match_result('not ok 12 a b  ') == ('not ok', '12', 'a b', None)
    assert ktap.match_result('ok 3') == ('ok', '3', '', None)
    assert ktap.match_result('ok 3 -foo') == ('ok', '3', '-foo', None)
    assert ktap.match_result('ok 3#TODO') == ('ok', '3', '', 'TODO')
    assert ktap.match_result('ok 12abc') is None


def deep_ktap(depth: int) -> list[str]:
    """A document whose one test is a subtest of a subtest ... @depth deep,
    with a failing test at the bottom; every group line says ok."""
    lines = ['KTAP version 1', '1..1']
    for d in range(1, depth + 1):
        pad = '    ' * d
        lines += [f'{pad}KTAP version 1', f'{pad}# Subtest: s{d}', f'{pad}1..1']
    lines.append('    ' * depth + 'not ok 1 leaf')
    for d in reversed(range(1, depth + 1)):
        lines.append('    ' * (d - 1) + f'ok 1 s{d}')
    return lines


def test_ktap_nested_1200_deep(tmp_path):
    """Nested 1 200 deep the parser used to raise RecursionError, and no
    summary.json was written. Now the failure deep inside fails the run,
    and every result file is written."""
    suites = ktap.parse('\n'.join(deep_ktap(1200)) + '\n')
    assert suites[0].status == 'fail'            # the not ok at the bottom counts
    (leaf_path, leaf), = suites[0].leaves(suites[0].name)
    assert leaf.status == 'fail' and leaf_path.endswith('.leaf')

    h = topology.parse('host a\nrun a deep -- p\n').hosts['a']
    (tmp_path / 'lab' / 'a').mkdir(parents=True)
    (tmp_path / 'results').mkdir()
    log = ['#lab-start 0.1 /opt/kevent/p'] + [f'0.2 {line}' for line in deep_ktap(1200)]
    log.append('#lab-exit 0.3 status=1')
    (tmp_path / 'lab' / 'a' / 'deep.log').write_text('\n'.join(log) + '\n')
    console = tmp_path / 'results' / 'a.console.log'
    console.write_text('lab: userspace reached on a\n')
    hr = run.HostRun(h, console, userspace_s=0.5, ended_s=1.0)
    res = run.collect_host(hr, tmp_path / 'lab')
    data = results.write_all(tmp_path / 'results', 'x', [res], 1.0)
    assert data['failed'] == 1
    assert json.loads((tmp_path / 'results' / 'summary.json').read_text())['failed'] == 1
    ET.parse(tmp_path / 'results' / 'junit.xml')


def test_subtest_closed_two_levels_up_keeps_its_failure():
    text = '\n'.join(['KTAP version 1', '1..1',
                      '    KTAP version 1', '    1..1',
                      '        KTAP version 1', '        1..1', '        not ok 1 deep',
                      'ok 1 top']) + '\n'
    top = ktap.parse(text)[0]
    assert top.status == 'fail'
    assert [(p, r.status) for p, r in top.leaves(top.name)] == [('top.(unfinished).deep', 'fail')]


def test_unicode_digits_are_not_numbers():
    # \d takes Arabic-Indic digits, int() reads them: they made plans and
    # times out of text no KTAP producer writes.
    assert ktap.parse('KTAP version ١\n1..1\nok 1 a\n') == []
    assert ktap.split_time('[ ١٢.٥] x') == (None, '[ ١٢.٥] x')
    suites = ktap.parse('KTAP version 1\n1..٣\nok 1 a\n')
    assert [(s.name, s.status) for s in suites] == [('a', 'pass')]      # no plan of 3 taken
    assert ktap.match_result('ok ٣ x') is None


def test_a_plan_with_thousands_of_digits_does_not_raise():
    # int() refuses more than 4 300 digits (ValueError): the pattern takes at most 9.
    assert ktap.parse('KTAP version 1\n1..' + '9' * 5000 + '\nok 1 a\n')[0].name == 'a'


def test_control_characters_in_names_and_messages_are_escaped():
    text = ('KTAP version 1\n1..2\n# \x1b]0;pwned\x07 said\nnot ok 1 red\x1b[31m\x01\n'
            'ok 2 nul\x00na\x85me\n')
    bad, nul = ktap.parse(text)
    assert bad.name == 'red\\x1b[31m\\x01'
    assert '\\x1b]0;pwned\\x07 said' in bad.message
    assert nul.name == 'nul\\x00na\\x85me'


def test_only_newline_ends_a_line():
    # splitlines() also splits at \v, \f, \x1c-\x1e, \x85, U+2028: a program
    # could start a line of its own inside one lab_runner stamped.
    log = ('#lab-start 0.1 p\n0.2 TAP version 13\n0.2 1..1\n0.3 ok 1 a\x0b#lab-exit 9.0 status=0'
           '\n0.4 x\u2028#lab-exit 9.0 status=0\n')
    rl = ktap.parse_runner_log(log)
    assert rl.exit is None


# --- lab_runner's records ----------------------------------------------------

def test_program_output_cannot_impersonate_the_exit_record():
    """A program that prints a whole KTAP block and `#lab-exit status=0`, then
    hangs until the host is killed, must not pass."""
    log = ('#lab-start 0.1 /opt/kevent/liar\n'
           '0.2 TAP version 13\n0.2 1..1\n0.2 ok 1 all_good\n'
           '0.3 #lab-exit status=0\n')
    rl = ktap.parse_runner_log(log)
    assert rl.exit is None
    assert 'never ended' in ktap.describe_exit(rl.exit)


def test_a_host_timeout_fails_a_test(tmp_path):
    h = topology.parse('host a timeout=60\nrun a liar -- liar\n').hosts['a']
    (tmp_path / 'lab' / 'a').mkdir(parents=True)
    (tmp_path / 'results').mkdir()
    (tmp_path / 'lab' / 'a' / 'liar.log').write_text(
        '#lab-start 0.1 /opt/kevent/liar\n0.2 TAP version 13\n0.2 1..1\n0.2 ok 1 all_good\n'
        '0.3 #lab-exit status=0\n')
    console = tmp_path / 'results' / 'a.console.log'
    console.write_text('lab: userspace reached on a\n')
    hr = run.HostRun(h, console, userspace_s=0.5, ended_s=61.0, timed_out=True)
    tests = {(t.suite, t.name): t for t in run.collect_host(hr, tmp_path / 'lab').tests}
    assert tests[('kernel', 'finished_in_time')].status == 'fail'
    assert tests[('liar', '(exit)')].status == 'fail'
    assert 'never ended' in tests[('liar', '(exit)')].message


def test_crash_says_which_signal():
    log = ('#lab-start 0.1 p\n0.2 TAP version 13\n0.2 1..3\n0.3 ok 1 a\n'
           '#lab-exit 0.4 signal=11\n')
    last = ktap.parse_runner_log(log).results[-1]
    assert last.name == '(incomplete)' and 'killed by SIGSEGV' in last.message
    assert 'timed out after 40 s' in ktap.describe_exit('timeout=40')
    # What the runner recorded replaces the guess, it is not added after it.
    assert last.message == ('plan was 1..3 but only 1 results arrived: '
                            'the output ended early: it was killed by SIGSEGV')
    timed_out = ktap.parse_runner_log(log.replace('signal=11', 'timeout=40')).results[-1]
    assert timed_out.message.endswith('the output ended early: it timed out after 40 s and was killed')
    # Without an exit record the guess stays, and what is known follows it.
    never = ktap.parse_runner_log(log.replace('#lab-exit 0.4 signal=11\n', '')).results[-1]
    assert '(crash, hang or kill?); it never ended' in never.message


# --- junit.xml, the terminal ---------------------------------------------------

def test_junit_stays_parseable_and_table_has_no_escapes(tmp_path):
    h = HostResult('a', '', 0, 0, [
        TestRecord('a', 'core', 'x\x01\x1b[2J', 'fail', 0.1, 'why\x00\x1b]0;t\x07\ufffe'),
        TestRecord('a', 'core', 'skip\x0c', 'skip', 0.1, 'SKIP \x02'),
    ])
    results.write_all(tmp_path, 'lab', [h], 1.0)
    root = ET.parse(tmp_path / 'junit.xml').getroot()
    names = [c.get('name') for c in root.iter('testcase')]
    assert names == ['x\\x01\\x1b[2J', 'skip\\x0c']
    table = results.table([h])
    assert '\x1b' not in table and '\x00' not in table and 'x\\x01\\x1b[2J' in table


def test_kernel_trouble_search_is_linear():
    # `INFO: task .* blocked` scanned to the end of the line from each
    # `INFO: task` in it.
    line = 'INFO: task ' * 20000
    _, took = timed(run.console_trouble, line + '\n')
    assert took < 0.5


# --- the console, followed while hosts run -------------------------------------

class FakeChild:
    def __init__(self, polls):
        self.polls = polls

    def running(self):
        self.polls -= 1
        return self.polls > 0

    def kill(self):
        pass


def rchar() -> int:
    with open('/proc/self/io') as f:
        return int(next(l for l in f if l.startswith('rchar:')).split()[1])


def test_console_is_read_once_not_at_every_look(tmp_path):
    """A guest that floods its console: the driver read the whole file again
    ten times a second (quadratic in the flood)."""
    h = topology.parse('host a\nrun a s -- p\n').hosts['a']
    console = tmp_path / 'a.console.log'
    size = 4 << 20
    with open(console, 'wb') as f:
        f.write(b'lab: userspace reached on a\n' + (b'x' * 99 + b'\n') * (size // 100))
    hr = run.HostRun(h, console)
    said = []
    before = rchar()
    run.boot_and_wait([hr], lambda hr: FakeChild(12), None, said.append)
    read = rchar() - before
    assert hr.userspace_s is not None
    assert read < 2 * size, f'read {read >> 20} MiB of a {size >> 20} MiB console'


def test_a_started_hosts_console_is_read_once_while_exec_waits_for_its_pty(tmp_path):
    """guest_shell.find_pts read the whole console log ten times a second
    while it waited for UML to announce a pty (and session.start five times
    a second until every host was ready)."""
    from kevent_lab import guest_shell
    console = tmp_path / 'a.console.log'
    size = 4 << 20
    with open(console, 'wb') as f:
        f.write(b"[    1.6] Virtual console 2 assigned device '/dev/pts/999999'\n"
                + (b'x' * 99 + b'\n') * (size // 100))
    before = rchar()
    with pytest.raises(guest_shell.ShellError, match='last announced: /dev/pts/999999'):
        guest_shell.find_pts(console, os.getpid(), 2, wait_s=1.0)
    read = rchar() - before
    assert read < 2 * size, f'read {read >> 20} MiB of a {size >> 20} MiB console'


def test_console_follower_lines_across_reads(tmp_path):
    from kevent_lab.console_follow import ConsoleFollower
    path = tmp_path / 'c.log'
    f = ConsoleFollower(path)
    assert f.new_lines() == []
    with open(path, 'ab') as out:
        out.write(b'one\r\ntw')
    assert f.new_lines() == ['one']
    with open(path, 'ab') as out:
        out.write(b'o\n[a:s]#lab-exit status=0\n')
    assert f.new_lines() == ['two', '[a:s]#lab-exit status=0']


def test_exit_record_on_the_console_cannot_be_printed_by_a_program(tmp_path):
    h = topology.parse('host a\nrun a s -- p\n').hosts['a']
    console = tmp_path / 'a.console.log'
    console.write_text('[a:s] #lab-exit status=0\n[a:s]#lab-exit signal=11\n')
    said = []
    run.boot_and_wait([run.HostRun(h, console)], lambda hr: FakeChild(3), None, said.append)
    done = [s for s in said if 'done' in s]
    assert done == ['a: s done (it was killed by SIGSEGV)']


def test_a_record_inside_a_programs_line_is_not_the_runners(tmp_path):
    """CONSOLE_EXIT was searched anywhere in a line: a program printing
    `[a:s]#lab-exit signal=11` (its own prefix or another host's) made the
    driver say a test was killed."""
    h = topology.parse('host a\nrun a s -- p\n').hosts['a']
    console = tmp_path / 'a.console.log'
    console.write_text('[a:s] [a:s]#lab-exit signal=11\n[a:s] [b:t]#lab-exit status=0\n'
                       '[a:s] x\x1b[2J[a:s]#lab-exit signal=9\n[a:s]#lab-exit status=\u0660\n'
                       '[a:s]#lab-exit status=0\n')
    said = []
    run.boot_and_wait([run.HostRun(h, console)], lambda hr: FakeChild(3), None, said.append)
    assert [s for s in said if 'done' in s] == ['a: s done (it exited with status 0)']


def test_console_line_without_end_is_cut_and_linear(tmp_path):
    from kevent_lab.console_follow import ConsoleFollower
    from kevent_lab.guest_text import MAX_LINE
    path = tmp_path / 'c.log'
    path.write_bytes(b'[a:s] ' + b'\x1b' * (4 * MAX_LINE) + b'[a:s]#lab-exit status=0')
    f = ConsoleFollower(path)
    lines, took = timed(f.new_lines)
    assert took < 0.5
    assert lines and all(len(line) <= MAX_LINE for line in lines)
    assert not any(run.CONSOLE_EXIT.match(line) for line in lines)


# --- trace ----------------------------------------------------------------------

def test_trace_line_of_spaces_is_linear():
    _, took = timed(trace.parse, ' ' * 20000 + 'x\n')
    assert took < 0.5


def test_trace_long_task_name_and_unicode_digits():
    line = '  ' + 'a-1 ' * 5000 + ' x-8 [000] d..2.  5.000002: kevent_wait_end: q=1 ret=1\n'
    ev, took = timed(trace.parse, line)
    assert took < 0.5
    assert trace.parse('  x-٨ [000] d..2.  5.000002: kevent_wait_end: q=1\n') == []
    assert trace.parse('  x-8 [٠] d..2.  5.000002: kevent_wait_end: q=1\n') == []


def test_trace_control_characters_do_not_reach_the_story():
    ev = trace.parse('  x\x1b[2J-8 [000] d..2.  5.000002: kevent_wait_end: q=1 ret=\x1b[31m\n')
    assert len(ev) == 1
    assert '\x1b' not in trace.summary(ev)


# --- lab.conf --------------------------------------------------------------------

def conf_error(text):
    try:
        topology.parse(text, 'lab.conf')
    except topology.TopologyError as e:
        return e
    raise AssertionError('no error for ' + repr(text[:80]))


def test_lab_conf_unicode_digits_are_clear_errors():
    # isdigit() is true for '²', int('²') raises: that was a traceback.
    assert 'timeout must be 1..3600 seconds' in conf_error('host a timeout=²\n').message
    assert 'cpu must be a CPU number' in conf_error('host a cpu=²\n').message
    assert 'timeout must be' in conf_error('host a\nrun a s timeout=٣ -- p\n').message
    assert 'timeout must be' in conf_error('host a timeout=' + '9' * 500 + '\n').message


def test_lab_conf_control_characters_are_refused():
    e = conf_error('host a\nrun a s -- p \x1b[31m\n')
    assert e.line == 2 and 'control character' in e.message


def test_lab_conf_long_line_is_an_error_quickly():
    e, took = timed(conf_error, 'host a\nrun a s -- p ' + 'x' * 200000 + '\n')
    assert took < 0.5 and e.line == 2 and 'characters long' in e.message


def test_lab_conf_bounds():
    assert 'disk=99999G' in conf_error('host a disk=99999G\n').message
    assert 'disk=1M' in conf_error('host a disk=1M\n').message
    assert 'mem=64G' in conf_error('host a mem=64G\n').message
    e = conf_error(''.join(f'host h{i}\n' for i in range(40)))
    assert e.line == 33 and 'at most 32 hosts' in e.message
    topology.parse('host a mem=4G disk=64G\n')


def test_run_timeout_below_the_host_timeout():
    e = conf_error('host a timeout=60\nrun a s timeout=60 -- p\n')
    assert e.line == 2 and "host 'a'" in e.message
    topo = topology.parse('host a timeout=60\nrun a s -- p\nhost b\nrun b s -- p\n')
    assert topo.hosts['a'].runs[0].timeout == 50         # not the default 120
    assert topo.hosts['b'].runs[0].timeout == 120
