#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/flow.sh: flow control's cost (docs/FLOW-CONTROL.md, PERFORMANCE.md "Flow control").
# Round-trip throughput (spur-bench rt-throughput, window 32) with jobs spread over --keys keys
# (uniques "k<n>:<job>"), without a limit and with `limit F key-concurrency 1`, interleaved
# run by run against a fresh spurd each time; prints the medians and their ratio (the issue asks
# for at least 0.9). The no-limit hot path against the commit before is bench/run.sh
# --spurd-base=... --servers=spurd,spurd-base --scenarios=bg-submit,rt-throughput.
set -u -o pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SPURD=${SPURD:-$top/build/src/spurd}
SPUR_BENCH=${SPUR_BENCH:-$top/build/bench/spur-bench}
runs=5
keys=10000
jobs=200000
limit=1
out=""

for arg in "$@"; do
    case $arg in
        --spurd=*) SPURD=${arg#*=} ;;
        --bench=*) SPUR_BENCH=${arg#*=} ;;
        --runs=*) runs=${arg#*=} ;;
        --keys=*) keys=${arg#*=} ;;
        --jobs=*) jobs=${arg#*=} ;;
        --key-concurrency=*) limit=${arg#*=} ;;
        --out=*) out=${arg#*=} ;;
        -h|--help)
            echo "Usage: bench/flow.sh [--spurd=PATH] [--bench=PATH] [--runs=5] [--keys=10000]"
            echo "       [--jobs=200000] [--key-concurrency=1] [--out=DIR]"
            exit 0 ;;
        *) echo "flow.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done
for n in "$runs" "$keys" "$jobs" "$limit"; do
    case $n in ''|*[!0-9]*|0) echo "flow.sh: counts must be positive integers" >&2; exit 2 ;; esac
done
[ -n "$out" ] || out=$(mktemp -d /tmp/spur-bench-flow.XXXXXX)
mkdir -p "$out" || exit 2
SPURD_BASE=""
ANSWER_SERVER=""
GEARMAND=""
. "$top/bench/servers.sh"

# one KIND RUN: one run of rt-throughput; prints jobs/s or n/a.
one() {
    local kind=$1 run=$2 dir=$out/$1-$2 args=(--keys="$keys")
    [ "$kind" = key-limit ] && args+=(--admin="limit {F} key-concurrency $limit")
    start_server spurd "$dir" || { echo n/a; return; }
    timeout 300 "$SPUR_BENCH" --scenario=rt-throughput --port="$srv_port" --jobs="$jobs" \
        --timeout=240 "${args[@]}" >"$dir/bench.out" 2>&1
    stop_server
    sed -n 's/^RESULT .* jobs_per_s=\([0-9]*\) .* status=ok$/\1/p' "$dir/bench.out" | grep . ||
        echo n/a
}

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "n/a"; else print a[int((NR+1)/2)]}'; }

for r in $(seq "$runs"); do
    for kind in no-limit key-limit; do
        v=$(one "$kind" "$r")
        echo "$kind $r $v" | tee -a "$out/results.txt"
    done
done
a=$(awk '$1 == "no-limit" && $3 != "n/a" {print $3}' "$out/results.txt" | median)
b=$(awk '$1 == "key-limit" && $3 != "n/a" {print $3}' "$out/results.txt" | median)
echo
echo "rt-throughput, window 32, $jobs jobs over $keys keys, medians of $runs (jobs/s):"
printf '| %-34s | %10s |\n' "run" "jobs/s"
printf '| %-34s | %10s |\n' "----" "----"
printf '| %-34s | %10s |\n' "no limit" "$a"
printf '| %-34s | %10s |\n' "key-concurrency $limit" "$b"
if [ "$a" != n/a ] && [ "$b" != n/a ]; then
    printf '| %-34s | %10s |\n' "ratio" "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')"
fi
echo "(logs in $out)"
