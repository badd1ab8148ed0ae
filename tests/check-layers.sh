#!/bin/sh
# The layer check (build-aux/layers.awk, run by the Makefile after every compile) on made-up
# dependency files: an include that runs upward, directly or through a header, must fail the
# check naming the file; includes that follow docs/architecture.md must pass.  The layers'
# table comes from the Makefile (USES_daemon, USES_agents in the environment).
set -u
awkf=build-aux/layers.awk
tmp=$(mktemp -d /tmp/rocefab-layers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect 0|1 LAYER USES SOURCE DEPS...: the check's verdict on SOURCE with those includes
expect() {
	want=$1 layer=$2 uses=$3 src=$4
	shift 4
	printf 'build/obj/%s.o: %s %s\n' "${src%.c}" "$src" "$*" > "$tmp/x.d"
	for d in "$@"; do printf '%s:\n' "$d" >> "$tmp/x.d"; done
	awk -v src="$src" -v layer="$layer" -v uses="$uses" -f "$awkf" "$tmp/x.d" 2> "$tmp/err"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "layers: FAILED: $src with $* gave $got, want $want: $(cat "$tmp/err")"
		fail=1
	elif [ "$want" = 1 ] && ! grep -q "^$src: includes " "$tmp/err"; then
		echo "layers: FAILED: $src: no message naming the include: $(cat "$tmp/err")"
		fail=1
	fi
}

: "${USES_daemon:?} ${USES_agents:?}"
expect 0 daemon "$USES_daemon" daemon/alerts.c daemon/alerts.h daemon/store.h cc/localize.h lib/log.h
expect 1 daemon "$USES_daemon" daemon/alerts.c daemon/alerts.h api/api.h lib/log.h
# through a header: daemon/alerts.h would include api/internal.h
expect 1 daemon "$USES_daemon" daemon/alerts.c daemon/alerts.h api/internal.h daemon/store.h
expect 1 daemon "$USES_daemon" daemon/pingmesh.c ./agents/probe/probe.h
expect 0 agents "$USES_agents" agents/agent.c agents/agent.h agents/probe/probe.h lib/conf.h
expect 1 agents "$USES_agents" agents/agent.c agents/agent.h daemon/store.h
expect 1 agents "$USES_agents" agents/sim.c sim/sim.h
# system headers are none of ours
expect 0 agents "$USES_agents" agents/agent.c /usr/include/jansson.h
[ $fail -eq 0 ] && echo "layers: the check refuses upward includes and passes the others"
exit $fail
