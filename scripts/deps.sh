#!/bin/sh
# Installs the Debian packages Spur needs to build and test, if any is missing. Run as root.
# Usage: scripts/deps.sh [build|test]
set -e
BUILD="build-essential autoconf automake libtool pkg-config libev-dev libjansson-dev libsqlite3-dev"
TEST="googletest libgtest-dev python3 python3-pytest gearman-job-server gearman-tools netcat-openbsd clang libclang-rt-14-dev libgearman-client-perl php-cli php-gearman libgearman-dev libgearman-doc libboost-program-options-dev iproute2"
want="$BUILD"
[ "${1:-build}" = "test" ] && want="$BUILD $TEST"
missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
