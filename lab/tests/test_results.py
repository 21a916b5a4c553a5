import json
import xml.etree.ElementTree as ET

from kevent_lab import ktap, results
from kevent_lab.results import HostResult, TestRecord


def hosts():
    a = HostResult('a', '/r/a.console.log', 0.4, 3.0, [
        TestRecord('a', 'core', 'global.x', 'pass', 0.01),
        TestRecord('a', 'core', 'global.y', 'fail', 0.02, 'Expected 1 == 2\nline two'),
        TestRecord('a', 'timer', 't.z', 'skip', 0.0, 'SKIP no'),
    ])
    b = HostResult('b', '/r/b.console.log', None, 1.0, [
        TestRecord('b', 'kernel', 'reached_userspace', 'fail', None, 'never'),
    ])
    return [a, b]


def test_summary_shape():
    data = results.summary('default', hosts(), 3.5)
    json.dumps(data)
    assert (data['passed'], data['failed'], data['skipped']) == (1, 2, 1)
    assert data['tests'][0] == {'host': 'a', 'suite': 'core', 'name': 'global.x',
                                'status': 'pass', 'duration_s': 0.01}
    assert set(data['tests'][0]) == {'host', 'suite', 'name', 'status', 'duration_s'}
    assert data['hosts']['a']['failures'] == {'core.global.y': 'Expected 1 == 2\nline two'}


def test_junit():
    root = results.junit('default', hosts()).getroot()
    suites = root.findall('testsuite')
    assert [s.get('name') for s in suites] == ['a.core', 'a.timer', 'b.kernel']
    assert suites[0].get('failures') == '1'
    fail = suites[0].findall('testcase')[1].find('failure')
    assert fail.get('message') == 'Expected 1 == 2'
    assert suites[1].find('testcase/skipped') is not None
    ET.fromstring(ET.tostring(root))


def test_host_ktap_round_trips_through_the_parser():
    text = results.host_ktap(hosts()[0])
    suites = ktap.parse(text)
    assert [(s.name, s.status) for s in suites] == [('core', 'fail'), ('timer', 'pass')]
    core = suites[0]
    assert [(c.name, c.status) for c in core.children] == [('global.x', 'pass'), ('global.y', 'fail')]
    assert 'line two' in core.children[1].message
    assert suites[1].children[0].status == 'skip'


def test_count_line_and_table():
    assert results.count_line({'passed': 3, 'failed': 0, 'skipped': 0}) == '3 passed, 0 failed'
    assert results.count_line({'passed': 3, 'failed': 1, 'skipped': 2}) == '3 passed, 1 failed, 2 skipped'
    t = results.table(hosts())
    assert 'FAILED:' in t and 'a: core: global.y' in t and 'b: kernel: reached_userspace' in t


def test_write_all(tmp_path):
    data = results.write_all(tmp_path, 'default', hosts(), 1.0)
    assert json.loads((tmp_path / 'summary.json').read_text()) == data
    assert (tmp_path / 'a.ktap').read_text().startswith('KTAP version 1\n1..2\n')
    ET.parse(tmp_path / 'junit.xml')
