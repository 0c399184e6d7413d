#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A throw-away PostgreSQL cluster for the tests of the postgres store (and for trying it by hand):
# initdb + pg_ctl from Debian's postgresql, listening on a unix socket in DIR only (no TCP port),
# trust authentication, owned by an unprivileged user (initdb refuses root: as root the cluster
# runs as `postgres`, or `nobody` when that user is missing).
#
# Usage: scripts/pg-cluster.sh start DIR    create DIR (must not exist or be empty), start the
#                                          cluster; prints the conninfo on stdout
#        scripts/pg-cluster.sh stop DIR     stop it (fast shutdown) and keep DIR
#        scripts/pg-cluster.sh restart DIR  stop and start it again (same data)
#        scripts/pg-cluster.sh destroy DIR  stop it and remove DIR
#        scripts/pg-cluster.sh bindir       print the directory of initdb/pg_ctl, or fail
# Then: psql "$(scripts/pg-cluster.sh start /tmp/pg)" or spurd --store="postgres:host=/tmp/pg ...".
set -e

bindir() {
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return 0
        fi
    done
    echo "pg-cluster: no initdb/pg_ctl in /usr/lib/postgresql/*/bin (install postgresql)" >&2
    return 1
}

# as_owner CMD...: runs CMD as the cluster's owner (the current user unless root). As root, CMD
# runs in / : the owner may not enter the caller's directory (a checkout in /root), and initdb and
# pg_ctl then print "could not change directory to ...: Permission denied".
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        (cd / && setpriv --reuid="$owner" --regid="$(id -g "$owner")" --clear-groups -- "$@")
    else
        "$@"
    fi
}

cmd=$1
dir=$2
[ "$cmd" = bindir ] && { bindir; exit $?; }
[ -n "$dir" ] || { echo "usage: $0 start|stop|restart|destroy DIR" >&2; exit 2; }
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac # as_owner leaves the current directory
B=$(bindir)
owner=$(id -un)
if [ "$(id -u)" = 0 ]; then
    owner=postgres
    id postgres >/dev/null 2>&1 || owner=nobody
fi
data="$dir/data"
log="$dir/server.log"
conninfo="host=$dir dbname=postgres user=spur"

start() {
    as_owner "$B/pg_ctl" -D "$data" -l "$log" -w -t 120 \
        -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=on" start >/dev/null
}

case "$cmd" in
start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown "$owner" "$dir"
    chmod 700 "$dir"
    as_owner "$B/initdb" -D "$data" -U spur --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    start || { cat "$log" >&2; exit 1; }
    echo "$conninfo"
    ;;
stop)
    as_owner "$B/pg_ctl" -D "$data" -m fast -w -t 120 stop >/dev/null
    ;;
restart)
    as_owner "$B/pg_ctl" -D "$data" -m fast -w -t 120 stop >/dev/null || true
    start || { cat "$log" >&2; exit 1; }
    ;;
destroy)
    as_owner "$B/pg_ctl" -D "$data" -m immediate -w -t 120 stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop|restart|destroy DIR" >&2
    exit 2
    ;;
esac
