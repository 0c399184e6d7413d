# SPDX-License-Identifier: BSD-3-Clause
# bench/servers.sh: starting and stopping the servers under test, for run.sh and curves.sh
# (sourced, bash). Reads SPURD, SPURD_BASE, ANSWER_SERVER and GEARMAND; start_server sets
# srv_pid and srv_port, stop_server stops that server; an EXIT trap stops it too.

srv_pid=""
srv_port=""

# stop_server stops the server we started, politely first.
stop_server() {
    [ -n "$srv_pid" ] || return 0
    if kill -0 "$srv_pid" 2>/dev/null; then
        kill -TERM "$srv_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$srv_pid" 2>/dev/null
    fi
    wait "$srv_pid" 2>/dev/null
    srv_pid=""
}
trap 'stop_server' EXIT
trap 'stop_server; exit 130' INT TERM

# port_in_use reports whether any socket uses local port $1 (IPv4 or IPv6).
port_in_use() {
    local hex
    hex=$(printf ':%04X ' "$1")
    grep -qs "$hex" /proc/net/tcp /proc/net/tcp6
}

# wait_listening waits up to 10 s for 127.0.0.1:$1 to accept while $2 is alive.
wait_listening() {
    local i
    for i in $(seq 200); do
        kill -0 "$2" 2>/dev/null || return 1
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    return 1
}

# start_server NAME LOGDIR: starts a fresh server; sets srv_pid and srv_port. Returns 0 or 1.
start_server() {
    local name=$1 dir=$2 try port
    mkdir -p "$dir"
    case $name in
        spurd|spurd-base|answer-only)
            local bin=$SPURD
            [ "$name" = spurd-base ] && bin=$SPURD_BASE
            [ "$name" = answer-only ] && bin=$ANSWER_SERVER
            [ -x "$bin" ] || { echo "$name not found at $bin" >"$dir/start.err"; return 1; }
            rm -f "$dir/port"
            if [ "$name" = answer-only ]; then
                "$bin" --listen=127.0.0.1 --port-file="$dir/port" >>"$dir/server.out" 2>&1 &
            else
                "$bin" --port=0 --listen=127.0.0.1 --port-file="$dir/port" \
                    --log-file="$dir/server.log" >>"$dir/server.out" 2>&1 &
            fi
            srv_pid=$!
            for _ in $(seq 200); do
                [ -s "$dir/port" ] && break
                kill -0 "$srv_pid" 2>/dev/null || break
                sleep 0.05
            done
            srv_port=$(cat "$dir/port" 2>/dev/null)
            if [ -z "$srv_port" ] || ! wait_listening "$srv_port" "$srv_pid"; then
                echo "$name did not start (see $dir/server.out)" >"$dir/start.err"
                stop_server
                return 1
            fi
            return 0
            ;;
        gearmand-t0) set -- -t 0 ;;
        gearmand) set -- ;;
        gearmand-hb) set -- --hashtable-buckets 1000003 ;;
        gearmand-t0-hb) set -- -t 0 --hashtable-buckets 1000003 ;;
        *) echo "unknown server $name" >"$dir/start.err"; return 1 ;;
    esac
    [ -x "$GEARMAND" ] || { echo "gearmand not found at $GEARMAND" >"$dir/start.err"; return 1; }
    for try in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 12000)) # below the ephemeral range the bench's sockets use
        port_in_use "$port" && continue
        "$GEARMAND" --port="$port" --listen=127.0.0.1 --log-file="$dir/server.log" \
            --pid-file="$dir/gearmand.pid" "$@" >>"$dir/server.out" 2>&1 &
        srv_pid=$!
        if wait_listening "$port" "$srv_pid"; then
            srv_port=$port
            return 0
        fi
        stop_server
    done
    echo "gearmand did not start (see $dir/server.out)" >"$dir/start.err"
    return 1
}
