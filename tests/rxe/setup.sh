#!/bin/bash
# Fetches what the soft-RoCE guest needs into a cache under the build directory, once, with
# apt-get download (nothing is installed on the host; the packages are unpacked with dpkg -x):
#   kroot/      Debian's current kernel (the linux-image-amd64 metapackage's dependency, the
#               unsigned build), with modules.dep written by busybox (the host has no kmod)
#   userspace/  rdma-core's libibverbs1, ibverbs-providers (the rxe provider) and librdmacm1;
#               the guest's init lays this tree over its root, so the verbs library and the
#               provider the guest runs are these, not whatever the host has.  The versions are
#               in userspace/etc/rocefab-rxe-userspace (the guest reports them; test_rxe checks)
#   sysroot/    perftest and libpci3, for the latency comparison of make bench
# The rest (iproute2's ip and rdma, bash, python3, rocefab's binaries) is the host's, over 9p.
#   usage: tests/rxe/setup.sh CACHE_DIR      (prints the kernel's path and version)
set -euo pipefail
C=${1:?usage: setup.sh CACHE_DIR}
USERSPACE_PKGS="libibverbs1 ibverbs-providers librdmacm1"

kpkg() { apt-cache depends linux-image-amd64 2> /dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
# apt-get download needs the package lists; a fresh machine or container may have none
fetch() { # DIR PKG...: downloads into DIR, afresh
	local d=$1
	shift
	rm -rf "$d" && mkdir -p "$d"
	(cd "$d" && apt-get download -q "$@" 2>&1 | grep -v -e unsandboxed -e '^Get:' -e '^Fetched' || true)
	for p in "$@"; do
		ls "$d/${p}_"*.deb > /dev/null 2>&1 || { echo "setup: apt-get download $p failed" >&2; exit 1; }
	done
}

KPKG=$(kpkg)
if [ -z "$KPKG" ]; then
	echo "setup: no package lists; running apt-get update" >&2
	apt-get update -qq || { echo "setup: apt-get update failed (root needed)" >&2; exit 1; }
	KPKG=$(kpkg)
fi
[ -n "$KPKG" ] || { echo "setup: cannot find the kernel package behind linux-image-amd64" >&2; exit 1; }
KPKG=$KPKG-unsigned
if [ ! -f "$C/kroot/.done-$KPKG" ]; then
	fetch "$C/debs" "$KPKG" perftest libpci3
	rm -rf "$C/kroot" "$C/sysroot"
	dpkg -x "$C"/debs/${KPKG}_*.deb "$C/kroot"
	for d in "$C"/debs/perftest_*.deb "$C"/debs/libpci3_*.deb; do dpkg -x "$d" "$C/sysroot"; done
	KV=$(ls "$C/kroot/lib/modules")
	/bin/busybox depmod -b "$C/kroot" "$KV"
	touch "$C/kroot/.done-$KPKG"
fi
U=$C/userspace
if [ ! -f "$U/etc/rocefab-rxe-userspace" ]; then
	# shellcheck disable=SC2086
	fetch "$C/debs-userspace" $USERSPACE_PKGS
	rm -rf "$U"
	for d in "$C"/debs-userspace/*.deb; do dpkg -x "$d" "$U"; done
	rm -rf "$U/usr/share/doc" "$U/usr/share/lintian"
	for d in "$C"/debs-userspace/*.deb; do
		printf '%s=%s ' "$(dpkg-deb -f "$d" Package)" "$(dpkg-deb -f "$d" Version)"
	done | sed 's/ $/\n/' > "$U/etc/rocefab-rxe-userspace.tmp"
	mv "$U/etc/rocefab-rxe-userspace.tmp" "$U/etc/rocefab-rxe-userspace"
fi
KV=$(ls "$C/kroot/lib/modules")
echo "$C/kroot/boot/vmlinuz-$KV $KV"
