"""What the driver needs to know of a UML kernel binary before it boots it.

A lab.conf's `mem=` is what a host's programs have to work with. A debug
kernel (uml-config/debug.config) keeps much of that for itself: its image
is three times the lab kernel's (lockdep's tables are in .bss), the stack
depot takes 8 MiB at boot, and KASAN's quarantine and kmemleak's objects
grow with every allocation. At mem=128M the debug kernel boots with about
44 MiB free where the lab kernel has about 120, and its boot-time KUnit
suites alone can run that out (the OOM killer finds nothing to kill and
the host panics before /init). So the driver gives every host of a debug
kernel DEBUG_EXTRA more than lab.conf asks, and the same lab.conf works
under both profiles.

A debug kernel is told by its symbols: KASAN's report function is in the
symbol table of the debug kernel only (UML has no module symbols to hide
it elsewhere). Reading the ELF's string table takes a few milliseconds.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path

DEBUG_EXTRA = 96 << 20
KASAN_SYMBOL = b'\0kasan_report\0'


def is_x86_image(kernel: Path) -> bool:
    """True if @kernel is an x86 boot image (a bzImage: `HdrS` at 0x202,
    the boot protocol's header), which QEMU boots (qemu_host.py); a UML
    kernel is an ELF program."""
    try:
        with open(kernel, 'rb') as f:
            f.seek(0x202)
            return f.read(4) == b'HdrS'
    except OSError:
        return False


def mem_extra(kernel: Path) -> int:
    """Bytes to add to each host's mem= for @kernel: DEBUG_EXTRA for a
    KASAN kernel, 0 for any other (or for a file that is no ELF)."""
    try:
        st = kernel.stat()
    except OSError:
        return 0
    return DEBUG_EXTRA if _has_kasan(str(kernel), st.st_mtime_ns, st.st_size) else 0


@functools.lru_cache(maxsize=8)
def _has_kasan(path: str, mtime_ns: int, size: int) -> bool:
    del mtime_ns, size  # only the cache key: a rebuilt kernel is read again
    try:
        with open(path, 'rb') as f:
            strtab = _section(f, b'.strtab')
    except (OSError, ValueError, struct.error):
        return False
    return strtab is not None and KASAN_SYMBOL in strtab


def _section(f, wanted: bytes) -> bytes | None:
    """The contents of section @wanted of the 64-bit little-endian ELF @f."""
    ident = f.read(64)
    if ident[:4] != b'\x7fELF' or ident[4] != 2 or ident[5] != 1:
        raise ValueError('not a 64-bit little-endian ELF file')
    shoff, = struct.unpack_from('<Q', ident, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', ident, 0x3a)
    f.seek(shoff)
    table = f.read(shentsize * shnum)
    headers = [struct.unpack_from('<IIQQQQIIQQ', table, i * shentsize) for i in range(shnum)]

    def contents(h) -> bytes:
        f.seek(h[4])
        return f.read(h[5])

    names = contents(headers[shstrndx])
    for h in headers:
        end = names.find(b'\0', h[0])
        if names[h[0]:end] == wanted:
            return contents(h)
    return None
