#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing, then builds and runs the whole test suite twice: a normal build and an
# AddressSanitizer + UndefinedBehaviorSanitizer build. Slow tests run too (SPUR_SLOW=1).
# As root on a machine with dpkg, it first runs scripts/test-packages.sh (build the Debian
# packages in a temporary copy, lintian, install, run the installed spurd, purge), printing its
# last line; SPUR_SKIP_PACKAGES=1 skips that (e.g. where the packages are installed for real).
# As root where scripts/test-fresh.sh can run (debootstrap and unshare installed, in a git clone,
# not already in its root), it first runs `scripts/test-fresh.sh quick`: the README's quick
# start and first job on a fresh minbase Debian 12 (SPUR_SKIP_FRESH=1 skips it).
# While a build or a suite runs, a line every 20 s says which, for how long, and how far
# make check is. Exits non-zero if any test fails. The output ends with the test runners' own
# summaries.
set -e
cd "$(dirname "$0")/.."
top=$(pwd)
started=$(date +%s)
ticker=""
# progress STEP [BUILD_DIR]: from now on, every 20 s, prints STEP, the time since this script
# started and, with BUILD_DIR (where make check runs), the number of test programs finished and
# how far the wire tests are (pytest's percentage); progress with no argument stops it (before
# the summaries, which end the output).
progress() {
    if [ -n "$ticker" ]; then
        kill "$ticker" 2>/dev/null || true
        wait "$ticker" 2>/dev/null || true
        ticker=""
    fi
    [ $# -gt 0 ] || return 0
    step=$1 bdir=${2:-}
    echo "=== $step [$(($(date +%s) - started))s]"
    (
        while sleep 20; do
            more=""
            if [ -n "$bdir" ]; then
                more=", $(grep -c -E '^(PASS|FAIL|XFAIL|XPASS|ERROR|SKIP):' "$bdir/check.out" 2>/dev/null || true) test programs done"
                pct=$(grep -o '\[ *[0-9]*%\]' "$bdir/tests/run-wire.sh.log" 2>/dev/null | tail -n 1 | tr -d '[ ]')
                [ -z "$pct" ] || more="$more, wire tests $pct"
            fi
            echo "... $step: $(($(date +%s) - started))s$more"
        done
    ) &
    ticker=$!
}
trap 'progress' EXIT
progress "installing what is missing: scripts/deps.sh test"
sh scripts/deps.sh test
packages=0
if [ "${SPUR_SKIP_PACKAGES:-0}" != "1" ] && [ "$(id -u)" = 0 ] && command -v dpkg >/dev/null 2>&1
then
    packages=1
    progress "installing what is missing: scripts/deps.sh package"
    sh scripts/deps.sh package
fi
progress
# configure refuses an out-of-tree build beside an in-tree one: clean that first
if [ -f config.status ]; then
    echo "cleaning the in-tree build (make distclean) for the out-of-tree build"
    make distclean >/dev/null || rm -f config.status
fi
autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
export SPUR_SLOW="${SPUR_SLOW:-1}"
jobs=$(nproc)
status=0

run_build() {
    name=$1; shift
    dir="$top/build-$name"
    progress "$name build: configure $*"
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && "$top/configure" --quiet --enable-werror "$@") || { progress; return 1; }
    progress "$name build: make"
    make -C "$dir" -j"$jobs" >/dev/null || { progress; return 1; }
    progress "$name build: make check (unit tests, then the wire tests)" "$dir"
    if make -C "$dir" -j"$jobs" check >"$dir/check.out" 2>&1; then rc=0; else rc=1; fi
    progress
    echo "=== $name build: make check done [$(($(date +%s) - started))s]"
    grep -E '^(PASS|FAIL|XFAIL|XPASS|ERROR|SKIP):|^# ' "$dir/check.out" || true
    for log in "$dir"/tests/unit/*.log; do
        [ -f "$log" ] || continue
        echo "--- $(basename "$log" .log) ($name)"
        grep -E '^\[  (PASSED|FAILED) |^\[==========\] .* ran\.|^\[  FAILED  \]' "$log" || tail -n 20 "$log"
    done
    # automake appends its own PASS/FAIL line to the log: show it first, so the output ends with
    # pytest's summary line
    wire_log="$dir/tests/run-wire.sh.log"
    echo "--- wire tests ($name): $(tail -n 1 "$wire_log")"
    sed '$d' "$wire_log"
    return $rc
}

# run_packages runs scripts/test-packages.sh with its output in build-packages/, and prints its
# result line (and the end of its log on a failure). It works on a copy of the tree, so the
# builds below are not affected, and it purges what it installed.
run_packages() {
    dir="$top/build-packages"
    rm -rf "$dir" && mkdir -p "$dir"
    progress "Debian packages: scripts/test-packages.sh"
    if sh scripts/test-packages.sh >"$dir/test-packages.log" 2>&1; then
        progress
        echo "--- packages: $(tail -n 1 "$dir/test-packages.log")"
        return 0
    fi
    progress
    tail -n 40 "$dir/test-packages.log"
    echo "--- packages: FAIL (log: $dir/test-packages.log)"
    return 1
}

# run_fresh runs scripts/test-fresh.sh quick with its output in build-fresh/, and prints its
# result line (and the end of its log on a failure).
run_fresh() {
    dir="$top/build-fresh"
    rm -rf "$dir" && mkdir -p "$dir"
    progress "fresh Debian 12: scripts/test-fresh.sh quick"
    if sh scripts/test-fresh.sh quick >"$dir/test-fresh.log" 2>&1; then
        progress
        echo "--- fresh: $(tail -n 1 "$dir/test-fresh.log")"
        return 0
    fi
    progress
    tail -n 40 "$dir/test-fresh.log"
    echo "--- fresh: FAIL (log: $dir/test-fresh.log)"
    return 1
}

if [ "${SPUR_SKIP_FRESH:-0}" != "1" ] && [ "$(id -u)" = 0 ] && [ ! -e /etc/spur-test-fresh ] &&
   command -v debootstrap >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1 &&
   git -C "$top" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    run_fresh || status=1
fi
if [ "$packages" = 1 ]; then
    run_packages || status=1
fi
if [ "${SPUR_SKIP_NORMAL:-0}" != "1" ]; then
    export SPUR_FUZZ=1  # the fuzz smoke test runs in this build only
    run_build normal || status=1
    unset SPUR_FUZZ
fi
if [ "${SPUR_SKIP_ASAN:-0}" != "1" ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_build asan --enable-asan --enable-debug || status=1
fi
exit $status
