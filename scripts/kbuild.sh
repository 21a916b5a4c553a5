#!/bin/sh
# kbuild.sh LOG MAKE-ARGS...
#
# Runs a kernel build with its output in LOG and, while it runs, prints a
# progress line every 20 seconds, so a long first build is not silent. On
# failure it shows the errors and where the whole log is.
set -u
log=$1
shift
start=$(date +%s)
# A parent `make -s` would silence kbuild through MAKEFLAGS, and the log
# (and this progress) needs its lines; the caller passes -j itself.
unset MAKEFLAGS MFLAGS MAKELEVEL
"$@" > "$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; exit 130' INT TERM
while kill -0 $pid 2>/dev/null; do
	i=0
	while [ $i -lt 20 ] && kill -0 $pid 2>/dev/null; do
		sleep 1
		i=$((i + 1))
	done
	kill -0 $pid 2>/dev/null || break
	echo "  KERNEL  $(grep -c '^  CC' "$log") files compiled, $(( $(date +%s) - start )) s"
done
wait $pid
rc=$?
if [ $rc != 0 ]; then
	grep -E -B2 -A8 'error:|Error [0-9]' "$log" | head -60
	echo "kernel build failed: the whole log is $log" >&2
	exit $rc
fi
echo "  KERNEL  built in $(( $(date +%s) - start )) s"
