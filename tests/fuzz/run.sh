#!/bin/sh
# Runs libFuzzer targets one after another (FUZZ_JOBS at once), FUZZ_TIME seconds each, and
# prints one line per target: runs, runs per second, coverage, corpus, and the result.
#
#   tests/fuzz/run.sh BUILD/fuzz TARGET...       (make fuzz, make fuzz-smoke)
#
# The working corpus of a target is BUILD/fuzz/corpus-TARGET; it is seeded (files not there
# yet) from tests/fuzz/corpus/TARGET and the files and directories named by seeds= in
# tests/fuzz/TARGET.options, which may also set max_len=, timeout= (seconds per input) and
# dict= (a libFuzzer dictionary).  A finding leaves its input in BUILD/fuzz/TARGET-crash-*
# (leak-, timeout-, oom-) and the whole output in BUILD/fuzz/TARGET.log.
# Exit status: non-zero when any target found something.
set -u

if [ "${1:-}" = --one ]; then
	dir=$2
	t=$3
	max_len=4096
	timeout=10
	seeds=
	dict=
	[ -f "tests/fuzz/$t.options" ] && . "tests/fuzz/$t.options"
	corpus="$dir/corpus-$t"
	log="$dir/$t.log"
	mkdir -p "$corpus"
	for s in "tests/fuzz/corpus/$t" $seeds; do
		[ -e "$s" ] || continue
		for f in "$s" "$s"/*; do
			[ -f "$f" ] || continue
			# a seed's name is its path, so that two seed directories never collide
			n=$(printf '%s' "$f" | tr '/' '_')
			[ -e "$corpus/seed-$n" ] || cp "$f" "$corpus/seed-$n"
		done
	done
	before=$(ls "$dir" | grep -c "^$t-\(crash\|leak\|timeout\|oom\|slow-unit\)-")
	"$dir/fuzz_$t" -max_total_time="${FUZZ_TIME:-60}" -max_len="$max_len" -timeout="$timeout" \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/$t-" \
		${dict:+-dict="$dict"} "$corpus" >"$log" 2>&1
	rc=$?
	after=$(ls "$dir" | grep -c "^$t-\(crash\|leak\|timeout\|oom\|slow-unit\)-")
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$log" | tail -1)
	if [ $rc -eq 0 ] && [ "$after" -le "$before" ]; then
		res=ok
	else
		art=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tail -1)
		# the sanitizer's verdict, and for an invariant (abort) the target's line that failed
		what=$(grep -m1 'runtime error: ' "$log" ||
			grep -m1 '^SUMMARY: ' "$log" | sed 's/^SUMMARY: //; s/ (\/[^)]*)//; s/ (BuildId[^)]*)//')
		where=$(grep -m1 -o 'in [A-Za-z_0-9]* [^ ]*tests/fuzz/[^ ]*' "$log")
		case "$what" in *deadly*) what="$what${where:+ $where}" ;; esac
		res="FAILED (exit $rc${what:+: $what}${art:+; input $art}; log $log)"
	fi
	printf 'fuzz %-9s %10s runs %7s/s  %-34s %s\n' "$t" "${runs:-?}" "${rate:-?}" "${cov:-cov: ?}" "$res"
	[ "$res" = ok ]
	exit $?
fi

dir=$1
shift
jobs=${FUZZ_JOBS:-1}
echo "fuzz: $# targets, ${FUZZ_TIME:-60} s each, $jobs at a time (logs in $dir/TARGET.log)"
start=$(date +%s)
printf '%s\n' "$@" | xargs -P "$jobs" -I{} "$0" --one "$dir" {}
rc=$?
echo "fuzz: $(( $(date +%s) - start )) s, $([ $rc -eq 0 ] && echo 'no finding' || echo 'FINDINGS: see above')"
exit $rc
