#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/ttl.sh: the submit cost of job lifetimes (docs/JOB-LIFETIME.md). bg-submit of --jobs
# background jobs (1M by default: all left queued) against a fresh spurd per run, interleaved:
#   base      SPURD_BASE (the commit before the feature), no option
#   spurd     SPURD, no option
#   ttl       SPURD, every client sends OPTION_REQ job-ttl=3600 first: each job has a TTL armed
#             in the timer heap
#   ttl+to    SPURD, job-ttl=3600 and job-timeout=60000 (one record, both values)
# Prints each run's RESULT line, then the medians and their ratio to base (and to spurd).
#
# Usage: bench/ttl.sh --spurd-base=PATH [--spurd=build/src/spurd]
#                     [--bench=build/bench/spur-bench] [--jobs=1000000] [--runs=3]
# no set -e: servers.sh's stop_server is not written for it
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
SPURD=$top/build/src/spurd
SPURD_BASE=
BENCH=$top/build/bench/spur-bench
jobs=1000000
runs=3
for a in "$@"; do
    case $a in
        --spurd=*) SPURD=${a#*=} ;;
        --spurd-base=*) SPURD_BASE=${a#*=} ;;
        --bench=*) BENCH=${a#*=} ;;
        --jobs=*) jobs=${a#*=} ;;
        --runs=*) runs=${a#*=} ;;
        *) sed -n '2,14p' "$0"; exit 2 ;;
    esac
done
[ -x "$SPURD_BASE" ] || { echo "bench/ttl.sh: --spurd-base=PATH is required"; exit 2; }
. "$here/servers.sh"
work=$(mktemp -d /tmp/spur-ttl-bench-XXXXXX)
trap 'stop_server; rm -rf "$work"' EXIT

free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 20000))
        port_in_use "$p" || { echo "$p"; return; }
    done
}

# one LABEL BINARY [spur-bench options...]: one bg-submit run against a fresh server.
one() {
    local label=$1 bin=$2 port r
    shift 2
    port=$(free_port)
    "$bin" --port="$port" --listen=127.0.0.1 >"$work/$label.log" 2>&1 &
    srv_pid=$!
    wait_listening "$port" "$srv_pid" || { echo "$label: did not start"; return 1; }
    r=$("$BENCH" --scenario=bg-submit --jobs="$jobs" --port="$port" --server-pid="$srv_pid" \
        --timeout=900 --label="$label" "$@" | grep '^RESULT')
    echo "$r"
    case $r in
        *status=ok*) echo "$label $(echo "$r" | sed -n 's/.*jobs_per_s=\([0-9]*\).*/\1/p')" \
                         >>"$work/table" ;;
    esac
    stop_server
}

for i in $(seq "$runs"); do
    one base "$SPURD_BASE"
    one spurd "$SPURD"
    one ttl "$SPURD" --client-option=job-ttl=3600
    one ttl+to "$SPURD" --client-option=job-ttl=3600,job-timeout=60000
done
echo
awk -v runs="$runs" '
    { v[$1] = v[$1] " " $2 }
    function median(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
    }
    END {
        b = median(v["base"]); s = median(v["spurd"])
        printf "%-8s %12s %10s %10s\n", "server", "jobs/s", "vs base", "vs spurd"
        split("base spurd ttl ttl+to", order, " ")
        for (k = 1; k <= 4; k++) {
            m = median(v[order[k]])
            if (m == 0) continue
            printf "%-8s %12.0f %10.3f %10.3f\n", order[k], m, b ? m / b : 0, s ? m / s : 0
        }
    }' "$work/table"
