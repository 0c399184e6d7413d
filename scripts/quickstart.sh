#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing, builds Spur (out of tree, in build/), and runs spurd in the foreground
# on 127.0.0.1:4730. Arguments go on to spurd, and a later option wins: --port=4731 picks another
# port, --listen=0.0.0.0 every address.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh build
# configure refuses an out-of-tree build beside an in-tree one: clean that first
if [ -f config.status ]; then
    echo "cleaning the in-tree build (make distclean) for the out-of-tree build"
    make distclean >/dev/null || rm -f config.status
fi
[ -x configure ] || autoreconf -fi
[ -f build/Makefile ] || (mkdir -p build && cd build && ../configure --quiet --disable-werror)
make -C build -j"$(nproc)" src/spurd >/dev/null
exec build/src/spurd --listen=127.0.0.1 --port=4730 --log-file=stderr --verbose=NOTICE "$@"
