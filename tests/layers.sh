#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks src/'s layers (src/LAYERS, tests/check_layers.py): no module uses a module of a higher
# layer, no cycle outside the core model, every source file in a layer folder. First shows that
# the checker catches each of the three on a planted tree.
set -e
py=${PYTHON:-python3}
srcdir=${SPUR_SRCDIR:?}
builddir=${SPUR_BUILDDIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# planted: expect_fail NAME PATTERN — the checker must fail on "$tmp/NAME" and say PATTERN.
expect_fail() {
    if "$py" "$srcdir/tests/check_layers.py" "$tmp/$1" "$builddir/src/libspur.a" >"$tmp/out" 2>&1; then
        echo "FAIL: the checker passed the planted tree '$1'"
        cat "$tmp/out"
        exit 1
    fi
    grep -q "$2" "$tmp/out" || { echo "FAIL: '$1' did not report '$2'"; cat "$tmp/out"; exit 1; }
}

# A cycle inside one layer: a and b include each other's header.
mkdir -p "$tmp/cycle/low"
printf 'low\n' >"$tmp/cycle/LAYERS"
printf '#include "b.h"\n' >"$tmp/cycle/low/a.c"
printf '#include "a.h"\n' >"$tmp/cycle/low/b.c"
: >"$tmp/cycle/low/a.h"
: >"$tmp/cycle/low/b.h"
expect_fail cycle 'include cycle among: a b'

# An edge up: a module of the lower layer includes a header of the higher one.
mkdir -p "$tmp/up/low" "$tmp/up/high"
printf '# comment\nlow  # the lower\nhigh\n' >"$tmp/up/LAYERS"
printf '#include "b.h"\n' >"$tmp/up/low/a.c"
: >"$tmp/up/low/a.h"
: >"$tmp/up/high/b.h"
expect_fail up 'include edge up: a (low) -> b (high)'

# A file outside every layer folder.
mkdir -p "$tmp/stray/low"
printf 'low\n' >"$tmp/stray/LAYERS"
: >"$tmp/stray/low/a.c"
: >"$tmp/stray/loose.c"
expect_fail stray 'loose.c: not in a layer folder'

exec "$py" "$srcdir/tests/check_layers.py" "$srcdir/src" "$builddir/src/libspur.a"
