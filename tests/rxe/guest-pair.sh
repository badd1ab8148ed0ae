#!/bin/bash
# Two guests joined by an emulated Ethernet link (QEMU's UDP socket backend on the host's
# loopback).  Role server (10.11.0.1) runs the probe server until the client says it is done;
# role client (10.11.0.2) probes it over RDMA.
# With PM (a directory the host prepared: rocefabd.conf and its database with the tokens
# agents, ops and viewer), the pingmesh too: the server guest runs rocefabd (at 10.11.0.1:8088)
# and agent g1, the client guest agent g2; both agents serve probes on :9772 over rxe0, and
# rocefabd has them probe each other with RDMA WRITE and READ.  The client polls the matrix until both
# directions are in it, and hands the matrix and g2's results back.
#   usage (in the guest): guest-pair.sh REPO BUILD_DIR server|client ITERS [PM]
set -u
cd "$1" || exit 71
B=$2
ROLE=$3
N=${4:-100}
PM=${5:-}
API=http://10.11.0.1:8088
. tests/rxe/guest-lib.sh

# agent ID ADDRESS: a rocefab-agent on the live linux backend (the real rxe0), probing with verbs
agent() {
	"$B/rocefab-agent" --id "$1" --server "$API" --token-file "$PM/agents.token" --interval 0.5s \
		--spool-dir /run/spool -L info -o agent.log_target=stderr -o agent.jitter=0 \
		-o "probe.listen=$2:9772" -o probe.device=rxe0 > /tmp/agent.log 2>&1 &
}

if [ "$ROLE" = server ]; then
	rxe_up eth0 10.11.0.1 || finish 1
	"$B/rocefab-probe" server -d rxe0 --listen 10.11.0.1:9770 > /tmp/server.log 2>&1 &
	if [ -n "$PM" ]; then
		"$B/rocefabd" --config "$PM/rocefabd.conf" > /tmp/rocefabd.log 2>&1 &
		for i in $(seq 300); do
			curl -sf "$API/api/v1/health" > /dev/null && break
			sleep 0.1
		done
		curl -sf -X PUT -H "Authorization: Bearer $(cat "$PM/ops.token")" -H "Content-Type: application/json" \
			-d '{"ops": ["write", "read"], "size": 64, "count": 50, "timeout_us": 100000}' "$API/api/v1/probes/config" \
			> /tmp/config.json 2>&1
		emit test=pingmesh-server "rc=$?" "health_tries=$i" /tmp/config.json
		agent g1 10.11.0.1
	fi
	# the client connects to port 9771 when it is done (or we give up after 400 s)
	/usr/bin/python3 -c "
import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('10.11.0.1', 9771)); s.listen(1); s.settimeout(400); s.accept()" 2> /dev/null
	emit test=server "sessions=$(grep -c session /tmp/server.log)" \
		"rocefabd=$(tail -c 600 /tmp/rocefabd.log 2> /dev/null)" "agent=$(tail -c 600 /tmp/agent.log 2> /dev/null)"
	kill $(jobs -p) 2> /dev/null
	finish 0
fi
rxe_up eth0 10.11.0.2 || finish 1
# wait for the server: the first UDP ping that gets an answer
for i in $(seq 60); do
	timeout 10 "$B/rocefab-probe" client 10.11.0.1 -t udp -n 1 --timeout 1s > /dev/null 2>&1 && break
	sleep 1
done
emit test=reach "tries=$i"
fail=0
for op in write read send cas faa ud; do
	timeout 200 "$B/rocefab-probe" client 10.11.0.1 -d rxe0 -t "$op" -s 64 -n "$N" --timeout 3s -j > /tmp/p.json 2> /tmp/p.err
	rc=$?
	emit test=probe "op=$op" size=64 "iters=$N" "rc=$rc" "stderr=$(head -c 300 /tmp/p.err)" /tmp/p.json
done
if [ -n "$PM" ]; then
	agent g2 10.11.0.2
	V="Authorization: Bearer $(cat "$PM/viewer.token")"
	# both directions in the matrix with a full round each: 50 writes on each of 2 paths (the
	# matrix is of the first op; the reads go with them, in the results)
	for i in $(seq 600); do
		curl -sf -H "$V" "$API/api/v1/probes/matrix?window=20s" > /tmp/m.json &&
			/usr/bin/python3 -c '
import json, sys
p = {(x["src"], x["dst"]): x for x in json.load(open(sys.argv[1]))["pairs"]}
sys.exit(0 if all(k in p and p[k]["n"] >= 100 for k in (("g1", "g2"), ("g2", "g1"))) else 1)' /tmp/m.json &&
			break
		sleep 0.2
	done
	emit test=pingmesh "tries=$i" /tmp/m.json
	curl -sf -H "$V" "$API/api/v1/probes/results?src=g2&dst=g1" > /tmp/r.json
	emit test=pingmesh-results "agent=$(tail -c 600 /tmp/agent.log)" /tmp/r.json
	kill $(jobs -p) 2> /dev/null
fi
/usr/bin/python3 -c "import socket; socket.create_connection(('10.11.0.1', 9771), 10)" 2> /dev/null
finish $fail
