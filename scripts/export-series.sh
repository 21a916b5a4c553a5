#!/bin/sh
# export-series.sh SRC PATCHDIR
#
# Writes the commits on top of the `pristine` tag of the kernel tree SRC back
# into PATCHDIR as a quilt series (one numbered patch per commit plus the
# `series` file). The flow for kernel work: `make kernel-dev` checks the
# series out as commits, you edit and commit in build/src, then
# `make kernel-export` runs this script.
set -eu
src=$1
pdir=$(mkdir -p "$2" && cd "$2" && pwd)
cd "$src"
if ! git diff --quiet || ! git diff --cached --quiet; then
	echo "export-series: $src has uncommitted changes; commit them first" >&2
	exit 1
fi
rm -f "$pdir"/*.patch
git format-patch --quiet --no-signature --zero-commit --no-numbered \
	-o "$pdir" pristine..HEAD
( cd "$pdir" && ls *.patch ) > "$pdir/series"
echo "export-series: $(wc -l < "$pdir/series") patches written to $pdir"
