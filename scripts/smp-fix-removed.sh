#!/bin/bash
# smp-fix-removed.sh: the proof that make smp-check sees a race.
#
# A check that never fails proves nothing. This builds the series with one
# earlier race fix taken out (a patch of scripts/fix-removed/, applied on
# top of the whole series in a scratch tree, build/src-fix-removed, a git
# worktree of build/src) as the lockdep/KASAN kernel of make smp-check, and
# runs lab smp-proof on it: the racing programs on four CPUs. The check
# passes when that run FAILS with a kernel report on its console (KASAN,
# lockdep...), and fails when the kernel without the fix passed: then the
# check cannot see the race the fix is for.
#
# Usage: scripts/smp-fix-removed.sh [--patch FILE] [--results DIR]
# Default patch: scripts/fix-removed/0006-release-breaks-after-detach.patch
# (issue 14's finding 2); results (the lab's, and verdict.txt) in DIR,
# default build/results/smp/fix-removed. Ends with one count line.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

patch=scripts/fix-removed/0006-release-breaks-after-detach.patch
results=build/results/smp/fix-removed
while [ $# -gt 0 ]; do
	case $1 in
	--patch) patch=${2:?--patch needs a file}; shift 2;;
	--results) results=${2:?--results needs a directory}; shift 2;;
	-h|--help) sed -n '/^# Usage:/,/^# (issue/s/^# \{0,1\}//p' "$0"; exit 0;;
	*) echo "smp-fix-removed: unknown argument '$1'" >&2; exit 2;;
	esac
done
[ -f "$patch" ] || { echo "smp-fix-removed: no patch $patch" >&2; exit 2; }
patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")

B=$top/build
src=$B/src scratch=$B/src-fix-removed obj=$B/obj-smp-fix-removed kernel=$B/bzImage-smp-fix-removed
echo "== the series, then $(basename "$patch") (a race fix taken out), in $scratch"
# The lab's root and the patched tree first (the root holds the racing programs).
make -s rootfs PROFILE=smp
[ -e "$scratch/.git" ] || git -C "$src" worktree add -q --detach "$scratch" pristine
git -C "$scratch" checkout -q -- . 2>/dev/null || true
scripts/apply-series.sh "$scratch" kernel-patches
(cd "$scratch" && patch -p1 -s --no-backup-if-mismatch < "$patch") ||
	{ echo "smp-fix-removed: $patch does not apply on top of the series" >&2; exit 1; }

echo "== the lockdep/KASAN kernel of make smp-check, without the fix"
# The Makefile's own PROFILE=smp build (its fragments, ccache, progress),
# pointed at the scratch tree and a build directory and image of its own.
touch "$B/.series-fix-removed"
make -s kernel PROFILE=smp KTREE="$scratch" KSTAMP="$B/.series-fix-removed" OBJ="$obj" \
	KERNEL="$kernel" KLOG="$B/kernel-build-smp-fix-removed.log"
# The tree goes back to the series, so that nothing reads the scratch edit later.
git -C "$scratch" checkout -q -- .

echo "== lab smp-proof on it: must fail with a kernel report"
rm -rf "$results"
log=$B/smp-fix-removed.labctl.log
set +e
python3 lab/labctl run --lab smp-proof --kernel "$kernel" --rootfs "$B/rootfs.cpio" \
	--results "$results" > "$log" 2>&1
rc=$?
set -e
grep '^\[lab ' "$log" || true
# Caught: the host's console check failed, on a report the lab's own
# console check finds (run.console_trouble: KASAN, lockdep, BUG, Oops...).
caught=""
if [ -e "$results/s.console.log" ]; then
	caught=$(PYTHONPATH=lab python3 - "$results/s.console.log" <<'PY'
import sys
from kevent_lab import kcsan, run
checked, _ = kcsan.split(open(sys.argv[1], errors='replace').read())
lines = run.console_trouble(checked).splitlines()
print(next((l for l in lines if run.KERNEL_TROUBLE.search(l)), ''))
PY
)
fi
mkdir -p "$results"
cp "$log" "$results/labctl.log" 2>/dev/null || true
if [ -n "$caught" ]; then
	echo "fix-removed: caught: $caught" | tee "$results/verdict.txt"
	echo "1 passed, 0 failed"
	exit 0
fi
if [ $rc = 0 ]; then
	echo "fix-removed: NOT caught: lab smp-proof passed on the kernel without the fix" | tee "$results/verdict.txt"
else
	echo "fix-removed: NOT caught: lab smp-proof failed (exit $rc) but without a kernel report; see $log" |
		tee "$results/verdict.txt"
fi
echo "0 passed, 1 failed"
exit 1
