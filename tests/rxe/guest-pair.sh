#!/bin/bash
# Two guests joined by an emulated Ethernet link (QEMU's UDP socket backend on the host's
# loopback).  Role server (10.11.0.1) runs the probe server until the client says it is done;
# role client (10.11.0.2) probes it over RDMA.
#   usage (in the guest): guest-pair.sh REPO BUILD_DIR server|client ITERS
set -u
cd "$1" || exit 71
B=$2
ROLE=$3
N=${4:-100}
. tests/rxe/guest-lib.sh
if [ "$ROLE" = server ]; then
	rxe_up eth0 10.11.0.1 || finish 1
	"$B/rocefab-probe" server -d rxe0 --listen 10.11.0.1:9770 > /tmp/server.log 2>&1 &
	# the client connects to port 9771 when it is done (or we give up after 240 s)
	/usr/bin/python3 -c "
import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('10.11.0.1', 9771)); s.listen(1); s.settimeout(240); s.accept()" 2> /dev/null
	emit test=server "sessions=$(grep -c session /tmp/server.log)"
	kill %1 2> /dev/null
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
/usr/bin/python3 -c "import socket; socket.create_connection(('10.11.0.1', 9771), 10)" 2> /dev/null
finish $fail
