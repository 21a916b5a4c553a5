#!/bin/busybox sh
# /init of the VM that scripts/cpu-check.sh starts: mount this machine's
# root read-only (9p share "root") and the checkout writable (share "top",
# at its own path), give the root the file systems a lab needs, run the
# script CPUCHECK_RUN in it and power off. The kernel passes CPUCHECK_*
# from its command line as environment variables.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# insmod in dependency order: retry until no module loads any more.
left=$(ls /modules)
while [ -n "$left" ]; do
	next=""
	for m in $left; do insmod "/modules/$m" 2>/dev/null || next="$next $m"; done
	[ "$next" != "$left" ] || { echo "cpu-check: modules that do not load:$next"; break; }
	left=$next
done
opts=trans=virtio,version=9p2000.L,msize=524288,cache=loose
if ! mount -t 9p -o "$opts,ro" root /newroot; then
	echo "cpu-check: cannot mount the machine's root"; poweroff -f
fi
r=/newroot
mount -t proc proc $r/proc
mount -t sysfs sysfs $r/sys
mount -t devtmpfs devtmpfs $r/dev
mkdir -p $r/dev/pts $r/dev/shm 2>/dev/null
mount -t devpts devpts $r/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $r/dev/shm
for d in /tmp /run /var/tmp /root; do mount -t tmpfs -o mode=1777 tmpfs "$r$d"; done
# Last: the checkout may be below one of those (a clone in /root or /tmp).
mkdir -p "$r$CPUCHECK_TOP" 2>/dev/null
mount -t 9p -o "$opts" top "$r$CPUCHECK_TOP" || { echo "cpu-check: cannot mount the checkout"; poweroff -f; }
chroot $r /bin/sh -c "cd '$CPUCHECK_TOP' || { echo 'cpu-check: no checkout at $CPUCHECK_TOP in the VM'; exit 1; }; HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin exec sh '$CPUCHECK_RUN'"
echo "cpu-check: exit $?"
sync
poweroff -f
