# SPDX-License-Identifier: BSD-3-Clause
"""pytest fixtures: a fresh spurd per test on a free port, or an external server.

SPURD=/path/to/spurd         the binary to start (set by `make check`)
SPUR_TEST_SERVER=host:port   run the suite against an already running server (e.g. gearmand)
"""
import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from gearman_wire import Conn

EXTERNAL = os.environ.get("SPUR_TEST_SERVER")

# KILL_WAIT bounds the wait for a SIGKILLed process to be reaped. The signal cannot be refused,
# but a process inside a disk write (an fsync of the store) dies only when the write ends, which
# on a busy disk (the parallel suite, a build beside it) has taken more than 10 seconds.
KILL_WAIT = 120


class Server:
    """A running server under test: its address, and its process when we started it."""

    def __init__(self, addr, proc=None, tmpdir=None, args=()):
        self.addr = addr
        self.proc = proc
        self.tmpdir = tmpdir
        self.args = list(args)
        self.external = proc is None

    def connect(self, timeout=5.0):
        return Conn(self.addr, timeout=timeout)

    def stop(self, sig=None):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=KILL_WAIT if sig == signal.SIGKILL else 10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=KILL_WAIT)
        return self.proc.returncode

    def stderr_text(self):
        path = os.path.join(self.tmpdir, "spurd.log")
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")


def start_spurd(extra_args=(), tmpdir=None, env=None):
    """Start spurd on a free port and wait until it has written its port file."""
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set (run through `make check`)")
    tmpdir = tmpdir or tempfile.mkdtemp(prefix="spurd-test-")
    port_file = os.path.join(tmpdir, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    log = open(os.path.join(tmpdir, "spurd.log"), "ab")
    args = [binary, "--port=0", "--listen=127.0.0.1", "--port-file=" + port_file,
            "--verbose=NOTICE"] + list(extra_args)
    proc = subprocess.Popen(args, stdout=log, stderr=log, env=env)
    log.close()
    deadline = time.monotonic() + 10
    while not os.path.exists(port_file):
        if proc.poll() is not None:
            raise RuntimeError(f"spurd exited with {proc.returncode}: "
                               + open(os.path.join(tmpdir, "spurd.log")).read())
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("spurd did not write its port file")
        time.sleep(0.01)
    with open(port_file) as f:
        port = int(f.read())
    return Server(("127.0.0.1", port), proc, tmpdir, extra_args)


@pytest.fixture
def server_factory():
    """Start spurd with custom options: server_factory('--job-retries=1')."""
    started = []

    def make(*args, tmpdir=None, env=None):
        if EXTERNAL:
            pytest.skip("needs its own spurd with options")
        s = start_spurd(args, tmpdir=tmpdir, env=env)
        started.append(s)
        return s

    yield make
    for s in started:
        rc = s.stop()
        assert rc in (0, None), f"spurd exited with {rc}:\n{s.stderr_text()}"


@pytest.fixture
def server(server_factory):
    """A fresh spurd with default options, or the external server."""
    if EXTERNAL:
        host, port = EXTERNAL.rsplit(":", 1)
        yield Server((host, int(port)))
        return
    yield server_factory()


@pytest.fixture(params=["spurd", "gearmand"])
def both(request, server_factory, gearmand_factory):
    """Runs the test twice: against a fresh spurd and against Debian's gearmand, with the same
    expectations (differential testing)."""
    if request.param == "spurd":
        if EXTERNAL:
            pytest.skip("needs its own spurd")
        return server_factory()
    return gearmand_factory()


@pytest.fixture
def conn(server):
    c = server.connect()
    yield c
    c.close()


def is_gearmand():
    return EXTERNAL is not None


def poll(cond, what="condition", timeout=60):
    """Bounded wait for a server-side effect: polls cond() until it is true and returns its
    value; the deadline is generous because CI runs beside a CPU hog."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


GEARMAND = os.environ.get("SPUR_GEARMAND", "/usr/sbin/gearmand")


def start_gearmand(extra_args=(), tmpdir=None):
    """Start Debian's gearmand on a free loopback port for differential tests."""
    if not os.path.exists(GEARMAND):
        pytest.skip("gearmand is not installed (apt-get install gearman-job-server)")
    tmpdir = tmpdir or tempfile.mkdtemp(prefix="gearmand-test-")
    for _ in range(20):
        port = free_port()
        log = os.path.join(tmpdir, "gearmand.log")
        proc = subprocess.Popen([GEARMAND, "--port=%d" % port, "--listen=127.0.0.1",
                                 "--log-file=" + log, "--pid-file=" + os.path.join(tmpdir, "pid"),
                                 "-t", "0"] + list(extra_args),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return Server(("127.0.0.1", port), proc, tmpdir, extra_args)
            except OSError:
                time.sleep(0.02)
        proc.kill()
        proc.wait()
    raise RuntimeError("could not start gearmand")


@pytest.fixture
def gearmand_factory():
    """Start gearmand with custom options; stopped after the test."""
    started = []

    def make(*args):
        s = start_gearmand(args)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


@pytest.fixture
def gearmand(gearmand_factory):
    """A fresh gearmand (Debian's) for side-by-side comparisons."""
    return gearmand_factory()


PG_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                         "pg-cluster.sh")


class PgCluster:
    """A throw-away PostgreSQL cluster (scripts/pg-cluster.sh) on a unix socket in dir."""

    def __init__(self, dir, bindir):
        self.dir = dir
        self.bindir = bindir
        self.ndb = 0
        self.running = True

    def conninfo(self, db="postgres"):
        return f"host={self.dir} dbname={db} user=spur"

    def psql(self, sql, db="postgres"):
        """Runs sql in database db; returns psql's unaligned output (rows | separated)."""
        r = subprocess.run([os.path.join(self.bindir, "psql"), "-X", "-q", "-A", "-t",
                            "-v", "ON_ERROR_STOP=1", "-d", self.conninfo(db), "-c", sql],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        return r.stdout.decode(errors="replace")

    def new_database(self):
        """Creates an empty database with a fresh name and returns the name."""
        self.ndb += 1
        name = "t%d" % self.ndb
        self.psql("CREATE DATABASE " + name)
        return name

    def ctl(self, what):
        """stop, start (= restart) or restart the cluster, waiting until it is done."""
        r = subprocess.run([PG_SCRIPT, "restart" if what == "start" else what, self.dir],
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        self.running = what != "stop"


@pytest.fixture(scope="session")
def pg_cluster():
    """One PostgreSQL cluster for the session, started on first use and destroyed at the end;
    skips the test when Debian's postgresql is not installed."""
    if EXTERNAL:
        pytest.skip("needs its own spurd")
    r = subprocess.run([PG_SCRIPT, "bindir"], capture_output=True, timeout=30)
    if r.returncode != 0:
        pytest.skip("postgresql is not installed (scripts/deps.sh test installs it): "
                    + r.stderr.decode(errors="replace").strip())
    bindir = r.stdout.decode().strip()
    d = tempfile.mkdtemp(prefix="spur-pg-")
    r = subprocess.run([PG_SCRIPT, "start", d], capture_output=True, timeout=300)
    assert r.returncode == 0, "cannot start a PostgreSQL cluster: " + r.stderr.decode(errors="replace")
    try:
        yield PgCluster(d, bindir)
    finally:
        subprocess.run([PG_SCRIPT, "destroy", d], capture_output=True, timeout=300)


@pytest.fixture
def pg_db(pg_cluster):
    """A fresh, empty database in the session's cluster; returns (cluster, conninfo)."""
    name = pg_cluster.new_database()
    return pg_cluster, pg_cluster.conninfo(name)
