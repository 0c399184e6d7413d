#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks the shared libgearman-compat: its soname is libgearman-compat.so.1 and it exports exactly
# the functions listed in libgearman-compat/libgearman-compat.sym, each under the version node
# LIBGEARMAN_COMPAT_1 (nothing internal: no lgc_*, proto_*, pb_*), and that the public-API-only
# programs (lgc_driver, the examples) link against it alone. Run by `make check` with
# SPUR_SRCDIR and SPUR_BUILDDIR set. Exit 77 (skipped) when the build has no shared library.
set -e
: "${SPUR_SRCDIR:?}" "${SPUR_BUILDDIR:?}"
so="$SPUR_BUILDDIR/libgearman-compat/.libs/libgearman-compat.so.1"
if [ ! -e "$so" ]; then
    echo "SKIP: $so not built (--disable-shared?)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

soname=$(LC_ALL=C objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" != "libgearman-compat.so.1" ]; then
    echo "FAIL: SONAME is '$soname', expected libgearman-compat.so.1"
    exit 1
fi

grep -v '^#' "$SPUR_SRCDIR/libgearman-compat/libgearman-compat.sym" | sed '/^$/d' |
    sed 's/$/@@LIBGEARMAN_COMPAT_1/' | LC_ALL=C sort > "$tmp/want"
# defined dynamic symbols, minus the version node's own absolute symbol
LC_ALL=C nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | LC_ALL=C sort > "$tmp/got"
if ! diff -u "$tmp/want" "$tmp/got" > "$tmp/diff"; then
    echo "FAIL: exported symbols differ from libgearman-compat.sym (- missing, + extra):"
    cat "$tmp/diff"
    exit 1
fi

# The scenario driver and the examples use only the public API: they must link against the shared
# library alone (a function the headers declare but the library hides fails here).
for prog in tests/lgc_driver examples/reverse_client examples/reverse_worker \
            examples/background_client examples/epoch_client examples/cancel_worker \
            examples/cancel_client; do
    if ! cc -std=gnu11 -I"$SPUR_SRCDIR/libgearman-compat" -o "$tmp/prog" \
            "$SPUR_SRCDIR/libgearman-compat/$prog.c" -L"$(dirname "$so")" -lgearman-compat \
            -Wl,-rpath,"$(dirname "$so")" 2> "$tmp/cc.err"; then
        echo "FAIL: $prog.c does not link against the shared library:"
        cat "$tmp/cc.err"
        exit 1
    fi
done
echo "ok: $(wc -l < "$tmp/got") symbols, soname $soname; the driver and the examples link"
