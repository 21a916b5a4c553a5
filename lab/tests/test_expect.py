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
