"""A run removes from its results directory only what an earlier run wrote."""
from pathlib import Path

import pytest

from kevent_lab import run, topology


@pytest.fixture
def fake_boot(monkeypatch, tmp_path):
    """run_lab up to booting: a kernel and a rootfs that exist, no hosts booted."""
    monkeypatch.setattr(run, '_boot_collect', lambda *a, **k: [])
    (tmp_path / 'linux').write_bytes(b'')
    (tmp_path / 'rootfs.cpio').write_bytes(b'')
    return tmp_path / 'linux', tmp_path / 'rootfs.cpio'


def test_results_dot_keeps_the_users_files(tmp_path, fake_boot):
    """`--results .` unlinked every HOST.* file of the current directory."""
    kernel, rootfs = fake_boot
    here = tmp_path / 'here'
    here.mkdir()
    (here / 'a.notes').write_text('mine')
    (here / 'a.console.log').write_text('also mine: no run listed it')
    topo = topology.parse('host a\nrun a s -- p\n', name='t')
    run.run_lab(topo, kernel, rootfs, here, tmp_path / 'work', say=lambda m: None)
    assert (here / 'a.notes').read_text() == 'mine'
    assert (here / 'a.console.log').exists()
    # What a run listed, the next run removes (an interrupted run's too).
    (here / 'a.s.log').write_text('written by the run')
    run.run_lab(topo, kernel, rootfs, here, tmp_path / 'work', say=lambda m: None)
    assert not (here / 'a.s.log').exists() and (here / 'a.notes').exists()


def test_a_lab_without_run_lines_is_refused_before_anything_starts(tmp_path, fake_boot):
    kernel, rootfs = fake_boot
    topo = topology.parse('host a\nhost b\n', name='t')
    with pytest.raises(ValueError, match='no run lines: nothing to run'):
        run.run_lab(topo, kernel, rootfs, tmp_path / 'r', tmp_path / 'work', say=lambda m: None)
    assert not (tmp_path / 'work').exists()
