# Shared by the guest scripts (sourced; they run in the guest, chrooted on the host's root).
RESULTS=/tmp/results.jsonl
: > "$RESULTS"

# emit KEY=VALUE... JSON_FILE: one line of results (the JSON file's object gets the keys)
emit() {
	/usr/bin/python3 - "$@" >> "$RESULTS" <<'PY'
import json, sys
args = sys.argv[1:]
doc = {}
if args and not "=" in args[-1]:
    try:
        with open(args.pop()) as f:
            doc = {"result": json.load(f)}
    except Exception as e:
        doc = {"result": None, "parse_error": str(e)}
for a in args:
    k, v = a.split("=", 1)
    try:
        doc[k] = int(v)
    except ValueError:
        doc[k] = v
print(json.dumps(doc))
PY
}

# rxe on NETDEV with ADDR/24; waits for the port to be active
rxe_up() {
	local netdev=$1 addr=$2 i
	ip link set lo up
	if [ "$netdev" = rxedum0 ]; then ip link add rxedum0 type dummy; fi
	ip addr add "$addr/24" dev "$netdev"
	ip link set "$netdev" up
	rdma link add rxe0 type rxe netdev "$netdev" || { emit test=setup ok=0 "what=rdma link add failed"; return 1; }
	for i in $(seq 100); do
		grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2> /dev/null && break
		sleep 0.1
	done
	# the rdma-core packages laid over the root by init (tests/rxe/setup.sh wrote their versions)
	emit test=setup ok=1 "kernel=$(uname -r)" "state=$(cat /sys/class/infiniband/rxe0/ports/1/state)" \
		"userspace=$(cat /etc/rocefab-rxe-userspace 2> /dev/null || echo none)"
}

# wait_listen HOST PORT: until something accepts TCP connections there (at most 10 s).  A bare
# connect, closed at once: the probe server drops a session that says nothing.
wait_listen() {
	local i
	for i in $(seq 200); do
		(exec 3<> "/dev/tcp/$1/$2") 2> /dev/null && return 0
		sleep 0.05
	done
	emit test=setup ok=0 "what=nothing listens on $1 port $2" "server=$(head -c 600 /tmp/server.log 2> /dev/null)"
	return 1
}

# the results to the host (second serial port), then the exit status
finish() {
	emit test=done
	cat "$RESULTS" > /dev/ttyS1
	sync
	exit "$1"
}
