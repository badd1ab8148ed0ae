#!/bin/bash
# make demo: rocefabd with three agents on recorded host trees whose counters sysfs-replay
# advances (a stand-in for real hosts until rocefab-sim serves a whole fabric, issue 4).
# Ctrl-C stops everything.  DEMO_LISTEN=ADDR:PORT changes the address; DEMO_DURATION=SECONDS
# stops by itself after that long (used by the tests).
set -euo pipefail
B=${ROCEFAB_BUILD:-build}
listen=${DEMO_LISTEN:-127.0.0.1:9750}
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
for t in agents viewer admin; do
	role=$t; [ "$t" = agents ] && role=agent
	"$B/rocefabd" --db "$work/rocefab.db" token add "$t" --role "$role" | tail -n 1 > "$work/$t.token"
	chmod 600 "$work/$t.token"
done
for h in gpu-a1 gpu-a2 stor-b1; do
	"$B/tools/sysfs-replay" copy "tests/data/hosts/$h" "$work/$h"
done

"$B/rocefabd" --db "$work/rocefab.db" --listen "$listen" -o daemon.log_target=stderr \
	> "$work/rocefabd.log" 2>&1 &
pids+=($!)
for i in $(seq 100); do
	curl -sf "$url/api/v1/health" > /dev/null 2>&1 && break
	kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/rocefabd.log"; exit 1; }
	sleep 0.1
done
"$B/tools/sysfs-replay" run "$work/gpu-a1" "$work/gpu-a2" "$work/stor-b1" --interval 1s &
pids+=($!)
for h in gpu-a1 gpu-a2 stor-b1; do
	"$B/rocefab-agent" --id "$h" --sysfs-root "$work/$h" --server "$url" \
		--token-file "$work/agents.token" --spool-dir "$work/spool-$h" \
		-o agent.log_target=stderr > "$work/agent-$h.log" 2>&1 &
	pids+=($!)
done

cat <<MSG

  rocefab demo is running: rocefabd and three agents (two mlx5 GPU hosts, one soft-RoCE
  storage host) whose counters advance every second.

  REST API    $url/api/v1/hosts        (token: $work/viewer.token)
  Prometheus  $url/metrics
  Health      $url/api/v1/health

  Try:
    export ROCEFAB_SERVER=$url ROCEFAB_TOKEN_FILE=$work/viewer.token
    $B/rocefabctl hosts
    $B/rocefabctl hosts gpu-a1
    $B/rocefabctl counters gpu-a1:mlx5_0:1 roce_tx_bytes pfc_rx_pause_frames np_cnp_sent
    curl -s -H "Authorization: Bearer \$(cat $work/viewer.token)" $url/metrics | grep pfc_rx

  Ctrl-C stops everything.
MSG

if [ -n "${DEMO_DURATION:-}" ]; then
	sleep "$DEMO_DURATION"
	export ROCEFAB_SERVER=$url ROCEFAB_TOKEN_FILE=$work/viewer.token
	"$B/rocefabctl" hosts
	"$B/rocefabctl" counters gpu-a1:mlx5_0:1 roce_tx_bytes pfc_rx_pause_frames np_cnp_sent
	exit 0
fi
wait "${pids[0]}"
