#!/bin/sh
# Static checks of the systemd units (this machine has no systemd as PID 1): systemd-analyze
# verify must print nothing, with ExecStart pointed at the built binaries (verify requires them
# to exist).  The example configuration files must pass --check-config.
set -eu
B=${ROCEFAB_BUILD:-build}
top=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for u in packaging/systemd/*.service; do
	sed "s|/usr/sbin/|$top/$B/|" "$u" > "$tmp/$(basename "$u")"
	out=$(systemd-analyze verify --man=no "$tmp/$(basename "$u")" 2>&1) || fail=1
	if [ -n "$out" ]; then
		echo "units: $u: $out"
		fail=1
	else
		echo "units: $u verified"
	fi
done
# the agent with its DCQCN drop-in (packaging/systemd/rocefab-agent.service.d/dcqcn.conf)
mkdir -p "$tmp/with-dropin/rocefab-agent.service.d"
sed "s|/usr/sbin/|$top/$B/|" packaging/systemd/rocefab-agent.service > "$tmp/with-dropin/rocefab-agent.service"
cp packaging/systemd/rocefab-agent.service.d/dcqcn.conf "$tmp/with-dropin/rocefab-agent.service.d/"
out=$(cd "$tmp/with-dropin" && systemd-analyze verify --man=no rocefab-agent.service 2>&1) || fail=1
if [ -n "$out" ]; then
	echo "units: rocefab-agent.service with dcqcn.conf: $out"
	fail=1
else
	echo "units: rocefab-agent.service with its dcqcn.conf drop-in verified"
fi
"$B/rocefabd" --config packaging/rocefabd.conf --check-config > /dev/null || fail=1
"$B/rocefab-agent" --config packaging/rocefab-agent.conf --dump-config > /dev/null || fail=1
echo "units: example configurations valid"
exit $fail
