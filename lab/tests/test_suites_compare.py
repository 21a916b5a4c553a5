"""labctl compare: a lab run on the kevent kernel and on the kernel without
the series, test by test (kevent_lab/compare.py)."""
import json
import subprocess
import sys
from pathlib import Path

from kevent_lab import compare, results
from kevent_lab.results import HostResult, TestRecord

LABCTL = Path(__file__).resolve().parents[1] / 'labctl'


def host(name, *tests):
    h = HostResult(name, '', 1.0, 2.0)
    h.tests = [TestRecord(name, s, n, st, None, m) for s, n, st, m in tests]
    return h


def booted(*tests):
    return host('a', ('kernel', 'console_clean', 'pass', ''), *tests)


def statuses(cmp):
    return {(p.suite, p.name): p.status for p in cmp.pairs}


def test_the_same_verdict_passes_a_different_one_fails():
    kev = [booted(('epoll', 'e1', 'pass', ''), ('epoll', 'e2', 'fail', 'timeout'),
                  ('net', 'inq', 'skip', ''), ('net', 'zc', 'pass', ''))]
    van = [booted(('epoll', 'e1', 'pass', ''), ('epoll', 'e2', 'fail', 'timeout'),
                  ('net', 'inq', 'skip', ''), ('net', 'zc', 'fail', 'EINVAL'))]
    cmp = compare.compare(kev, van, {'epoll', 'net'})
    assert statuses(cmp) == {('kernel', 'console_clean'): 'pass', ('epoll', 'e1'): 'pass',
                             ('epoll', 'e2'): 'pass', ('net', 'inq'): 'skip', ('net', 'zc'): 'fail'}
    # Failing on both is no failure of the comparison, but it is named, with why.
    report = cmp.report()
    assert '1 fail on both' in report and 'e2' in report and 'timeout' in report
    assert 'kevent kernel: pass, without the series: fail' in report and 'EINVAL' in report


def test_a_test_on_one_kernel_only_fails():
    cmp = compare.compare([booted(('epoll', 'e1', 'pass', ''), ('epoll', 'e3', 'pass', ''))],
                          [booted(('epoll', 'e1', 'pass', ''))], {'epoll'})
    assert statuses(cmp)[('epoll', 'e3')] == 'fail'
    assert 'without the series: absent' in cmp.pairs[-1].message()


def test_the_series_kunit_suites_are_not_compared():
    cmp = compare.compare([booted(('epoll', 'e1', 'pass', ''), ('kevent_core', 'k1', 'pass', ''))],
                          [booted(('epoll', 'e1', 'pass', ''))], {'epoll'})
    assert ('kevent_core', 'k1') not in statuses(cmp)
    assert cmp.ignored == {'kevent_core': 1}


def test_trouble_of_the_kernel_on_both_is_never_a_match():
    """A host that hung, never booted or printed a report on both kernels
    compared nothing: the same verdict there fails."""
    bad = [host('a', ('kernel', 'reached_userspace', 'fail', 'never reached /init'))]
    cmp = compare.compare(bad, bad, {'epoll'})
    assert statuses(cmp) == {('kernel', 'reached_userspace'): 'fail'}


def test_a_name_printed_twice_is_compared_in_order():
    """pidfd_test prints one of its results' names twice."""
    kev = [booted(('pidfd', 'p', 'pass', ''), ('pidfd', 'p', 'pass', ''))]
    van = [booted(('pidfd', 'p', 'pass', ''), ('pidfd', 'p', 'fail', 'no'))]
    assert statuses(compare.compare(kev, van, {'pidfd'})) == {
        ('kernel', 'console_clean'): 'pass', ('pidfd', 'p'): 'pass', ('pidfd', 'p #2'): 'fail'}
    # Once on one side only: the second is absent there.
    assert statuses(compare.compare(kev, [booted(('pidfd', 'p', 'pass', ''))], {'pidfd'}))[
        ('pidfd', 'p #2')] == 'fail'


def write_run(d: Path, lab: str, hosts):
    results.write_all(d, lab, hosts, 1.0)


def test_labctl_compare_writes_a_lab_report_that_total_counts(tmp_path):
    kev, van, out = tmp_path / 'k', tmp_path / 'v', tmp_path / 'labs' / 'suites-quick'
    write_run(kev, 'suites-quick', [booted(('epoll', 'e1', 'pass', ''), ('epoll', 'e2', 'fail', 'x'))])
    write_run(van, 'suites-quick', [booted(('epoll', 'e1', 'pass', ''), ('epoll', 'e2', 'fail', 'x'))])
    proc = subprocess.run([sys.executable, str(LABCTL), 'compare', '--lab', 'suites-quick',
                           '--kevent', str(kev), '--vanilla', str(van), '--results', str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((out / 'summary.json').read_text())
    assert (data['passed'], data['failed']) == (3, 0)
    assert 'fail on both' in (out / 'latest' / 'compare.txt').read_text()
    detail = json.loads((out / 'latest' / 'compare.json').read_text())
    assert {(t['name'], t['kevent'], t['vanilla']) for t in detail['tests']} >= {('e2', 'fail', 'fail')}

    write_run(van, 'suites-quick', [booted(('epoll', 'e1', 'fail', 'y'), ('epoll', 'e2', 'fail', 'x'))])
    proc = subprocess.run([sys.executable, str(LABCTL), 'compare', '--lab', 'suites-quick',
                           '--kevent', str(kev), '--vanilla', str(van), '--results', str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and '2 passed, 1 failed' in proc.stdout


def test_labctl_compare_refuses_a_missing_run_or_another_lab(tmp_path):
    kev = tmp_path / 'k'
    write_run(kev, 'default', [booted()])
    for van in (tmp_path / 'none', kev):
        proc = subprocess.run([sys.executable, str(LABCTL), 'compare', '--lab', 'suites-quick',
                               '--kevent', str(kev), '--vanilla', str(van), '--results',
                               str(tmp_path / 'out')], capture_output=True, text=True)
        assert proc.returncode != 0 and 'labctl compare:' in proc.stderr
