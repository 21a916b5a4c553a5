"""The files a run writes into its results directory, and only those.

`--results DIR` may name any directory (`.`, a home, a folder of notes).
A run used to clear it of every `HOST.*` file before starting, so
`--results .` unlinked the user's own files that happened to begin with a
host's name. Now each run first writes down, in DIR/.lab-results, the names
of the files it is about to write; the next run removes exactly the files
that list names (those of an interrupted run included) and nothing else.
"""

from __future__ import annotations

from pathlib import Path

from .topology import Topology

MANIFEST = '.lab-results'


def names(topo: Topology) -> list[str]:
    """Every file a run of @topo may write into its results directory."""
    out = ['summary.json', 'junit.xml', 'expect.json']
    for host in topo.hosts.values():
        out += [f'{host.name}.console.log', f'{host.name}.ktap']
        for run in host.runs:
            out += [f'{host.name}.{run.key}.log', f'{host.name}.{run.key}.trace']
    return out


def _listed(results: Path) -> list[str]:
    try:
        text = (results / MANIFEST).read_text()
    except OSError:
        return []
    # Plain names only: a list edited by hand cannot reach out of the directory.
    return [n for n in text.split('\n') if n and '/' not in n and n not in ('.', '..')]


def claim(results: Path, topo: Topology) -> None:
    """Removes what the previous run listed here, then lists this run's files."""
    results.mkdir(parents=True, exist_ok=True)
    for name in _listed(results):
        path = results / name
        if path.is_file() or path.is_symlink():
            path.unlink()
    (results / MANIFEST).write_text(''.join(n + '\n' for n in names(topo)))
