"""Each run has a results folder of its own; --results DIR holds stable names
for the latest run's files, and only for files that run wrote."""
import json
from pathlib import Path

import pytest

from kevent_lab import results_dir, run, topology

TOPO = topology.parse('host a\nrun a s -- p\n', name='t')


def a_run(results: Path, files=('summary.json', 'a.console.log'), topo=TOPO, stamp=None,
          monkeypatch=None) -> results_dir.RunFolder:
    folder = results_dir.RunFolder(results, topo.name)
    for name in files:
        (folder.path / name).write_text(f'{name} of {folder.path.name}')
    folder.publish(topo)
    return folder


def test_each_run_has_its_folder_and_dir_names_the_latest(tmp_path):
    first = a_run(tmp_path)
    second = a_run(tmp_path)
    assert first.path != second.path and first.path.is_dir() and second.path.is_dir()
    assert (tmp_path / 'summary.json').read_text() == f'summary.json of {second.path.name}'
    assert (tmp_path / 'latest').resolve() == second.path.resolve()
    assert (first.path / 'summary.json').exists()           # the earlier run keeps its own


def test_an_interrupted_run_leaves_no_earlier_summary(tmp_path):
    """After a Ctrl-C'd run, summary.json described an earlier run (of a lab deleted since)."""
    a_run(tmp_path)
    interrupted = a_run(tmp_path, files=('a.console.log',))
    assert not (tmp_path / 'summary.json').exists()
    assert (tmp_path / 'a.console.log').read_text() == f'a.console.log of {interrupted.path.name}'
    assert (tmp_path / 'latest').resolve() == interrupted.path.resolve()


def test_files_of_another_lab_do_not_stay_beside(tmp_path):
    a_run(tmp_path)
    other = topology.parse('host b\nrun b s -- p\n', name='u')
    a_run(tmp_path, files=('summary.json', 'b.console.log'), topo=other)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith('.')) == \
        ['b.console.log', 'latest', 'runs', 'summary.json']


def test_results_dot_keeps_the_users_files(tmp_path):
    """`--results .` used to unlink every HOST.* file of the current directory."""
    (tmp_path / 'a.notes').write_text('mine')
    (tmp_path / 'a.console.log').write_text('also mine')
    folder = a_run(tmp_path)
    a_run(tmp_path)
    assert (tmp_path / 'a.notes').read_text() == 'mine'
    assert (tmp_path / 'a.console.log').read_text() == 'also mine'
    assert folder.skipped == ['a.console.log']
    # A hand-edited list cannot make a run remove anything outside.
    (tmp_path / 'x').mkdir()
    (tmp_path / 'x' / 'keep').write_text('k')
    (tmp_path / '.lab-results').write_text('../outside\nx/keep\n..\n')
    a_run(tmp_path)
    assert (tmp_path / 'x' / 'keep').exists()


def test_a_listed_plain_file_is_never_removed(tmp_path):
    """DIR/.lab-results naming a plain file of the user's (edited by hand, or
    left by an old checkout) made the next run delete it: only links into
    runs/ are ever removed."""
    (tmp_path / 'mynotes').write_text('mine')
    (tmp_path / 'summary.json').write_text('mine too')
    (tmp_path / '.lab-results').write_text('mynotes\nsummary.json\n')
    folder = a_run(tmp_path)
    assert (tmp_path / 'mynotes').read_text() == 'mine'
    assert (tmp_path / 'summary.json').read_text() == 'mine too'
    assert folder.skipped == ['summary.json']


OTHER = topology.parse('host b\nrun b s -- p\n', name='u')


def _names(results: Path) -> dict[str, str]:
    """DIR's stable names and the run folder each leads into."""
    return {p.name: p.readlink().parts[1] for p in results.iterdir() if p.is_symlink()}


@pytest.mark.parametrize('last', ['x', 'y'])
def test_two_runs_sharing_dir_leave_the_names_of_one(tmp_path, last):
    """Runs of labs x and y into one DIR at once: summary.json and latest
    named x while b.console.log named y, and that stray link was in no list,
    so it stayed for good. Whichever run ends last, DIR names its files only."""
    x = results_dir.RunFolder(tmp_path, TOPO.name)
    y = results_dir.RunFolder(tmp_path, OTHER.name)
    for folder, files in ((x, ('summary.json', 'a.console.log')), (y, ('summary.json', 'b.console.log'))):
        for name in files:
            (folder.path / name).write_text(name)
    order = [(y, OTHER), (x, TOPO)] if last == 'x' else [(x, TOPO), (y, OTHER)]
    for folder, topo in order:
        folder.publish(topo)
    winner = order[-1][0].path.name
    names = _names(tmp_path)
    assert set(names.values()) == {winner}, names
    assert sorted(names) == sorted(['latest', 'summary.json',
                                    'a.console.log' if last == 'x' else 'b.console.log'])
    # And the next run of either removes every one of them.
    a_run(tmp_path, files=('summary.json',))
    assert sorted(_names(tmp_path)) == ['latest', 'summary.json']


def test_the_ten_newest_runs_are_kept(tmp_path):
    folders = [a_run(tmp_path) for _ in range(12)]
    kept = sorted(p.name for p in (tmp_path / 'runs').iterdir())
    assert kept == sorted(f.path.name for f in folders[-10:])
    (tmp_path / 'runs' / 'notes').mkdir()                    # not a run folder: never removed
    a_run(tmp_path)
    assert (tmp_path / 'runs' / 'notes').is_dir()


def test_a_lab_without_run_lines_is_refused_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(run, '_boot_collect', lambda *a, **k: [])
    (tmp_path / 'linux').write_bytes(b'')
    (tmp_path / 'rootfs.cpio').write_bytes(b'')
    topo = topology.parse('host a\nhost b\n', name='t')
    with pytest.raises(ValueError, match='no run lines: nothing to run'):
        run.run_lab(topo, tmp_path / 'linux', tmp_path / 'rootfs.cpio', tmp_path / 'r',
                    tmp_path / 'work', say=lambda m: None)
    assert not (tmp_path / 'work').exists()
