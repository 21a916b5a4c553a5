"""Commas, colons and spaces in TMPDIR or in the checkout's path must not
reach UML's command line, which splits its options at them."""
import os
import shutil
import tempfile
from pathlib import Path

import pytest


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


@pytest.mark.parametrize('sep', [',', ':', ' ', '='])
def test_every_path_on_umls_command_line_survives_a_separator(tmp_path, sep):
    """initrd= and LAB_DIR= took the checkout's paths as they were: a space
    cut the kernel's command line, a comma or colon UML's options; hostfs=
    too must reach the host's own directory whole."""
    h = topology.parse('host a disk=64M\nlink a eth0 n 10.42.0.1/24\n').hosts['a']
    top = tmp_path / f'check{sep}out'
    run_dir = top / 'lab'
    (run_dir / 'a').mkdir(parents=True)
    (run_dir / 'a' / 'disk.img').write_bytes(b'disk')
    rootfs = top / 'rootfs.cpio'
    rootfs.write_bytes(b'cpio')
    private = uml_paths.private_dir('kevent-lab-t-')
    try:
        argv = run.uml_argv(Path('/k'), rootfs, h, 'u', private / 'uml', {'n': private / 'n'}, run_dir)
        opts = dict(a.split('=', 1) for a in argv[1:] if '=' in a)
        for key in ('initrd', 'LAB_DIR', 'hostfs', 'ubd0'):
            assert uml_paths.usable(opts[key]), (key, opts[key])
        assert Path(opts['initrd']).read_bytes() == b'cpio'
        assert Path(opts['hostfs']).resolve() == (run_dir / 'a').resolve()
        assert Path(opts['LAB_DIR']).resolve() == run_dir.resolve()
        assert all(' ' not in a for a in argv)
    finally:
        shutil.rmtree(private)
