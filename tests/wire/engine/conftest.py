# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures and markers for the job-engine wire tests (tests/wire/engine/).

The parent tests/wire/conftest.py fixtures (server, server_factory, conn, gearmand,
gearmand_factory) are available here. This file adds:

- the skip logic for the markers:
    spur_only      behaviour where spurd deliberately differs from gearmand 1.1.20: skipped
                   against an external server (SPUR_TEST_SERVER) or with SPUR_DIFF=gearmand;
    gearmand_only  pins gearmand's own (differing) behaviour, documented in DIFFERENCES.md: runs
                   only with SPUR_DIFF=gearmand, against a private gearmand it starts itself;
- `any_server_factory(*spurd_options)`: a spurd started with those options, or, with
  SPUR_DIFF=gearmand, Debian's gearmand started with the equivalent options, so behaviour that
  needs a server option is still checked against gearmand. Without SPUR_DIFF it skips against an
  external server, like server_factory.

Running the suite differentially against gearmand:

    /usr/sbin/gearmand --port=P --listen=127.0.0.1 -t 0 -l /tmp/g.log &
    SPUR_TEST_SERVER=127.0.0.1:P SPUR_DIFF=gearmand \
        python3 -m pytest -p no:cacheprovider -q engine
"""
import importlib.util
import os

import pytest

# The parent conftest, loaded under its own name: importing it as `conftest` from here would
# find this file instead. Its helpers are re-exported so `from conftest import X` works in the
# test modules whichever conftest Python resolves.
_spec = importlib.util.spec_from_file_location(
    "spur_wire_conftest",
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conftest.py"))
_parent = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_parent)
EXTERNAL = _parent.EXTERNAL
Server = _parent.Server
start_spurd = _parent.start_spurd
start_gearmand = _parent.start_gearmand
free_port = _parent.free_port
is_gearmand = _parent.is_gearmand
KILL_WAIT = _parent.KILL_WAIT
poll = _parent.poll
PG_SCRIPT = _parent.PG_SCRIPT

DIFF = os.environ.get("SPUR_DIFF", "")
if DIFF not in ("", "gearmand"):
    raise RuntimeError("SPUR_DIFF must be empty or 'gearmand', not %r" % DIFF)


# SPUR_RUN_SPUR_ONLY=1 runs the spur_only tests anyway, to see how another server fails them.
RUN_SPUR_ONLY = os.environ.get("SPUR_RUN_SPUR_ONLY") == "1"


def pytest_runtest_setup(item):
    if item.get_closest_marker("spur_only") and (EXTERNAL or DIFF) and not RUN_SPUR_ONLY:
        pytest.skip("spur_only: spurd deliberately differs from gearmand here (DIFFERENCES.md)")
    if item.get_closest_marker("gearmand_only") and DIFF != "gearmand":
        pytest.skip("gearmand_only: documents gearmand's behaviour; runs with SPUR_DIFF=gearmand")


def gearmand_args(spurd_args):
    """Translate spurd options into gearmand 1.1.20 options with the same meaning.

    --job-retries: spurd's N >= 1 is gearmand's N (the job fails on the N-th loss). spurd's -1
    (unlimited) is gearmand 1.1.20's 0, and spurd's 0 (fail on the first loss) is gearmand's 1.
    --can-do-timeout=requeue is what gearmand always does, so it is dropped. Everything else
    (--exceptions, --worker-wakeup, --job-handle-prefix, --round-robin) has the same spelling and
    meaning."""
    out = []
    for a in spurd_args:
        if a.startswith("--job-retries=") or a.startswith("-j"):
            n = int(a.split("=", 1)[1] if a.startswith("--") else a[2:])
            out.append("--job-retries=%d" % (0 if n < 0 else max(n, 1)))
        elif a == "--can-do-timeout=requeue":
            continue
        else:
            out.append(a)
    return out


@pytest.fixture
def any_server_factory(server_factory, gearmand_factory):
    """Start a server with spurd options: spurd, or gearmand with SPUR_DIFF=gearmand."""

    def make(*args):
        if DIFF == "gearmand":
            return gearmand_factory(*gearmand_args(args))
        return server_factory(*args)

    return make


@pytest.fixture(params=["spurd", "gearmand"])
def both_factory(request, server_factory, gearmand_factory):
    """Runs the test twice, against spurd and against Debian's gearmand (differential): make(*args)
    starts the server with spurd options translated as by gearmand_args. Against an external
    server, the spurd half is skipped, like server_factory."""
    if request.param == "spurd" and EXTERNAL:
        pytest.skip("needs its own spurd")

    def make(*args):
        if request.param == "gearmand":
            return gearmand_factory(*gearmand_args(args))
        return server_factory(*args)

    make.kind = request.param
    return make
