#!/bin/sh
# Records this host's RDMA and network counters into a tree that rocefab-agent can read with
# --sysfs-root (for support cases and tests): the sysfs files the agent reads, `ethtool -S`
# of every RDMA netdev, lldpd's neighbours (when lldpd runs) and the kernel boot id.  Run it twice a few seconds apart into two
# directories to give a developer rates to look at.
#   usage: record-host.sh OUTDIR
set -eu
out=${1:?usage: record-host.sh OUTDIR}
mkdir -p "$out"
copy() { # copies regular files of a sysfs directory (no recursion into devices)
	src=$1 dst=$out$1
	mkdir -p "$dst"
	for f in "$src"/*; do
		[ -f "$f" ] && [ -r "$f" ] && cat "$f" > "$dst/${f##*/}" 2>/dev/null || true
	done
}
for dev in /sys/class/infiniband/*; do
	[ -e "$dev" ] || continue
	d=/sys/class/infiniband/${dev##*/}
	copy "$d"
	if [ -L "$d/device/driver" ]; then
		mkdir -p "$out$d/device"
		drv=$(basename "$(readlink "$d/device/driver")")
		mkdir -p "$out/sys/bus/pci/drivers/$drv"
		ln -sfn "../../../../bus/pci/drivers/$drv" "$out$d/device/driver"
	fi
	for p in "$d"/ports/*; do
		copy "$p"
		copy "$p/counters"
		copy "$p/hw_counters"
		mkdir -p "$out$p/gid_attrs/ndevs"
		nd=$(cat "$p/gid_attrs/ndevs/0" 2>/dev/null || true)
		[ -n "$nd" ] || nd=$(cat "$d/parent" 2>/dev/null || true)
		[ -n "$nd" ] || continue
		echo "$nd" > "$out$p/gid_attrs/ndevs/0"
		copy "/sys/class/net/$nd"
		copy "/sys/class/net/$nd/statistics"
		mkdir -p "$out/ethtool"
		ethtool -S "$nd" > "$out/ethtool/$nd" 2>/dev/null || true
	done
done
# the neighbours lldpd sees, when it runs
if command -v lldpcli > /dev/null 2>&1; then
	mkdir -p "$out/lldp"
	lldpcli -f json0 show neighbors > "$out/lldp/neighbors.json0" 2>/dev/null || rm -f "$out/lldp/neighbors.json0"
fi
mkdir -p "$out/proc/sys/kernel/random"
cat /proc/sys/kernel/random/boot_id > "$out/proc/sys/kernel/random/boot_id"
echo "recorded into $out; check it with: rocefab-agent --once --sysfs-root $out"
