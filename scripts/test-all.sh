#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing, then builds and runs the whole test suite twice: a normal build and an
# AddressSanitizer + UndefinedBehaviorSanitizer build. Slow tests run too (SPUR_SLOW=1).
# As root on a machine with dpkg, it first runs scripts/test-packages.sh (build the Debian
# packages in a temporary copy, lintian, install, run the installed spurd, purge), printing its
# last line; SPUR_SKIP_PACKAGES=1 skips that (e.g. where the packages are installed for real).
# Exits non-zero if any test fails. The output ends with the test runners' own summaries.
set -e
cd "$(dirname "$0")/.."
top=$(pwd)
sh scripts/deps.sh test
packages=0
if [ "${SPUR_SKIP_PACKAGES:-0}" != "1" ] && [ "$(id -u)" = 0 ] && command -v dpkg >/dev/null 2>&1
then
    packages=1
    sh scripts/deps.sh package
fi
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
    echo "=== $name build: configure $*"
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && "$top/configure" --quiet --enable-werror "$@") || return 1
    make -C "$dir" -j"$jobs" >/dev/null || return 1
    echo "=== $name build: make check"
    if make -C "$dir" -j"$jobs" check >"$dir/check.out" 2>&1; then rc=0; else rc=1; fi
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
    echo "=== Debian packages: scripts/test-packages.sh"
    if sh scripts/test-packages.sh >"$dir/test-packages.log" 2>&1; then
        echo "--- packages: $(tail -n 1 "$dir/test-packages.log")"
        return 0
    fi
    tail -n 40 "$dir/test-packages.log"
    echo "--- packages: FAIL (log: $dir/test-packages.log)"
    return 1
}

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
