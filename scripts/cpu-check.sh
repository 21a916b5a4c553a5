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
# guest runs several times slower (lab default: 13 s here, 100 s there),
# so the default lab is the small `cpu` lab, and TCG has no AVX-512. With
# --kvm the VM runs on this CPU (models with AVX-512 where the machine has
# it), where /dev/kvm works: nested in some cloud VMs it does not (a CPU
# model's MSRs are refused, or the VM never prints a line).
#
# The VM's root is this machine's own, read-only (virtio 9p), so the lab
# runs there with the programs it runs with here; only the checkout is
# shared writable, for the lab's results, and the VM has no network device.
# Its memory and /tmp are its own: nothing it does reaches the machine but
# the checkout's build/ directory.
#
# Usage: scripts/cpu-check.sh [--cpu MODEL]... [--lab LAB]... [--kvm]
#                             [--results DIR] [--mem MiB] [--timeout SECONDS]
# The labs (default: cpu) run one after the other in each model's VM, each
# against its signature where it has one (lab/labs/LAB/expected). Results go
# to DIR/cpu-MODEL for one lab, DIR/cpu-MODEL-LAB for several (default DIR:
# build/cpu-check); each VM's console to build/cpu-check/MODEL/vm.log.
# Prints one line per CPU model (the VM's XSAVE size, what UML said, the
# lab's count) and ends with the lab's counts summed over the models.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

cpus=() labs=() mem=3072 timeout=2400 smp=2 kvm=0 results=build/cpu-check
usage() { sed -n '/^# Usage:/,/^# its VM/s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--cpu) cpus+=("${2:?--cpu needs a QEMU CPU model}"); shift 2;;
	--lab) labs+=("${2:?--lab needs a lab name}"); shift 2;;
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
[ ${#labs[@]} -gt 0 ] || labs=(cpu)
for lab in "${labs[@]}"; do
	[ -d "lab/labs/$lab" ] || { echo "cpu-check: no lab '$lab' in lab/labs/" >&2; exit 2; }
done
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
	echo "== QEMU emulates each CPU (TCG): a guest runs several times slower than here"
fi

# Where lab @2's results go in the VM of CPU model @1.
res_of() {
	if [ ${#labs[@]} = 1 ]; then echo "$results/cpu-$1"; else echo "$results/cpu-$1-$2"; fi
}

failed=0 passed=0 total_failed=0 skipped=0
for cpu in "${cpus[@]}"; do
	dir=$out/$cpu
	rm -rf "$dir" && mkdir -p "$dir"
	# What the VM runs, from the checkout (the VM sees it at the same path).
	{
		echo '#!/bin/sh'
		echo "echo \"cpu-check: \$(grep -m1 'model name' /proc/cpuinfo)\""
		echo "echo \"cpu-check: FP flags: \$(grep -o -w 'avx512f\\|amx_tile\\|xsave\\|avx' /proc/cpuinfo | sort -u | tr '\\n' ' ')(sse only without these)\""
		echo "rc=0"
		for lab in "${labs[@]}"; do
			res=$(res_of "$cpu" "$lab")
			rm -rf "$res"
			expect=""
			[ ! -f "lab/labs/$lab/expected" ] || expect=EXPECT=1
			echo "echo \"cpu-check: lab $lab\""
			echo "make -s lab-run LAB=$lab LAB_RESULTS=$res $expect || rc=1"
		done
		echo 'exit $rc'
	} > "$dir/run.sh"
	echo "== $cpu: lab ${labs[*]} in a VM (qemu -cpu $cpu, ${mem} MiB, $smp CPUs; console: $dir/vm.log)"
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
	status=$(grep -a -o 'cpu-check: exit [0-9]*' "$dir/vm.log" | tail -1 | awk '{print $3}' || true)
	model=$(grep -a -m1 '^cpu-check: model name' "$dir/vm.log" | sed 's/.*: //' || true)
	xsave=$(grep -a -h -o 'host FP state: [0-9]* bytes, [0-9]* of them' \
		"$(res_of "$cpu" "${labs[0]}")"/*.console.log 2>/dev/null | head -1 |
		sed -e 's/.*host FP state: //' -e 's/ of them/ in frames/' || true)
	# Each lab-run ends with its count: add them up, the labs that gave none as failures.
	p=0 f=0 k=0 missing=0
	for lab in "${labs[@]}"; do
		res=$(res_of "$cpu" "$lab")
		if [ -e "$res/summary.json" ]; then
			c=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("passed",0), d.get("failed",0), d.get("skipped",0))' "$res/summary.json")
			[ ! -e "$res/expect.json" ] ||
				c=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["matched"], len(d["changed"])+len(d["missing"])+len(d["new"]), 0)' "$res/expect.json")
			set -- $c
			p=$((p + $1)) f=$((f + $2)) k=$((k + $3))
		else
			missing=$((missing + 1))
			mkdir -p "$res"
			# A VM that ran no lab still counts, as one failure, where results are added up.
			printf '{"passed": 0, "failed": 1, "skipped": 0, "error": "no results from the VM"}\n' > "$res/summary.json"
		fi
	done
	if [ $qrc = 124 ]; then
		verdict="the VM timed out after ${timeout} s"
	elif [ -z "$status" ]; then
		verdict="the VM ended without running the labs (qemu exit $qrc); see $dir/vm.log"
	elif [ $missing != 0 ]; then
		verdict="$missing lab(s) left no results (exit $status); see $dir/vm.log"
	else
		verdict="$p passed, $f failed, $k skipped"
	fi
	printf '%-16s %-40s FP state %-32s %s (%d s)\n' "$cpu" "${model:-?}" "${xsave:-not reported}" "$verdict" "$secs"
	# Where it went wrong, for a log that keeps only this output (CI's).
	if [ $missing != 0 ] || [ "$status" != 0 ] || [ $f != 0 ]; then
		failed=1
		grep -a -v "support requested feature" "$dir/vm.log" | tail -n 8 | sed 's/^/    | /'
	fi
	passed=$((passed + p)) total_failed=$((total_failed + f + missing)) skipped=$((skipped + k))
done
rm -f "$list"
echo "$passed passed, $total_failed failed, $skipped skipped (${#cpus[@]} CPU models)"
[ $failed = 0 ] && [ $total_failed = 0 ]
