"""Commas, colons and spaces in TMPDIR or in the checkout's path must not
reach UML's command line, which splits its options at them."""
import os
import shutil
import tempfile
from pathlib import Path

from kevent_lab import run, topology, uml_paths


def test_switch_sockets_avoid_a_tmpdir_with_separators(tmp_path, monkeypatch):
    bad = tmp_path / 'a,b:c'
    bad.mkdir()
    monkeypatch.setenv('TMPDIR', str(bad))
    monkeypatch.setattr(tempfile, 'tempdir', None)      # gettempdir() reads TMPDIR again
    d = uml_paths.private_dir('kevent-lab-x-')
    try:
        assert uml_paths.usable(d) and d.is_dir()
        assert oct(d.stat().st_mode & 0o777) == '0o700'
    finally:
        shutil.rmtree(d)


def test_disk_in_a_checkout_with_separators_goes_through_a_link(tmp_path):
    h = topology.parse('host a disk=64M\nlink a eth0 n 10.42.0.1/24\n').hosts['a']
    run_dir = tmp_path / 'check,out:x' / 'lab'
    (run_dir / 'a').mkdir(parents=True)
    (run_dir / 'a' / 'disk.img').write_bytes(b'disk')
    private = uml_paths.private_dir('kevent-lab-t-')
    try:
        argv = run.uml_argv(Path('/k'), Path('/r'), h, 'u', private / 'uml', {'n': private / 'n'}, run_dir)
        ubd = [a for a in argv if a.startswith('ubd0=')][0][len('ubd0='):]
        assert uml_paths.usable(ubd)
        assert Path(ubd).read_bytes() == b'disk'
    finally:
        shutil.rmtree(private)
    # A path UML takes whole is used as it is.
    plain = run.uml_argv(Path('/k'), Path('/r'), h, 'u', Path('/t/uml'), {'n': Path('/t/n')}, Path('/lab'))
    assert 'ubd0=/lab/a/disk.img' in plain
