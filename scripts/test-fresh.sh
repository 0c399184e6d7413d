#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The README followed word for word on a fresh Debian 12. Run as root on a Debian-like machine
# with debootstrap (apt-get install debootstrap) and unshare (util-linux).
# Usage: scripts/test-fresh.sh [quick|full]
#   quick (the default): builds (or takes from the cache) a minbase Debian 12 root, with only git
#     and ca-certificates added, clones this tree's HEAD into /root/spur, runs the README's quick
#     start command exactly as the README's "Quick start" block spells it, waits until spurd
#     answers on 127.0.0.1:4730 and [::1]:4730, then runs the README's "Using it" block (the
#     first job with Debian's gearman CLI must print olleh), stops the quick start and runs
#     the README's -d line (spurd in the background), which must answer on both addresses and
#     stop on SIGTERM. scripts/test-all.sh runs this.
#   full: quick, then the README's second command (scripts/test-all.sh) in the root too.
# After each command no daemon the dependencies could have started (gearmand, postgres,
# prometheus, exim4) may be running, or be left enabled for the next boot (a systemd wants link,
# a SysV start link).
# Everything runs in new mount, PID and network namespaces: a chroot with /proc, /sys and /dev
# mounted, and only a loopback interface, set up as on a stock install (/etc/hosts maps
# localhost to 127.0.0.1 and ::1). apt reaches the mirror of this machine's own apt sources
# through a relay: 127.0.0.1:3142 in the namespace, the apt proxy of the root, forwards to a
# unix socket that a process outside forwards to the mirror; nothing else in the root has a
# network. When the script ends, the namespaces end with it: every process in them is killed and
# every mount goes, and the root is deleted.
# Cache (SPUR_FRESH_CACHE, default /var/cache/spur-fresh): the debootstrapped root as a tarball
# (rebuilt when missing; delete it to start again) and apt's downloaded packages, so a rerun
# downloads nothing; one run at a time per cache (apt locks its archives). Timings on a 2-core
# machine: cold about 5 minutes (debootstrap and the tarball 2, the quick start's install and
# build 2, the rest under a minute); warm 1 to 3 (with the load); full adds test-all.sh's time.
# Limits: SPUR_FRESH_TIMEOUT (seconds, default 1800) for the quick start to answer and for the
# "Using it" block; SPUR_FRESH_FULL_TIMEOUT (default 10800) for test-all.sh. SPUR_FRESH_KEEP=1 keeps
# the root (its path is printed) for a look afterwards. SPUR_FRESH_REF=COMMIT tests that commit
# instead of HEAD (its README's commands).
set -e
mode=${1:-quick}
case $mode in
quick | full) ;;
*) echo "usage: $0 [quick|full]" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${SPUR_FRESH_CACHE:-/var/cache/spur-fresh}
timeout=${SPUR_FRESH_TIMEOUT:-1800}
full_timeout=${SPUR_FRESH_FULL_TIMEOUT:-10800}
started=$(date +%s)
say() { echo "test-fresh: [$(($(date +%s) - started))s] $*"; }
fail() { echo "test-fresh: FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, namespaces)"
command -v debootstrap >/dev/null 2>&1 || fail "needs debootstrap (apt-get install debootstrap)"
command -v unshare >/dev/null 2>&1 || fail "needs unshare (util-linux)"
command -v python3 >/dev/null 2>&1 || fail "needs python3 (the apt relay)"

# The mirror: this machine's own apt sources (deb822 or one-line), or SPUR_FRESH_MIRROR
uris=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*//p')
uris="$uris $(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -n 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\).*/\2/p')"
mirror=${SPUR_FRESH_MIRROR:-$(echo $uris | tr ' ' '\n' | grep -v security | grep '^http://' | sed -n 1p)}
security=$(echo $uris | tr ' ' '\n' | grep security | grep '^http://' | sed -n 1p)
[ -n "$mirror" ] || fail "no http:// Debian mirror in /etc/apt (set SPUR_FRESH_MIRROR)"
security=${security:-${mirror%/debian}/debian-security}
mirror=${mirror%/}
security=${security%/}

mkdir -p "$cache/apt-archives/partial"
tarball="$cache/bookworm-minbase.tar"
if [ ! -f "$tarball" ]; then
    say "building the minbase root with debootstrap from $mirror (once; cached in $tarball)"
    tmp=$(mktemp -d "$cache/debootstrap.XXXXXX")
    if ! debootstrap --variant=minbase --include=git,ca-certificates bookworm "$tmp/root" \
        "$mirror" >"$tmp/debootstrap.log" 2>&1; then
        tail -n 20 "$tmp/debootstrap.log"
        rm -rf "$tmp"
        fail "debootstrap failed"
    fi
    tar -C "$tmp/root" -cf "$tmp/root.tar" .
    mv "$tmp/root.tar" "$tarball"
    rm -rf "$tmp"
fi

work=$(mktemp -d /var/tmp/spur-fresh.XXXXXX)
root="$work/root"
relay_pid=""
cleanup() {
    [ -z "$relay_pid" ] || kill "$relay_pid" 2>/dev/null || true
    # the mounts live in the namespaces, which are gone by now; make sure before deleting
    if grep -q " $root" /proc/self/mountinfo; then
        umount -R "$root" 2>/dev/null || true
    fi
    if grep -q " $root" /proc/self/mountinfo; then
        echo "test-fresh: $root is still mounted; not deleting it"
    elif [ "${SPUR_FRESH_KEEP:-0}" = 1 ]; then
        echo "test-fresh: the root is kept in $root"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

say "unpacking the root into $root"
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
# a stock install: the hosts file Debian's installer writes, apt sources as it writes them
echo fresh >"$root/etc/hostname"
cat >"$root/etc/hosts" <<EOF
127.0.0.1	localhost
127.0.1.1	fresh

# The following lines are desirable for IPv6 capable hosts
::1     localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
EOF
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
# the test's own: the relay to the mirror, and no expiry check (the mirror may be a snapshot)
cat >"$root/etc/apt/apt.conf.d/90spur-test-fresh" <<EOF
Acquire::http::Proxy "http://127.0.0.1:3142/";
Acquire::Check-Valid-Until "false";
EOF
: >"$root/etc/spur-test-fresh"  # scripts/test-all.sh does not start this test again in here
commit=$(git -C "$top" rev-parse "${SPUR_FRESH_REF:-HEAD}")
git clone -q "$top" "$root/root/spur"
git -C "$root/root/spur" checkout -q "$commit"
say "cloned $commit into /root/spur (uncommitted changes are not in it)"

# The README's commands: the quick start block's two lines, and the "Using it" block (the first
# sh block of each section) without the lines that cannot run unattended (top is interactive; a
# -d line would start a second server on the quick start's port). A trailing "# comment" is not
# part of the command.
block() {
    awk -v h="## $1" -v n="${2:-1}" '$0 == h { in_s = 1; next } in_s && /^## / { exit }
        in_s && $0 == "```sh" { in_b = ++seen == n; next }
        in_b && $0 == "```" { exit } in_b' \
        "$root/root/spur/README.md" | sed 's/[[:space:]]\{1,\}#[[:space:]].*$//'
}
quick_cmd=$(block "Quick start" | sed -n 1p)
all_cmd=$(block "Quick start" | sed -n 2p)
using=$(block "Using it" | grep -v -e ' -d ' -e ' top$')
daemon=$(block "Using it" 2 | grep -e ' -d ' || true)  # spurd in the background instead
[ "$quick_cmd" = "sh scripts/quickstart.sh" ] || fail "README's quick start is '$quick_cmd'"
[ "$all_cmd" = "sh scripts/test-all.sh" ] || fail "README's test command is '$all_cmd'"
printf '%s\n' "$using" | grep -q '^echo hello | gearman -f reverse$' || fail "README's first job is missing"


cat >"$work/relay.py" <<'EOF'
# relay.py out SOCKET HOST...: apt proxy requests from SOCKET go to their host (one of HOST),
# port 80. relay.py in PORT SOCKET: 127.0.0.1:PORT goes to SOCKET.
import os, socket, sys, threading

def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def handle(c, connect):
    try:
        u, first = connect(c)
        u.sendall(first)
    except (OSError, ValueError):
        c.close()
        return
    t = threading.Thread(target=pump, args=(u, c), daemon=True)
    t.start()
    pump(c, u)
    t.join()
    c.close()
    u.close()

def to_mirror(c):
    """Reads the first request line (GET http://HOST/... HTTP/1.1) and connects to HOST:80."""
    buf = b""
    while b"\n" not in buf:
        d = c.recv(4096)
        if not d or len(buf) > 8192:
            raise ValueError("no request")
        buf += d
    uri = buf.split(b"\n", 1)[0].split(b" ")[1].decode()
    host = uri.split("//", 1)[1].split("/", 1)[0]
    if host not in sys.argv[3:]:
        raise ValueError("not a mirror: " + host)
    return socket.create_connection((host, 80), timeout=60), buf

def serve(lsock, connect):
    while True:
        c, _ = lsock.accept()
        threading.Thread(target=handle, args=(c, connect), daemon=True).start()

if sys.argv[1] == "out":
    s = socket.socket(socket.AF_UNIX)
    s.bind(sys.argv[2])
    s.listen(64)
    serve(s, to_mirror)
else:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[2])))
    s.listen(64)

    def to_socket(c):
        u = socket.socket(socket.AF_UNIX)
        u.connect(sys.argv[3])
        return u, b""
    serve(s, to_socket)
EOF
hosts=$(printf '%s\n%s\n' "$mirror" "$security" | sed 's|^http://||; s|[/:].*||' | sort -u)
# shellcheck disable=SC2086 # one argument per host
python3 "$work/relay.py" out "$work/relay.sock" $hosts &
relay_pid=$!
i=0
until [ -S "$work/relay.sock" ]; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "the apt relay did not start within 30 s"
    sleep 0.1
done

# inside.sh runs in the new namespaces (on this machine's file system, with its tools) and
# drives the root with chroot
cat >"$work/inside.sh" <<'EOF'
set -e
root=$1; work=$2; mode=$3; timeout=$4; full_timeout=$5; started=$6
say() { echo "test-fresh: [$(($(date +%s) - started))s] $*"; }
fail() { echo "test-fresh: FAIL: $*"; exit 1; }
ip link set lo up
login_shell=$(awk -F: '$1 == "root" { print $7 }' "$root/etc/passwd")
python3 "$work/relay.py" in 3142 "$work/relay.sock" &
i=0
until python3 -c 'import socket; socket.create_connection(("127.0.0.1", 3142), timeout=1).close()' 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "the apt relay did not listen on 127.0.0.1:3142 within 30 s"
    sleep 0.1
done
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/run"
mount --bind "$CACHE/apt-archives" "$root/var/cache/apt/archives"
# in_root CMD: runs CMD with sh in /root/spur, with root's login environment
in_root() {
    chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL="$login_shell" TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/sh -c "cd /root/spur && $1"
}
# answers HOST: spurd's answer to "version" on HOST port 4730, within a second
answers() {
    python3 -c '
import socket, sys
try:
    with socket.create_connection((sys.argv[1], 4730), timeout=1) as s:
        s.sendall(b"version\n")
        print(s.recv(100).decode().strip())
except OSError:
    sys.exit(1)' "$1"
}
# no_daemons: none of the daemons the test dependencies bring may run
no_daemons() {
    if ps -eo comm= | grep -E '^(gearmand|postgres|prometheus|exim4)$'; then
        ps -eo pid,args
        fail "a daemon runs after $1 (above)"
    fi
    # nor be left enabled for the next boot: a systemd wants link or a SysV start link
    enabled=$(cd "$root/etc" && ls -d systemd/system/*.wants/* rc[2-5].d/S* 2>/dev/null |
              grep -E '/(S[0-9]+)?(gearman-job-server|postgresql[^/]*|prometheus[^/]*|exim4)(\.service)?$' || true)
    [ -z "$enabled" ] || fail "$1 left enabled for the next boot: $enabled"
}

say "README: $QUICK_CMD (log: $work/quickstart.log)"
# in a process group of its own (setsid does not fork here: a background job leads no group),
# so that stopping it is the README's Ctrl-C: SIGINT to the group
setsid chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL="$login_shell" \
    TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/sh -c "cd /root/spur && $QUICK_CMD" >"$work/quickstart.log" 2>&1 &
qs=$!
deadline=$(($(date +%s) + timeout))
until answers 127.0.0.1 >/dev/null && answers ::1 >/dev/null; do
    if ! kill -0 "$qs" 2>/dev/null; then
        tail -n 30 "$work/quickstart.log"
        fail "the quick start exited before spurd answered"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || { tail -n 30 "$work/quickstart.log"; fail "spurd did not answer on 127.0.0.1:4730 and [::1]:4730 within ${timeout}s"; }
    sleep 1
done
say "spurd answers on 127.0.0.1:4730 and [::1]:4730: $(answers ::1)"
if grep -E '^(W: Failed to fetch|E: )' "$work/quickstart.log"; then
    fail "apt could not reach the mirror through the relay (above)"
fi
for f in build/src/spurd build/admin/spuradmin build/admin/spur; do
    [ -x "$root/root/spur/$f" ] || fail "the quick start did not build $f"
done
no_daemons "the quick start"

say "README, Using it:"
printf '%s\n' "$USING" | sed 's/^/    /'
# into a file: the worker the block leaves in the background keeps its output open
if ! timeout "$timeout" chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
        SHELL="$login_shell" TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/sh -ec "cd /root/spur
$USING" >"$work/using.out" 2>&1; then
    tail -n 40 "$work/using.out"
    fail "a command of the README's 'Using it' block failed or took more than ${timeout}s"
fi
out=$(cat "$work/using.out")
echo "$out" | grep -q '^olleh$' || { echo "$out"; fail "the first job did not print olleh"; }
echo "$out" | grep -q '^reverse	' || { echo "$out"; fail "gearadmin --status does not list reverse"; }
say "the first job printed olleh; every line of 'Using it' ran"

say "stopping the quick start (Ctrl-C)"
/bin/kill -s INT -- "-$qs"
wait "$qs" || true
i=0
while answers 127.0.0.1 >/dev/null || answers ::1 >/dev/null; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "the quick start's spurd did not stop within 30 s of Ctrl-C"
    sleep 0.1
done
if [ -n "$DAEMON" ]; then
    # the README's daemon line, once the quick start is stopped: it returns once spurd is ready
    say "README, Using it, in the background: $DAEMON"
    in_root "timeout $timeout $DAEMON" ||
        fail "the README's -d line failed"
    answers 127.0.0.1 >/dev/null && answers ::1 >/dev/null ||
        fail "the -d spurd does not answer on 127.0.0.1:4730 and [::1]:4730"
    pidfile=$(printf '%s\n' "$DAEMON" | sed -n 's/.* -P \([^ ]*\).*/\1/p')
    kill "$(cat "$root$pidfile")"
    i=0
    while answers 127.0.0.1 >/dev/null; do
        i=$((i + 1))
        [ $i -lt 300 ] || fail "the -d spurd did not stop within 30 s of SIGTERM"
        sleep 0.1
    done
fi
if [ "$mode" = full ]; then
    say "README: $ALL_CMD"
    rc=0
    timeout "$full_timeout" chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
        SHELL="$login_shell" TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/sh -c "cd /root/spur && $ALL_CMD" || rc=$?
    [ "$rc" = 0 ] || fail "$ALL_CMD exited with $rc"
    no_daemons "$ALL_CMD"
fi
say "PASS ($mode)"
EOF

say "running in new mount, PID and network namespaces"
CACHE=$cache QUICK_CMD=$quick_cmd ALL_CMD=$all_cmd USING=$using DAEMON=$daemon \
    unshare --mount --propagation private --net --pid --fork --mount-proc \
    sh "$work/inside.sh" "$root" "$work" "$mode" "$timeout" "$full_timeout" "$started"
