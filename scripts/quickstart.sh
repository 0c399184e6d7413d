#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs what is missing (scripts/deps.sh quickstart: the build libraries, gearman-tools for
# gearman and gearadmin, netcat-openbsd for nc), builds Spur (out of tree, in build/: spurd,
# spuradmin and spur, without the test tools), and runs spurd in the foreground on
# localhost:4730, i.e. 127.0.0.1 and ::1 where /etc/hosts maps localhost to both, as Debian's
# does. Arguments go on to spurd, and a later option wins: --port=4731 picks another port;
# --listen is repeatable, so any --listen (-L) given replaces localhost: --listen=0.0.0.0 is every
# IPv4 address.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh quickstart
# configure refuses an out-of-tree build beside an in-tree one: clean that first
if [ -f config.status ]; then
    echo "cleaning the in-tree build (make distclean) for the out-of-tree build"
    make distclean >/dev/null || rm -f config.status
fi
[ -x configure ] || autoreconf -fi
# --disable-tests: GoogleTest and pytest are for make check (scripts/test-all.sh installs them);
# a build/ configured already (by hand, with the tests) is kept as it is
[ -f build/Makefile ] || (mkdir -p build && cd build && ../configure --quiet --disable-werror --disable-tests)
echo "quickstart: building spurd, spuradmin and spur in build/"
make -C build -j"$(nproc)" src/spurd admin/spuradmin admin/spur >/dev/null
listen=--listen=localhost
for a in "$@"; do
    case $a in --listen | --listen=* | -L*) listen="" ;; esac
done
exec build/src/spurd $listen --port=4730 --log-file=stderr --verbose=NOTICE "$@"
