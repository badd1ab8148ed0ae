#!/bin/bash
# make demo: rocefabd and a simulated fabric (rocefab-sim serve, sim/scenarios/demo.json: 2
# spines, 4 leaves, 32 hosts, a ring all-reduce plus periodic incast, a pause storm a minute
# in) whose virtual agents report every host and switch every second.
# Ctrl-C stops everything.  DEMO_LISTEN=ADDR:PORT moves the REST API, DEMO_SIM=ADDR:PORT the
# simulator's control API; DEMO_DIR is where the database and logs go; DEMO_SCENARIO another
# scenario (DEMO_AGENTS: the ids its virtual agents' token is bound to when its devices are not
# named like a leaf-spine's h<i>, leaf<i>, spine<i>); DEMO_DURATION=SECONDS stops by itself after
# that long (used by the tests).
set -euo pipefail
B=${ROCEFAB_BUILD:-build}
listen=${DEMO_LISTEN:-127.0.0.1:9750}
simctl=${DEMO_SIM:-127.0.0.1:9760}
scenario=${DEMO_SCENARIO:-sim/scenarios/demo.json}
agents=${DEMO_AGENTS:-h*,leaf*,spine*}
work=${DEMO_DIR:-$B/demo}
url=http://$listen
pids=()

cleanup() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	echo "demo: stopped (logs and database in $work)"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

rm -rf "$work"
mkdir -p "$work"
# token files others can read are refused: created 0600 (umask 077) from the start
for t in agents viewer operator; do
	role=(--role "$t"); [ "$t" = agents ] && role=(--role agent --agent "$agents")
	# (its log, the database's creation, goes to the log: the terminal stays quiet until the banner)
	(umask 077; "$B/rocefabd" --db "$work/rocefab.db" token add "$t" "${role[@]}" 2>> "$work/tokens.log" |
		tail -n 1 > "$work/$t.token") || { cat "$work/tokens.log"; exit 1; }
done

# the simulated fabric's samples carry fabric time, which falls behind the wall clock at the
# demo's pace (0.01): with the default 6 h of raw samples they would be pruned as they come
# after six hours of demo; kept 30 days here (the retention is on the wall clock)
"$B/rocefabd" --db "$work/rocefab.db" --listen "$listen" -o daemon.log_target=stderr \
	-o api.web_root="${DEMO_WEB:-web}" -o store.retention=30d -o store.retention_1m=30d \
	> "$work/rocefabd.log" 2>&1 &
pids+=($!)
for i in $(seq 100); do
	curl -sf "$url/api/v1/health" > /dev/null 2>&1 && break
	kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/rocefabd.log"; exit 1; }
	sleep 0.1
done
"$B/rocefab-sim" serve "$scenario" --control "$simctl" --agents "$url" \
	--token-file "$work/agents.token" --spool-dir "$work/spool" > "$work/sim.log" 2>&1 &
pids+=($!)
for i in $(seq 100); do
	curl -sf "http://$simctl/v1/status" > /dev/null 2>&1 && break
	kill -0 "${pids[1]}" 2>/dev/null || { cat "$work/sim.log"; exit 1; }
	sleep 0.1
done

cat <<MSG

  rocefab demo is running: rocefabd and a simulated RoCEv2 fabric (2 spines, 4 leaves,
  32 hosts at 100 Gb/s; ring all-reduce plus incast) paced at 10 ms of fabric time per
  second, every host and switch reported by its virtual agent each second (and its PFC
  counters every 200 ms, for the deadlock and storm detector).  A NIC pause storm from h7
  starts one minute in and lasts 30 s: rocefabctl alerts names it (pause_storm h7), and the
  pingmesh's finding under leaf0 that follows is attributed to it.  The congestion-control
  tuner runs in advise mode (decisions every 10 s): rocefabctl cc proposals lists what it
  would change in ECN and DCQCN and why; an operator applies or rejects each.

  Time: the simulated devices report fabric time, so rocefabctl and the REST API show
  windows and rates per fabric second (and say so); Prometheus's rate() over the same
  counters is per wall second, 100 times lower at this pace.

  Dashboard   $url/#token=$(cat "$work/operator.token")
              (opens with the operator token; $url/#token=$(cat "$work/viewer.token") only looks)
  REST API    $url/api/v1/topology     (tokens: $work/viewer.token, $work/operator.token)
  Prometheus  $url/metrics
  Simulator   http://$simctl/v1/status   (control API: devices, counters, faults)

  Try:
    export ROCEFAB_SERVER=$url ROCEFAB_TOKEN_FILE=$work/viewer.token
    $B/rocefabctl switches
    $B/rocefabctl links
    $B/rocefabctl counters leaf0:leaf0:h3 tx_bytes queue_depth_bytes ecn_marked_packets pfc_rx_pause_frames
    $B/rocefabctl counters h7:nic0:1 roce_tx_bytes np_cnp_sent rp_cnp_handled
    ROCEFAB_TOKEN_FILE=$work/operator.token $B/rocefabctl set ecn leaf3 h24 3 kmin_bytes=100KB kmax_bytes=400KB --reason "demo"
    $B/rocefabctl changes
    $B/rocefabctl probes          # the pingmesh: latency matrix, what it points at, alerts
    $B/rocefabctl alerts          # a minute in: the pause storm, named as h7's
    $B/rocefabctl detector        # the PFC detector: modes, fast lane, findings
    ROCEFAB_TOKEN_FILE=$work/operator.token $B/rocefabctl mitigate ID   # isolate h7 (advise mode)
    $B/rocefabctl cc              # the tuner: mode, signals, each class's ECN/DCQCN
    $B/rocefabctl cc proposals    # what it proposes, with the evidence
    ROCEFAB_TOKEN_FILE=$work/operator.token $B/rocefabctl cc apply ID   # or: cc reject ID
    curl -s -X POST -d '{"type":"lossy_link","link":"leaf1-spine0","loss":0.05}' http://$simctl/v1/faults
    $B/rocefabctl probes --window 5s     # a few seconds later: the lossy link, named
    curl -s -X POST -d '{"type":"link_down","link":"leaf0-spine0"}' http://$simctl/v1/faults

  Ctrl-C stops everything.
MSG

if [ -n "${DEMO_DURATION:-}" ]; then
	# (in the background: a signal's trap runs at once, not after a foreground sleep)
	sleep "$DEMO_DURATION" &
	pids+=($!)
	wait $!
	export ROCEFAB_SERVER=$url ROCEFAB_TOKEN_FILE=$work/viewer.token
	"$B/rocefabctl" switches
	"$B/rocefabctl" counters leaf0:leaf0:h3 tx_bytes queue_depth_bytes ecn_marked_packets
	# (the localization pass's own window: what its alerts come from)
	"$B/rocefabctl" probes --window 10s | head -n 16
	"$B/rocefabctl" alerts
	"$B/rocefabctl" cc
	exit 0
fi
wait "${pids[0]}"
