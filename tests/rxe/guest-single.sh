#!/bin/bash
# One guest, no NIC: soft-RoCE on a dummy netdev (rxe loops packets to its own address), the
# probe server and a client for every operation, and rocefab-agent --once on the linux backend
# before and after a known probe run (tests/rxe/test_rxe.py checks the results).  With PM (the
# directory test_rxe.py prepares: rocefabd's configuration and tokens), the QPs too: rocefabd
# and agent g1 in this guest, the agent reading the QP table through RDMA netlink while
# rocefab-probe and qp-hold hold RC and UD QPs, and qp-hold's RC QP driven into the error state.
#   usage (in the guest): guest-single.sh REPO BUILD_DIR ITERS [PM]
set -u
cd "$1" || exit 71
B=$2
N=${3:-500}
PM=${4:-}
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
# QPs through RDMA netlink: the answers as the kernel gives them (recorded for the unit tests),
# then live through rocefabd
if [ -n "$PM" ]; then
	API=http://10.11.0.1:8088
	V="Authorization: Bearer $(cat "$PM/viewer.token")"
	"$B/rocefabd" --config "$PM/rocefabd.conf" > /tmp/rocefabd.log 2>&1 &
	# the probe engine's QPs: an RC (write) and a UD client, long runs at low priority, each
	# with a server of its own (a server serves one session at a time)
	"$B/rocefab-probe" server -d rxe0 --listen 10.11.0.1:9775 > /tmp/server2.log 2>&1 &
	wait_listen 10.11.0.1 9775
	nice -n 19 timeout 300 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t write -s 64 -n 1000000 \
		--timeout 10s > /dev/null 2> /tmp/pw.err &
	nice -n 19 timeout 300 "$B/rocefab-probe" client 10.11.0.1 --port 9775 -d rxe0 -t ud -s 64 -n 1000000 \
		--timeout 10s > /dev/null 2> /tmp/pu.err &
	"$B/tools/qp-hold" rxe0 > /tmp/hold.out 2>&1 &
	hold=$!
	for i in $(seq 300); do grep -q ready /tmp/hold.out && break; sleep 0.1; done
	mkdir -p /tmp/rec
	for i in $(seq 100); do
		"$B/rocefab-agent" --once --id g1 -o linux.devices=rxe0 -o agent.log_target=stderr \
			-o linux.rdma_record=/tmp/rec > /tmp/qpreport.json 2> /tmp/qpagent.err
		/usr/bin/python3 -c '
import json, sys
q = json.load(open(sys.argv[1])).get("qps") or {}
bt = q.get("by_type") or {}
mine = {(x["comm"], x["type"]) for x in q.get("items", [])}
# what test_rxe.py checks: the probe clients, the QPs of their servers and qp-hold, all up
sys.exit(0 if bt.get("RC", 0) >= 3 and bt.get("UD", 0) >= 3 and {("rocefab-probe", "RC"), ("rocefab-probe", "UD"),
          ("qp-hold", "RC"), ("qp-hold", "UD")} <= mine else 1)' /tmp/qpreport.json && break
		sleep 0.2
	done
	emit test=qp_once "tries=$i" "hold=$(cat /tmp/hold.out)" "stderr=$(head -c 300 /tmp/qpagent.err)" \
		"holdcomm=$(cat /proc/$hold/comm 2>&1)" "probe_err=$(head -c 300 /tmp/pw.err) $(head -c 300 /tmp/pu.err)" \
		/tmp/qpreport.json
	# the recorded answers, base64, for tests/data/rdma-netlink
	/usr/bin/python3 -c '
import base64, json, os, sys
d = sys.argv[1]
print(json.dumps({f: base64.b64encode(open(os.path.join(d, f), "rb").read()).decode() for f in sorted(os.listdir(d))}))' \
		/tmp/rec > /tmp/rec.json
	emit test=qp_recorded /tmp/rec.json
	for i in $(seq 300); do curl -sf "$API/api/v1/health" > /dev/null && break; sleep 0.1; done
	"$B/rocefab-agent" --id g1 --server "$API" --token-file "$PM/agents.token" --interval 0.5s \
		--spool-dir /run/spool -L info -o agent.log_target=stderr -o agent.jitter=0 \
		-o linux.devices=rxe0 -o linux.qp_interval=1s > /tmp/agent.log 2>&1 &
	# rocefabd shows them, then the RC QP of qp-hold enters the error state and is counted
	for i in $(seq 300); do
		curl -sf -H "$V" "$API/api/v1/hosts/g1/qps" > /tmp/q1.json && break
		sleep 0.2
	done
	emit test=qp_rest "tries=$i" /tmp/q1.json
	kill -USR1 $hold
	for i in $(seq 300); do grep -q err /tmp/hold.out && break; sleep 0.1; done
	for i in $(seq 300); do
		curl -sf -H "$V" "$API/api/v1/hosts/g1/qps" > /tmp/q2.json &&
			/usr/bin/python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["errors_total"] >= 1 else 1)' /tmp/q2.json &&
			break
		sleep 0.2
	done
	emit test=qp_error "tries=$i" "hold=$(cat /tmp/hold.out)" /tmp/q2.json
	curl -sf -H "$V" "$API/metrics" > /tmp/metrics.txt
	emit test=qp_metrics "qps=$(grep -c '^rocefab_host_qp' /tmp/metrics.txt)" \
		"errors=$(grep '^rocefab_host_qp_errors_total' /tmp/metrics.txt)"
	"$B/rocefabctl" --server "$API" --token-file "$PM/viewer.token" qps g1 > /tmp/ctl.txt 2>&1
	emit test=qp_cli "rc=$?" "out=$(head -c 1500 /tmp/ctl.txt)"
fi
kill $(jobs -p) 2> /dev/null
finish $fail
