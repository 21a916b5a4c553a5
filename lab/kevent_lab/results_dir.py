"""Where a run's results go: a folder of its own, and stable names for the latest.

`--results DIR` is where a user looks (build/results/summary.json and the
other paths of DESIGN.md). Runs used to write straight into it, so the
files of several runs ended up side by side, and after a Ctrl-C'd run
summary.json still described an earlier run, of a lab deleted since.

Now each run writes into a folder of its own, DIR/runs/STAMP-LAB, and when
it ends (however it ends) DIR gets the stable names: DIR/latest, a link to
that folder, and one link per file the run wrote (DIR/summary.json ->
runs/STAMP-LAB/summary.json, ...). A file the run did not write gets no link,
so nothing in DIR can describe another run. The links of the previous run
are removed as the next one starts. The ten newest run folders are kept.

Two runs may share DIR at once (two labs into build/results): each publishes
under a lock on DIR/.lab-results.lock and first removes every link into
runs/, whoever made it, so DIR always names the files of exactly one run,
the one that ended last.

DIR may be any directory (`.`, a home, a folder of notes): only links this
module made (links into DIR/runs) are ever removed, never a plain file; a
file of the user's with the name of a result is left alone (the run says
so). Which links are a run's is read from DIR itself, not from a list: the
DIR/.lab-results list that earlier versions wrote is removed when found.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import shutil
import time
from pathlib import Path

from .topology import Topology

OLD_LIST = '.lab-results'      # written by earlier versions; nothing reads it
LOCK = '.lab-results.lock'
RUNS = 'runs'
LATEST = 'latest'
KEEP = 10
RUN_NAME = re.compile(r'\d{8}-\d{6}-[a-z0-9_-]+(-\d+)?')


def names(topo: Topology) -> list[str]:
    """Every file a run of @topo may write into its results folder."""
    out = ['summary.json', 'junit.xml', 'expect.json']
    for host in topo.hosts.values():
        out += [f'{host.name}.console.log', f'{host.name}.ktap']
        for run in host.runs:
            out += [f'{host.name}.{run.key}.log', f'{host.name}.{run.key}.trace']
    out += [f'{seg}.pcap' for seg in topo.segments]
    return out


def _ours(path: Path) -> bool:
    """True for a link this module made: one into DIR/runs."""
    if not path.is_symlink():
        return False
    target = path.readlink()
    return not target.is_absolute() and target.parts[:1] == (RUNS,)


class RunFolder:
    """The results folder of one run of a lab, under @results."""

    def __init__(self, results: Path, lab: str):
        self.results = results
        self.lab = lab
        (results / RUNS).mkdir(parents=True, exist_ok=True)
        stamp = time.strftime('%Y%m%d-%H%M%S')
        # Never a name an earlier (since pruned) run of this second had:
        # the newest run must sort last.
        base = f'{stamp}-{lab}'
        taken = [p.name[len(base):] for p in (results / RUNS).iterdir() if p.name.startswith(base)]
        first = max((int(t[1:]) + 1 for t in taken if re.fullmatch(r'-\d+', t)),
                    default=1 if '' in taken else 0)
        for n in range(first, first + 1000):
            name = f'{stamp}-{lab}' + (f'-{n}' if n else '')
            try:
                (results / RUNS / name).mkdir()
                break
            except FileExistsError:
                continue
        else:
            raise RuntimeError(f'{results / RUNS}: no free name for a run folder')
        self.path = results / RUNS / name
        self.skipped: list[str] = []
        self._unlink_previous()

    @contextlib.contextmanager
    def _locked(self):
        """DIR to ourselves while its names change (another run may share it)."""
        with open(self.results / LOCK, 'a') as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def _unlink_ours(self) -> None:
        """Removes every link into runs/ of DIR: the previous run's, and what a
        run that shared DIR made since."""
        for path in self.results.iterdir():
            if _ours(path):
                path.unlink(missing_ok=True)
        (self.results / OLD_LIST).unlink(missing_ok=True)

    def _unlink_previous(self) -> None:
        with self._locked():
            self._unlink_ours()

    def publish(self, topo: Topology) -> list[str]:
        """Gives the files this run wrote their stable names in DIR; returns them."""
        with self._locked():
            self._unlink_ours()
            made = self._link(topo)
        self.prune()
        return made

    def _link(self, topo: Topology) -> list[str]:
        made = []
        for name in names(topo):
            if not (self.path / name).is_file():
                continue
            link = self.results / name
            if link.exists() or link.is_symlink():
                if not _ours(link):
                    self.skipped.append(name)       # the user's own file
                    continue
                link.unlink()
            link.symlink_to(Path(RUNS) / self.path.name / name)
            made.append(name)
        latest = self.results / LATEST
        if not latest.exists() and not latest.is_symlink():
            latest.symlink_to(Path(RUNS) / self.path.name)
        return made

    def prune(self, keep: int = KEEP) -> None:
        """Removes all but the @keep newest run folders (never this run's)."""
        runs = sorted((p for p in (self.results / RUNS).iterdir()
                       if p.is_dir() and not p.is_symlink() and RUN_NAME.fullmatch(p.name)),
                      # STAMP-LAB, then STAMP-LAB-1, ... -10 within one second.
                      key=lambda p: (p.name[:15], len(p.name), p.name))
        for old in runs[:-keep] if keep else runs:
            if old != self.path:
                shutil.rmtree(old, ignore_errors=True)
