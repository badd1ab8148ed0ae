#!/bin/sh
# Install the Debian packages rocefab needs to build and to run its tests, idempotently:
# only what is missing is installed, and nothing is done (not even apt-get update) when
# everything is present. Uses sudo when not root.
#
# Usage: packaging/install-deps.sh [build|check|bench|rxe|deb|all]...   (default: check)
#   build  compilers, -dev libraries and the dashboard's chart library (libjs-chart.js)
#   check  build + what `make check` runs (pytest, jsonschema, prometheus, promtool, chromium,
#          Node.js and npm for the OpenAPI linter, ...)
#   bench  check + load generators (wrk)
#   rxe    check + what the soft-RoCE guest tests run (qemu, busybox); the guest's kernel and
#          rdma-core (libibverbs, the rxe provider) are fetched with apt-get download into
#          build/rxe by tests/rxe/setup.sh, not installed
#   deb    build + what make deb needs (debhelper, lintian)
#   all    everything above
set -eu

build_pkgs="build-essential pkg-config clang libclang-rt-14-dev
libmicrohttpd-dev libgnutls28-dev libjansson-dev libnl-3-dev libnl-route-3-dev libnl-genl-3-dev
libibverbs-dev librdmacm-dev libsqlite3-dev libcurl4-openssl-dev libcmocka-dev libsystemd-dev
libhiredis-dev zlib1g-dev libsnappy-dev
libjs-chart.js"
check_pkgs="python3 python3-pytest python3-requests python3-jsonschema python3-yaml openssl
prometheus sqlite3 iproute2 ethtool curl procps systemd
chromium chromium-driver python3-selenium fonts-dejavu-core libjs-chart.js
redis-server lldpd nodejs npm zsh"
bench_pkgs="wrk"
rxe_pkgs="qemu-system-x86 busybox-static"
deb_pkgs="debhelper lintian fakeroot"

want=""
[ $# -eq 0 ] && set -- check
for tier in "$@"; do
	case "$tier" in
	build) want="$want $build_pkgs" ;;
	check) want="$want $build_pkgs $check_pkgs" ;;
	bench) want="$want $build_pkgs $check_pkgs $bench_pkgs" ;;
	rxe) want="$want $build_pkgs $check_pkgs $rxe_pkgs" ;;
	deb) want="$want $build_pkgs $deb_pkgs" ;;
	all) want="$want $build_pkgs $check_pkgs $bench_pkgs $rxe_pkgs $deb_pkgs" ;;
	-h | --help)
		sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "install-deps: unknown tier '$tier' (build, check, bench, rxe, deb, all)" >&2
		exit 2
		;;
	esac
done

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] && continue
	# npm also comes inside another vendor's nodejs package (NodeSource), which conflicts with
	# Debian's npm: a working npm is enough
	[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
	missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing packages:$missing, and apt-get is not available;" \
		"install them with your package manager" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "install-deps: need root or sudo to install:$missing" >&2
		exit 1
	}
	sudo=sudo
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The tests start the services they use (redis-server, prometheus, lldpd) themselves: a
# policy-rc.d refusing every start keeps the packages' scripts from starting them here (one the
# machine already has is left alone).
policy=/usr/sbin/policy-rc.d
if [ ! -e $policy ]; then
	printf '#!/bin/sh\n# install-deps.sh: no service starts while it installs\nexit 101\n' |
		$sudo tee $policy >/dev/null
	$sudo chmod 755 $policy
	trap '$sudo rm -f $policy' EXIT
fi
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
