#!/bin/bash
# exercise.sh: check a student's answer to one exercise of docs/exercises/.
#
#   exercises/exercise.sh EX [ANSWER] [--out DIR] [--results DIR] [--expect]
#
# EX is the exercise's number (01) or directory name (01-echo); ANSWER is
# the student's file (default: the exercise's untouched starter). The
# answer and the exercise's checkers are built into OUT/bin (never into
# build/testcases) beside the testcases, a guest root is packed from that
# directory, and the lab lab/labs/ex-EX-NAME runs it. --expect compares
# the outcome with the lab's signature, which records how the untouched
# starter fails (make exercises-check).
#
# The Makefile passes where things are, in the environment: KERNEL,
# GEN_INIT_CPIO, BUSYBOX, KSRC, HDR, TESTCASES, PYTHON.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "exercise: $*" >&2; exit 2; }

ex=${1:-}
[ -n "$ex" ] || die "say which exercise: make exercise EX=NN (one of: $(cd "$top/exercises" && echo [0-9][0-9]-*))"
shift
answer='' out='' results='' expect=''
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2;;
	--results) results=$2; shift 2;;
	--expect) expect=--expect; shift;;
	-*) die "unknown option $1";;
	*) [ -z "$answer" ] || die "one answer file only, not also $1"; answer=$1; shift;;
	esac
done

# EX may be 1, 01 or 01-echo (make exercise EX=1 ...): a number is the
# exercise's two digits. Never a path.
case $ex in
*/*|.*) die "EX is an exercise's number or name (like 01 or 01-echo), not $ex";;
esac
if [[ $ex =~ ^[0-9]{1,3}$ ]]; then
	ex=$(printf '%02d' "$((10#$ex))")
fi

# The exercise: its directory, its starter, its lab.
dir=''
for d in "$top"/exercises/"$ex" "$top"/exercises/"$ex"-*; do
	[[ $d != */exercises/*/* && -d $d ]] && { dir=$d; break; }
done
[ -n "$dir" ] || die "no exercise $ex (known: $(cd "$top/exercises" && echo [0-9][0-9]-*))"
name=$(basename "$dir")
num=${name%%-*}
lab=ex-$name
[ -f "$top/lab/labs/$lab/lab.conf" ] || die "exercise $name has no lab lab/labs/$lab/lab.conf"
starter=''
for f in "$dir"/answer.c "$dir"/answer.txt; do
	[ -f "$f" ] && { starter=$f; break; }
done
[ -n "$starter" ] || die "exercise $name has no starter (answer.c or answer.txt)"
answer=${answer:-$starter}
[ -f "$answer" ] || die "no answer file $answer"
case $starter in
*.c) [[ $answer == *.c ]] || die "exercise $name wants a C file (like $starter), not $answer";;
*) [[ $answer != *.c ]] || die "exercise $name wants a text file (like $starter), not $answer";;
esac

out=${out:-$top/build/exercises/$num}
results=${results:-$out/results}
# OUT/bin is emptied below: only in a directory this script made. An OUT
# that holds anything else (--out ~ has a ~/bin) is refused, untouched.
marker=.kevent-exercise-out
if [ -e "$out" ] || [ -L "$out" ]; then
	[ -d "$out" ] && [ ! -L "$out" ] || die "--out $out is not a directory"
	if [ ! -f "$out/$marker" ] && [ -n "$(ls -A "$out")" ]; then
		die "--out $out holds files this script did not make: give a new or empty directory"
	fi
fi
mkdir -p "$out" && touch "$out/$marker"
: "${KERNEL:=$top/build/linux}" "${GEN_INIT_CPIO:=$top/build/obj/usr/gen_init_cpio}"
: "${BUSYBOX:=/bin/busybox}" "${KSRC:=$top/build/src}" "${HDR:=$top/build/headers/include}"
: "${TESTCASES:=$top/build/testcases}" "${PYTHON:=python3}"
[ -x "$TESTCASES/lab_runner" ] || die "no testcases in $TESTCASES: run make testcases first"

# The guest's /opt/kevent: the testcases, the checkers, the answer.
bin=$out/bin
rm -rf "$bin" && mkdir -p "$bin"
cp "$TESTCASES"/* "$bin"/
# The flags of testcases/Makefile: static binaries, the patched uapi headers.
cc() {
	gcc -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
		-Wno-missing-field-initializers -isystem "$HDR" -I "$top/testcases/include" -I "$top/exercises/include" \
		-I "$KSRC/tools/testing/selftests" -o "$1" "$2" "${@:3}" -static -pthread
}
for c in "$dir"/ex*.c; do
	[ -e "$c" ] || continue
	cc "$bin/$(basename "$c" .c)" "$c" -Werror || die "the checker $c does not compile"
done
target=$bin/ex${num}_answer
case $starter in
*.c)
	echo "  CC      $answer -> $target"
	if ! cc "$target" "$answer" 2> "$out/answer.cc.log"; then
		cat "$out/answer.cc.log" >&2
		die "your answer $answer does not compile (errors above, also in $out/answer.cc.log)"
	fi
	cat "$out/answer.cc.log" >&2;;
*)
	# A text answer: packed as it is; the checker reads it in the guest.
	# (mkinitramfs.sh packs the executable files of the directory.)
	cp "$answer" "$target" && chmod 755 "$target";;
esac

"$top/rootfs/mkinitramfs.sh" "$GEN_INIT_CPIO" "$BUSYBOX" "$bin" "$out/rootfs.cpio"
echo "== exercise $name: lab $lab, answer $answer"
exec "$PYTHON" "$top/lab/labctl" run --lab "$lab" --kernel "$KERNEL" \
	--rootfs "$out/rootfs.cpio" --results "$results" $expect
