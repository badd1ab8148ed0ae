#!/bin/sh
# Runs every cmocka unit-test binary given, keeps cmocka's own summaries in the output, and
# ends with one line for the whole tier.  Exit status: non-zero if any binary failed.
set -u
failed=0
passed_bins=0
total_tests=0
failed_tests=0
for t in "$@"; do
	out=$("$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	n=$(printf '%s\n' "$out" | sed -n 's/^\[==========\] \([0-9]*\) test(s) run\..*/\1/p' | tail -1)
	total_tests=$((total_tests + ${n:-0}))
	if [ $rc -ne 0 ]; then
		failed=$((failed + 1))
		# cmocka's own count; a crash (sanitizer abort) counts as one failure
		nf=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:.*/\1/p' | tail -1)
		failed_tests=$((failed_tests + ${nf:-1}))
		echo "unit: FAILED $t (exit $rc)"
	else
		passed_bins=$((passed_bins + 1))
	fi
done
echo "unit summary: $# test programs, $total_tests tests, $failed_tests failed, $failed programs failed"
[ $failed -eq 0 ]
