#!/bin/bash
# make bench, inside one soft-RoCE guest: 64 B RDMA WRITE latency of rocefab-probe's ping-pong
# next to perftest's ib_write_lat (the same method: both sides write, each polls its memory,
# half round trips), in the same boot and alternating round by round so that neither gets the
# quieter moment; then rocefab-probe's signaled write (completion latency, what the pingmesh
# measures) and compare (RDMA SEND against TCP, CPU time per probe).
#   usage (in the guest): guest-bench.sh REPO BUILD_DIR ITERS ROUNDS
set -u
cd "$1" || exit 71
B=$2
N=${3:-10000}
ROUNDS=${4:-3}
SYS=$1/build/rxe/sysroot # perftest and libpci3, unpacked by tests/rxe/setup.sh
. tests/rxe/guest-lib.sh
rxe_up rxedum0 10.11.0.1 || finish 1
# perftest wants the GID index: the RoCE v2 GID that carries the IPv4 address
GIDX=
for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
	i=${f##*/}
	if grep -q '0000:0000:0000:0000:0000:ffff:0a0b' "$f" 2> /dev/null &&
		grep -q 'RoCE v2' "/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i" 2> /dev/null; then
		GIDX=$i
		break
	fi
done
[ -n "$GIDX" ] || { emit test=setup ok=0 "what=no RoCE v2 IPv4 GID on rxe0"; finish 1; }
PT="env LD_LIBRARY_PATH=$SYS/usr/lib/x86_64-linux-gnu $SYS/usr/bin/ib_write_lat"
# -h exits 1 by design: what tells that it runs is its usage text
$PT -h 2>&1 | grep -q Usage || { emit test=setup ok=0 "what=perftest does not run"; finish 1; }
"$B/rocefab-probe" server -d rxe0 --listen 10.11.0.1:9770 > /tmp/server.log 2>&1 &
server=$!
wait_listen 10.11.0.1 9770 || finish 1
# perftest converts cycles to microseconds with /proc/cpuinfo's "cpu MHz", which this guest's
# kernel does not print (it prints inf): ask it for cycles (-C) and convert with the TSC
# frequency the kernel calibrated (QEMU's TCG hands the guest the host's TSC)
MHZ=$(dmesg | sed -n 's/.*Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -1)
[ -n "$MHZ" ] || MHZ=$(dmesg | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' | tail -1)
[ -n "$MHZ" ] || { emit test=setup ok=0 "what=no TSC frequency in dmesg"; finish 1; }
emit test=tsc "mhz=$MHZ" "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
fail=0
for r in $(seq "$ROUNDS"); do
	# perftest: the server listens on its port 18515; the client retries until it is there
	echo "@@ round $r: ib_write_lat"
	timeout 120 $PT -d rxe0 -x "$GIDX" -s 64 -n "$N" -F -C > /tmp/pt-server.txt 2>&1 &
	ptsrv=$!
	ok=0
	for i in $(seq 100); do
		if timeout 120 $PT -d rxe0 -x "$GIDX" -s 64 -n "$N" -F -C 10.11.0.1 > /tmp/pt.txt 2>&1; then
			ok=1
			break
		fi
		grep -q -i "couldn't connect\|Unable to open file descriptor" /tmp/pt.txt || break
		sleep 0.1
	done
	wait $ptsrv
	emit test=perftest "round=$r" "rc=$((1 - ok))" "tries=$i" "out=$(grep -A1 '#bytes' /tmp/pt.txt | tail -1)" \
		"err=$(grep -i -m3 'error\|fail' /tmp/pt.txt | head -c 300)"
	[ $ok = 1 ] || fail=1
	echo "@@ round $r: rocefab-probe"
	timeout 120 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t write --pingpong -s 64 -n "$N" -j > /tmp/p.json 2> /tmp/p.err
	rc=$?
	emit test=ours "round=$r" "rc=$rc" "stderr=$(head -c 300 /tmp/p.err)" /tmp/p.json
	[ $rc = 0 ] || fail=1
done
timeout 120 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t write -s 64 -n "$N" -j > /tmp/p.json 2> /tmp/p.err
emit test=signaled "rc=$?" /tmp/p.json
timeout 300 "$B/rocefab-probe" compare 10.11.0.1 -d rxe0 -s 64 -n "$N" -j > /tmp/p.json 2> /tmp/p.err
rc=$?
emit test=compare "rc=$rc" "stderr=$(head -c 300 /tmp/p.err)" /tmp/p.json
[ $rc = 0 ] || fail=1
kill $server 2> /dev/null
finish $fail
