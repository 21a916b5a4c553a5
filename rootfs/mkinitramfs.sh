#!/bin/sh
# mkinitramfs.sh GEN_INIT_CPIO BUSYBOX TESTCASES_DIR OUTPUT [MORE_DIR...]
#
# Every executable of TESTCASES_DIR (and of each MORE_DIR: the kernel's own
# selftests) goes into /opt/kevent.
# Packs the guest root without root privileges: gen_init_cpio takes owners
# and modes from the list, so nothing is ever chowned or mounted.
set -eu
gen=$1 busybox=$2 tests=$3 out=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)

[ -x "$gen" ] || { echo "mkinitramfs: no gen_init_cpio at $gen (build the kernel first)" >&2; exit 1; }
[ -x "$busybox" ] || { echo "mkinitramfs: no static busybox at $busybox (apt-get install busybox-static)" >&2; exit 1; }
case $(file -b "$busybox" 2>/dev/null || echo static) in
*dynamically*) echo "mkinitramfs: $busybox is dynamically linked; the guest needs busybox-static" >&2; exit 1;;
esac

list=$out.list
sed -e "s|@BUSYBOX@|$busybox|" -e "s|@ROOTFS@|$here|" "$here/initramfs.list" > "$list"
# The guest gets the programs without their debug information (symbols
# stay): a guest boots with its packed root and the unpacked copy both in
# memory, and DWARF is a quarter of each static binary. Files that are not
# ELF (an exercise's text answer) go in as they are.
stripped=$(mktemp -d "${TMPDIR:-/tmp}/kevent-rootfs.XXXXXX")
trap 'rm -rf "$stripped"' EXIT
for t in "$tests"/* $(for d in "$@"; do echo "$d"/*; done); do
	[ -f "$t" ] && [ -x "$t" ] || continue
	name=$(basename "$t")
	strip --strip-debug -o "$stripped/$name" "$t" 2>/dev/null || cp "$t" "$stripped/$name"
	echo "file /opt/kevent/$name $stripped/$name 0755 0 0" >> "$list"
done
"$gen" "$list" > "$out.tmp"
mv "$out.tmp" "$out"
echo "  CPIO    $out ($(wc -c < "$out") bytes)"
