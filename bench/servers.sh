# SPDX-License-Identifier: BSD-3-Clause
# bench/servers.sh: starting and stopping the servers under test, for run.sh and curves.sh
# (sourced, bash). Reads SPURD, SPURD_BASE, ANSWER_SERVER and GEARMAND; start_server sets
# srv_pid and srv_port, stop_server stops that server (BEANSTALKD too, for the beanstalkd kind); an EXIT trap stops it too.
# The TLS kinds (spurd-tls, gearmand-tls) need TLS_DIR, filled by make_tls_certs.

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

# make_tls_certs DIR: a CA, a server certificate for 127.0.0.1 and localhost, and a client
# certificate, made with the openssl CLI: DIR/ca.pem, server.pem, server.key, client.pem,
# client.key. Returns 0, or 1 with the reason on stderr.
make_tls_certs() {
    local d=$1
    command -v openssl >/dev/null || { echo "openssl (the CLI) is not installed" >&2; return 1; }
    mkdir -p "$d" && (
        set -e
        cd "$d"
        key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1"; }
        key ca.key
        openssl req -x509 -new -key ca.key -out ca.pem -days 3 -subj /CN=spur-bench-ca \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
        printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
        printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n' >client.ext
        for who in server client; do
            key "$who.key"
            openssl req -new -key "$who.key" -out "$who.csr" -subj "/CN=spur-bench-$who"
            openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
                -out "$who.pem" -days 3 -extfile "$who.ext"
        done
    ) >"$d/openssl.log" 2>&1 || { echo "openssl failed (see $d/openssl.log)" >&2; return 1; }
}

# tls_bench_args prints the spur-bench options for the TLS kinds.
tls_bench_args() {
    echo --tls --tls-ca="$TLS_DIR/ca.pem" --tls-cert="$TLS_DIR/client.pem" \
        --tls-key="$TLS_DIR/client.key"
}

# is_tls_kind NAME says whether the server kind NAME speaks TLS.
is_tls_kind() { case $1 in *-tls) return 0 ;; esac; return 1; }

# tls_check NAME DIR: after start_server, checks that 127.0.0.1:$srv_port completes a verified
# TLS handshake; otherwise writes why to DIR/start.err, stops the server and returns 1.
tls_check() {
    local name=$1 dir=$2
    if timeout 10 openssl s_client -connect "127.0.0.1:$srv_port" -CAfile "$TLS_DIR/ca.pem" \
        -cert "$TLS_DIR/client.pem" -key "$TLS_DIR/client.key" -verify_return_error \
        </dev/null >"$dir/tls-check.out" 2>&1; then
        return 0
    fi
    if [ "$name" = gearmand-tls ]; then
        echo "gearmand-tls: this gearmand accepts --ssl but does not speak TLS (built without" \
             "SSL, as Debian's 1.1.20 is); see $dir/tls-check.out" >"$dir/start.err"
    else
        echo "$name: no TLS handshake on port $srv_port (see $dir/tls-check.out)" >"$dir/start.err"
    fi
    stop_server
    return 1
}

# start_server NAME LOGDIR: starts a fresh server; sets srv_pid and srv_port. Returns 0 or 1.
start_server() {
    local name=$1 dir=$2 try port
    mkdir -p "$dir"
    case $name in
        spurd|spurd-base|answer-only|spurd-tls)
            local bin=$SPURD tls=()
            [ "$name" = spurd-base ] && bin=$SPURD_BASE
            [ "$name" = spurd-tls ] && tls=(--ssl --ssl-ca-file="$TLS_DIR/ca.pem"
                --ssl-certificate="$TLS_DIR/server.pem" --ssl-key="$TLS_DIR/server.key")
            [ "$name" = answer-only ] && bin=$ANSWER_SERVER
            [ -x "$bin" ] || { echo "$name not found at $bin" >"$dir/start.err"; return 1; }
            rm -f "$dir/port"
            if [ "$name" = answer-only ]; then
                "$bin" --listen=127.0.0.1 --port-file="$dir/port" >>"$dir/server.out" 2>&1 &
            else
                "$bin" --port=0 --listen=127.0.0.1 --port-file="$dir/port" \
                    --log-file="$dir/server.log" "${tls[@]}" >>"$dir/server.out" 2>&1 &
            fi
            srv_pid=$!
            for _ in $(seq 200); do
                [ -s "$dir/port" ] && break
                kill -0 "$srv_pid" 2>/dev/null || break
                sleep 0.05
            done
            srv_port=$(cat "$dir/port" 2>/dev/null)
            if [ -z "$srv_port" ] || ! wait_listening "$srv_port" "$srv_pid"; then
                if [ "$name" = spurd-tls ]; then
                    echo "spurd-tls: this spurd refused the TLS options: $(grep -m1 . \
                        "$dir/server.out" | cut -c1-160)" >"$dir/start.err"
                else
                    echo "$name did not start (see $dir/server.out)" >"$dir/start.err"
                fi
                stop_server
                return 1
            fi
            [ "$name" = spurd-tls ] && { tls_check "$name" "$dir" || return 1; }
            return 0
            ;;
        beanstalkd)
            [ -x "${BEANSTALKD:-}" ] || { echo "beanstalkd not found at ${BEANSTALKD:-} (apt-get" \
                "install beanstalkd)" >"$dir/start.err"; return 1; }
            for try in 1 2 3 4 5; do
                port=$((20000 + RANDOM % 12000))
                port_in_use "$port" && continue
                # in memory (no -b binlog), like gearmand without a queue plugin
                "$BEANSTALKD" -l 127.0.0.1 -p "$port" >>"$dir/server.out" 2>&1 &
                srv_pid=$!
                if wait_listening "$port" "$srv_pid"; then srv_port=$port; return 0; fi
                stop_server
            done
            echo "beanstalkd did not start (see $dir/server.out)" >"$dir/start.err"
            return 1
            ;;
        gearmand-t0) set -- -t 0 ;;
        gearmand) set -- ;;
        gearmand-hb) set -- --hashtable-buckets 1000003 ;;
        gearmand-t0-hb) set -- -t 0 --hashtable-buckets 1000003 ;;
        gearmand-tls) set -- --ssl --ssl-ca-file="$TLS_DIR/ca.pem" \
            --ssl-certificate="$TLS_DIR/server.pem" --ssl-key="$TLS_DIR/server.key" ;;
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
            [ "$name" = gearmand-tls ] && { tls_check "$name" "$dir" || return 1; }
            return 0
        fi
        stop_server
    done
    echo "gearmand did not start (see $dir/server.out)" >"$dir/start.err"
    return 1
}
