#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/store.sh: durable background submits and drains, in one run, against spurd
# --store=postgres:, spurd --store=sqlite: and gearmand -q Postgres (and -q libsqlite3), with a
# throw-away PostgreSQL cluster (scripts/pg-cluster.sh). Prints one line per server and scenario
# and the spurd/gearmand ratios. bg-submit keeps 256 submits in flight (4 clients x 64).
# --runs=N repeats the servers in turn (interleaved) and the table shows medians; --busy runs
# one CPU hog per core (normal priority) throughout, as run.sh's busy condition does.
#
# Usage: bench/store.sh [--spurd=build/src/spurd] [--bench=build/bench/spur-bench]
#                       [--jobs=50000] [--gearmand-jobs=2000] [--drain-jobs=50000]
#                       [--runs=1] [--busy]
# no set -e: servers.sh's stop_server is not written for it
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
SPURD=$top/build/src/spurd
BENCH=$top/build/bench/spur-bench
GEARMAND=${GEARMAND:-/usr/sbin/gearmand}
jobs=50000
gjobs=2000
djobs=50000
runs=1
busy=0
for a in "$@"; do
    case $a in
        --spurd=*) SPURD=${a#*=} ;;
        --bench=*) BENCH=${a#*=} ;;
        --jobs=*) jobs=${a#*=} ;;
        --gearmand-jobs=*) gjobs=${a#*=} ;;
        --drain-jobs=*) djobs=${a#*=} ;;
        --runs=*) runs=${a#*=} ;;
        --busy) busy=1 ;;
        *) sed -n '2,13p' "$0"; exit 2 ;;
    esac
done
. "$here/servers.sh"
work=$(mktemp -d /tmp/spur-store-bench-XXXXXX)
chmod 755 "$work" # the cluster's owner (postgres, when run as root) must reach $work/pg
pg="$work/pg"
psql="$("$top/scripts/pg-cluster.sh" bindir)/psql"
"$top/scripts/pg-cluster.sh" start "$pg" >/dev/null || exit 1
hogs=()
cleanup() {
    stop_server
    [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null
    "$top/scripts/pg-cluster.sh" destroy "$pg"
    rm -rf "$work"
}
trap cleanup EXIT
if [ "$busy" = 1 ]; then
    for _ in $(seq "$(nproc)"); do (trap 'exit 0' TERM; while :; do :; done) & hogs+=($!); done
fi
n=0

# run LABEL NJOBS NDRAIN COMMAND...: starts the server, measures, stops it.
run() {
    local label=$1 nj=$2 nd=$3 port
    shift 3
    n=$((n + 1))
    "$psql" -X -q -d "host=$pg dbname=postgres user=spur" -c "CREATE DATABASE b$n"
    port=$(free_port)
    local args=("$@")
    args=("${args[@]//@DB@/host=$pg dbname=b$n user=spur}")
    args=("${args[@]//@FILE@/$work/b$n.db}")
    args=("${args[@]//@PORT@/$port}")
    "${args[@]}" >"$work/server$n.log" 2>&1 &
    srv_pid=$!
    wait_listening "$port" "$srv_pid" || { echo "$label: did not start"; cat "$work/server$n.log"; return 1; }
    for sc in bg-submit drain; do
        local nn=$nj
        [ $sc = drain ] && nn=$nd
        [ "$nn" -gt 0 ] || continue
        r=$("$BENCH" --scenario=$sc --jobs="$nn" --port="$port" --server-pid="$srv_pid" \
            --timeout=900 --label="$label" | grep '^RESULT')
        echo "$r"
        echo "$label $sc $(echo "$r" | sed -n 's/.*jobs_per_s=\([0-9]*\).*/\1/p')" >>"$work/table"
    done
    stop_server
}

free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 20000))
        port_in_use "$p" || { echo "$p"; return; }
    done
}

for _ in $(seq "$runs"); do
    run spurd-postgres "$jobs" "$djobs" "$SPURD" -p @PORT@ -L 127.0.0.1 "--store=postgres:@DB@"
    run spurd-sqlite "$jobs" "$djobs" "$SPURD" -p @PORT@ -L 127.0.0.1 "--store=sqlite:@FILE@"
    if [ -x "$GEARMAND" ]; then
        run gearmand-postgres "$gjobs" "$gjobs" "$GEARMAND" -p @PORT@ -L 127.0.0.1 -t 0 \
            -q Postgres "--libpq-conninfo=@DB@" --log-file=none
        run gearmand-sqlite "$gjobs" "$gjobs" "$GEARMAND" -p @PORT@ -L 127.0.0.1 -t 0 \
            -q libsqlite3 "--libsqlite3-db=@FILE@" --log-file=none
    fi
done
# one line per server and scenario: the median of its runs
sort -k1,1 -k2,2 -k3,3n "$work/table" | awk '
    function flush() { if (n) print k1, k2, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }
    $1 != k1 || $2 != k2 { flush(); k1 = $1; k2 = $2; n = 0 }
    { v[++n] = $3 }
    END { flush() }' >"$work/medians"
echo
printf '%-18s %-10s %12s   (median of %d run(s)%s)\n' server scenario jobs/s "$runs" \
    "$([ "$busy" = 1 ] && echo ', busy')"
while read -r s sc v; do printf '%-18s %-10s %12s\n' "$s" "$sc" "$v"; done <"$work/medians"
awk '$1=="spurd-postgres"{sp[$2]=$3} $1=="gearmand-postgres"{gp[$2]=$3}
     END{for (k in sp) if (gp[k] > 0) printf "spurd/gearmand, postgres, %s: %.0fx\n", k, sp[k]/gp[k]}' \
    "$work/medians"
