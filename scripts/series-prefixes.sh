#!/bin/sh
# series-prefixes.sh SRC OBJ FRAGMENT...
#
# That every prefix of kernel-patches/series builds on its own, as a
# reviewer applying the series one patch at a time would need: a scratch
# git worktree of SRC's `pristine` commit takes the patches one by one
# (git am), and after each the UML kernel is configured from the
# fragments and built in OBJ (incrementally: only what the patch touched
# is compiled again, and ccache remembers the rest). Options that an early
# prefix does not have yet are left out of its .config, not an error.
#
# Exits non-zero naming the first patch after which the kernel does not
# build; the build's output is in OBJ/prefix-build.log.
set -eu
src=$(cd "$1" && pwd)
mkdir -p "$2"
obj=$(cd "$2" && pwd)
shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(( $(nproc) + 1 ))
cc=gcc
command -v ccache >/dev/null && cc="ccache gcc"

wt=$(mktemp -d "${TMPDIR:-/tmp}/kevent-prefix.XXXXXX")
cleanup() {
	git -C "$src" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
	git -C "$src" worktree prune
}
trap cleanup EXIT
trap 'exit 130' INT TERM
git -C "$src" worktree add -q --detach "$wt" pristine

n=0
for p in $(sed -e 's/#.*//' "$top/kernel-patches/series"); do
	n=$((n + 1))
	git -C "$wt" -c user.name=kevent-lab -c user.email=kevent-lab@localhost \
		am -q "$top/kernel-patches/$p" || { echo "series-prefixes: $p does not apply" >&2; exit 1; }
	start=$(date +%s)
	# An early prefix lacks later options: kernel-config.sh says which, and
	# that is expected here.
	"$top/scripts/kernel-config.sh" "$wt" "$obj" "$@" >"$obj/prefix-config.log" 2>&1 || true
	if ! make -s -C "$wt" O="$obj" ARCH=um CC="$cc" -j"$jobs" linux >"$obj/prefix-build.log" 2>&1; then
		grep -E 'error|Error' "$obj/prefix-build.log" | head -20 >&2
		echo "series-prefixes: the kernel does not build after patch $n, $p (log: $obj/prefix-build.log)" >&2
		exit 1
	fi
	echo "  PREFIX  $n $p: builds ($(( $(date +%s) - start )) s)"
done
echo "  PREFIX  every prefix of the $n patches builds"
