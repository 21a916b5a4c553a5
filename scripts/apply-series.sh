#!/bin/sh
# apply-series.sh SRC PATCHDIR [KIND]
#
# Makes the work tree of SRC (see kernel-tree.sh) equal to `pristine` plus
# every patch in PATCHDIR/series, in order; with KIND (um-), only the
# patches whose name says they are of that kind (NNNN-um-...): the kernel
# without kevent that PROFILE=vanilla builds. The patched tree is computed in
# a scratch index first, so a patch that does not apply changes nothing;
# then only the files whose content differs are rewritten, which keeps the
# timestamps of everything else and lets kbuild rebuild incrementally.
set -eu
src=$1 pdir=$(cd "$2" && pwd) kind=${3:-}
cd "$src"

if ! git diff --quiet; then
	echo "apply-series: $src has edits that are not in kernel-patches/:" >&2
	git diff --stat >&2
	echo "Commit them and run 'make kernel-export', or drop them with 'git -C $src checkout -- .'" >&2
	exit 1
fi
scratch=$(git rev-parse --git-dir)/kevent-series-index
rm -f "$scratch"
GIT_INDEX_FILE=$scratch git read-tree pristine
n=0
for p in $(sed -e 's/#.*//' "$pdir/series"); do
	case $p in -*) continue;; esac
	[ -z "$kind" ] || case ${p#[0-9][0-9][0-9][0-9]-} in "$kind"*) ;; *) continue;; esac
	if ! GIT_INDEX_FILE=$scratch git apply --cached --whitespace=nowarn "$pdir/$p"; then
		echo "apply-series: $p does not apply on top of the patches before it" >&2
		rm -f "$scratch"
		exit 1
	fi
	n=$((n + 1))
done
tree=$(GIT_INDEX_FILE=$scratch git write-tree)
rm -f "$scratch"

# The tree this script wrote last time. Anything else in the index was put
# there by hand (staged or committed edits) and must not be overwritten.
record=$(git rev-parse --git-dir)/kevent-applied-tree
current=$(git write-tree)
if [ "$current" != "$tree" ] && [ -f "$record" ] && [ "$current" != "$(cat "$record")" ]; then
	echo "apply-series: $src holds kernel changes that are not in kernel-patches/" >&2
	echo "(staged, or committed on branch $(git rev-parse --abbrev-ref HEAD))." >&2
	echo "Run 'make kernel-export' to write them into the series, or" >&2
	echo "rm $record (then the next build overwrites $src) to drop them." >&2
	exit 1
fi
git read-tree -m -u "$tree"
echo "$tree" > "$record"
echo "  SERIES  $n patches applied${kind:+ (the $kind ones only) in $src}"
