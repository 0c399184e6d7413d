#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/curves.sh: scaling curves. For each curve, each point (a value of the varied quantity)
# and each server, start a fresh server, build the point's ballast (queued jobs, functions, idle
# workers, waiting clients, ...) and time a fixed batch of jobs with spur-bench. Servers are
# interleaved at every point, so a change in machine load hits all of them alike.
# Writes curves.tsv (every run), then curves.json, one PNG per curve and the flatness check
# (bench/curves_report.py). Builds nothing: point it at binaries. See bench/README.md.
set -u -o pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

SPURD=${SPURD:-$top/build/src/spurd}
SPUR_BENCH=${SPUR_BENCH:-$top/build/bench/spur-bench}
GEARMAND=${GEARMAND:-/usr/sbin/gearmand}
servers="spurd,gearmand-t0"
curves="queued,functions,workers,clients,payload,waiters"
runs=""
quick=0
jobs=""
out=""
point_timeout=300
extra_points=""

usage() {
    cat <<EOF
Usage: bench/curves.sh [OPTIONS]
Scaling curves of spurd and gearmand: throughput and p99 latency of a fixed batch of jobs against
a growing quantity. Writes curves.tsv, curves.json, curve-*.png and a flatness check.

  --spurd=PATH       spurd binary (env SPURD; default build/src/spurd)
  --bench=PATH       spur-bench binary (env SPUR_BENCH; default build/bench/spur-bench)
  --gearmand=PATH    gearmand binary (env GEARMAND; default /usr/sbin/gearmand)
  --servers=LIST     any of spurd,gearmand-t0,gearmand,gearmand-hb,gearmand-t0-hb (default spurd,gearmand-t0)
  --curves=LIST      default queued,functions,workers,clients,payload,waiters
  --runs=N           runs per point and server; the curves use the median (default 3;
                     --quick 1)
  --jobs=N           jobs in the measured batch (default 20000; --quick 5000)
  --quick            fewer and smaller points (a few minutes on 2 cores)
  --points=N,N,...   these points instead, for every curve in --curves
  --timeout=S        wall-time bound of one run, ballast included (default 300)
  --out=DIR          results, logs and plots (default: a new directory under /tmp)
  -h, --help         this text
EOF
}

for arg in "$@"; do
    case $arg in
        --spurd=*) SPURD=${arg#*=} ;;
        --bench=*) SPUR_BENCH=${arg#*=} ;;
        --gearmand=*) GEARMAND=${arg#*=} ;;
        --servers=*) servers=${arg#*=} ;;
        --curves=*) curves=${arg#*=} ;;
        --runs=*) runs=${arg#*=} ;;
        --jobs=*) jobs=${arg#*=} ;;
        --quick) quick=1 ;;
        --points=*) extra_points=${arg#*=} ;;
        --timeout=*) point_timeout=${arg#*=} ;;
        --out=*) out=${arg#*=} ;;
        -h|--help) usage; exit 0 ;;
        *) echo "curves.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done
[ -n "$jobs" ] || { [ "$quick" = 1 ] && jobs=5000 || jobs=20000; }
[ -n "$runs" ] || { [ "$quick" = 1 ] && runs=1 || runs=3; }
for n in "$runs" "$jobs" "$point_timeout"; do
    case $n in ''|*[!0-9]*|0) echo "curves.sh: counts and timeouts must be positive integers" >&2; exit 2 ;; esac
done
if [ ! -x "$SPUR_BENCH" ]; then
    echo "curves.sh: spur-bench not found at $SPUR_BENCH (build it, or set SPUR_BENCH / --bench)" >&2
    exit 2
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/spur-curves.XXXXXX)
mkdir -p "$out" || exit 2
tsv=$out/curves.tsv
printf 'curve\tserver\tx\trun\tstatus\tjobs\tjobs_per_s\tp50_us\tp99_us\tcpu_us_per_job\tsetup_s\tnote\n' >"$tsv"

# Connections need descriptors in the bench and in the server (both inherit this limit).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)
[ "$nofile" = unlimited ] && nofile=1048576
fd_cap=$((nofile - 500)) # connections a point may open (clients, workers, ballast)

# ------------------------------------------------------------------------------ curves

# Points of each curve. The measured batch is the same at every point (rt-throughput shape:
# 4 clients with window 8, 4 workers, --jobs jobs of 64 bytes) unless the curve says otherwise.
if [ "$quick" = 1 ]; then
    pts_queued="1000 10000 100000"
    pts_functions="1 100 10000"
    pts_workers="1 100 1000"
    pts_clients="10 100 1000"
    pts_payload="16 1024 65536 1048576"
    pts_waiters="1 10 100"
else
    pts_queued="1000 10000 100000 1000000 10000000"
    pts_functions="1 10 100 1000 10000 100000 1000000"
    pts_workers="1 10 100 1000 10000 20000"
    pts_clients="10 100 1000 10000 50000"
    pts_payload="16 256 4096 65536 1048576 8388608"
    pts_waiters="1 10 100 1000 10000"
fi

if [ -n "$extra_points" ]; then
    case $extra_points in *[!0-9,]*|,*|*,|*,,*) echo "curves.sh: --points takes N,N,..." >&2; exit 2 ;; esac
    for c in queued functions workers clients payload waiters; do
        printf -v "pts_$c" '%s' "${extra_points//,/ }"
    done
fi

# cap CURVE SERVER prints the largest point that server runs on that curve (empty: no cap) and
# why. gearmand with its default 991 job hash buckets queues N jobs in O(N^2) (1M took ~4 min on
# 2 cores); its function list is searched linearly, so 1M functions registering is quadratic too.
cap() {
    case $1:$2 in
        queued:gearmand-t0|queued:gearmand) echo "100000 default hash buckets make queueing quadratic" ;;
        queued:gearmand-hb|queued:gearmand-t0-hb) echo "1000000 memory" ;;
        functions:gearmand*) echo "100000 function list is searched linearly" ;;
        *) echo "" ;;
    esac
}

# Curves of connections stop at what the open-file limit allows (the bench and the server each
# hold one descriptor per connection); a larger point is replaced by that largest one.
for c in workers clients waiters; do
    var=pts_$c
    new=""
    for x in ${!var}; do
        if [ "$x" -gt "$fd_cap" ]; then
            echo "curves.sh: $c point $x exceeds the open-file limit ($nofile): measuring $fd_cap instead" >&2
            x=$fd_cap
        fi
        case " $new " in *" $x "*) ;; *) new="$new $x" ;; esac
    done
    printf -v "$var" '%s' "$new"
done

# bench_args CURVE X prints the spur-bench arguments of one point.
bench_args() {
    local base="--clients=4 --workers=4 --window=8"
    case $1 in
        queued) echo "--scenario=rt-throughput $base --jobs=$jobs --ballast-jobs=$2" ;;
        functions) echo "--scenario=fanout $base --jobs=$jobs --functions=$2" ;;
        workers) echo "--scenario=rt-throughput $base --jobs=$jobs --idle-workers=$2" ;;
        clients) echo "--scenario=rt-throughput $base --jobs=$jobs --ballast-clients=$2" ;;
        payload)
            # the same bytes budget at every large size: 256 MiB of payload, 64 to --jobs jobs
            local n=$((268435456 / $2))
            [ "$n" -gt "$jobs" ] && n=$jobs
            [ "$n" -lt 64 ] && n=64
            echo "--scenario=rt-throughput $base --jobs=$n --payload-size=$2" ;;
        waiters)
            # about --jobs completions: jobs / waiters rounds, at least 5
            local n=$((jobs / $2))
            [ "$n" -lt 5 ] && n=5
            echo "--scenario=coalesce --jobs=$n --waiters=$2" ;;
    esac
}

# ------------------------------------------------------------------------------ servers

. "$top/bench/servers.sh"

# ------------------------------------------------------------------------------ runs

IFS=, read -r -a server_list <<<"$servers"
IFS=, read -r -a curve_list <<<"$curves"
echo "scaling curves: ${curves} for ${servers}; $runs run(s) per point, batch $jobs jobs;" \
     "open-file limit $nofile; $(nproc) CPUs; results in $out"
started=$(date +%s)
for curve in "${curve_list[@]}"; do
    var=pts_$curve
    if [ -z "${!var+x}" ]; then echo "curves.sh: unknown curve '$curve'" >&2; exit 2; fi
    for x in ${!var}; do
        for run in $(seq "$runs"); do
            for srv in "${server_list[@]}"; do
                read -r limit why <<<"$(cap "$curve" "$srv")"
                if [ -n "$limit" ] && [ "$x" -gt "$limit" ]; then
                    [ "$run" = 1 ] && printf '%-10s %-12s %9s: skipped (%s)\n' "$curve" "$srv" "$x" "$why"
                    printf '%s\t%s\t%s\t%s\tskipped\t\t\t\t\t\t\t%s\n' "$curve" "$srv" "$x" "$run" "$why" >>"$tsv"
                    continue
                fi
                dir=$out/$curve/$srv-$x-$run
                printf '%-10s %-12s %9s run %d: ' "$curve" "$srv" "$x" "$run"
                if ! start_server "$srv" "$dir"; then
                    echo "n/a ($(cat "$dir/start.err"))"
                    printf '%s\t%s\t%s\t%s\tfailed\t\t\t\t\t\t\t%s\n' "$curve" "$srv" "$x" "$run" "server did not start" >>"$tsv"
                    continue
                fi
                # shellcheck disable=SC2046
                timeout --kill-after=10 $((point_timeout + 30)) "$SPUR_BENCH" $(bench_args "$curve" "$x") \
                    --port="$srv_port" --server-pid="$srv_pid" --label="$srv" \
                    --timeout="$point_timeout" --stall=60 >"$dir/bench.out" 2>"$dir/bench.err"
                rc=$?
                stop_server
                line=$(grep '^RESULT ' "$dir/bench.out" | tail -n1)
                kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
                status=ok
                note=""
                if [ "$rc" != 0 ] || [ "$(kv status)" != ok ] || [ "$(kv anomalies)" != 0 ]; then
                    status=failed
                    note="exit $rc, status $(kv status), anomalies $(kv anomalies): $(grep -m1 'spur-bench' "$dir/bench.err" | tr '\t' ' ' | cut -c1-160)"
                fi
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$curve" "$srv" "$x" "$run" \
                    "$status" "$(kv jobs)" "$(kv jobs_per_s)" "$(kv p50_us)" "$(kv p99_us)" \
                    "$(kv cpu_us_per_job)" "$(kv setup_s)" "$note" >>"$tsv"
                if [ "$status" = ok ]; then
                    echo "$(kv jobs_per_s)/s p99 $(kv p99_us) us (setup $(kv setup_s) s)"
                else
                    echo "FAILED ($note)"
                fi
            done
        done
    done
done
echo "finished in $(( $(date +%s) - started )) s"
echo
python3 "$top/bench/curves_report.py" "$tsv" "$out"
