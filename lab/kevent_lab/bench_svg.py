"""Hand-written SVG plots of the benchmark figures (no plotting library).

Two kinds: horizontal bars (one figure per method) and lines on log-log
axes (a figure against a parameter, one line per method). Output is plain
text and deterministic, so golden files can hold it.
"""

from __future__ import annotations

import math
from html import escape

from .bench import SCENARIOS, Figure

# A palette that survives grey-scale printing and colour blindness (Okabe-Ito).
COLOURS = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000']
FONT = 'font-family="sans-serif" font-size="12"'


def _num(v: float) -> str:
    if v >= 1000:
        return f'{v:,.0f}'.replace(',', ' ')
    return f'{v:.3g}'


def bars(title: str, unit: str, items: list[tuple[str, float, bool]]) -> str:
    """One bar per (label, value, highlighted); kevent's bars are highlighted."""
    width, left, bar_h, gap, top = 640, 150, 22, 8, 40
    plot = width - left - 90
    height = top + len(items) * (bar_h + gap) + 30
    top_v = max((v for _, v, _ in items), default=1) or 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width // 2}" y="20" text-anchor="middle" {FONT} font-weight="bold">'
           f'{escape(title)}</text>',
           f'<text x="{width // 2}" y="{height - 8}" text-anchor="middle" {FONT}>{escape(unit)}</text>']
    for i, (label, value, hot) in enumerate(items):
        y = top + i * (bar_h + gap)
        w = round(plot * value / top_v, 1)
        colour = COLOURS[0] if hot else '#999999'
        out.append(f'<text x="{left - 6}" y="{y + bar_h - 6}" text-anchor="end" {FONT}>'
                   f'{escape(label)}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{w}" height="{bar_h}" fill="{colour}"/>')
        out.append(f'<text x="{left + w + 4}" y="{y + bar_h - 6}" {FONT}>{_num(value)}</text>')
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def _ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten spanning lo..hi, with 2 and 5 between them when there is room."""
    out = []
    decades = math.log10(hi / lo)
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5) if decades < 3 else (1,):
            v = m * 10 ** e
            if lo <= v <= hi:
                out.append(v)
    return out


def lines(title: str, xlabel: str, ylabel: str, series: dict[str, list[tuple[float, float]]]) -> str:
    """Log-log lines, one per method, with a legend."""
    width, height = 640, 400
    left, right, top, bottom = 70, 160, 40, 50
    pts = [p for s in series.values() for p in s if p[0] > 0 and p[1] > 0]
    if not pts:
        pts = [(1, 1), (10, 10)]
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    x0, x1 = 10 ** math.floor(math.log10(x0)), 10 ** math.ceil(math.log10(x1))
    y0, y1 = 10 ** math.floor(math.log10(y0)), 10 ** math.ceil(math.log10(y1))
    if x1 == x0:
        x1 = x0 * 10
    if y1 == y0:
        y1 = y0 * 10

    def sx(x: float) -> float:
        return round(left + (width - left - right) * math.log10(x / x0) / math.log10(x1 / x0), 1)

    def sy(y: float) -> float:
        return round(height - bottom - (height - top - bottom) * math.log10(y / y0) / math.log10(y1 / y0), 1)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{(width - right + left) // 2}" y="20" text-anchor="middle" {FONT} '
           f'font-weight="bold">{escape(title)}</text>']
    for x in _ticks(x0, x1):
        out.append(f'<line x1="{sx(x)}" y1="{top}" x2="{sx(x)}" y2="{height - bottom}" stroke="#dddddd"/>')
        out.append(f'<text x="{sx(x)}" y="{height - bottom + 16}" text-anchor="middle" {FONT}>{_num(x)}</text>')
    for y in _ticks(y0, y1):
        out.append(f'<line x1="{left}" y1="{sy(y)}" x2="{width - right}" y2="{sy(y)}" stroke="#dddddd"/>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4}" text-anchor="end" {FONT}>{_num(y)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" '
               f'height="{height - top - bottom}" fill="none" stroke="black"/>')
    out.append(f'<text x="{(width - right + left) // 2}" y="{height - 12}" text-anchor="middle" {FONT}>'
               f'{escape(xlabel)}</text>')
    out.append(f'<text x="16" y="{(height - bottom + top) // 2}" text-anchor="middle" {FONT} '
               f'transform="rotate(-90 16 {(height - bottom + top) // 2})">{escape(ylabel)}</text>')
    for i, (name, points) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        good = [p for p in sorted(points) if p[0] > 0 and p[1] > 0]
        if good:
            path = ' '.join(f'{sx(x)},{sy(y)}' for x, y in good)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for x, y in good:
                out.append(f'<circle cx="{sx(x)}" cy="{sy(y)}" r="3" fill="{colour}"/>')
        ly = top + 10 + i * 18
        out.append(f'<line x1="{width - right + 10}" y1="{ly}" x2="{width - right + 30}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 36}" y="{ly + 4}" {FONT}>{escape(name)}</text>')
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def plots(figures: list[Figure]) -> dict[str, str]:
    """Every plot the figures allow: file name -> SVG text."""
    out: dict[str, str] = {}
    for name, sc in SCENARIOS.items():
        mine = [f for f in figures if f.scenario == name and f.valid and f.get(sc.metric) is not None]
        if not mine:
            continue
        if name == 'idle':
            series: dict[str, list[tuple[float, float]]] = {}
            for f in mine:
                series.setdefault(f.method, []).append((f.get('fds'), f.get(sc.metric)))
            out['idle.svg'] = lines('Cost of one wait against idle descriptors',
                                    'descriptors watched (idle)', 'µs per wait (log)', series)
            continue
        # One bar chart per parameter set (e.g. readiness at 2000 and at 400 pairs).
        for params in dict.fromkeys(f.params for f in mine):
            group = [f for f in mine if f.params == params]
            suffix = '-'.join(str(p) for p in params)
            label = ', '.join(f'{k}={p}' for k, p in zip(sc.keys, params))
            out[f'{name}-{suffix}.svg' if suffix else f'{name}.svg'] = bars(
                f'{sc.title} ({label})' if label else sc.title, sc.unit,
                [(f.method, f.get(sc.metric), f.method.startswith(('kevent', 'aio'))) for f in group])
    return out
