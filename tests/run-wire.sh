#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs the pytest wire suite against the spurd built in this tree (or $SPUR_TEST_SERVER).
# Slow tests run only when SPUR_SLOW=1. The 15 slowest steps are listed before the summary, so a
# CI log shows where its time went.
set -e
marker="not slow"
[ "${SPUR_SLOW:-0}" = "1" ] && marker=""
# The tests run in parallel, one pytest-xdist worker per CPU (SPUR_TEST_JOBS=N to choose, 1 for
# one process); each test starts its own servers on free ports, so none shares state with another.
jobs="${SPUR_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}"
parallel=""
if [ "$jobs" -gt 1 ] && "$PYTHON" -c "import xdist" 2>/dev/null; then
    parallel="-n $jobs"
fi
cd "$SPUR_SRCDIR/tests/wire"
exec "$PYTHON" -m pytest -p no:cacheprovider -c pytest.ini -m "$marker" $parallel -v -rs --durations=15 .
