#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks that no function of src/ is longer than 150 lines (tests/func_length.py). First shows
# that the checker catches a planted 151-line function and passes a 150-line one.
set -e
py=${PYTHON:-python3}
srcdir=${SPUR_SRCDIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# plant N: a file with one function of N lines, signature to closing brace
plant() {
    { printf 'static int f(void)\n{\n'; i=3; while [ $i -lt "$1" ]; do printf '    x();\n'; i=$((i + 1)); done; printf '}\n'; } >"$tmp/f.c"
}
plant 151
if "$py" "$srcdir/tests/func_length.py" "$tmp" >"$tmp/out" 2>&1; then
    echo "FAIL: the checker passed a 151-line function"; cat "$tmp/out"; exit 1
fi
grep -q 'f is 151 lines' "$tmp/out" || { cat "$tmp/out"; exit 1; }
plant 150
"$py" "$srcdir/tests/func_length.py" "$tmp" >"$tmp/out" 2>&1 || { echo "FAIL: a 150-line function was refused"; cat "$tmp/out"; exit 1; }
exec "$py" "$srcdir/tests/func_length.py" "$srcdir/src"
