#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds Spur's Debian packages from a temporary copy of this tree, checks them with lintian,
# installs them, runs the installed spurd as its systemd unit would (user spur, the unit's
# ExecStart, NOTIFY_SOCKET), talks to it with gearman/gearadmin, spur/spuradmin and a program built
# against libgearman-compat-dev, stops it, and purges the packages.
#
# Run as root on Debian 12, from anywhere: sh scripts/test-packages.sh
# Needs `scripts/deps.sh package`. Takes about a minute on two idle cores (most of it the build).
# Leaves the system user spur behind (as the package does on purge).
# Environment:
#   SPUR_CHECK_READY=0  do not require READY=1 on NOTIFY_SOCKET, WATCHDOG=1 (WATCHDOG_USEC is set
#                       to 2 s) and STOPPING=1 on SIGTERM (checked by default)
#   KEEP=1              keep the temporary directory (packages, logs) and print where it is
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
tmp=$(mktemp -d /tmp/spur-packages.XXXXXX)
chmod 0755 "$tmp"
pid=""
PKGS="spurd spur-tools libgearman-compat1 libgearman-compat-dev"

say() { printf '== %s\n' "$*"; }
fail() {
    printf 'FAIL: %s\n' "$*" >&2
    [ -f "$tmp/spurd.err" ] && sed 's/^/spurd stderr: /' "$tmp/spurd.err" >&2
    exit 1
}
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    [ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null
    [ -n "${npid:-}" ] && kill "$npid" 2>/dev/null
    [ -n "${made_dirs:-}" ] && rm -rf /var/lib/spur /var/log/spur
    # after a failure, leave the machine as it was
    [ -n "${installed:-}" ] && dpkg --purge $PKGS > /dev/null 2>&1
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ "$(id -u)" = 0 ] || fail "run as root (it installs and purges packages)"
for p in $PKGS; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed$'; then
        fail "$p is already installed; purge it first (this script purges what it installs)"
    fi
done
for d in /var/lib/spur /var/log/spur /etc/spur; do
    [ ! -e "$d" ] || fail "$d exists (left from an earlier run?); remove it first"
done

# ------------------------------------------------------------------ build from a clean copy
say "copying the tree to $tmp/spur"
mkdir "$tmp/spur"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    # tracked and new files, never build products or ignored files
    git -C "$src" ls-files -z --cached --others --exclude-standard |
        (cd "$src" && xargs -0 tar cf - --no-recursion) | tar -C "$tmp/spur" -xf -
else
    tar -C "$src" --exclude=./build --exclude='./build-*' -cf - . | tar -C "$tmp/spur" -xf -
fi

say "dpkg-buildpackage -us -uc -b"
(cd "$tmp/spur" && dpkg-buildpackage -us -uc -b) > "$tmp/build.log" 2>&1 ||
    { tail -40 "$tmp/build.log"; fail "dpkg-buildpackage failed (log: $tmp/build.log)"; }
for p in $PKGS; do
    ls "$tmp/${p}_"*.deb >/dev/null 2>&1 || fail "no $p package was built"
done

say "lintian"
lintian --fail-on error,warning "$tmp"/spur_*.changes || fail "lintian"
# what was built, for the record: each package's contents and lintian's full report (info too)
for p in $PKGS; do
    deb=$(ls "$tmp/${p}_"*.deb)
    echo "-- $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
    dpkg-deb -c "$deb" | awk '{print "   " $1, $3, $6}'
done
echo "-- lintian --info (the whole report; empty when clean)"
lintian --info --display-info "$tmp"/spur_*.changes 2>&1 | sed 's/^/   /' || true

# ------------------------------------------------------------------ install
say "dpkg -i"
debs=""
for p in $PKGS; do debs="$debs $(ls "$tmp/${p}_"*.deb)"; done
dpkg -i $debs > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i"; }
installed=1
id spur >/dev/null 2>&1 || fail "the package did not create the system user spur"
dpkg-query -W -f='${Conffiles}\n' spurd | grep -q '/etc/spur/spurd.conf' ||
    fail "/etc/spur/spurd.conf is not a conffile"
unit=/lib/systemd/system/spurd.service
[ -f "$unit" ] || fail "$unit is not installed"
if command -v systemd-analyze >/dev/null 2>&1; then
    systemd-analyze verify "$unit" > "$tmp/verify.log" 2>&1 ||
        { cat "$tmp/verify.log"; fail "systemd-analyze verify $unit"; }
fi
[ -f /etc/logrotate.d/spurd ] || fail "/etc/logrotate.d/spurd is not installed"
# On a machine booted with systemd the package has started spurd.service: stop it, so that the
# copy below has the store to itself.
if [ -d /run/systemd/system ]; then
    systemctl stop spurd.service || true
fi

# ------------------------------------------------------------------ run it as the unit would
# The unit's ExecStart, with the port moved to a free one so a running gearmand does not matter.
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$exec_start" = "/usr/sbin/spurd --config-file=/etc/spur/spurd.conf" ] ||
    fail "unexpected ExecStart: $exec_start"
# StateDirectory=spur and LogsDirectory=spur: systemd creates them owned by User=
install -d -o spur -g spur -m 0750 /var/lib/spur /var/log/spur
made_dirs=1
# --check-args also checks that the store's directory exists (created by the unit's first start)
/usr/sbin/spurd --config-file=/etc/spur/spurd.conf --check-args ||
    fail "spurd does not accept the shipped /etc/spur/spurd.conf"
run="$tmp/run"
install -d -o spur -g spur -m 0750 "$run"
notify="$run/notify.sock"
# A reader for NOTIFY_SOCKET: prints every datagram, one per line ("\n" inside shown as "|").
python3 - "$notify" >> "$tmp/notify.out" 2>&1 <<'EOF' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
print("bound", flush=True)
while True:
    m = s.recv(4096)
    print(m.decode(errors="replace").replace("\n", "|"), flush=True)
EOF
npid=$!
# wait_notify PATTERN TRIES MESSAGE: polls the NOTIFY_SOCKET reader's output every 0.1 s until a
# line matches PATTERN, or fails with MESSAGE after TRIES polls.
wait_notify() {
    i=0
    until grep -q "$1" "$tmp/notify.out"; do
        i=$((i + 1))
        [ $i -lt "$2" ] || fail "$3"
        sleep 0.1
    done
}

wait_notify '^bound$' 300 "the NOTIFY_SOCKET reader did not start"

start_spurd() {
    : > "$tmp/spurd.err"
    rm -f "$run/port"
    setpriv --reuid=spur --regid=spur --init-groups \
        env -i PATH=/usr/sbin:/usr/bin NOTIFY_SOCKET="$notify" WATCHDOG_USEC=2000000 \
        $exec_start --port=0 --port-file="$run/port" 2> "$tmp/spurd.err" &
    pid=$!
    i=0
    while [ ! -s "$run/port" ]; do
        kill -0 "$pid" 2>/dev/null || fail "spurd exited at start-up"
        i=$((i + 1))
        [ $i -lt 300 ] || fail "spurd did not bind within 30 s"
        sleep 0.1
    done
    port=$(cat "$run/port")
    if [ "${SPUR_CHECK_READY:-1}" = 1 ]; then
        wait_notify 'READY=1' 300 "no READY=1 on NOTIFY_SOCKET within 30 s"
        wait_notify 'WATCHDOG=1' 300 "no WATCHDOG=1 within 30 s with WATCHDOG_USEC=2000000"
    fi
    say "spurd runs as $(ps -o user= -p "$pid") on port $port"
    [ "$(ps -o user= -p "$pid")" = spur ] || fail "spurd does not run as spur"
}
stop_spurd() {
    kill -TERM "$pid"
    st=0
    wait "$pid" || st=$?
    pid=""
    [ "$st" = 0 ] || fail "spurd exited with $st on SIGTERM"
    if [ "${SPUR_CHECK_READY:-1}" = 1 ]; then
        wait_notify 'STOPPING=1' 100 "no STOPPING=1 on NOTIFY_SOCKET after SIGTERM"
    fi
    : > "$tmp/notify.out"
}

start_spurd
say "gearman / gearadmin"
gearman -h 127.0.0.1 -p "$port" -w -f reverse -c 1 -- rev > /dev/null 2>&1 &
wpid=$!
out=$(printf 'hello' | timeout 30 gearman -h 127.0.0.1 -p "$port" -f reverse)
[ "$out" = olleh ] || fail "gearman -f reverse gave '$out'"
wait "$wpid" || true
wpid=""
# a function with no worker and no job is freed, so list one made by create function
timeout 30 gearadmin -h 127.0.0.1 -p "$port" --create-function=reverse > /dev/null ||
    fail "gearadmin --create-function failed"
timeout 30 gearadmin -h 127.0.0.1 -p "$port" --status | grep -q '^reverse	0	0	0$' ||
    fail "gearadmin --status does not list reverse"

say "spur / spuradmin"
spur -h 127.0.0.1 -p "$port" -w -f upper -c 1 -- tr a-z A-Z > /dev/null 2>&1 &
wpid=$!
out=$(printf 'hello' | timeout 30 spur -h 127.0.0.1 -p "$port" -f upper)
[ "$out" = HELLO ] || fail "spur -f upper gave '$out'"
wait "$wpid" || true
wpid=""
timeout 30 spuradmin -h 127.0.0.1 -p "$port" --create-function=upper > /dev/null ||
    fail "spuradmin --create-function failed"
timeout 30 spuradmin -h 127.0.0.1 -p "$port" --status | grep -q '^upper	0	0	0$' ||
    fail "spuradmin --status does not list upper"

say "a program built with pkg-config libgearman-compat"
cc -o "$tmp/reverse_client" "$src/libgearman-compat/examples/reverse_client.c" \
    $(pkg-config --cflags --libs libgearman-compat) || fail "cannot build against libgearman-compat-dev"
ldd "$tmp/reverse_client" | grep -Eq 'libgearman-compat.so.1 => /(usr/)?lib/' ||
    fail "reverse_client is not linked with the installed libgearman-compat.so.1"
gearman -h 127.0.0.1 -p "$port" -w -f reverse -c 1 -- rev > /dev/null 2>&1 &
wpid=$!
out=$(timeout 30 "$tmp/reverse_client" -h 127.0.0.1 -p "$port" "Hello")
[ "$out" = "Result=olleH" ] || fail "reverse_client gave '$out'"
wait "$wpid" || true
wpid=""

say "the store in /var/lib/spur keeps a background job across a restart"
timeout 30 gearman -h 127.0.0.1 -p "$port" -b -f kept -s > /dev/null || fail "background submit"
stop_spurd
[ -s /var/log/spur/spurd.log ] || fail "nothing was logged to /var/log/spur/spurd.log"
start_spurd
timeout 30 gearadmin -h 127.0.0.1 -p "$port" --status | grep -q '^kept	1	0	' ||
    fail "the background job did not survive the restart"
stop_spurd

# ------------------------------------------------------------------ purge
say "dpkg --purge"
installed=""
dpkg --purge $PKGS > "$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; fail "dpkg --purge"; }
[ ! -e /etc/spur/spurd.conf ] || fail "/etc/spur/spurd.conf is left after purge"
[ ! -e /usr/sbin/spurd ] || fail "/usr/sbin/spurd is left after purge"

say "ok: packages built, lintian clean, installed, served, purged in $(( $(date +%s) - start )) s"
