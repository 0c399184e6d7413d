#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian packages Spur needs to build and test, if any is missing. Run as root.
# Usage: scripts/deps.sh [build|quickstart|test|package|bench]
#   build: to build; quickstart: to build and run the README's first steps (gearman-tools for
#   gearman and gearadmin, netcat-openbsd for nc); test: to build and run make check (and
#   debootstrap for scripts/test-fresh.sh, which test-all.sh runs); package: to build the Debian
#   packages and run scripts/test-packages.sh; bench: to build and run bench/run.sh and
#   bench/curves.sh (gearmand to compare with, python3 and gnuplot for the curves' JSON and PNG
#   plots, postgresql for bench/store.sh). BUILD is the Build-Depends of
#   debian/control (plus build-essential, which Debian assumes); keep the two lists the same.
# The packages install without starting anything: gearman-job-server, prometheus, postgresql
# and exim4 (pulled in by some of them) would otherwise start daemons that hold the ports Spur
# uses (4730, 9090...). A policy-rc.d refuses every start during the install (unless the machine
# has one already), and the units and init scripts the new packages enabled are disabled after
# (their links removed even where systemd does not run, e.g. in a chroot or an image).
set -e
BUILD="build-essential autoconf automake libtool pkg-config libev-dev libjansson-dev libsqlite3-dev libsystemd-dev libmicrohttpd-dev libpq-dev libssl-dev"
QUICKSTART="gearman-tools netcat-openbsd"
TEST="openssl googletest libgtest-dev python3 python3-pytest prometheus python3-prometheus-client gearman-job-server gearman-tools netcat-openbsd curl clang libclang-rt-14-dev libgearman-client-perl php-cli php-gearman libgearman-dev libgearman-doc libboost-program-options-dev iproute2 postgresql tmux tzdata python3-pytest-xdist procps debootstrap sqlite3 chromium chromium-driver python3-selenium"
PACKAGE="debhelper dpkg-dev fakeroot lintian systemd gearman-tools python3 procps"
BENCH="gearman-job-server beanstalkd python3 gnuplot-nox postgresql openssl"
want="$BUILD"
[ "${1:-build}" = "quickstart" ] && want="$BUILD $QUICKSTART"
[ "${1:-build}" = "test" ] && want="$BUILD $TEST"
[ "${1:-build}" = "package" ] && want="$BUILD $PACKAGE"
[ "${1:-build}" = "bench" ] && want="$BUILD $BENCH"
missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
policy=/usr/sbin/policy-rc.d
before=$(mktemp)
trap 'rm -f "$before"' EXIT
trap 'exit 1' INT TERM
dpkg-query -W -f='${Package}\n' | sort >"$before"
ours=0
if [ ! -e "$policy" ]; then
    # invoke-rc.d and deb-systemd-invoke ask this before starting a service: 101 is "not allowed"
    trap 'rm -f "$before" "$policy"' EXIT
    printf '#!/bin/sh\n# scripts/deps.sh: no service starts while it installs\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    ours=1
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
if [ "$ours" = 1 ]; then
    rm -f "$policy"
fi
# policy-rc.d stops the starts, not the enables: disable the units and init scripts of the
# packages just installed (their dependencies included) that the install enabled. The links are
# removed whether systemd runs or not (a chroot, a container, an image built for later boots);
# only a running systemd is also asked to stop them.
new=$(dpkg-query -W -f='${Package}\n' | sort | comm -13 "$before" -)
live=0 # 1: systemd runs here, and can be asked about units and to stop them
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    live=1
fi
units=""
scripts=""
for p in $new; do
    for f in $(dpkg-query -L "$p" 2>/dev/null |
               grep -E '^(/usr)?/lib/systemd/system/[^/]+\.(service|socket|timer)$|^/etc/init\.d/[^/]+$'); do
        u=${f##*/}
        case $f in
        /etc/init.d/*)
            ls /etc/rc[2-5].d/S[0-9][0-9]"$u" >/dev/null 2>&1 && scripts="$scripts $u" ;;
        *)
            if ls /etc/systemd/system/*.wants/"$u" >/dev/null 2>&1 ||
               { [ "$live" = 1 ] && [ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ]; }; then
                units="$units $u"
            fi ;;
        esac
    done
done
if [ -n "$units$scripts" ]; then
    echo "deps: disabling what the install enabled:$units$scripts"
fi
for u in $units; do
    if [ "$live" = 1 ]; then
        systemctl disable --now "$u" >/dev/null 2>&1 || true
    elif command -v systemctl >/dev/null 2>&1; then
        systemctl disable "$u" >/dev/null 2>&1 || true
    else
        deb-systemd-helper disable "$u" >/dev/null 2>&1 || true
    fi
done
for s in $scripts; do
    if [ "$live" = 1 ]; then
        systemctl disable --now "$s" >/dev/null 2>&1 || true
    fi
    update-rc.d "$s" disable >/dev/null 2>&1 || true
done
