#!/bin/bash
# make bench: the performance table.  Every figure is measured in this run, next to a reference
# measured in the same run where one exists; nothing here passes or fails on a wall-clock bound.
set -euo pipefail
B=${ROCEFAB_BUILD:-build}
work=$(mktemp -d /tmp/rocefab-bench-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 100); do curl -sf "$1" > /dev/null && return 0; sleep 0.1; done; return 1; }

echo "rocefab benchmarks on $(nproc) cores ($(uname -r)), commit $(git describe --always --dirty 2>/dev/null || echo ?)"
echo

# (a) ingest throughput
# bench_ingest is a whole fleet on one address (a connection per agent): above the default
# api.max_client_connections (64), which is per client address
p=$(port)
"$B/rocefabd" --db "$work/ingest.db" token add bench --role agent --agent 'bench-*' | tail -1 > "$work/agent.token"
"$B/rocefabd" --db "$work/ingest.db" --listen "127.0.0.50:$p" -o store.queue=4096 \
	-o api.max_client_connections=0 \
	-o daemon.log_level=warning > "$work/rocefabd-ingest.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.50:$p/api/v1/health"
"$B/bench/bench_ingest" "http://127.0.0.50:$p" "$work/agent.token" "$work/reference.db" \
	--agents 200 --ports 8 --counters 60 --rounds "${BENCH_ROUNDS:-10}"
# (a') the fast PFC lane's cost on the same rocefabd: 1,104 hosts' compact PFC reports
"$B/bench/bench_ingest" "http://127.0.0.50:$p" "$work/agent.token" --pfc "${pids[-1]}" \
	--agents 1104 --rounds "${BENCH_ROUNDS:-10}"
kill "${pids[-1]}"; wait "${pids[-1]}" || true
echo

# (b) GET /api/v1/hosts with 100 hosts, next to a minimal libmicrohttpd responder
p=$(port)
"$B/rocefabd" --db "$work/rest.db" token add bench --role agent --agent 'bench-*' | tail -1 > "$work/agent2.token"
"$B/rocefabd" --db "$work/rest.db" token add viewer --role viewer | tail -1 > "$work/viewer.token"
run_rest() { # cache_ttl
	"$B/rocefabd" --db "$work/rest.db" --listen "127.0.0.51:$p" -o api.cache_ttl="$1" \
		-o api.max_client_connections=0 \
		-o daemon.log_level=warning > "$work/rocefabd-rest.log" 2>&1 &
	pids+=($!)
	wait_http "http://127.0.0.51:$p/api/v1/health"
}
run_rest 100ms
"$B/bench/bench_ingest" "http://127.0.0.51:$p" "$work/agent2.token" "$work/reference2.db" \
	--agents 100 --ports 2 --counters 10 --rounds 1 > /dev/null
tok=$(cat "$work/viewer.token")
curl -sf -H "Authorization: Bearer $tok" "http://127.0.0.51:$p/api/v1/hosts" > "$work/hosts.json"
hosts=$(/usr/bin/python3 -c "import json,sys; print(json.load(open('$work/hosts.json'))['count'])")
wrk_rate() { wrk -t1 -c32 -d"${BENCH_WRK_SECONDS:-6}s" "$@" | awk '/Requests\/sec/ {print $2}'; }
ours=$(wrk_rate -H "Authorization: Bearer $tok" "http://127.0.0.51:$p/api/v1/hosts")
kill "${pids[-1]}"; wait "${pids[-1]}" || true
run_rest 0
ours_nocache=$(wrk_rate -H "Authorization: Bearer $tok" "http://127.0.0.51:$p/api/v1/hosts")
kill "${pids[-1]}"; wait "${pids[-1]}" || true
p2=$(port)
"$B/bench/mhd_min" 127.0.0.52 "$p2" 2 "$work/hosts.json" &
pids+=($!)
wait_http "http://127.0.0.52:$p2/"
ref=$(wrk_rate "http://127.0.0.52:$p2/api/v1/hosts")
kill "${pids[-1]}"; wait "${pids[-1]}" || true
/usr/bin/python3 - "$hosts" "$(stat -c %s "$work/hosts.json")" "$ours" "$ours_nocache" "$ref" <<'PY'
import sys
hosts, size, ours, nocache, ref = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
print(f"rest         GET /api/v1/hosts ({hosts} hosts, {size} bytes), wrk -t1 -c32, 2 server threads:")
print(f"             rocefabd {ours:,.0f} req/s (api.cache_ttl=100ms), {nocache:,.0f} req/s (no cache)")
print(f"reference    minimal libmicrohttpd responder, same body: {ref:,.0f} req/s")
print(f"ratio        {ours/ref:.2f} ({nocache/ref:.2f} without cache); target >= 0.50: {'met' if ours/ref >= 0.5 else 'NOT MET'}")
PY
echo

# (c) the agent on a host with 8 ports
"$B/tools/sysfs-replay" copy tests/data/hosts/gpu-a2 "$work/host8" --nics 8
"$B/bench/bench_agent" "$work/host8" 500
# (c') the agent on a 64-port SONiC switch, through the switch's redis
/usr/bin/python3 tests/bench/bench_sonic.py "$B" "${BENCH_SONIC_ITERS:-200}"
echo

# (d) the simulator: the reference scenario, then the same workload on 1,024 hosts
echo "sim          the issue quotes ~22 s for ns-3 (HPCC simulator) and ~7 s for htsim on this"
echo "             machine for the reference scenario; they are not run here"
"$B/rocefab-sim" run sim/scenarios/ls64-websearch30.json --quiet --json "$work/ls64.json" > /dev/null
"$B/rocefab-sim" run sim/scenarios/ls1024-websearch30.json --quiet --json "$work/ls1024.json" > /dev/null
/usr/bin/python3 - "$work/ls64.json" "$work/ls1024.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for name, d, hosts in (("ls64-websearch30", a, 64), ("ls1024-websearch30", b, 1024)):
    r = d["run"]
    print(f"sim          {name}: {d['flows']['completed']} flows, {r['data_packets']:,} data packets, "
          f"{r['events']:,} events in {r['wall_s']:.2f} s")
    print(f"             {r['data_packets_per_s']:,.0f} data packets/s, {r['events_per_s']:,.0f} events/s, "
          f"peak RSS {r['peak_rss_kb'] / 1024:.1f} MB ({r['peak_rss_kb'] / hosts:.0f} KB per host)")
ra = a["run"]
print(f"targets      ls64: >= 1,000,000 packets/s: {'met' if ra['data_packets_per_s'] >= 1e6 else 'NOT MET'}, "
      f"<= 3 s: {'met' if ra['wall_s'] <= 3 else 'NOT MET'}, <= 100 MB: {'met' if ra['peak_rss_kb'] <= 100 * 1024 else 'NOT MET'}")
PY
echo

# (e) rocefabd ingesting a 1,024-host, 80-switch simulated fabric (in-process virtual agents)
mkdir -p "$work/fabric"
/usr/bin/python3 tests/bench/bench_fabric.py "$B" "$work/fabric" "${BENCH_FABRIC_SECONDS:-30}"
echo

# (f) the probe engine on real verbs: soft-RoCE in a QEMU guest, next to perftest's ib_write_lat
/usr/bin/python3 tests/bench/bench_rxe.py "$B" "${BENCH_RXE_ITERS:-10000}" "${BENCH_RXE_ROUNDS:-3}"
echo

# (g) the pingmesh matrix as the results table grows (synthetic results, the daemon's GET)
mkdir -p "$work/pingmesh"
/usr/bin/python3 tests/bench/bench_pingmesh.py "$B" "$work/pingmesh"
echo

# (h) the pingmesh localization at 1,024 hosts: every pass's loc_analyze_all, healthy and on bad days
"$B/bench/bench_localize" --runs "${BENCH_LOCALIZE_RUNS:-5}"
