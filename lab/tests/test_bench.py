"""The benchmark figures: parser, ratios, JSON, table and plots against golden files.

Regenerate the golden outputs after an intended change with
    KEVENT_LAB_REGOLD=1 python3 -m pytest -q lab/tests/test_bench.py
and read the diff before committing it.
"""

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kevent_lab import bench, bench_report, bench_svg

GOLDEN = Path(__file__).resolve().parent / 'golden' / 'bench'
LOG = GOLDEN / 'readiness_idle.log'


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get('KEVENT_LAB_REGOLD'):
        path.write_text(text)
    assert text == path.read_text(), f'{name} differs from its golden file'


def figures():
    return bench.add_ratios(bench.parse_log(LOG.read_text(), 'a.readiness'))


def test_parse_line_after_time_stamp_and_console_prefix():
    for line in ('0.3 # bench: scenario=idle method=poll fds=10 wait_us=17.5 valid=1',
                 '[a:idle] # bench: scenario=idle method=poll fds=10 wait_us=17.5 valid=1'):
        f = bench.parse_line(line, 'a.idle')
        assert (f.scenario, f.method, f.source) == ('idle', 'poll', 'a.idle')
        assert f.values == {'fds': 10, 'wait_us': 17.5, 'valid': 1}
        assert f.valid and f.params == (10,)


@pytest.mark.parametrize('line', [
    '0.3 # select: not a bench line',
    '# bench: method=poll fds=10',              # no scenario
    '# bench: scenario=idle method=poll fds',   # a word that is not key=value
    'ok 1 poll',
])
def test_parse_line_rejects(line):
    assert bench.parse_line(line) is None


def test_parse_log_keeps_every_figure_in_order():
    fs = figures()
    assert [(f.scenario, f.method) for f in fs][:3] == [
        ('readiness', 'kevent_socket'), ('readiness', 'epoll_lt'), ('readiness', 'poll')]
    assert len(fs) == 8


def test_ratios_against_the_baseline_of_the_same_parameters():
    fs = {(f.scenario, f.method, f.params): f for f in figures()}
    assert fs['readiness', 'kevent_socket', (2000,)].ratio['rate'] == round(27784.0 / 30026.7, 4)
    assert fs['readiness', 'epoll_lt', (2000,)].ratio['rate'] == 1.0
    # A figure that failed its own check gets no ratio.
    assert fs['readiness', 'poll', (2000,)].ratio == {}
    assert fs['idle', 'poll', (10000,)].ratio['wait_us'] == round(646.11 / 14.36, 4)
    assert fs['idle', 'poll', (10,)].ratio['wait_us'] == round(17.62 / 15.56, 4)
    # Parameters are not ratios.
    assert 'fds' not in fs['idle', 'poll', (10,)].ratio


def test_no_ratio_without_a_baseline_in_the_same_run():
    fs = bench.add_ratios([bench.parse_line('# bench: scenario=idle method=poll fds=10 wait_us=2 valid=1', 'x'),
                           bench.parse_line('# bench: scenario=idle method=epoll_lt fds=10 wait_us=1 valid=1', 'y')])
    assert fs[0].ratio == {}


def test_json_golden():
    data = bench.to_json(figures(), {'boot_to_userspace_s': 0.3}, '2026-01-01 00:00 UTC')
    assert data['valid'] is False     # poll failed its check
    golden('bench.json', json.dumps(data, indent=2) + '\n')


def test_table_golden():
    golden('table.txt', bench.text_table(figures()))


def test_markdown_and_page_golden():
    template = '# P\n@DATE@\n\n@TABLE:readiness@\n\n@TABLE:timer@\n\n@UNKNOWN@\n'
    golden('page.md', bench.render_doc(template, figures(), {'DATE': 'today'}))


def test_svg_plots_golden_and_well_formed():
    plots = bench_svg.plots(figures())
    assert sorted(plots) == ['idle.svg', 'readiness-2000.svg']
    for name, svg in plots.items():
        ET.fromstring(svg)
        golden(name, svg)


def test_lab_facts():
    summary = {'duration_s': 61.2, 'hosts': {'a': {'userspace_s': 0.3}, 'b': {'userspace_s': 0.41},
                                            'c': {'userspace_s': None}}}
    assert bench.lab_facts(summary, {'warm_build_s': 2.5}) == {
        'bench_lab_s': 61.2, 'boot_to_userspace_s': 0.41, 'warm_build_s': 2.5}


def test_report_writes_every_output(tmp_path):
    results = tmp_path / 'lab'
    results.mkdir()
    (results / 'a.readiness.log').write_text(LOG.read_text())
    (results / 'a.console.log').write_text(LOG.read_text())     # consoles are not read
    (results / 'summary.json').write_text(json.dumps({'passed': 3, 'failed': 1, 'hosts': {}}))
    out, doc = tmp_path / 'bench', tmp_path / 'performance.md'
    rc = bench_report.write(results, out, doc, {'warm_build_s': 1.0})
    assert rc == 1            # a figure failed its check, and so did the lab
    data = json.loads((out / 'bench.json').read_text())
    assert len([f for s in data['scenarios'].values() for f in s['figures']]) == 8
    assert data['lab']['warm_build_s'] == 1.0
    assert (out / 'table.txt').exists() and (out / 'idle.svg').exists()
    assert '| kevent_socket |' in doc.read_text()
    # A timing that make bench did not take is said to be missing.
    assert '| not measured |' in doc.read_text()


def test_report_shows_the_cold_build(tmp_path):
    results = tmp_path / 'lab'
    results.mkdir()
    (results / 'summary.json').write_text(json.dumps({'passed': 1, 'failed': 0, 'hosts': {}}))
    doc = tmp_path / 'performance.md'
    bench_report.write(results, tmp_path / 'bench', doc,
                       {'warm_build_s': 0.1, 'cold_build_s': 437.4, 'cold_build_objects': 821})
    text = doc.read_text()
    assert '821 files compiled) | 7 min 17 s (437 s) |' in text


def test_author_comparison_uses_this_runs_2000_socket_ratio():
    text = bench.author_comparison(figures())
    assert '59 794' in text and '57 428' in text and '1.041' in text
    assert 'kevent/epoll = 0.925' in text        # 27784.0 / 30026.7


def test_author_comparison_without_figures_says_so():
    assert 'no checked 2000-socket figures' in bench.author_comparison([])


def test_web_figures_compare_with_nginx_of_the_same_run():
    log = '\n'.join([
        '1.0 # bench: scenario=web method=kevent file=small conns=10 requests=900 rps=900.0 '
        'p50_us=8000 p99_us=30000 valid=1',
        '2.0 # bench: scenario=web method=nginx file=small conns=10 requests=750 rps=750.0 '
        'p50_us=9000 p99_us=20000 valid=1',
        '3.0 # bench: scenario=web method=kevent file=small conns=100 requests=0 rps=0.0 '
        'p50_us=0 p99_us=0 valid=0'])
    figs = bench.add_ratios(bench.parse_log(log, 'b.web'))
    assert figs[0].ratio['rps'] == 1.2 and figs[1].ratio['rps'] == 1.0
    assert not figs[2].valid and figs[2].ratio == {}


def test_web_verdict_counts_only_server_bound_comparisons():
    def line(method, conns, rps, cpu, srv=0.97, cli=0.5, depth=16):
        return (f'# bench: scenario=web method={method} file=small conns={conns} depth={depth} '
                f'requests=1 rps={rps} server_cpu_us_per_req={cpu} server_busy={srv} '
                f'client_busy={cli} valid=1')
    log = '\n'.join([line('kevent', 100, 1600.0, 300.0), line('epoll', 100, 1000.0, 500.0),
                     line('uring', 100, 1700.0, 280.0), line('nginx', 100, 1000.0, 600.0, cli=0.9),
                     line('kevent', 100, 900.0, 700.0, cli=0.99, depth=1),
                     line('epoll', 100, 900.0, 700.0, cli=0.99, depth=1)])
    text = bench.web_verdict(bench.add_ratios(bench.parse_log(log, 'b.web')))
    assert '3 380 against epoll 2 200' in text
    assert ('- 100 connections, 64 B, 16 requests in flight per connection (server 97%–97% busy, '
            'client 50%–90%): kevent/epoll 1.60 (target 1.5: met); kevent/uring 0.94 (target 1.0: '
            'missed); kevent/nginx 1.60 (client-bound: does not count); server CPU per request '
            'kevent/epoll 0.60 (target 0.67: met).') in text
    assert ('- 100 connections, 64 B, no pipelining (server 97%–97% busy, client 99%–99%): '
            'kevent/epoll 1.00 (client-bound: does not count)') in text
    assert '- 1000 connections: no figures in this run.' in text


def test_server_bound_needs_both_busy_figures():
    f = bench.parse_line('# bench: scenario=web method=kevent server_busy=0.96 client_busy=0.8 valid=1')
    assert bench.server_bound(f)
    assert not bench.server_bound(bench.parse_line('# bench: scenario=web method=kevent server_busy=0.96 valid=1'))
    assert not bench.server_bound(bench.parse_line(
        '# bench: scenario=web method=kevent server_busy=0.94 client_busy=0.1 valid=1'))


def test_ring_verdict_states_each_target_met_or_missed():
    log = '\n'.join([
        '# bench: scenario=rr method=aio_ring side=caller size=64 conns=16 ops_s=6000.0 valid=1',
        '# bench: scenario=rr method=epoll_read side=caller size=64 conns=16 ops_s=3000.0 valid=1',
        '# bench: scenario=rr method=uring_recv side=caller size=64 conns=16 ops_s=5000.0 valid=1',
        '# bench: scenario=rr method=uring_multi side=caller size=64 conns=16 ops_s=6500.0 valid=1',
        '# bench: scenario=rr method=aio_ring side=server size=64 conns=16 calls_per_op=0.2 valid=1',
        '# bench: scenario=readiness method=kevent_ring fds=400 events=1000 bytes=1010 '
        'rate=900.0 calls_per_event=2.015 valid=1',
        '# bench: scenario=readiness method=epoll_lt fds=400 events=1000 bytes=1010 '
        'rate=1000.0 calls_per_event=2.04 valid=1',
        '# bench: scenario=bulk method=aio side=send bytes=1 mb_s=120.0 guest_cpu_ms_per_mb=4.0 valid=1',
        '# bench: scenario=bulk method=send_recv side=send bytes=1 mb_s=100.0 guest_cpu_ms_per_mb=10.0 valid=1',
        '# bench: scenario=bulk method=aio side=recv bytes=1 guest_cpu_ms_per_mb=9.0 valid=1',
        '# bench: scenario=bulk method=send_recv side=recv bytes=1 guest_cpu_ms_per_mb=10.0 valid=1',
    ])
    text = bench.ring_verdict(bench.add_ratios(bench.parse_log(log, 'x')))
    assert ('- request/response: aio_ring/epoll_read 2.00 (target 1.5: met), aio_ring/uring_multi 0.92 '
            '(target 1.0: missed), 0.200 system calls per request on the server (target 0.25: met).') in text
    assert ('- readiness, 400 pairs: kevent_ring/epoll_lt 0.90 (target 1.0: missed), 0.005 waiting '
            'calls per event (target 0.01: met).') in text
    assert ('- bulk TCP: aio/send_recv 1.20 in MB/s (target 1.0: met), 0.40 and 0.90 in guest CPU per MB '
            'on the sending and the receiving side (target 0.8: missed).') in text
    assert '- accept: kevent_accept/epoll - (target 1.0: not measured).' in text
