#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian packages Spur needs to build and test, if any is missing. Run as root.
# Usage: scripts/deps.sh [build|test|package|bench]
#   build: to build; test: to build and run make check; package: to build the Debian packages
#   and run scripts/test-packages.sh; bench: to build and run bench/run.sh and bench/curves.sh
#   (gearmand to compare with, python3 and gnuplot for the curves' JSON and PNG plots, postgresql
#   for bench/store.sh). BUILD is the Build-Depends of debian/control (plus
#   build-essential, which Debian assumes); keep the two lists the same.
set -e
BUILD="build-essential autoconf automake libtool pkg-config libev-dev libjansson-dev libsqlite3-dev libsystemd-dev libmicrohttpd-dev libpq-dev libssl-dev"
TEST="openssl googletest libgtest-dev python3 python3-pytest prometheus python3-prometheus-client gearman-job-server gearman-tools netcat-openbsd curl clang libclang-rt-14-dev libgearman-client-perl php-cli php-gearman libgearman-dev libgearman-doc libboost-program-options-dev iproute2 postgresql tmux tzdata python3-pytest-xdist sqlite3"
PACKAGE="debhelper dpkg-dev fakeroot lintian systemd gearman-tools python3"
BENCH="gearman-job-server python3 gnuplot-nox postgresql openssl"
want="$BUILD"
[ "${1:-build}" = "test" ] && want="$BUILD $TEST"
[ "${1:-build}" = "package" ] && want="$BUILD $PACKAGE"
[ "${1:-build}" = "bench" ] && want="$BUILD $BENCH"
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
