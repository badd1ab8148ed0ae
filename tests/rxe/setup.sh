#!/bin/bash
# Fetches what the soft-RoCE guest needs into a cache under the build directory, once:
# Debian's current kernel (the linux-image-amd64 metapackage's dependency, unsigned build) and
# perftest with libpci3 (for the latency comparison of make bench).  Nothing is installed on
# the host: the packages are unpacked with dpkg -x.  The host's own userspace (libibverbs, the
# rxe provider, iproute2's ip and rdma, and rocefab's binaries) runs in the guest over 9p.
#   usage: tests/rxe/setup.sh CACHE_DIR      (prints the kernel's path and version)
set -euo pipefail
C=${1:?usage: setup.sh CACHE_DIR}
mkdir -p "$C/debs"
KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$KPKG" ] || { echo "setup: cannot find the kernel package behind linux-image-amd64" >&2; exit 1; }
KPKG=$KPKG-unsigned
if [ ! -f "$C/kroot/.done-$KPKG" ]; then
	(cd "$C/debs" && apt-get download -q "$KPKG" perftest libpci3 2>&1 | grep -v -e unsandboxed -e '^Get:' -e '^Fetched' || true)
	ls "$C"/debs/${KPKG}_*.deb > /dev/null
	rm -rf "$C/kroot" "$C/sysroot"
	dpkg -x "$C"/debs/${KPKG}_*.deb "$C/kroot"
	for d in "$C"/debs/perftest_*.deb "$C"/debs/libpci3_*.deb; do dpkg -x "$d" "$C/sysroot"; done
	KV=$(ls "$C/kroot/lib/modules")
	/bin/busybox depmod -b "$C/kroot" "$KV" # the host has no kmod
	touch "$C/kroot/.done-$KPKG"
fi
KV=$(ls "$C/kroot/lib/modules")
echo "$C/kroot/boot/vmlinuz-$KV $KV"
