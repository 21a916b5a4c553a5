"""The trace reader, held to a trace the lab saved (lab trace, host a)."""
from pathlib import Path

from kevent_lab import trace

GOLDEN = Path(__file__).resolve().parent / 'golden' / 'trace'


def events():
    return trace.parse((GOLDEN / 'echo_server.trace').read_text())


def test_parse_reads_every_event_line():
    ev = events()
    assert len(ev) == 42                      # "entries-in-buffer/entries-written: 42/42"
    first = ev[0]
    assert (first.task, first.pid, first.cpu, first.name) == ('kevent_echo', 68, 0, 'netif_receive_skb')
    assert first.ts == 0.478422
    assert first.fields == {'dev': 'eth0', 'skbaddr': '00000000e165d370', 'len': '60'}


def test_idle_task_and_kevent_names():
    ev = events()
    cb = [e for e in ev if e.name == 'kevent_callback'][0]
    assert cb.task == '<idle>' and cb.pid == 0
    assert cb.kevent == ('00000000c60376c3', 'socket', '5,0')
    assert ev[0].kevent is None


def test_counts():
    c = trace.counts(events())
    assert c['kevent_deliver'] == 4 and c['kevent_wait_start'] == 4 and c['kevent_remove'] == 3


def test_lives_fold_repeats():
    life = trace.lives(events())
    conn = life[('00000000c60376c3', 'socket', '6,0')]
    assert conn[:3] == ['kevent_add', 'kevent_callback', 'kevent_ready']
    assert 'kevent_callback x2' in conn and conn[-1] == 'kevent_remove'
    assert life[('00000000c60376c3', 'timer', '60000,0')] == ['kevent_add', 'kevent_remove']


def test_summary_matches_golden():
    assert trace.summary(events(), 60) + '\n' == (GOLDEN / 'echo_server.summary').read_text()


def test_lines_without_flags_and_garbage():
    text = ('# header\n'
            '  a-b-c-7 [001]  5.000001: kevent_ready: q=1 type=timer id=1,2 event=0x1\n'
            'garbage line\n'
            '  x-8 [000] d..2.  5.000002: kevent_wait_end: q=1 ret=1\n')
    ev = trace.parse(text)
    assert [(e.task, e.pid, e.name) for e in ev] == [('a-b-c', 7, 'kevent_ready'),
                                                      ('x', 8, 'kevent_wait_end')]
    assert trace.story([]) == '(no events)'
    assert trace.summary([]) == 'the trace recorded no events'
