"""Confines a UML host's process on this machine with Landlock.

Root in a guest commands the guest's kernel, and the guest's kernel is an
ordinary process here: whatever that process may open, a guest may open,
through hostfs (`mount -t hostfs -o ../../..` leaves any hostfs= prefix)
or through a helper UML starts (slirp). So the limit is put on the process,
before the kernel is executed, with Landlock (an unprivileged sandbox in
Linux since 5.13): the process and everything it starts may

  - write (create, remove, rename, truncate) only below the host's own
    directory, its private directory (UML's pid file and mconsole socket,
    slirp's HOME) and the segments' switch directories (where a VDE client
    makes its socket), and write to the devices it needs (/dev/null,
    /dev/ptmx, /dev/pts/N for a started lab's consoles);
  - read and execute only the system's programs and libraries (/usr and
    the top-level /bin, /lib... links into it), a short list of /etc files
    that the C library and slirp read, /proc, /sys and /dev, the kernel and
    the root file system it was given, and the directories it may write;
  - connect over TCP only to the ports it is given (the lab's echo service
    for a host with an uplink), bind no TCP port, and signal or reach
    abstract UNIX sockets only inside its own domain (where the host kernel
    has those parts of Landlock).

A host with an uplink of the default mode gets a network namespace of its
own; its port forwards (lab.conf `forward`) then go through a relay that
confine.py forks inside it, confined too (forward_relay.py).

`python3 confine.py RULES... -- PROGRAM ARG...` applies the rules to itself
and then executes PROGRAM: the driver starts each host this way, so that the
rules are in place before a single instruction of the guest's kernel runs.
A host kernel without Landlock runs the program unconfined and says so.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import os
import socket
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

# <linux/landlock.h>
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE = 1 << 12, 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

# The rights Landlock knows, by ABI version. IOCTL_DEV (ABI 5) stays
# unhandled: UML's consoles need the terminal ioctls.
FS_V1 = (EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR
         | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM)
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
READ = EXECUTE | READ_FILE | READ_DIR
WRITE_ALL = -1          # every filesystem right the running kernel handles

# Files of /etc that programs a host starts read: the dynamic loader's cache,
# name resolution (slirp forwards the guest's DNS), users and time zone.
ETC_FILES = ('ld.so.cache', 'ld.so.preload', 'nsswitch.conf', 'host.conf', 'hosts', 'resolv.conf',
             'gai.conf', 'services', 'protocols', 'passwd', 'group', 'localtime')
SYSTEM_DIRS = ('/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/proc', '/sys')
DEVICES = ('/dev/null', '/dev/zero', '/dev/urandom', '/dev/random', '/dev/ptmx', '/dev/tty')


def abi() -> int:
    """The Landlock ABI version of the running kernel; 0 if it has none."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                           ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def fs_rights(version: int) -> int:
    rights = FS_V1
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    return rights


@dataclass
class Rules:
    """What a host's process may touch; paths that do not exist are left out."""
    write: list[Path] = field(default_factory=list)     # every right below these
    sockets: list[Path] = field(default_factory=list)   # read, make and remove sockets
    read: list[Path] = field(default_factory=list)      # read and execute
    tcp_connect: list[int] | None = field(default_factory=list)  # None: TCP not limited
    own_network: bool = False   # a network namespace with only its own loopback
    relay: list[tuple[int, int]] = field(default_factory=list)  # (listening fd, port inside)

    def argv(self) -> list[str]:
        out = []
        for flag, items in (('--write', self.write), ('--sockets', self.sockets),
                            ('--read', self.read), ('--tcp-connect', self.tcp_connect or [])):
            for item in items:
                out += [flag, str(item)]
        if self.tcp_connect is None:
            out.append('--any-tcp')
        if self.own_network:
            out.append('--own-network')
        for fd, port in self.relay:
            out += ['--forward', f'{fd}:{port}']
        return out


def host_rules(own: list[Path], sockets: list[Path], files: list[Path],
               tcp_connect: list[int] | None = (), own_network: bool = False) -> Rules:
    """The rules of a UML host: @own it may write, @sockets are switch
    directories, @files (kernel, root file system) it reads."""
    read = [Path(p) for p in SYSTEM_DIRS] + [Path('/etc') / f for f in ETC_FILES]
    # /etc/resolv.conf and friends may be links elsewhere (systemd-resolved):
    # Landlock checks the file a path leads to.
    read += [Path(os.path.realpath(p)) for p in read if os.path.islink(p)]
    return Rules(write=list(own), sockets=list(sockets), read=read + list(files),
                 tcp_connect=None if tcp_connect is None else list(tcp_connect),
                 own_network=own_network)


def command(rules: Rules, argv: list[str]) -> list[str]:
    """@argv, run by this file with @rules applied first."""
    return [sys.executable, str(Path(__file__).resolve())] + rules.argv() + ['--'] + argv


class _RulesetAttr(ctypes.Structure):
    _fields_ = [('handled_access_fs', ctypes.c_uint64), ('handled_access_net', ctypes.c_uint64),
                ('scoped', ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [('allowed_access', ctypes.c_uint64), ('parent_fd', ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [('allowed_access', ctypes.c_uint64), ('port', ctypes.c_uint64)]


class LandlockError(OSError):
    pass


def apply(rules: Rules, version: int) -> None:
    """Restricts this process (and what it executes) to @rules, for good."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def call(*args) -> int:
        r = libc.syscall(*args)
        if r < 0:
            err = ctypes.get_errno()
            raise LandlockError(err, f'landlock system call {args[0]}: {os.strerror(err)}')
        return r

    handled_fs = fs_rights(version)
    limit_tcp = version >= 4 and rules.tcp_connect is not None
    attr = _RulesetAttr(handled_fs, NET_BIND_TCP | NET_CONNECT_TCP if limit_tcp else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset = call(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        def allow(path: Path, rights: int) -> None:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                return
            try:
                if not os.path.isdir(f'/proc/self/fd/{fd}'):
                    rights &= FILE_RIGHTS
                rule = _PathBeneath(rights & handled_fs, fd)
                call(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)

        for path in rules.read:
            allow(path, READ)
        allow(Path('/dev'), READ_DIR)
        allow(Path('/dev/pts'), READ_DIR | READ_FILE | WRITE_FILE)
        for path in DEVICES:
            allow(Path(path), READ_FILE | WRITE_FILE)
        for path in rules.sockets:
            allow(path, READ | MAKE_SOCK | REMOVE_FILE)
        for path in rules.write:
            allow(path, handled_fs)
        if limit_tcp:
            for port in rules.tcp_connect:
                rule = _NetPort(NET_CONNECT_TCP, port)
                call(SYS_ADD_RULE, ruleset, RULE_NET_PORT, ctypes.byref(rule), ctypes.c_uint32(0))
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        call(SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def own_network() -> None:
    """Moves this process into a new network namespace, with its loopback up
    (libslirp connects to it). A user other than root needs a user namespace
    for that, made first, as the same user; root does not (and in a chroot
    may not make one: the kernel refuses user namespaces there)."""
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f'unshare: {os.strerror(err)}')
    if flags & CLONE_NEWUSER:
        with open('/proc/self/setgroups', 'w') as f:
            f.write('deny')
        with open('/proc/self/uid_map', 'w') as f:
            f.write(f'{uid} {uid} 1')
        with open('/proc/self/gid_map', 'w') as f:
            f.write(f'{gid} {gid} 1')
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack('16sh22x', b'lo', 0)
        flags = struct.unpack('16sh22x', fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack('16sh22x', b'lo', flags | IFF_UP))


def describe(version: int) -> str:
    """One line for the run's log: how far a host is confined here."""
    if version <= 0:
        return ('this machine\'s kernel has no Landlock: hosts run unconfined, and root in a '
                'guest can reach this machine\'s files through hostfs (docs/lab.md)')
    parts = ['files']
    if version >= 4:
        parts.append('TCP')
    if version >= 6:
        parts.append('signals and abstract sockets')
    return f'hosts confined by Landlock ABI {version}: ' + ', '.join(parts)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog='confine.py', description=__doc__.split('\n\n')[0])
    p.add_argument('--write', action='append', type=Path, default=[])
    p.add_argument('--sockets', action='append', type=Path, default=[])
    p.add_argument('--read', action='append', type=Path, default=[])
    p.add_argument('--tcp-connect', action='append', type=int, default=[])
    p.add_argument('--any-tcp', action='store_true', help='leave TCP unlimited')
    p.add_argument('--own-network', action='store_true',
                   help='a network namespace of its own, with only its loopback')
    p.add_argument('--forward', action='append', default=[], metavar='FD:PORT',
                   help='relay connections accepted on listening socket FD (made outside) to '
                        '127.0.0.1:PORT inside the network of its own (forward_relay.py)')
    p.add_argument('program', nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ['--'] else args.program
    if not program:
        p.error('no program to run')
    if args.own_network:
        try:
            own_network()
        except OSError as e:
            print(f'confine.py: cannot give this host a network of its own ({e}): an uplink '
                  'needs an unprivileged user and network namespace (docs/lab.md)', file=sys.stderr)
            return 126
    if args.forward:
        import forward_relay    # now: once confined, this directory is out of reach
    version = abi()
    if version > 0:
        apply(Rules(args.write, args.sockets, args.read,
                    None if args.any_tcp else args.tcp_connect), version)
    if args.forward:
        # Forked after the rules are in place: the relay is as confined as the host.
        listeners = []
        for item in args.forward:
            fd, _, port = item.partition(':')
            listeners.append((socket.socket(fileno=int(fd)), int(port)))
        forward_relay.start(listeners)
        for listener, _ in listeners:
            listener.close()
    try:
        os.execvp(program[0], program)
    except OSError as e:
        print(f'confine.py: cannot run {program[0]}: {e.strerror}', file=sys.stderr)
        return 127


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
