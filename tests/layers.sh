#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks that src/ modules have no include or link cycle outside the core (tests/check_layers.py).
# First shows that the checker catches a cycle: two modules that include each other's header.
set -e
py=${PYTHON:-python3}
srcdir=${SPUR_SRCDIR:?}
builddir=${SPUR_BUILDDIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include "b.h"\n' >"$tmp/a.c"
printf '#include "a.h"\n' >"$tmp/b.c"
: >"$tmp/a.h"
: >"$tmp/b.h"
if "$py" "$srcdir/tests/check_layers.py" "$tmp" "$builddir/src/libspur.a" >"$tmp/out" 2>&1; then
    echo "FAIL: the checker did not see a cycle between a and b"
    cat "$tmp/out"
    exit 1
fi
grep -q 'include cycle among: a b' "$tmp/out" || { cat "$tmp/out"; exit 1; }
exec "$py" "$srcdir/tests/check_layers.py" "$srcdir/src" "$builddir/src/libspur.a"
