#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/run.sh: run spur-bench scenarios against spurd, gearmand and beanstalkd and print a table
# of medians with spurd/gearmand ratios. By default it runs the shapes users deploy (1x1-w1,
# 4x4-w1, 4x4-w32, idle100, bg-4x64) in two conditions: quiet (the machine as it is) and busy (one
# CPU hog per core at normal priority, started and killed by this script). beanstalkd is driven
# by beanstalk-bench (pipelined put, reserve/delete), in the shapes and drain. bg-submit also
# runs against answer-server, the answer-only ceiling. With --tls, bg-submit, rt-latency and
# rt-throughput also run over TLS against spurd --ssl (spurd-tls) and gearmand --ssl
# (gearmand-tls), with certificates made by the openssl CLI in the output directory. Builds
# nothing: point it at binaries.
#
# Every server listens on 127.0.0.1 only, on a free port, and is started fresh for every run of
# every scenario (so queued jobs, connections and memory from one run never leak into the next).
# Every run is bounded (spur-bench --timeout plus timeout(1)); the servers are killed on exit.
# A run that fails (server missing or refusing, anomalies, unfinished) is reported, never hidden:
# its cell shows n/a, or a median of the good runs marked with '*'.
set -u -o pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

SPURD=${SPURD:-$top/build/src/spurd}
SPUR_BENCH=${SPUR_BENCH:-$top/build/bench/spur-bench}
GEARMAND=${GEARMAND:-/usr/sbin/gearmand}
ANSWER_SERVER=${ANSWER_SERVER:-$top/build/bench/answer-server}
BEANSTALKD=${BEANSTALKD:-$(command -v beanstalkd || echo /usr/bin/beanstalkd)}
BEANSTALK_BENCH=${BEANSTALK_BENCH:-$top/build/bench/beanstalk-bench}
runs=3
drain_runs=3
drain_jobs=1000000
servers="spurd,gearmand-t0,beanstalkd"
scenarios="1x1-w1,4x4-w1,4x4-w32,idle100,bg-4x64"
conditions="quiet,busy"
out=""
run_timeout=120
drain_timeout=900
bench_args=()

usage() {
    cat <<EOF
Usage: bench/run.sh [OPTIONS] [-- EXTRA_SPUR_BENCH_ARGS]
Runs spur-bench scenarios against spurd and gearmand; prints medians and spurd/gearmand ratios.

  --spurd=PATH        spurd binary (env SPURD; default build/src/spurd)
  --spurd-base=PATH   a second spurd to compare with, e.g. built from the commit before a change
                      (env SPURD_BASE); adds the server spurd-base and a 'vs base' column
  --bench=PATH        spur-bench binary (env SPUR_BENCH; default build/bench/spur-bench)
  --gearmand=PATH     gearmand binary (env GEARMAND; default /usr/sbin/gearmand)
  --answer-server=PATH  answer-only server (env ANSWER_SERVER; default build/bench/answer-server)
  --beanstalkd=PATH   beanstalkd binary (env BEANSTALKD; default the one on PATH)
  --beanstalk-bench=PATH  its load generator (env BEANSTALK_BENCH; default
                      build/bench/beanstalk-bench)
  --runs=N            runs per server and scenario (default 3)
  --drain-runs=N      runs of the drain scenario (default 3, medians as the bar asks; one
                      1M-job queue-and-drain of a gearmand with its default 991 hash buckets
                      takes about 4 minutes on 2 cores, so --drain-runs=1 saves 20 minutes)
  --drain-jobs=N      jobs queued and drained by the drain scenario (default 1000000)
  --servers=LIST      any of spurd,spurd-base,gearmand-t0,gearmand,gearmand-hb,gearmand-t0-hb,
                      answer-only,beanstalkd,spurd-tls,gearmand-tls
                      (default spurd,gearmand-t0,beanstalkd; spurd-base is added when
                      --spurd-base is given)
                        gearmand-t0   gearmand -t 0
                        gearmand      gearmand with its default threads (4)
                        gearmand-hb   gearmand --hashtable-buckets 1000003 (default threads)
                        gearmand-t0-hb  gearmand -t 0 --hashtable-buckets 1000003 (the
                                      fastest configuration where jobs queue up)
                        answer-only   bench/answer-server: answers SUBMIT_JOB_BG with JOB_CREATED
                                      and keeps no job state; runs bg-submit only, and the
                                      table's 'vs ceiling' column is spurd / answer-only
                        beanstalkd    beanstalkd -l 127.0.0.1 (Debian's), driven by
                                      beanstalk-bench; runs the shapes but idle100 (it has
                                      no idle-worker equivalent), and drain (the same jobs,
                                      payload, clients, window and workers: RSS per queued
                                      job, drain jobs/s); 'vs bs' = spurd / beanstalkd
                        spurd-tls     spurd --ssl (its certificate from the run's CA)
                        gearmand-tls  gearmand --ssl; Debian's gearmand accepts --ssl but is
                                      built without TLS: reported n/a, with the reason
                      The TLS kinds run bg-submit, rt-latency and rt-throughput only, with
                      spur-bench --tls (server verified, client certificate sent); the
                      table's 'tls ratio' column is spurd-tls / gearmand-tls
  --tls               add spurd-tls and gearmand-tls to the servers
  --scenarios=LIST    default 1x1-w1,4x4-w1,4x4-w32,idle100,bg-4x64 (the shapes); the older
                      scenarios: bg-submit,rt-latency,rt-throughput,drain,idle-conns,fanout
                        1x1-w1   1 client, 1 worker, 1 job in flight (rt-latency, 20,000 jobs)
                        4x4-w1   4 clients, 4 workers, window 1 (rt-latency, 20,000 jobs)
                        4x4-w32  4 clients, 4 workers, window 32 (rt-throughput, 100,000 jobs)
                        idle100  1 client, 1 busy worker, 100 idle workers registered for the
                                 same function (rt-latency --idle-workers=100, 10,000 jobs)
                        bg-4x64  background submit, 4 connections, window 64 (bg-submit,
                                 200,000 jobs)
  --conditions=LIST   quiet,busy (default both): busy starts one CPU hog per core (nproc) at
                      normal priority for the runs of that condition and kills them after;
                      rows of the busy condition are named SCENARIO@busy
  --timeout=S         wall-time bound of one run (default 120; drain: --drain-timeout=S, 900)
  --out=DIR           keep logs and raw results here (default: a new directory under /tmp)
  -h, --help          this text
Anything after -- is passed to every spur-bench run (and --jobs=, --payload-size= and --stall=
to beanstalk-bench too).
EOF
}

for arg in "$@"; do
    if [ "${seen_dashdash:-0}" = 1 ]; then bench_args+=("$arg"); continue; fi
    case $arg in
        --spurd=*) SPURD=${arg#*=} ;;
        --spurd-base=*) SPURD_BASE=${arg#*=} ;;
        --bench=*) SPUR_BENCH=${arg#*=} ;;
        --gearmand=*) GEARMAND=${arg#*=} ;;
        --answer-server=*) ANSWER_SERVER=${arg#*=} ;;
        --beanstalkd=*) BEANSTALKD=${arg#*=} ;;
        --beanstalk-bench=*) BEANSTALK_BENCH=${arg#*=} ;;
        --conditions=*) conditions=${arg#*=} ;;
        --runs=*) runs=${arg#*=} ;;
        --drain-runs=*) drain_runs=${arg#*=} ;;
        --drain-jobs=*) drain_jobs=${arg#*=} ;;
        --servers=*) servers=${arg#*=}; servers_given=1 ;;
        --tls) want_tls=1 ;;
        --scenarios=*) scenarios=${arg#*=} ;;
        --timeout=*) run_timeout=${arg#*=} ;;
        --drain-timeout=*) drain_timeout=${arg#*=} ;;
        --out=*) out=${arg#*=} ;;
        -h|--help) usage; exit 0 ;;
        --) seen_dashdash=1 ;;
        *) echo "run.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done
if [ -n "${SPURD_BASE:-}" ] && [ "${servers_given:-0}" != 1 ]; then
    servers="spurd,spurd-base,${servers#spurd,}"
fi
[ "${want_tls:-0}" = 1 ] && servers="$servers,spurd-tls,gearmand-tls"
# answer_only_runs SCENARIO says whether the answer-only server takes part in it.
answer_only_runs() { case $1 in bg-submit|bg-4x64) return 0 ;; esac; return 1; }
# tls_runs SCENARIO says whether the TLS kinds take part in it.
tls_runs() { case $1 in bg-submit|rt-latency|rt-throughput) return 0 ;; esac; return 1; }
# beanstalk_runs SCENARIO says whether beanstalkd takes part in it (the shapes it can express,
# and drain).
beanstalk_runs() { case $1 in 1x1-w1|4x4-w1|4x4-w32|bg-4x64|drain) return 0 ;; esac; return 1; }
# takes_part SERVER SCENARIO says whether SERVER runs SCENARIO.
takes_part() {
    if [ "$1" = answer-only ]; then answer_only_runs "$2"; return; fi
    if [ "$1" = beanstalkd ]; then beanstalk_runs "$2"; return; fi
    case $1 in *-tls) tls_runs "$2"; return ;; esac
    return 0
}
# shape_args SCENARIO sets sb_scenario and sb_args (spur-bench) and bs_args (beanstalk-bench)
# for a shape; for the older scenarios, sb_scenario is the scenario itself.
shape_args() {
    sb_scenario=$1; sb_args=(); bs_args=()
    case $1 in
        1x1-w1) sb_scenario=rt-latency; sb_args=(--clients=1 --workers=1 --window=1 --jobs=20000)
                bs_args=(--scenario=rt --clients=1 --workers=1 --window=1 --jobs=20000) ;;
        4x4-w1) sb_scenario=rt-latency; sb_args=(--clients=4 --workers=4 --window=1 --jobs=20000)
                bs_args=(--scenario=rt --clients=4 --workers=4 --window=1 --jobs=20000) ;;
        4x4-w32) sb_scenario=rt-throughput
                 sb_args=(--clients=4 --workers=4 --window=32 --jobs=100000)
                 bs_args=(--scenario=rt --clients=4 --workers=4 --window=32 --jobs=100000) ;;
        idle100) sb_scenario=rt-latency
                 sb_args=(--clients=1 --workers=1 --window=1 --idle-workers=100 --jobs=10000) ;;
        bg-4x64) sb_scenario=bg-submit; sb_args=(--clients=4 --window=64 --jobs=200000)
                 bs_args=(--scenario=bg-submit --clients=4 --window=64 --jobs=200000) ;;
        # spur-bench drain's defaults (4 clients, window 64, 4 workers, 64 bytes); --jobs from
        # --drain-jobs (extra, below) for both
        drain) bs_args=(--scenario=drain --clients=4 --window=64 --workers=4 --payload-size=64) ;;
    esac
}
case ",$conditions," in
    *,quiet,*|*,busy,*) ;;
    *) echo "run.sh: --conditions takes quiet, busy or both" >&2; exit 2 ;;
esac
for c in ${conditions//,/ }; do
    case $c in quiet|busy) ;; *) echo "run.sh: unknown condition '$c'" >&2; exit 2 ;; esac
done
for n in "$runs" "$drain_runs" "$drain_jobs" "$run_timeout" "$drain_timeout"; do
    case $n in ''|*[!0-9]*|0) echo "run.sh: counts and timeouts must be positive integers" >&2; exit 2 ;; esac
done
if [ ! -x "$SPUR_BENCH" ]; then
    echo "run.sh: spur-bench not found at $SPUR_BENCH (build it, or set SPUR_BENCH / --bench)" >&2
    exit 2
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/spur-bench-run.XXXXXX)
mkdir -p "$out" || exit 2
results=$out/results.tsv
: >"$results"
: >"$out/failures.txt"

# Idle connections need file descriptors in the servers and in the bench.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 10300 ]; then
    echo "run.sh: warning: open-file limit $(ulimit -n) is below what idle-conns needs" >&2
fi

# ------------------------------------------------------------------------------ servers

. "$top/bench/servers.sh"

# The busy condition: one CPU hog per core, at normal priority, for the runs of that condition.
hog_pids=()
hogs_start() {
    local i
    for i in $(seq "$(nproc)"); do
        (trap 'exit 0' TERM; while :; do :; done) &
        hog_pids+=($!)
    done
}
hogs_stop() {
    [ ${#hog_pids[@]} -gt 0 ] || return 0
    kill "${hog_pids[@]}" 2>/dev/null
    wait "${hog_pids[@]}" 2>/dev/null
    hog_pids=()
}
trap 'stop_server; hogs_stop' EXIT
trap 'stop_server; hogs_stop; exit 130' INT TERM

TLS_DIR=$out/tls
case ",$servers," in
    *-tls,*)
        if ! make_tls_certs "$TLS_DIR"; then
            echo "run.sh: cannot make the TLS certificates for the TLS servers" >&2
            exit 2
        fi ;;
esac

# ------------------------------------------------------------------------------ runs

IFS=, read -r -a server_list <<<"$servers"
IFS=, read -r -a scenario_list <<<"$scenarios"
IFS=, read -r -a condition_list <<<"$conditions"

total=0
for sc in "${scenario_list[@]}"; do
    n=$runs; [ "$sc" = drain ] && n=$drain_runs
    for srv in "${server_list[@]}"; do
        takes_part "$srv" "$sc" || continue
        total=$((total + n * ${#condition_list[@]}))
    done
done
echo "spur-bench comparison: ${#server_list[@]} servers x ${#scenario_list[@]} scenarios x" \
     "${#condition_list[@]} conditions ($runs runs each, drain $drain_runs x $drain_jobs jobs);" \
     "logs in $out"
echo "  spurd: $SPURD"
[ -n "${SPURD_BASE:-}" ] && echo "  spurd-base: $SPURD_BASE"
echo "  gearmand: $GEARMAND ($("$GEARMAND" --version 2>&1 | grep -m1 . | cut -c1-40))"
echo "  bench: $SPUR_BENCH; $(nproc) CPUs"
case ",$servers," in
    *,beanstalkd,*) echo "  beanstalkd: $BEANSTALKD ($("$BEANSTALKD" -v 2>&1 | head -n1));" \
                         "bench: $BEANSTALK_BENCH" ;;
esac

count=0
started=$(date +%s)
for cond in "${condition_list[@]}"; do
[ "$cond" = busy ] && hogs_start
for sc0 in "${scenario_list[@]}"; do
    sc=$sc0
    [ "$cond" = busy ] && sc=$sc0@busy
    shape_args "$sc0"
    n=$runs; t=$run_timeout; extra=()
    if [ "$sc0" = drain ]; then n=$drain_runs; t=$drain_timeout; extra=(--jobs="$drain_jobs"); fi
    for run in $(seq "$n"); do
        for srv in "${server_list[@]}"; do
            takes_part "$srv" "$sc0" || continue
            count=$((count + 1))
            dir=$out/$srv/$sc-$run
            printf '[%d/%d] %-12s %-13s run %d: ' "$count" "$total" "$srv" "$sc" "$run"
            if ! start_server "$srv" "$dir"; then
                echo "n/a ($(cat "$dir/start.err"))"
                echo "$srv $sc run $run: $(cat "$dir/start.err")" >>"$out/failures.txt"
                continue
            fi
            threads=$(awk '/^Threads:/ {print $2}' "/proc/$srv_pid/status" 2>/dev/null)
            tls=()
            is_tls_kind "$srv" && read -r -a tls <<<"$(tls_bench_args)"
            if [ "$srv" = beanstalkd ]; then
                # of the extra arguments, those beanstalk-bench knows too
                bs_extra=()
                for a in "${bench_args[@]}"; do
                    case $a in --jobs=*|--payload-size=*|--stall=*) bs_extra+=("$a") ;; esac
                done
                timeout --kill-after=10 $((t + 30)) "$BEANSTALK_BENCH" "${bs_args[@]}" "${extra[@]}" \
                    "${bs_extra[@]}" \
                    --port="$srv_port" --server-pid="$srv_pid" --label="$srv" --timeout="$t" \
                    >"$dir/bench.out" 2>"$dir/bench.err"
            else
                timeout --kill-after=10 $((t + 30)) "$SPUR_BENCH" --scenario="$sb_scenario" \
                    --port="$srv_port" --server-pid="$srv_pid" --label="$srv" --timeout="$t" \
                    "${sb_args[@]}" "${extra[@]}" "${tls[@]}" "${bench_args[@]}" \
                    >"$dir/bench.out" 2>"$dir/bench.err"
            fi
            rc=$?
            stop_server
            line=$(grep '^RESULT ' "$dir/bench.out" | tail -n1)
            kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
            anomalies=$(kv anomalies); status=$(kv status)
            if [ "$rc" != 0 ] || [ "$status" != ok ] || [ "$anomalies" != 0 ]; then
                why="exit $rc, status ${status:-none}, anomalies ${anomalies:-?}"
                echo "FAILED ($why)"
                {
                    echo "$srv $sc run $run: $why"
                    grep -m3 -e 'spur-bench' -e 'beanstalk-bench' "$dir/bench.err" | sed 's/^/    /'
                } >>"$out/failures.txt"
                echo "$srv $sc $run FAIL" >>"$results"
                continue
            fi
            for key in jobs_per_s p50_us p99_us p999_us cpu_us_per_job queue_jobs_per_s \
                       rss_bytes_per_job rss_bytes_per_conn; do
                v=$(kv "$key")
                [ -n "$v" ] && [ "$v" != n/a ] && echo "$srv $sc $run $key $v" >>"$results"
            done
            echo "$srv $sc $run OK threads=${threads:-?}" >>"$results"
            summary="$(kv jobs_per_s)/s"
            [ -n "$(kv p99_us)" ] && summary="$summary p99 $(kv p99_us) us"
            [ -n "$(kv rss_bytes_per_job)" ] && summary="$summary $(kv rss_bytes_per_job) B/job"
            [ -n "$(kv rss_bytes_per_conn)" ] && summary="$summary $(kv rss_bytes_per_conn) B/conn"
            echo "$summary (server threads ${threads:-?})"
        done
    done
done
[ "$cond" = busy ] && hogs_stop
done
echo "finished in $(( $(date +%s) - started )) s"

# ------------------------------------------------------------------------------ table

# Rows: scenario metric direction (higher or lower is better) label.
rows="bg-submit jobs_per_s higher jobs/s
bg-submit p50_us lower ack_p50_us
bg-submit p99_us lower ack_p99_us
bg-submit cpu_us_per_job lower cpu_us/job
rt-latency jobs_per_s higher jobs/s
rt-latency p50_us lower p50_us
rt-latency p99_us lower p99_us
rt-latency p999_us lower p99.9_us
rt-latency cpu_us_per_job lower cpu_us/job
rt-throughput jobs_per_s higher jobs/s
rt-throughput p50_us lower p50_us
rt-throughput p99_us lower p99_us
rt-throughput cpu_us_per_job lower cpu_us/job
drain jobs_per_s higher drain_jobs/s
drain queue_jobs_per_s higher queue_jobs/s
drain rss_bytes_per_job lower rss_B/job
drain cpu_us_per_job lower cpu_us/job
idle-conns rss_bytes_per_conn lower rss_B/conn
idle-conns p50_us lower echo_p50_us
idle-conns p99_us lower echo_p99_us
fanout jobs_per_s higher jobs/s
fanout p99_us lower p99_us
fanout p999_us lower p99.9_us
fanout cpu_us_per_job lower cpu_us/job"
for sh in 1x1-w1 4x4-w1 4x4-w32 idle100 bg-4x64; do
    rows="$rows
$sh jobs_per_s higher jobs/s
$sh p50_us lower p50_us
$sh p99_us lower p99_us
$sh cpu_us_per_job lower cpu_us/job"
done
# every row once per condition: the busy rows are named SCENARIO@busy
all_rows=""
all_scenarios=""
for cond in "${condition_list[@]}"; do
    suffix=""; [ "$cond" = busy ] && suffix=@busy
    all_rows="$all_rows$(awk -v x="$suffix" 'NF {$1 = $1 x; print}' <<<"$rows")
"
    for sc0 in "${scenario_list[@]}"; do all_scenarios="$all_scenarios,$sc0$suffix"; done
done

echo
echo "Medians (ratio = spurd / best gearmand configuration for that row; vs base = spurd /"
echo "spurd-base when it ran; vs ceiling = spurd / answer-only, the server that answers and keeps"
echo "no job state, for bg-submit jobs/s; tls ratio = spurd-tls / gearmand-tls; vs bs = spurd /"
echo "beanstalkd; '*' = some runs failed)"
awk -v servers="$servers" -v scenarios="${all_scenarios#,}" -v rows="$all_rows" '
function median(list,    a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    if (n % 2) return a[(n + 1) / 2]
    return (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(v) { return (v >= 100 || v == int(v)) ? sprintf("%.0f", v) : sprintf("%.1f", v) }
{
    if ($4 == "FAIL") { failed[$1 SUBSEP $2] = 1; next }
    if ($4 == "OK") { next }
    k = $1 SUBSEP $2 SUBSEP $4
    vals[k] = (k in vals) ? vals[k] " " $5 : $5
}
END {
    ns = split(servers, sv, ",")
    split(scenarios, want, ","); for (i in want) wanted[want[i]] = 1
    printf "%-14s %-13s", "scenario", "metric"
    for (i = 1; i <= ns; i++) printf " %13s", sv[i]
    printf " %8s", "ratio"
    for (i = 1; i <= ns; i++) if (sv[i] == "spurd-base") printf " %8s", "vs base"
    for (i = 1; i <= ns; i++) if (sv[i] == "answer-only") printf " %10s", "vs ceiling"
    for (i = 1; i <= ns; i++) if (sv[i] == "spurd-tls") printf " %9s", "tls ratio"
    for (i = 1; i <= ns; i++) if (sv[i] == "beanstalkd") printf " %8s", "vs bs"
    printf " %s\n", "(better)"
    nr = split(rows, rl, "\n")
    for (r = 1; r <= nr; r++) {
        split(rl[r], f, " "); sc = f[1]; m = f[2]; dir = f[3]; label = f[4]
        if (!(sc in wanted)) continue
        printf "%-14s %-13s", sc, label
        best = ""; sp = ""; base = ""; hasbase = 0; ceil = ""; hasceil = 0
        stls = ""; gtls = ""; hastls = 0; bs = ""; hasbs = 0
        for (i = 1; i <= ns; i++) {
            k = sv[i] SUBSEP sc SUBSEP m
            if (k in vals) {
                v = median(vals[k]); cell = fmt(v) ((sv[i] SUBSEP sc) in failed ? "*" : "")
                if (sv[i] == "spurd") sp = v
                else if (sv[i] == "spurd-base") base = v
                else if (sv[i] == "answer-only") ceil = v
                else if (sv[i] == "spurd-tls") stls = v
                else if (sv[i] == "gearmand-tls") gtls = v
                else if (sv[i] == "beanstalkd") bs = v
                else if (best == "" || (dir == "higher" ? v > best : v < best)) best = v
            } else cell = "n/a"
            if (sv[i] == "spurd-base") hasbase = 1
            if (sv[i] == "answer-only") hasceil = 1
            if (sv[i] == "spurd-tls") hastls = 1
            if (sv[i] == "beanstalkd") hasbs = 1
            printf " %13s", cell
        }
        if (sp != "" && best != "" && best > 0) printf " %8.2f", sp / best
        else printf " %8s", "n/a"
        if (hasbase && sp != "" && base != "" && base > 0) printf " %8.2f", sp / base
        else if (hasbase) printf " %8s", "n/a"
        isbg = (sc ~ /^bg-/ && m == "jobs_per_s")
        if (hasceil && isbg && sp != "" && ceil != "" && ceil > 0)
            printf " %10.2f", sp / ceil
        else if (hasceil) printf " %10s", isbg ? "n/a" : ""
        if (hastls && stls != "" && gtls != "" && gtls > 0) printf " %9.2f", stls / gtls
        else if (hastls) printf " %9s", "n/a"
        if (hasbs && sp != "" && bs != "" && bs > 0) printf " %8.2f", sp / bs
        else if (hasbs) printf " %8s", "n/a"
        printf " %s\n", dir
    }
}' "$results"

if [ -s "$out/failures.txt" ]; then
    echo
    echo "Failed runs (details in $out/<server>/<scenario>-<run>/):"
    cat "$out/failures.txt"
fi
echo
echo "Server threads seen: $(awk '$4 == "OK" {split($5, t, "="); s[$1] = t[2]} END {for (k in s) printf "%s=%s ", k, s[k]}' "$results")"
exit 0
