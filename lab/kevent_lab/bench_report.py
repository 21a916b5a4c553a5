"""Writes a benchmark run's outputs: bench.json, table.txt, the plots, the page."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from . import bench, bench_svg

TEMPLATE = Path(__file__).resolve().parent / 'performance.md.in'


def machine() -> str:
    """What ran the guests: CPU model and count, as /proc/cpuinfo says."""
    model = ''
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return f'{model or platform.machine()}, {os.cpu_count()} CPU(s), Linux {platform.release()}'


def _seconds(v) -> str:
    return f'{v:.1f} s' if isinstance(v, (int, float)) else 'not measured'


def _minutes(v) -> str:
    """A long time as people read it: '7 min 12 s (432 s)'."""
    if not isinstance(v, (int, float)):
        return 'not measured'
    return f'{int(v) // 60} min {int(v) % 60} s ({v:.0f} s)'


def _count(v) -> str:
    return f'{v:.0f}' if isinstance(v, (int, float)) else 'an unknown number of'


def write(results: Path, out: Path, doc: Path | None, timings: dict[str, float]) -> int:
    """Reads @results (a lab's results directory); 0 if every figure was checked."""
    figures = bench.add_ratios(bench.collect(results))
    summary_path = results / 'summary.json'
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    lab = bench.lab_facts(summary, timings)
    lab['lab_passed'] = summary.get('passed')
    lab['lab_failed'] = summary.get('failed')
    when = time.strftime('%Y-%m-%d %H:%M %Z')
    data = bench.to_json(figures, lab, when)
    data['machine'] = machine()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob('*.svg'):
        old.unlink()
    (out / 'bench.json').write_text(json.dumps(data, indent=2) + '\n')
    table = bench.text_table(figures)
    (out / 'table.txt').write_text(table)
    plots = bench_svg.plots(figures)
    for name, svg in plots.items():
        (out / name).write_text(svg)
    if doc:
        how = ('by `make bench`' if 'warm_build_s' in timings else
               'by `labctl run --lab bench` and `labctl bench` (what `make bench` runs, '
               'without its timings of the lab itself)')
        facts = {'DATE': when, 'MACHINE': data['machine'], 'HOW': how,
                 'WARM_BUILD': _seconds(lab.get('warm_build_s')),
                 'COLD_BUILD': _minutes(lab.get('cold_build_s')),
                 'COLD_OBJECTS': _count(lab.get('cold_build_objects')),
                 'REBUILD': _seconds(lab.get('rebuild_one_file_s')),
                 'BOOT': _seconds(lab.get('boot_to_userspace_s')),
                 'LAB_RUN': _seconds(lab.get('lab_run_s')),
                 'BENCH_LAB': _seconds(lab.get('bench_lab_s')),
                 'CHECKED': 'every figure was checked' if data['valid'] else
                            '**some figures failed their own checks (marked NO)**',
                 'AUTHOR': bench.author_comparison(figures),
                 'WEB_VERDICT': bench.web_verdict(figures),
                 'RING_VERDICT': bench.ring_verdict(figures),
                 'PLOTS': ', '.join(f'`{n}`' for n in sorted(plots)) or 'none'}
        doc.write_text(bench.render_doc(TEMPLATE.read_text(), figures, facts))
    print(table, end='')
    print(f'bench: {len(figures)} figures, {len(plots)} plots in {out}' + (f'; page {doc}' if doc else ''))
    bad = [f'{f.scenario}/{f.method} ({f.source})' for f in figures if not f.valid]
    if bad:
        print('bench: figures that failed their own checks: ' + ', '.join(bad))
    if not figures:
        print(f'bench: no figures found in {results}')
    return 0 if data['valid'] and not summary.get('failed') else 1
