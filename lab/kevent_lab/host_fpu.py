"""Whether a UML kernel can run its processes on this machine's CPU.

UML hands each guest process's FP registers to the host with
PTRACE_SETREGSET NT_X86_XSTATE, and the host takes that set only at the
exact size of its XSAVE area: 832 bytes with AVX, about 2.7 KiB with
AVX-512, 11 KiB with AMX. Linux 6.1's UML keeps them in a buffer of fixed
size (FIXED_FP_SIZE); on a host whose area is larger every guest panics at
/init ("ptrace set fp regs failed, errno = 14"). Patch 0033 of the series
sizes the buffer from the host at boot; its kernels have the symbol
`host_fp_size`, and handle any size.

So before the first boot the driver asks the host its size (the same
PTRACE_GETREGSET UML makes, on a stopped child of its own) and looks for
that symbol in the kernel: one clear line instead of a panic per host.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import signal
import struct
from dataclasses import dataclass
from pathlib import Path

from . import kernel_image

# UML 6.1's FP_SIZE on x86_64 (arch/x86/um/user-offsets.c: 2696 bytes).
FIXED_FP_SIZE = 2696
SIZED_SYMBOL = b'\0host_fp_size\0'

PTRACE_TRACEME = 0
PTRACE_KILL = 8
PTRACE_GETREGSET = 0x4204
NT_X86_XSTATE = 0x202
PROBE_SIZE = 1 << 20


class _Iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]


def host_xsave_size() -> int | None:
    """The size in bytes of this machine's XSAVE area as ptrace gives it,
    or None where it cannot be asked (no ptrace, not x86_64, no XSAVE)."""
    if os.uname().machine != 'x86_64':
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    pid = os.fork()
    if pid == 0:
        try:
            if libc.ptrace(PTRACE_TRACEME, 0, None, None) == 0:
                os.kill(os.getpid(), signal.SIGSTOP)
        finally:
            os._exit(0)
    try:
        _, status = os.waitpid(pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            return None
        buf = ctypes.create_string_buffer(PROBE_SIZE)
        iov = _Iovec(ctypes.cast(buf, ctypes.c_void_p), PROBE_SIZE)
        if libc.ptrace(PTRACE_GETREGSET, pid, ctypes.c_void_p(NT_X86_XSTATE),
                       ctypes.c_void_p(ctypes.addressof(iov))) != 0:
            return None
        return iov.len
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError as e:
            if e.errno not in (errno.ESRCH, errno.ECHILD):
                raise


def kernel_fp_limit(kernel: Path) -> int | None:
    """The largest XSAVE area @kernel handles: None for any (a kernel with
    patch 0033), FIXED_FP_SIZE for one without it."""
    try:
        st = kernel.stat()
    except OSError:
        return None  # no kernel: the caller says so, with how to build one
    return None if _sized(str(kernel), st.st_mtime_ns, st.st_size) else FIXED_FP_SIZE


@functools.lru_cache(maxsize=8)
def _sized(path: str, mtime_ns: int, size: int) -> bool:
    del mtime_ns, size  # only the cache key
    try:
        with open(path, 'rb') as f:
            strtab = kernel_image._section(f, b'.strtab')
    except (OSError, ValueError, struct.error):
        return True  # not an ELF we can read: let the boot say what it finds
    return strtab is None or SIZED_SYMBOL in strtab  # no symbols: cannot tell


@dataclass(frozen=True)
class CpuName:
    model: str
    flags: frozenset[str]

    @classmethod
    def read(cls, cpuinfo: Path = Path('/proc/cpuinfo')) -> 'CpuName':
        model, flags = 'an unknown CPU', frozenset()
        try:
            text = cpuinfo.read_text()
        except OSError:
            return cls(model, flags)
        for line in text.splitlines():
            key, _, value = line.partition(':')
            key = key.strip()
            if key == 'model name' and model == 'an unknown CPU':
                model = value.strip()
            elif key == 'flags' and not flags:
                flags = frozenset(value.split())
        return cls(model, flags)

    def features(self) -> str:
        have = [f for f in ('avx512f', 'amx_tile') if f in self.flags]
        return ', '.join(have) if have else 'no AVX-512 or AMX'


def verdict(host_size: int | None, limit: int | None, kernel: Path, cpu: CpuName) -> str | None:
    """The line that says why @kernel cannot run on this host, or None."""
    if host_size is None or limit is None or host_size <= limit:
        return None
    return (f'{kernel} cannot run guests on this CPU: its XSAVE area is {host_size} bytes '
            f'({cpu.model}; {cpu.features()}) and this kernel handles at most {limit} '
            '(UML 6.1 keeps FP registers in a buffer of fixed size). Build it from '
            'kernel-patches/ (patch 0033 sizes that buffer from the host): make kernel')


def check(kernel: Path) -> None:
    """Raise RuntimeError with verdict()'s line where @kernel cannot run
    here; asks the host only for a kernel without patch 0033."""
    limit = kernel_fp_limit(kernel)
    if limit is None:
        return
    line = verdict(host_xsave_size(), limit, kernel, CpuName.read())
    if line:
        raise RuntimeError(line)
