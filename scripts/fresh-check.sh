#!/bin/bash
# fresh-check.sh [--keep] [--shell] [-- COMMAND...]
#
# Runs the README's two commands, `make lab-run` then `make test`, exactly as
# a new user would: in a clean Debian 12 root made for this run by Debian's
# mmdebstrap, holding only what `git clone` and `make` need (variant minbase
# plus make and git). Everything else must come from `make deps`; a package
# that scripts/deps.sh forgets fails here, wherever this machine has it.
#
# The root gets this checkout's files (tracked, and untracked but not
# ignored; never build/), the machine's apt sources and Acquire:: settings
# (how this machine reaches its Debian archive), and the mounts UML needs:
# /proc, /dev, /dev/pts, a tmpfs /dev/shm and /tmp. It runs in its own mount
# and PID namespaces, so every mount and every process of the run ends with
# it, even when this script is killed.
#
# Two caches may be shared with the root, because neither can install
# anything: FRESH_CCACHE=DIR (compiler output keyed by compiler and source;
# empty means a cold build) and FRESH_APT_CACHE=DIR (downloaded .deb files).
#
#   --keep    keep the root afterwards (its path is printed); its
#             build/results are copied to build/fresh-check/results either way
#   --shell   after the commands, or instead of them with `--`, a shell
#   -- CMD    run CMD in the checkout inside the root instead
#
# Needs root (mounts, pivot_root). Installs mmdebstrap when missing.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
keep=0
shell=0
cmd=()
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1; shift;;
	--shell) shell=1; shift;;
	--) shift; cmd=("$@"); [ $# -gt 0 ] || cmd=(true); break;;
	-h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
	*) echo "fresh-check: unknown argument '$1' (see --help)" >&2; exit 2;;
	esac
done

if [ "$(id -u)" != 0 ]; then
	echo "fresh-check: needs root (it makes a Debian root with mmdebstrap and runs in it)." >&2
	echo "Run: sudo make fresh-check" >&2
	exit 2
fi
if ! command -v mmdebstrap >/dev/null; then
	echo "  FRESH   apt-get install mmdebstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null ||
		{ apt-get update -q >/dev/null &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null; }
fi

# This machine's Debian archive: its sources files, and the Acquire:: options
# (proxies, snapshot validity) its apt needs to reach them.
sources=()
[ -s /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list && sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && sources+=("$f")
done
if [ ${#sources[@]} = 0 ]; then
	echo "fresh-check: this machine has no apt sources (/etc/apt/sources.list{,.d}) to make a root from" >&2
	exit 1
fi
aptopts=()
for f in /etc/apt/apt.conf.d/*; do
	[ -f "$f" ] && grep -q '^[[:space:]]*Acquire::' "$f" && aptopts+=(--aptopt="$f")
done

root=$(mktemp -d "${FRESH_ROOT_DIR:-/var/tmp}/kevent-fresh.XXXXXX")
log=$root.log
cleanup() {
	rc=$?
	# The namespaces took every mount with them; refuse to delete through one
	# that is somehow still there.
	if findmnt -rn -o TARGET | grep -q "^$root/"; then
		echo "fresh-check: mounts remain under $root; not removing it" >&2
	elif [ $keep = 1 ]; then
		echo "  FRESH   root kept: $root"
	else
		rm -rf --one-file-system "$root"
		[ $rc = 0 ] && rm -f "$log"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
echo "  FRESH   mmdebstrap bookworm (minbase + make git) in $root (log: $log)"
if ! mmdebstrap --variant=minbase --include=make,git \
	"${aptopts[@]}" bookworm "$root" "${sources[@]}" >"$log" 2>&1; then
	tail -20 "$log" >&2
	echo "fresh-check: mmdebstrap failed; the whole log is $log" >&2
	exit 1
fi
echo "  FRESH   root ready in $(( $(date +%s) - start )) s"

# The checkout, as a clone would have it (plus work not yet committed).
dest=/root/kevent-lab
mkdir -p "$root$dest"
(cd "$top" && git ls-files -co --exclude-standard -z |
	grep -zv '^build/' | tar --null -T - -cf -) | tar -xf - -C "$root$dest"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

binds=""
if [ -n "${FRESH_CCACHE:-}" ]; then
	mkdir -p "$FRESH_CCACHE" "$root/root/.cache/ccache"
	binds+="mount --bind '$FRESH_CCACHE' '$root/root/.cache/ccache'; "
fi
if [ -n "${FRESH_APT_CACHE:-}" ]; then
	mkdir -p "$FRESH_APT_CACHE/partial" "$root/var/cache/apt/archives"
	binds+="mount --bind '$FRESH_APT_CACHE' '$root/var/cache/apt/archives'; "
	# minbase's docker-style apt config, if any, would delete them again.
	echo 'APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/99keep-downloads"
fi

# What runs inside: the README's two commands as written, or the given one.
{
	echo 'set -e'
	echo "cd $dest"
	if [ ${#cmd[@]} = 0 ]; then
		echo 'make lab-run'
		echo 'make test'
	else
		printf '%q ' "${cmd[@]}"; echo
	fi
	[ $shell = 0 ] || echo 'exec bash -i'
} >"$root/fresh-check.run"
echo "  FRESH   in the root: $(sed -n '3,$p' "$root/fresh-check.run" | paste -sd';' | sed 's/;/; /g')"
# A new mount namespace (nothing leaks to the machine) and PID namespace
# (when the run ends, every process it left is killed with it). The root
# becomes the namespace's own root by pivot_root, not chroot: in a chroot
# the kernel refuses unprivileged user namespaces (EPERM), which a fresh
# machine allows and the lab's uplink uses.
unshare --mount --pid --fork --propagation private -- sh -euc "
	mount --bind '$root' '$root'
	mount -t proc proc '$root/proc'
	mount --bind /dev '$root/dev'
	mount --bind /dev/pts '$root/dev/pts'
	mount -t tmpfs -o mode=1777,size=50% shm '$root/dev/shm'
	mount -t tmpfs -o mode=1777,size=50% tmp '$root/tmp'
	$binds
	cd '$root'
	mkdir -p .old-root
	pivot_root . .old-root
	umount -l /.old-root
	rmdir /.old-root
	exec /usr/bin/env -i HOME=/root TERM=\"\${TERM:-dumb}\" LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		bash /fresh-check.run
" && rc=0 || rc=$?
# The run's results outlive its root: reports, consoles and logs are what
# a failed CI run is read by.
out=$top/build/fresh-check
rm -rf "$out/results" && mkdir -p "$out"
if [ -d "$root$dest/build/results" ]; then
	cp -a "$root$dest/build/results" "$out/results"
	echo "  FRESH   results copied to $out/results"
fi
echo "  FRESH   done in $(( $(date +%s) - start )) s, exit status $rc"
exit $rc
