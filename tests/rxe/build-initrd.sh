#!/bin/bash
# Builds the guest's initramfs: static busybox, the kernel modules soft-RoCE and the host
# mount need (with their dependencies, in load order), and tests/rxe/init as PID 1.
#   usage: tests/rxe/build-initrd.sh CACHE_DIR OUTPUT
set -euo pipefail
C=${1:?usage: build-initrd.sh CACHE_DIR OUTPUT}
OUT=${2:?usage: build-initrd.sh CACHE_DIR OUTPUT}
HERE=$(cd "$(dirname "$0")" && pwd)
KV=$(ls "$C/kroot/lib/modules")
KM=$C/kroot/lib/modules/$KV
R=$C/initramfs
rm -rf "$R"
mkdir -p "$R"/{bin,sbin,proc,sys,dev,tmp,host,ovl,root,etc}
cp /bin/busybox "$R/bin/busybox"
for a in $(/bin/busybox --list); do [ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"; done
ln -sf ../bin/busybox "$R/sbin/modprobe" # request_module() runs /sbin/modprobe
# rdma_rxe needs the crc32 shash at run time, not as a symbol dependency: load it first
TOP="crc32_generic crc32-pclmul rdma_rxe rdma_ucm ib_umad virtio_net virtio_pci dummy 9p 9pnet_virtio overlay"
declare -A seen
ORDER=()
visit() {
	local rel=$1 deps
	[ -n "${seen[$rel]:-}" ] && return
	seen[$rel]=1
	deps=$(grep -E "^$rel:" "$KM/modules.dep" | cut -d: -f2)
	for d in $deps; do visit "$d"; done
	ORDER+=("$rel")
}
for m in $TOP; do
	rel=$(grep -E "/$m\.ko(\.xz|\.zst)?:" "$KM/modules.dep" | head -1 | cut -d: -f1)
	[ -n "$rel" ] || { echo "build-initrd: module $m not found in $KV" >&2; exit 1; }
	visit "$rel"
done
: > "$R/etc/modules.order"
for rel in "${ORDER[@]}"; do
	mkdir -p "$R/lib/modules/$KV/$(dirname "$rel")"
	case $rel in
	*.xz) xz -dc "$KM/$rel" > "$R/lib/modules/$KV/${rel%.xz}"; rel=${rel%.xz} ;;
	*.zst) zstd -dc "$KM/$rel" > "$R/lib/modules/$KV/${rel%.zst}"; rel=${rel%.zst} ;;
	*) cp "$KM/$rel" "$R/lib/modules/$KV/$rel" ;;
	esac
	echo "$rel" >> "$R/etc/modules.order"
done
cp "$KM/modules.builtin" "$KM/modules.order" "$R/lib/modules/$KV/" 2> /dev/null || true
/bin/busybox depmod -b "$R" "$KV"
install -m 755 "$HERE/init" "$R/init"
(cd "$R" && find . | /bin/busybox cpio -o -H newc -R 0:0 2> /dev/null) | gzip -6 > "$OUT"
