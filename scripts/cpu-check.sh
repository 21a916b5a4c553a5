#!/bin/bash
# cpu-check.sh: run a lab on other x86_64 CPUs than this machine's.
#
# UML hands a guest process's FP registers to the host kernel with ptrace,
# at the exact size of the XSAVE area that kernel uses, and that size
# depends on the CPU: 512 bytes of FXSAVE where there is no XSAVE at all,
# 832 with AVX, about 2.7 KiB with AVX-512, 11 KiB with AMX. Patch 0033
# sizes UML's FP state from the host at boot; this script shows that a lab
# passes whatever the size, on one machine, by giving the lab a host kernel
# that sees another CPU: Debian's own x86_64 kernel in a QEMU virtual
# machine whose CPU model offers some features only. The CPUID the VM shows
# decides its kernel's XSAVE area, and so the size UML must handle inside
# it. QEMU emulates the CPU (TCG) by default: that works everywhere, but a
# guest runs tens of times slower, so the default lab is the small `cpu`
# lab, and TCG has no AVX-512. With --kvm the VM runs on this CPU (models
# with AVX-512 where the machine has it), where /dev/kvm works: nested in
# some cloud VMs it does not (a CPU model's MSRs are refused, or the VM
# never prints a line).
#
# The VM's root is this machine's own, read-only (virtio 9p), so the lab
# runs there with the programs it runs with here; only the checkout is
# shared writable, for the lab's results, and the VM has no network device.
# Its memory and /tmp are its own: nothing it does reaches the machine but
# the checkout's build/ directory.
#
# Usage: scripts/cpu-check.sh [--cpu MODEL]... [--lab LAB] [--kvm]
#                             [--results DIR] [--mem MiB] [--timeout SECONDS]
# Each model's lab results go to DIR/cpu-MODEL (default DIR: build/cpu-check),
# its VM's console to build/cpu-check/MODEL/vm.log.
# Prints one line per CPU model (the VM's XSAVE size, what UML said, the
# lab's count) and ends with the lab's counts summed over the models.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

cpus=() lab=cpu mem=3072 timeout=2400 smp=2 kvm=0 results=build/cpu-check
usage() { sed -n '/^# Usage:/,/^# its VM/s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--cpu) cpus+=("${2:?--cpu needs a QEMU CPU model}"); shift 2;;
	--lab) lab=${2:?--lab needs a lab name}; shift 2;;
	--kvm) kvm=1; shift;;
	--results) results=${2:?--results needs a directory}; shift 2;;
	--mem) mem=${2:?--mem needs MiB}; shift 2;;
	--timeout) timeout=${2:?--timeout needs seconds}; shift 2;;
	-h|--help) usage; exit 0;;
	*) echo "cpu-check: unknown argument '$1'" >&2; usage >&2; exit 2;;
	esac
done
# The default models, one per kind of FP state a host can have: Nehalem
# has no XSAVE (UML falls back to PTRACE_GETFPREGS, 512 bytes), SandyBridge
# stops at AVX (832 bytes, the size UML 6.1 was written for), and `max` is
# all that QEMU can give (under TCG: AVX and PKRU, not AVX-512). With KVM,
# Skylake-Server adds AVX-512 (2 696 bytes) and `host` is this machine's
# CPU (AMX too, where it has it).
if [ ${#cpus[@]} = 0 ]; then
	cpus=(Nehalem SandyBridge max)
	[ $kvm = 0 ] || cpus=(Nehalem SandyBridge Skylake-Server host)
fi
[ -d "lab/labs/$lab" ] || { echo "cpu-check: no lab '$lab' in lab/labs/" >&2; exit 2; }
# The VM shares only the checkout with this machine: results elsewhere would be lost.
results=$(mkdir -p "$results" && cd "$results" && pwd)
case $results/ in
"$top"/*) ;;
*) echo "cpu-check: --results must be inside the checkout ($top), not $results" >&2; exit 2;;
esac

out=build/cpu-check
kdir=$out/host-kernel
mkdir -p "$out"

# QEMU is for this check only, so make deps does not install it: root gets
# it here, anyone else the command to run.
if ! command -v qemu-system-x86_64 >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		echo "== installing qemu-system-x86"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-system-x86 >/dev/null ||
			{ echo "cpu-check: apt-get install qemu-system-x86 failed" >&2; exit 1; }
	else
		echo "cpu-check: QEMU is missing: sudo apt-get install qemu-system-x86" >&2; exit 1
	fi
fi
[ -x /bin/busybox ] || { echo "cpu-check: /bin/busybox is missing: apt-get install busybox-static" >&2; exit 1; }

# Debian's kernel for the VM, downloaded once (apt-get download needs no root).
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* 2>/dev/null | head -1 || true)
if [ -z "$vmlinuz" ]; then
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[ -n "$pkg" ] || { echo "cpu-check: apt does not know linux-image-amd64 (apt-get update?)" >&2; exit 1; }
	echo "== downloading $pkg, Debian's kernel for the VM"
	rm -rf "$kdir" && mkdir -p "$kdir/deb"
	(cd "$kdir/deb" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed') ||
		{ echo "cpu-check: apt-get download $pkg failed" >&2; exit 1; }
	dpkg-deb -x "$kdir"/deb/*.deb "$kdir"
	rm -rf "$kdir/deb"
	vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -1)
fi
kver=${vmlinuz##*/vmlinuz-}
moddir=$kdir/lib/modules/$kver
echo "== the lab's kernel and root, built here first (make kernel rootfs)"
make -s kernel rootfs

# The VM's initramfs: busybox, the modules for 9p and /init. Each module's
# dependencies come from its own .modinfo (no kmod needed); the VM's /init
# loads them in whatever order works.
modules_for() {
	local f deps d
	f=$(find "$moddir/kernel" \( -name "$1.ko" -o -name "$1.ko.xz" \) | head -1)
	[ -n "$f" ] || return 0	# built in
	deps=$(objcopy -O binary --only-section=.modinfo "$f" /dev/stdout | tr '\0' '\n' |
		sed -n 's/^depends=//p' | tr ',' ' ')
	for d in $deps; do modules_for "$d"; done
	echo "$f"
}
initrd=$out/initrd.cpio
list=$out/initrd.list
{
	echo "dir /bin 0755 0 0"; echo "dir /dev 0755 0 0"; echo "dir /proc 0755 0 0"
	echo "dir /sys 0755 0 0"; echo "dir /newroot 0755 0 0"; echo "dir /modules 0755 0 0"
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "file /bin/busybox /bin/busybox 0755 0 0"
	echo "file /init $top/scripts/cpu-check-init.sh 0755 0 0"
	for m in virtio_pci 9pnet_virtio 9p; do modules_for "$m"; done | awk '!seen[$0]++' | while read -r f; do
		echo "file /modules/$(basename "$f") $top/$f 0644 0 0"
	done
} > "$list"
build/obj/usr/gen_init_cpio "$list" > "$initrd"

if [ $kvm = 1 ]; then
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "cpu-check: --kvm, but /dev/kvm cannot be used here" >&2; exit 1; }
	accel=(-accel kvm)
else
	accel=(-accel tcg,thread=multi)
	echo "== QEMU emulates each CPU (TCG): a guest runs tens of times slower than here"
fi

failed=0 passed=0 total_failed=0 skipped=0
for cpu in "${cpus[@]}"; do
	dir=$out/$cpu
	res=$results/cpu-$cpu
	rm -rf "$dir" "$res" && mkdir -p "$dir"
	# What the VM runs, from the checkout (the VM sees it at the same path).
	cat > "$dir/run.sh" <<-EOF
		#!/bin/sh
		echo "cpu-check: \$(grep -m1 'model name' /proc/cpuinfo)"
		echo "cpu-check: FP flags: \$(grep -o -w 'avx512f\\|amx_tile\\|xsave\\|avx' /proc/cpuinfo | sort -u | tr '\\n' ' ')(sse only without these)"
		make -s lab-run LAB=$lab LAB_RESULTS=$res
	EOF
	echo "== $cpu: lab $lab in a VM (qemu -cpu $cpu, ${mem} MiB, $smp CPUs; console: $dir/vm.log)"
	start=$(date +%s)
	set +e
	timeout --foreground -k 10 "$timeout" qemu-system-x86_64 "${accel[@]}" -cpu "$cpu" \
		-m "$mem" -smp "$smp" -nodefaults -no-reboot -display none -serial stdio \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 quiet loglevel=4 CPUCHECK_TOP=$top CPUCHECK_RUN=$top/$dir/run.sh" \
		-virtfs "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$top,mount_tag=top,security_model=none,multidevs=remap" \
		< /dev/null > "$dir/vm.log" 2>&1
	qrc=$?
	set -e
	secs=$(( $(date +%s) - start ))
	count=$(grep -a -E '^[0-9]+ passed, [0-9]+ failed' "$dir/vm.log" | tail -1 || true)
	xsave=$(grep -a -h -o 'host FP state: [0-9]* bytes, [0-9]* of them' "$res/"*.console.log 2>/dev/null | head -1 | sed -e 's/.*host FP state: //' -e 's/ of them/ in frames/' || true)
	status=$(grep -a -o 'cpu-check: exit [0-9]*' "$dir/vm.log" | tail -1 | awk '{print $3}' || true)
	model=$(grep -a -m1 '^cpu-check: model name' "$dir/vm.log" | sed 's/.*: //' || true)
	if [ $qrc = 124 ]; then
		verdict="the VM timed out after ${timeout} s"
	elif [ -z "$status" ]; then
		verdict="the VM ended without running the lab (qemu exit $qrc); see $dir/vm.log"
	elif [ -z "$count" ]; then
		verdict="the lab printed no count (exit $status); see $dir/vm.log"
	else
		verdict="$count"
	fi
	printf '%-16s %-40s FP state %-32s %s (%d s)\n' "$cpu" "${model:-?}" "${xsave:-not reported}" "$verdict" "$secs"
	# Where it went wrong, for a log that keeps only this output (CI's).
	if [ -z "$count" ] || [ "$status" != 0 ]; then
		grep -a -v "support requested feature" "$dir/vm.log" | tail -n 8 | sed 's/^/    | /'
	fi
	# A VM that ran no lab still counts, as one failure, where results are added up.
	if [ ! -e "$res/summary.json" ]; then
		mkdir -p "$res"
		printf '{"passed": 0, "failed": 1, "skipped": 0, "error": "%s"}\n' "$verdict" > "$res/summary.json"
	fi
	case $count in *skipped*) s=${count##*failed, }; skipped=$((skipped + ${s%% *}));; esac
	if [ -n "$count" ] && [ "$status" = 0 ]; then
		passed=$((passed + ${count%% *}))
		f=${count#*, }; total_failed=$((total_failed + ${f%% *}))
	else
		failed=1
		[ -z "$count" ] || { passed=$((passed + ${count%% *})); f=${count#*, }; total_failed=$((total_failed + ${f%% *})); }
		[ -n "$count" ] || total_failed=$((total_failed + 1))
	fi
done
rm -f "$list"
echo "$passed passed, $total_failed failed, $skipped skipped (${#cpus[@]} CPU models)"
[ $failed = 0 ] && [ $total_failed = 0 ]
