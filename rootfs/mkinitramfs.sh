#!/bin/sh
# mkinitramfs.sh GEN_INIT_CPIO BUSYBOX TESTCASES_DIR OUTPUT
#
# Packs the guest root without root privileges: gen_init_cpio takes owners
# and modes from the list, so nothing is ever chowned or mounted.
set -eu
gen=$1 busybox=$2 tests=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)

[ -x "$gen" ] || { echo "mkinitramfs: no gen_init_cpio at $gen (build the kernel first)" >&2; exit 1; }
[ -x "$busybox" ] || { echo "mkinitramfs: no static busybox at $busybox (apt-get install busybox-static)" >&2; exit 1; }
case $(file -b "$busybox" 2>/dev/null || echo static) in
*dynamically*) echo "mkinitramfs: $busybox is dynamically linked; the guest needs busybox-static" >&2; exit 1;;
esac

list=$out.list
sed -e "s|@BUSYBOX@|$busybox|" -e "s|@ROOTFS@|$here|" "$here/initramfs.list" > "$list"
for t in "$tests"/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	echo "file /opt/kevent/$(basename "$t") $t 0755 0 0" >> "$list"
done
"$gen" "$list" > "$out.tmp"
mv "$out.tmp" "$out"
echo "  CPIO    $out ($(wc -c < "$out") bytes)"
