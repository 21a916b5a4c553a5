#!/bin/sh
# kernel-config.sh SRC OBJ FRAGMENT...
#
# `make ARCH=um defconfig`, then the fragments merged on top with the
# kernel's merge_config.sh, then a check that every option the fragments
# ask for made it into the final .config (merge_config.sh only warns).
set -eu
src=$(cd "$1" && pwd)
mkdir -p "$2"
obj=$(cd "$2" && pwd)
shift 2
make -s -C "$src" O="$obj" ARCH=um defconfig >/dev/null
ARCH=um "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$@" >"$obj/merge_config.log"
make -s -C "$src" O="$obj" ARCH=um olddefconfig >/dev/null
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
echo "  CONFIG  $obj/.config from defconfig + $(for f in "$@"; do basename "$f"; done | tr '\n' ' ')"
