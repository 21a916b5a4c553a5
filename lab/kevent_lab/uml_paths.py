"""Paths that survive UML's command line.

UML splits its device options at commas and colons (`eth0=vde,SOCKET`,
`ubd0=FILE,BACKING` or `FILE:BACKING`) and the kernel command line at
spaces: a switch socket under a TMPDIR like /tmp/a,b, or a disk in a
checkout at /home/me/x:y, would be cut in two and the host would come up
without its network or disk. Sockets go into a private directory under
the first temporary directory whose path has none of these; a file that
must stay where it is (a host's disk in its run directory) is reached
through a symbolic link in that private directory.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

UNSAFE = ',: \t\n='


def usable(path: Path | str) -> bool:
    """True if UML reads @path whole as the value of an option."""
    return not any(c in str(path) for c in UNSAFE)


def private_dir(prefix: str) -> Path:
    """A new private directory whose path UML reads whole (mkdtemp: mode 0700)."""
    # UML keeps a guest's memory in a file of TMPDIR (set for it to a
    # directory in here, its only writable one besides its own: confine.py),
    # and without TMPDIR in /dev/shm, in memory: a file on a disk would be
    # written back while the guest runs. So /dev/shm comes first, unless the
    # user chose a TMPDIR.
    candidates = ([os.environ['TMPDIR']] if os.environ.get('TMPDIR') else []) + \
        ['/dev/shm', tempfile.gettempdir(), '/tmp', '/var/tmp']
    for base in candidates:
        if usable(base) and os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    raise RuntimeError('no temporary directory whose path has none of UML\'s separators '
                       f'({", ".join(repr(c) for c in UNSAFE)}): tried {", ".join(candidates)}; '
                       'set TMPDIR to one')


def reachable(path: Path, link: Path) -> Path:
    """@path itself if UML can take it, else @link, made a symbolic link to it
    (@link must be in a directory private_dir() made)."""
    if usable(path):
        return path
    if not usable(link):
        raise RuntimeError(f'{link}: UML cannot take this path either (it has one of {UNSAFE!r})')
    if not link.is_symlink():
        link.symlink_to(path)
    return link
