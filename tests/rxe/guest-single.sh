#!/bin/bash
# One guest, no NIC: soft-RoCE on a dummy netdev (rxe loops packets to its own address), the
# probe server and a client for every operation, and rocefab-agent --once on the linux backend
# before and after a known probe run (tests/rxe/test_rxe.py checks the results).
#   usage (in the guest): guest-single.sh REPO BUILD_DIR ITERS
set -u
cd "$1" || exit 71
B=$2
N=${3:-500}
. tests/rxe/guest-lib.sh
rxe_up rxedum0 10.11.0.1 || finish 1
"$B/rocefab-probe" server -d rxe0 --listen 10.11.0.1:9770 > /tmp/server.log 2>&1 &
wait_listen 10.11.0.1 9770 || finish 1
fail=0
for op in write read send cas faa ud udp tcp; do
	timeout 120 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t "$op" -s 64 -n "$N" -j > /tmp/p.json 2> /tmp/p.err
	rc=$?
	emit test=probe "op=$op" size=64 "iters=$N" "rc=$rc" "stderr=$(head -c 300 /tmp/p.err)" /tmp/p.json
	[ $rc = 0 ] || fail=1
done
for size in 8 4096 65536; do
	timeout 120 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t write -s "$size" -n 100 -j > /tmp/p.json 2> /tmp/p.err
	rc=$?
	emit test=probe op=write "size=$size" iters=100 "rc=$rc" /tmp/p.json
	[ $rc = 0 ] || fail=1
done
for size in 64 4096; do
	timeout 120 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t write --pingpong -s "$size" -n "$N" -j > /tmp/p.json 2> /tmp/p.err
	rc=$?
	emit test=pingpong op=write "size=$size" "iters=$N" "rc=$rc" "stderr=$(head -c 300 /tmp/p.err)" /tmp/p.json
	[ $rc = 0 ] || fail=1
done
timeout 120 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t write -s 64 -n 200 --paths 4 -j > /tmp/p.json 2> /tmp/p.err
emit test=paths op=write paths=4 "rc=$?" /tmp/p.json
# errors must be clear, exit non-zero, never hang
timeout 30 "$B/rocefab-probe" client 10.11.0.1 -d nosuch0 -t write -n 5 > /dev/null 2> /tmp/p.err
emit test=bad_device "rc=$?" "stderr=$(head -c 300 /tmp/p.err)"
timeout 30 "$B/rocefab-probe" client 10.11.0.9 -d rxe0 -t write -n 5 --timeout 1s > /dev/null 2> /tmp/p.err
emit test=unreachable "rc=$?" "stderr=$(head -c 300 /tmp/p.err)"
# the agent reads the real rxe hw_counters; a probe run of N writes moves them by 2N
A="$B/rocefab-agent --once --id guest -o linux.devices=rxe0 -o agent.all_counters=true -o agent.log_target=stderr"
$A > /tmp/before.json 2> /tmp/agent.err
emit test=agent_before "rc=$?" /tmp/before.json
timeout 120 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t write -s 64 -n "$N" -j > /tmp/p.json 2> /tmp/p.err
emit test=agent_probe op=write "iters=$N" "rc=$?" /tmp/p.json
$A > /tmp/after.json 2>> /tmp/agent.err
emit test=agent_after "rc=$?" /tmp/after.json
kill %1 2> /dev/null
finish $fail
