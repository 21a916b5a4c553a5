#!/bin/sh
# [KARCH=x86_64] kernel-config.sh SRC OBJ FRAGMENT...
#
# The kernel's merge_config.sh -n: the fragments (uml-config/base.config
# first) merged into one file, which `make ARCH=um allnoconfig` takes as
# its starting point (KCONFIG_ALLCONFIG), so that everything the fragments
# do not ask for is left out, the way kunit.py builds from a small
# kunitconfig. KARCH is the kernel's ARCH: um (the default), or x86_64 for
# the kernels of make smp-check. Then a check that every option the fragments ask for made
# it into the final .config (merge_config.sh only warns).
set -eu
src=$(cd "$1" && pwd)
mkdir -p "$2"
obj=$(cd "$2" && pwd)
shift 2
frags=""
for f in "$@"; do frags="$frags $(cd "$(dirname "$f")" && pwd)/$(basename "$f")"; done
# shellcheck disable=SC2086
(cd "$src" && ARCH=${KARCH:-um} scripts/kconfig/merge_config.sh -n -O "$obj" $frags) >"$obj/merge_config.log" 2>&1 ||
	{ tail -20 "$obj/merge_config.log" >&2; echo "kernel-config: merge_config.sh failed; see $obj/merge_config.log" >&2; exit 1; }
bad=0
for f in "$@"; do
	grep -E '^(CONFIG_[A-Z0-9_]+=|# CONFIG_[A-Z0-9_]+ is not set)' "$f" | while read -r line; do
		case $line in
		'# '*) opt=${line#\# }; opt=${opt%% *}
			! grep -q "^$opt=" "$obj/.config" || { echo "kernel-config: $f wants $opt unset, but it is set" >&2; echo x; } ;;
		*) grep -qx "$line" "$obj/.config" || { echo "kernel-config: $f wants $line, the final .config has: $(grep "^${line%%=*}=" "$obj/.config" || echo "${line%%=*} not set") (missing dependency?)" >&2; echo x; } ;;
		esac
	done
done | grep -q x && bad=1
[ $bad = 0 ] || exit 1
# Kconfig leaves an unchanged .config as it was: mark it as made now, or
# make would configure again on every run.
touch "$obj/.config"
echo "  CONFIG  $obj/.config from allnoconfig + $(for f in "$@"; do basename "$f"; done | tr '\n' ' ')"
