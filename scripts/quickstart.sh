#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing, builds Spur, and runs spurd in the foreground on 127.0.0.1:4730.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh build
[ -x configure ] || autoreconf -fi
[ -f build/Makefile ] || (mkdir -p build && cd build && ../configure --quiet --disable-werror)
make -C build -j"$(nproc)" src/spurd >/dev/null
exec build/src/spurd --listen=127.0.0.1 --port=4730 --log-file=stderr --verbose=NOTICE "$@"
