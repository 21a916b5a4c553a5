#!/bin/sh
# kernel-tree.sh DEST KSRC TARBALL
#
# Makes DEST a git repository holding the pristine kernel source as its
# first commit, tagged `pristine`. The source is KSRC (any Linux 6.1 tree)
# if given, else Debian's linux-source-6.1 TARBALL. Runs once; the series is
# applied on top by apply-series.sh.
set -eu
dest=$1 ksrc=$2 tarball=$3

if [ -d "$dest/.git" ] && git -C "$dest" rev-parse -q --verify pristine >/dev/null; then
	exit 0
fi
rm -rf "$dest" "$dest.tmp"
mkdir -p "$dest.tmp"
if [ -n "$ksrc" ]; then
	[ -f "$ksrc/Makefile" ] && [ -d "$ksrc/arch/um" ] ||
		{ echo "kernel-tree: KSRC=$ksrc is not a kernel source tree" >&2; exit 1; }
	echo "  COPY    $ksrc -> $dest"
	(cd "$ksrc" && tar --exclude=.git -cf - .) | tar -C "$dest.tmp" -xf -
else
	[ -f "$tarball" ] || {
		echo "kernel-tree: $tarball is missing: install Debian's linux-source-6.1 (make deps)" >&2
		echo "             or point KSRC= at a Linux 6.1 source tree" >&2
		exit 1
	}
	echo "  UNPACK  $tarball (about 20 s)"
	tar -C "$dest.tmp" --strip-components=1 -xf "$tarball"
fi
v=$(make -s -C "$dest.tmp" kernelversion 2>/dev/null || true)
case $v in
6.1|6.1.*) ;;
*) echo "kernel-tree: the source is Linux '$v'; kevent-lab's series is for 6.1.y" >&2; exit 1;;
esac
echo "  GIT     pristine $v (about 30 s)"
cd "$dest.tmp"
git init -q
# Debian's tree ignores everything at the top level: -f takes it all.
git add -A -f
git -c user.name=kevent-lab -c user.email=kevent-lab@localhost commit -q -m "pristine Linux $v"
git tag pristine
cd - >/dev/null
mv "$dest.tmp" "$dest"
