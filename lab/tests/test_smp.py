"""The multiprocessor check's parts in the driver (make smp-check): x86_64
kernels told from UML ones, QEMU's command, what such a host cannot have,
smp= in lab.conf, and KCSAN's reports of Linux's own races kept apart."""

from pathlib import Path

import pytest

from kevent_lab import kcsan, kernel_image, qemu_host, run, topology
from kevent_lab.topology import Host

GOLDEN = Path(__file__).parent / 'golden'


def bzimage(path: Path) -> Path:
    data = bytearray(0x400)
    data[0x202:0x206] = b'HdrS'
    path.write_bytes(bytes(data))
    return path


def test_a_bzimage_is_an_x86_image_and_an_elf_is_not(tmp_path):
    assert kernel_image.is_x86_image(bzimage(tmp_path / 'bzImage-smp'))
    (tmp_path / 'linux').write_bytes(b'\x7fELF\x02\x01' + bytes(0x400))
    assert not kernel_image.is_x86_image(tmp_path / 'linux')
    assert not kernel_image.is_x86_image(tmp_path / 'missing')
    # And it is no debug kernel of UML's kind: mem= stays lab.conf's.
    assert kernel_image.mem_extra(tmp_path / 'bzImage-smp') == 0


def test_qemu_boots_the_host_with_its_cpus_its_memory_and_its_directory(tmp_path):
    host = Host('s', mem='1G', smp=4)
    argv = qemu_host.argv(Path('/k/bzImage'), Path('/r/rootfs.cpio'), host, tmp_path / 's')
    assert argv[0] == 'qemu-system-x86_64'
    assert argv[argv.index('-smp') + 1] == '4' and argv[argv.index('-m') + 1] == '1G'
    assert '-no-reboot' in argv and argv[argv.index('-serial') + 1] == 'stdio'
    append = argv[argv.index('-append') + 1].split()
    assert {'console=ttyS0', 'panic=-1', 'LAB_HOST=s', 'LAB_END=reboot', 'LAB_9P=lab'} <= set(append)
    share = argv[argv.index('-virtfs') + 1]
    assert f'path={tmp_path / "s"},' in share and 'security_model=mapped-xattr' in share
    # A boot without a lab (KUnit) shares nothing.
    argv = qemu_host.argv(Path('/k/bzImage'), Path('/r/rootfs.cpio'), host, None)
    assert '-virtfs' not in argv and 'LAB_9P' not in ' '.join(argv)


@pytest.mark.parametrize('line, what', [('link s eth0 net0 10.42.0.1/24', 'links'),
                                        ('host t disk=64M', 'a disk'), ('host t tools', 'tools')])
def test_an_x86_host_has_no_network_disk_or_tools(monkeypatch, line, what):
    monkeypatch.setattr(qemu_host.shutil, 'which', lambda name: '/usr/bin/' + name)
    topo = topology.parse(f'host s smp=2\n{line}\nrun s x -- p\n' + ('run t x -- p\n' if 'host t' in line else ''))
    with pytest.raises(ValueError, match=what):
        qemu_host.check(topo)
    qemu_host.check(topology.parse('host s smp=4 mem=1G\nrun s x -- p\n'))


def test_smp_is_a_number_of_cpus():
    assert topology.parse('host s smp=4\nrun s x -- p\n').hosts['s'].smp == 4
    assert topology.parse('host s\nrun s x -- p\n').hosts['s'].smp == 1
    for bad in ('0', '9', 'four'):
        with pytest.raises(topology.TopologyError, match='smp must be'):
            topology.parse(f'host s smp={bad}\nrun s x -- p\n')


def test_the_smp_labs_parse():
    labs = Path(__file__).resolve().parents[1] / 'labs'
    for name in ('smp', 'smp-proof'):
        topo = topology.load(labs / name / 'lab.conf')
        assert all(h.smp == 4 and not h.links for h in topo.hosts.values())


def test_kcsan_reports_of_linux_are_listed_and_those_of_kevent_kept():
    text = (GOLDEN / 'console_kcsan.log').read_text()
    checked, elsewhere = kcsan.split(text)
    assert elsewhere == ['data-race in __filemap_add_folio / filemap_map_pages',
                         'assert: race in test_kernel_assert_writer / test_kernel_write_nochange']
    assert '__filemap_add_folio' not in checked
    assert 'BUG: KCSAN: data-race in kevent_ready / kevent_wait' in checked
    # The rest of the console is untouched, and the kevent one still fails.
    assert '[s:race]#lab-exit status=0' in checked and 'lab: powering off' in checked
    assert 'BUG: KCSAN: data-race in kevent_ready' in run.console_trouble(checked)


def test_a_console_without_kcsan_is_unchanged():
    text = (GOLDEN / 'console_kunit_pass.log').read_text()
    checked, elsewhere = kcsan.split(text)
    assert elsewhere == [] and checked.splitlines() == text.splitlines()


def test_a_foreign_kcsan_report_alone_leaves_the_console_clean(tmp_path):
    lines = (GOLDEN / 'console_kcsan.log').read_text().splitlines()
    console = tmp_path / 's.console.log'
    console.write_text('\n'.join(lines[:24] + lines[-1:]) + '\n')
    hr = run.HostRun(Host('s'), console, userspace_s=1.0, ended_s=2.0)
    result = run.collect_host(hr, tmp_path)
    by_name = {t.name: t for t in result.tests}
    assert by_name['console_clean'].status == 'pass'
    assert by_name['kcsan_reports_outside_kevent'].status == 'pass'
    assert '__filemap_add_folio' in by_name['kcsan_reports_outside_kevent'].message
