#!/bin/sh
# deps.sh check|install|ensure
#
#   check    list the Debian packages kevent-lab needs that are missing
#   install  install them with apt-get (as root), or print the command
#   ensure   install if missing and root; otherwise say what to run and fail
set -eu
PKGS="gcc make libc6-dev flex bison bc perl git xz-utils python3 python3-pytest
linux-source-6.1 libvdeplug-dev vde2 vdeplug libvdeplug-slirp busybox-static ccache procps e2fsprogs rsync
liburing-dev util-linux tcpdump strace curl nginx-light wrk qemu-system-x86
stress-ng libelf-dev"

missing() {
	for p in $PKGS; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
	done
}

mode=${1:-check}
miss=$(missing | tr '\n' ' ')
case $mode in
check)
	if [ -n "$miss" ]; then echo "missing: $miss"; exit 1; fi
	echo "all packages present";;
install|ensure)
	[ -z "$miss" ] && exit 0
	if [ "$(id -u)" = 0 ]; then
		echo "  DEPS    apt-get install $miss"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		# nginx is for the web lab's guests only: no service may start on
		# this machine's port 80 as it installs (Debian's policy-rc.d;
		# one that was there before stays as it was).
		policy=""
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			policy=/usr/sbin/policy-rc.d
			printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy
		fi
		# shellcheck disable=SC2086
		rc=0
		apt-get install -y -q --no-install-recommends $miss >/dev/null || rc=$?
		[ -z "$policy" ] || rm -f "$policy"
		[ $rc = 0 ] || exit $rc
	else
		echo "kevent-lab needs these Debian packages: $miss" >&2
		echo "Install them with:" >&2
		echo "  sudo apt-get install -y $miss" >&2
		exit 1
	fi;;
*)
	echo "usage: $0 check|install|ensure" >&2; exit 2;;
esac
