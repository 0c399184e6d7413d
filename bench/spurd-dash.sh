#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/spurd-dash.sh: spurd with its web dashboard open (docs/DASHBOARD.md), for bench/run.sh's
# --spurd-base=bench/spurd-dash.sh: starts spurd (SPURD_DASH, default build/src/spurd) with the
# arguments given plus an HTTP listener on a free loopback port, and a poller that fetches what
# an open dashboard fetches, every 2 seconds (the overview's first page and the charts' history,
# both at once: more than one open page asks), until spurd exits. The 'vs base' column of
# run.sh is then spurd without HTTP against spurd with the dashboard open.
#   bench/run.sh --spurd-base=bench/spurd-dash.sh --servers=spurd,spurd-base \
#       --scenarios=bg-submit,rt-throughput --runs=3
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${SPURD_DASH:-$top/build/src/spurd}
dir=$(mktemp -d)
pid=$$ # spurd's, after the exec below
(
    while [ ! -s "$dir/http-port" ]; do
        kill -0 "$pid" 2>/dev/null || { rm -rf "$dir"; exit 0; }
        sleep 0.05
    done
    url="http://127.0.0.1:$(cat "$dir/http-port")/dash/api"
    n=0
    while kill -0 "$pid" 2>/dev/null; do
        curl -s -o /dev/null "$url/overview?limit=50" -o /dev/null "$url/series" && n=$((n + 1))
        echo "$n" > "$dir/polls"
        sleep 2
    done
    rm -rf "$dir"
) </dev/null >/dev/null 2>&1 &
exec "$bin" --http-port=0 --http-listen=127.0.0.1 --http-port-file="$dir/http-port" "$@"
