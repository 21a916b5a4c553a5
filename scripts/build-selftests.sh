#!/bin/sh
# build-selftests.sh SRC HDR OUT LIST
#
# Builds the kernel's own selftests that LIST names (DIR PROGRAM per line,
# DIR under SRC/tools/testing/selftests) with their own Makefiles (lib.mk),
# a NAME.sh being one of the suite's scripts, copied as it is,
# against the uapi headers in HDR, into OUT/DIR; then links each program
# into OUT/bin, which the guest's root takes into /opt/kevent. A program
# that does not build stops the build: a suite that silently lost a test
# would compare fewer verdicts than it says.
set -eu
src=$(cd "$1" && pwd) hdr=$(cd "$2" && pwd)
mkdir -p "$3"
out=$(cd "$3" && pwd)
list=$4
st=$src/tools/testing/selftests
mkdir -p "$out/bin"
n=0
grep -v '^#' "$list" | while read -r dir prog; do
	[ -n "$dir" ] || continue
	[ -f "$st/$dir/Makefile" ] || { echo "build-selftests: no $st/$dir/Makefile (line '$dir $prog' of $list)" >&2; exit 1; }
	mkdir -p "$out/$dir"
	case $prog in
	*.sh)	# a script of the suite, which calls its programs as ./NAME
		[ -f "$st/$dir/$prog" ] || { echo "build-selftests: no script $st/$dir/$prog" >&2; exit 1; }
		cp "$st/$dir/$prog" "$out/bin/$prog.tmp" && chmod 755 "$out/bin/$prog.tmp"
		mv "$out/bin/$prog.tmp" "$out/bin/$prog"
		continue;;
	esac
	if ! make -s -C "$st/$dir" OUTPUT="$out/$dir" KHDR_INCLUDES="-isystem $hdr" \
		"$out/$dir/$prog" >"$out/$dir/$prog.log" 2>&1; then
		cat "$out/$dir/$prog.log" >&2
		echo "build-selftests: $dir/$prog did not build (log above)" >&2
		exit 1
	fi
	[ "$out/bin/$prog" -ef "$out/$dir/$prog" ] || ln -f "$out/$dir/$prog" "$out/bin/$prog"
done
echo "  SELFTEST $(ls "$out/bin" | wc -l) programs of tools/testing/selftests in $out/bin"
