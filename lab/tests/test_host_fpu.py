"""host_fpu: a kernel that cannot run on this CPU is told before it boots,
in one line that names the sizes and the CPU."""

import os

import pytest

from kevent_lab import host_fpu
from test_kernel_image import elf

AMX = host_fpu.CpuName('Intel(R) Xeon(R) Platinum 8480+', frozenset({'avx512f', 'amx_tile'}))


def test_a_kernel_of_the_series_handles_any_size(tmp_path):
    k = elf(tmp_path / 'linux', b'\0start_kernel\0host_fp_size\0')
    assert host_fpu.kernel_fp_limit(k) is None
    assert host_fpu.verdict(11008, host_fpu.kernel_fp_limit(k), k, AMX) is None


def test_a_kernel_without_patch_0033_is_refused_where_the_area_is_larger(tmp_path):
    k = elf(tmp_path / 'linux', b'\0start_kernel\0host_fp_size_x\0')
    limit = host_fpu.kernel_fp_limit(k)
    assert limit == host_fpu.FIXED_FP_SIZE
    line = host_fpu.verdict(11008, limit, k, AMX)
    assert '\n' not in line
    for part in ('11008 bytes', f'at most {host_fpu.FIXED_FP_SIZE}', 'Platinum 8480+',
                 'avx512f, amx_tile', 'patch 0033', 'make kernel'):
        assert part in line
    # The same kernel on a host whose area fits: no complaint.
    assert host_fpu.verdict(832, limit, k, AMX) is None
    assert host_fpu.verdict(None, limit, k, AMX) is None


def test_check_raises_the_verdict(tmp_path, monkeypatch):
    k = elf(tmp_path / 'linux', b'\0start_kernel\0')
    monkeypatch.setattr(host_fpu, 'host_xsave_size', lambda: 11008)
    monkeypatch.setattr(host_fpu.CpuName, 'read', classmethod(lambda cls: AMX))
    with pytest.raises(RuntimeError, match='XSAVE area is 11008 bytes'):
        host_fpu.check(k)
    monkeypatch.setattr(host_fpu, 'host_xsave_size', lambda: 832)
    host_fpu.check(k)


def test_no_file_or_no_elf_is_left_to_the_boot(tmp_path):
    (tmp_path / 'script').write_text('#!/bin/sh\n')
    assert host_fpu.kernel_fp_limit(tmp_path / 'missing') is None
    assert host_fpu.kernel_fp_limit(tmp_path / 'script') is None


def test_cpu_name_reads_model_and_flags(tmp_path):
    info = tmp_path / 'cpuinfo'
    info.write_text('processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2\n')
    cpu = host_fpu.CpuName.read(info)
    assert cpu.model == 'Some CPU' and cpu.features() == 'no AVX-512 or AMX'
    assert host_fpu.CpuName.read(tmp_path / 'none').model == 'an unknown CPU'


@pytest.mark.skipif(os.uname().machine != 'x86_64', reason='ptrace XSAVE probe is x86_64 only')
def test_this_machine_reports_its_xsave_area():
    size = host_fpu.host_xsave_size()
    assert size is not None and size >= 512
    flags = host_fpu.CpuName.read().flags
    if 'amx_tile' in flags:
        assert size > 8192
    elif 'avx512f' in flags:
        assert size > 2048
    # Its stopped child is reaped: none is left behind.
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
