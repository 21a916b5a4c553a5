import pytest

from kevent_lab import expect
from kevent_lab.results import HostResult, TestRecord


def hosts(status_b='pass'):
    return [HostResult('a', '', 0, 0, [TestRecord('a', 'core', 'x', 'pass', 0),
                                       TestRecord('a', 'kernel', 'console_clean', 'fail', None)]),
            HostResult('b', '', 0, 0, [TestRecord('b', 'core', 'y', status_b, 0)])]


def test_round_trip_and_match():
    sig = expect.signature(hosts())
    text = expect.render(sig)
    assert text.splitlines()[0] == 'a core x pass'
    assert expect.parse('# comment\n' + text) == sig
    c = expect.compare(sig, expect.signature(hosts()))
    assert c.ok and c.matched == 3


def test_differences():
    expected = expect.signature(hosts())
    expected['b gone test'] = 'pass'
    actual = expect.signature(hosts(status_b='fail'))
    actual['a new test'] = 'pass'
    c = expect.compare(expected, actual)
    assert not c.ok
    assert c.changed == ['b core y: expected pass, got fail']
    assert c.missing == ['b gone test (expected pass)']
    assert c.new == ['a new test pass']
    assert 'missing:' in c.report()


def test_bad_signature_line():
    with pytest.raises(ValueError, match='sig:2:'):
        expect.parse('a b c pass\na b c maybe\n', 'sig')


def test_a_later_ok_does_not_hide_a_not_ok_of_the_same_name():
    """--expect keyed tests by HOST SUITE NAME: of two tests named alike the
    last one's status was the only one compared."""
    ran = [HostResult('a', '', 0, 0, [TestRecord('a', 'core', 'dup', 'fail', 0),
                                      TestRecord('a', 'core', 'dup', 'pass', 0)])]
    assert not expect.compare(expect.parse('a core dup pass\n'), expect.signature(ran)).ok
    assert not expect.compare(expect.parse('a core dup pass\na core dup pass\n'),
                              expect.signature(ran)).ok
    # A signature recorded from such a run reads back as it was written.
    sig = expect.signature(ran)
    assert expect.render(sig) == 'a core dup fail\na core dup [2] pass\n'
    assert expect.parse(expect.render(sig)) == sig
    assert expect.compare(expect.parse(expect.render(sig)), sig).ok


def test_a_cpu_condition_expects_skip_where_the_host_lacks_the_flag():
    text = 'a fpu zmm pass cpu=avx512f\na core x pass\n'
    assert expect.parse(text, cpu_flags=frozenset({'avx512f'})) == {
        'a fpu zmm': 'pass', 'a core x': 'pass'}
    assert expect.parse(text, cpu_flags=frozenset({'avx2'})) == {
        'a fpu zmm': 'skip', 'a core x': 'pass'}
    # Where the host has the flag, a skip is a change, not a match.
    ran = {'a fpu zmm': 'skip', 'a core x': 'pass'}
    c = expect.compare(expect.parse(text, cpu_flags=frozenset({'avx512f'})), ran)
    assert c.changed == ['a fpu zmm: expected pass, got skip']


def test_a_bad_cpu_condition_is_refused():
    with pytest.raises(ValueError, match='cpu='):
        expect.parse('a fpu zmm pass cpu=AVX-512\n', cpu_flags=frozenset())
    with pytest.raises(ValueError, match='HOST SUITE NAME'):
        expect.parse('a fpu pass cpu=avx\n', cpu_flags=frozenset())


def test_saving_a_signature_keeps_its_cpu_conditions():
    old = 'a fpu zmm pass cpu=avx512f\na core x pass\n'
    ran = {'a fpu zmm': 'skip', 'a core x': 'fail'}
    text = expect.render(ran, expect.conditions(old))
    assert text == 'a core x fail\na fpu zmm pass cpu=avx512f\n'


def test_host_cpu_flags_reads_the_first_flags_line(tmp_path):
    info = tmp_path / 'cpuinfo'
    info.write_text('processor\t: 0\nflags\t\t: fpu sse avx512f\n\nflags\t: other\n')
    assert expect.host_cpu_flags(info) == frozenset({'fpu', 'sse', 'avx512f'})
    assert expect.host_cpu_flags(tmp_path / 'none') == frozenset()
