"""kernel_image: a debug (KASAN) kernel is told by its symbols, and its
hosts get more memory than lab.conf's mem=."""

import struct
from pathlib import Path

from kevent_lab import kernel_image, run
from kevent_lab.topology import Host


def elf(path: Path, strtab: bytes) -> Path:
    """A minimal 64-bit little-endian ELF: a null section, .shstrtab, .strtab."""
    names = b'\0.shstrtab\0.strtab\0'
    data_off = 64
    shoff = data_off + len(names) + len(strtab)
    header = bytearray(64)
    header[:6] = b'\x7fELF\x02\x01'
    struct.pack_into('<Q', header, 0x28, shoff)
    struct.pack_into('<HHH', header, 0x3a, 64, 3, 1)
    sections = [struct.pack('<IIQQQQIIQQ', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                struct.pack('<IIQQQQIIQQ', 1, 3, 0, 0, data_off, len(names), 0, 0, 1, 0),
                struct.pack('<IIQQQQIIQQ', 11, 3, 0, 0, data_off + len(names), len(strtab), 0, 0, 1, 0)]
    path.write_bytes(bytes(header) + names + strtab + b''.join(sections))
    return path


def test_a_kasan_kernel_gets_more_memory(tmp_path):
    debug = elf(tmp_path / 'linux-debug', b'\0start_kernel\0kasan_report\0__asan_load8\0')
    assert kernel_image.mem_extra(debug) == kernel_image.DEBUG_EXTRA
    assert run.guest_mem(debug, Host('a', mem='128M')) == f'{128 + (kernel_image.DEBUG_EXTRA >> 20)}M'


def test_a_lab_kernel_gets_lab_confs_memory(tmp_path):
    # kasan_map_memory is in every UML kernel: only kasan_report counts.
    lab = elf(tmp_path / 'linux', b'\0start_kernel\0kasan_map_memory\0')
    assert kernel_image.mem_extra(lab) == 0
    assert run.guest_mem(lab, Host('a', mem='96M')) == '96M'


def test_no_elf_or_no_file_is_no_debug_kernel(tmp_path):
    (tmp_path / 'script').write_text('#!/bin/sh\n')
    (tmp_path / 'short').write_bytes(b'\x7fELF\x02\x01')
    for path in (tmp_path / 'script', tmp_path / 'short', tmp_path / 'missing'):
        assert kernel_image.mem_extra(path) == 0


def test_a_rebuilt_kernel_is_read_again(tmp_path):
    k = elf(tmp_path / 'linux', b'\0start_kernel\0')
    assert kernel_image.mem_extra(k) == 0
    elf(k, b'\0start_kernel\0kasan_report\0\0\0\0\0')  # another size, so another cache key
    assert kernel_image.mem_extra(k) == kernel_image.DEBUG_EXTRA
