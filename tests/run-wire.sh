#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs the pytest wire suite against the spurd built in this tree (or $SPUR_TEST_SERVER).
# Slow tests run only when SPUR_SLOW=1. The 15 slowest steps are listed before the summary, so a
# CI log shows where its time went.
set -e
marker="not slow"
[ "${SPUR_SLOW:-0}" = "1" ] && marker=""
cd "$SPUR_SRCDIR/tests/wire"
exec "$PYTHON" -m pytest -p no:cacheprovider -c pytest.ini -m "$marker" -v -rs --durations=15 .
