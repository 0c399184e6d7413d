#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks the files under dist/ that the packages install against the spurd built here:
# /etc/spur/spurd.conf (dist/spurd.conf) must be accepted by --config-file (tests/wire/
# test_config_file.py checks that it lists every option), and the unit's ExecStart must be the one
# its documentation promises. Run by `make check` (SPURD, SPUR_SRCDIR set).
set -e
: "${SPURD:?}" "${SPUR_SRCDIR:?}"
conf="$SPUR_SRCDIR/dist/spurd.conf"
unit="$SPUR_SRCDIR/dist/spurd.service"
# --check-args checks that the store's directory exists: /var/lib/spur is the package's, so the
# file is checked with its paths moved into a temporary directory
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
sed "s|/var/lib/spur/|$tmpd/|g" "$conf" > "$tmpd/spurd.conf"
if ! out=$("$SPURD" --config-file="$tmpd/spurd.conf" --check-args 2>&1); then
    echo "FAIL: spurd rejects $conf: $out"
    exit 1
fi
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
if [ "$exec_start" != "/usr/sbin/spurd --config-file=/etc/spur/spurd.conf" ]; then
    echo "FAIL: $unit: unexpected ExecStart=$exec_start"
    exit 1
fi
for key in Type=notify User=spur StateDirectory=spur LogsDirectory=spur RuntimeDirectory=spur \
           WatchdogSec= ProtectSystem=strict NoNewPrivileges=yes; do
    grep -q "^$key" "$unit" || { echo "FAIL: $unit has no $key"; exit 1; }
done
# the packaged config listens on localhost, both families where /etc/hosts says so: Debian's
# gearman CLI tries ::1 first
grep -q '^--listen=localhost[[:space:]]' "$conf" || { echo "FAIL: $conf does not listen on localhost"; exit 1; }
# debian/control's Build-Depends are scripts/deps.sh's BUILD list (debian/ is not in the tarball)
control="$SPUR_SRCDIR/debian/control"
if [ -f "$control" ]; then
    want=$(sed -n 's/^BUILD="\(.*\)"$/\1/p' "$SPUR_SRCDIR/scripts/deps.sh" | tr ' ' '\n' |
           grep -v '^build-essential$' | sort | tr '\n' ' ')
    got=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$control" | sed '$d' | sed 's/^Build-Depends://' |
          tr ',' '\n' | sed 's/^[[:space:]]*//; s/[[:space:]].*//' | grep -v '^$' |
          grep -v '^debhelper-compat$' | sort | tr '\n' ' ')
    if [ "$want" != "$got" ]; then
        echo "FAIL: debian/control Build-Depends ($got) differ from scripts/deps.sh BUILD ($want)"
        exit 1
    fi
    # systemctl reload runs ExecReload: /bin/kill is procps's, which minbase lacks
    if grep -q '^ExecReload=/bin/kill ' "$unit" &&
       ! sed -n '/^Package: spurd$/,/^$/p' "$control" | grep -q '^Depends:.*procps'; then
        echo "FAIL: $unit's ExecReload needs /bin/kill but the spurd package does not depend on procps"
        exit 1
    fi
fi
# every document a shipped document links to is shipped too (the docs land side by side in
# /usr/share/doc/spurd), and a package with a logrotate file recommends logrotate
docs="$SPUR_SRCDIR/debian/spurd.docs"
if [ -f "$docs" ]; then
    shipped=$(sed 's|.*/||' "$docs")
    for f in $(grep '\.md$' "$docs"); do
        for target in $(grep -o '](\(docs/\)\?[A-Za-z0-9_-]*\.md' "$SPUR_SRCDIR/$f" |
                        sed 's|.*(||; s|.*/||' | sort -u); do
            echo "$shipped" | grep -qx "$target" ||
                { echo "FAIL: $f links $target, which debian/spurd.docs does not ship"; exit 1; }
        done
    done
    if [ -f "$SPUR_SRCDIR/debian/spurd.logrotate" ] &&
       ! sed -n '/^Package: spurd$/,/^$/p' "$control" | grep -q '^Recommends:.*logrotate'; then
        echo "FAIL: debian/spurd.logrotate is shipped but spurd does not recommend logrotate"
        exit 1
    fi
fi
echo "ok: dist/spurd.conf accepted, dist/spurd.service as documented, Build-Depends = deps.sh BUILD"
