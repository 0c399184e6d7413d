# SPDX-License-Identifier: BSD-3-Clause
"""Smoke tests for bench/spur-bench: tiny runs must finish with every job accounted for.

Functional only: nothing here asserts on speed. The bench binary comes from SPUR_BENCH, or
$SPUR_BUILDDIR/bench/spur-bench (set by `make check`).
"""
import os
import socket
import subprocess
import time

import pytest

from conftest import free_port


def bench_binary():
    path = os.environ.get("SPUR_BENCH")
    if not path:
        builddir = os.environ.get("SPUR_BUILDDIR")
        if not builddir:
            pytest.skip("set SPUR_BENCH or SPUR_BUILDDIR (run through `make check`)")
        path = os.path.join(builddir, "bench", "spur-bench")
    if not os.access(path, os.X_OK):
        pytest.fail(f"spur-bench is not built at {path}")
    return path


def run_bench(addr, scenario, *extra, pid=None):
    """Run one scenario against addr; return (completed process, RESULT fields as a dict)."""
    host, port = addr
    args = [bench_binary(), "--scenario=" + scenario, "--host=" + host, "--port=%d" % port,
            "--timeout=60", "--stall=10"] + list(extra)
    if pid is not None:
        args.append("--server-pid=%d" % pid)
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                          universal_newlines=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, f"want one RESULT line\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    fields = dict(kv.split("=", 1) for kv in lines[0].split()[1:])
    return proc, fields


@pytest.mark.parametrize("scenario", ["bg-submit", "rt-throughput"])
def test_bench_counts_every_job_without_anomalies(gearmand, scenario):
    proc, r = run_bench(gearmand.addr, scenario, "--jobs=200", pid=gearmand.proc.pid)
    assert r["scenario"] == scenario
    assert r["anomalies"] == "0", proc.stderr
    assert r["status"] == "ok", proc.stderr
    assert int(r["jobs"]) == 200
    assert "jobs_per_s" in r and "p99_us" in r and "cpu_us_per_job" in r
    assert proc.returncode == 0, proc.stderr


def test_bench_client_option_gives_every_job_a_ttl(server_factory, gearmand):
    """--client-option (bench/ttl.sh): each client sends its OPTION_REQs first; spurd gives
    every job the TTL (each is in the timer heap: jobs_expired_total would count them); gearmand
    refuses the option, an anomaly."""
    s = server_factory()
    proc, r = run_bench(s.addr, "bg-submit", "--jobs=200",
                        "--client-option=job-ttl=3600,job-timeout=5000")
    assert r["status"] == "ok" and r["anomalies"] == "0", proc.stderr
    c = s.connect()
    out = c.admin(b"dump\n", b".\n")
    assert out.count(b'"expires_at"') == 200 and out.count(b'"timeout_ms":5000') == 200
    proc, r = run_bench(gearmand.addr, "bg-submit", "--jobs=20", "--client-option=job-ttl=1")
    assert int(r["anomalies"]) > 0 and "UNKNOWN_OPTION" in proc.stderr


def test_bench_reports_unreachable_server_as_failure():
    proc, r = run_bench(("127.0.0.1", free_port()), "bg-submit", "--jobs=10")
    assert r["status"] != "ok"
    assert int(r["anomalies"]) > 0
    assert int(r["jobs"]) == 0
    assert proc.returncode != 0


@pytest.mark.parametrize("scenario,extra,jobs", [
    ("rt-throughput", ["--ballast-jobs=300", "--ballast-clients=20", "--idle-workers=10"], 200),
    ("coalesce", ["--waiters=20", "--jobs=5"], 100),  # 5 jobs x 20 waiters
    ("fanout", ["--functions=2", "--jobs=200"], 200),
])
def test_bench_scaling_scenarios_finish_without_anomalies(both, scenario, extra, jobs):
    """The scaling curves' building blocks (bench/curves.sh) against spurd and gearmand: ballast,
    coalesced jobs with many waiters, fewer functions than workers."""
    if scenario == "rt-throughput":
        extra = extra + ["--jobs=200"]
    proc, r = run_bench(both.addr, scenario, *extra, pid=both.proc.pid)
    assert r["anomalies"] == "0", proc.stderr
    assert r["status"] == "ok", proc.stderr
    assert int(r["jobs"]) == jobs  # every job (every waiter's completion) verified
    if scenario == "coalesce":
        assert r["rounds"] == "5"
    if scenario == "rt-throughput":
        assert (r["ballast_jobs"], r["ballast_clients"], r["idle_workers"]) == ("300", "20", "10")
    assert proc.returncode == 0, proc.stderr


def test_answer_server_answers_bg_submit(tmp_path):
    """bench/answer-server, run.sh's answer-only ceiling: every SUBMIT_JOB_BG gets a unique
    JOB_CREATED handle, checked by spur-bench; SIGTERM ends it with status 0."""
    builddir = os.environ.get("SPUR_BUILDDIR")
    path = os.environ.get("SPUR_ANSWER_SERVER") or (
        builddir and os.path.join(builddir, "bench", "answer-server"))
    if not path:
        pytest.skip("set SPUR_ANSWER_SERVER or SPUR_BUILDDIR (run through `make check`)")
    port_file = tmp_path / "port"
    srv = subprocess.Popen([path, "--port=0", "--port-file=%s" % port_file])
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists():  # written (by rename) once the socket listens
            assert srv.poll() is None, "answer-server exited"
            assert time.monotonic() < deadline, "answer-server wrote no port file"
            time.sleep(0.01)
        port = int(port_file.read_text())
        proc, r = run_bench(("127.0.0.1", port), "bg-submit", "--jobs=2000", pid=srv.pid)
        assert r["anomalies"] == "0", proc.stderr
        assert r["status"] == "ok", proc.stderr
        assert int(r["jobs"]) == 2000
    finally:
        srv.terminate()
        assert srv.wait(timeout=10) == 0


# ---------------------------------------------------------------- TLS (--tls)

@pytest.fixture(scope="module")
def tls_certs():
    import shutil
    import tempfile
    from tlscerts import make_certs
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is not installed (apt-get install openssl)")
    d = tempfile.mkdtemp(prefix="spur-bench-tls-")
    yield make_certs(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def gearmand_tls(gearmand, tls_certs):
    """gearmand behind a TLS proxy that requires our client certificate (Debian's gearmand
    accepts --ssl but is built without TLS). Yields (host, port) of the TLS side and the proxy."""
    from tlscerts import TlsProxy
    p = TlsProxy(gearmand.addr, tls_certs)
    yield p
    p.close()


def tls_args(certs, ca="ca"):
    return ["--tls", "--tls-ca=" + certs[ca], "--tls-cert=" + certs["client"],
            "--tls-key=" + certs["client_key"]]


@pytest.mark.parametrize("scenario", ["bg-submit", "rt-throughput", "rt-latency"])
def test_bench_tls_counts_every_job(gearmand_tls, tls_certs, scenario):
    proc, r = run_bench(gearmand_tls.addr, scenario, "--jobs=200", "--clients=2", "--workers=2",
                        *tls_args(tls_certs))
    assert r["anomalies"] == "0", proc.stderr
    assert r["status"] == "ok", proc.stderr
    assert int(r["jobs"]) == 200
    assert proc.returncode == 0, proc.stderr
    # every connection was TLS with our certificate: 2 clients (+ 2 workers)
    assert gearmand_tls.handshakes_ok == (2 if scenario == "bg-submit" else 4)
    assert set(gearmand_tls.peer_names) == {"spur-test-client"}


def test_bench_tls_wrong_ca_is_a_failure(gearmand_tls, tls_certs):
    proc, r = run_bench(gearmand_tls.addr, "bg-submit", "--jobs=10", *tls_args(tls_certs, "other_ca"))
    assert r["status"] != "ok" and int(r["jobs"]) == 0 and int(r["anomalies"]) > 0
    assert "server certificate not verified" in proc.stdout + proc.stderr
    assert proc.returncode != 0


def test_bench_tls_refuses_scenarios_it_does_not_cover():
    proc = subprocess.run([bench_binary(), "--scenario=drain", "--tls"], capture_output=True,
                          timeout=60, universal_newlines=True)
    assert proc.returncode == 2 and "--tls applies to" in proc.stderr


def test_run_sh_tls_kinds_report_clearly(tmp_path):
    """bench/run.sh --servers=spurd-tls,gearmand-tls: certificates made in the output directory;
    each TLS kind either runs (a jobs/s figure) or is reported n/a with its reason, never a
    crash. Debian's gearmand accepts --ssl without speaking TLS: n/a, saying so."""
    import shutil
    builddir = os.environ.get("SPUR_BUILDDIR")
    spurd = os.environ.get("SPURD")
    if not builddir or not spurd:
        pytest.skip("SPUR_BUILDDIR and SPURD are set by `make check`")
    if shutil.which("openssl") is None or not os.path.exists("/usr/sbin/gearmand"):
        pytest.skip("needs the openssl CLI and gearmand")
    srcdir = os.environ.get("SPUR_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    out = tmp_path / "run"
    proc = subprocess.run(["bash", os.path.join(srcdir, "bench", "run.sh"), "--spurd=" + spurd,
                           "--bench=" + bench_binary(), "--servers=spurd-tls,gearmand-tls",
                           "--scenarios=bg-submit", "--conditions=quiet", "--runs=1",
                           "--timeout=60", "--out=%s" % out, "--", "--jobs=200"],
                          capture_output=True, timeout=300, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / "tls" / "ca.pem").exists() and (out / "tls" / "client.key").exists()
    for kind in ("spurd-tls", "gearmand-tls"):
        line = [l for l in proc.stdout.splitlines() if l.startswith("[") and kind in l]
        assert len(line) == 1, proc.stdout
        assert "/s" in line[0] or ("n/a (%s: " % kind) in line[0], line[0]
    table = [l for l in proc.stdout.splitlines() if l.startswith("bg-submit ")]
    assert table and "tls ratio" in proc.stdout


@pytest.mark.slow
def test_run_sh_shapes_quiet_and_busy_with_beanstalkd(tmp_path):
    """bench/run.sh runs a shape in the quiet and the busy condition (one CPU hog per core,
    killed afterwards), against spurd and beanstalkd (beanstalk-bench), and tabulates both."""
    import shutil
    builddir = os.environ.get("SPUR_BUILDDIR")
    spurd = os.environ.get("SPURD")
    if not builddir or not spurd:
        pytest.skip("SPUR_BUILDDIR and SPURD are set by `make check`")
    beanstalkd = shutil.which("beanstalkd")
    bs_bench = os.path.join(builddir, "bench", "beanstalk-bench")
    if beanstalkd is None or not os.path.exists(bs_bench):
        pytest.skip("needs beanstalkd (scripts/deps.sh bench) and bench/beanstalk-bench")
    srcdir = os.environ.get("SPUR_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    out = tmp_path / "run"
    proc = subprocess.Popen(["bash", os.path.join(srcdir, "bench", "run.sh"), "--spurd=" + spurd,
                             "--bench=" + bench_binary(), "--beanstalk-bench=" + bs_bench,
                             "--servers=spurd,beanstalkd", "--scenarios=1x1-w1,bg-4x64",
                             "--runs=1", "--timeout=60", "--out=%s" % out, "--", "--jobs=500"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    assert proc.returncode == 0, stdout
    for kind in ("spurd", "beanstalkd"):
        for sc in ("1x1-w1", "1x1-w1@busy", "bg-4x64", "bg-4x64@busy"):
            line = [l for l in stdout.splitlines()
                    if l.startswith("[") and " %s " % kind in l and " %s " % sc in l]
            assert len(line) == 1 and "/s" in line[0], stdout
    rows = {l.split()[0] for l in stdout.splitlines() if l.startswith(("1x1-w1", "bg-4x64"))}
    assert rows == {"1x1-w1", "1x1-w1@busy", "bg-4x64", "bg-4x64@busy"}, stdout
    assert "vs bs" in stdout
    # the hogs went with run.sh: nothing of its process group is left
    deadline = time.monotonic() + 10
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "a CPU hog outlived run.sh"
        time.sleep(0.05)


# ---------------------------------------------------------------- beanstalkd drain

@pytest.fixture
def beanstalkd():
    """Debian's beanstalkd on a free loopback port (in memory), with its beanstalk-bench.
    Yields (port, process, bench path)."""
    import shutil
    builddir = os.environ.get("SPUR_BUILDDIR")
    if not builddir:
        pytest.skip("set SPUR_BUILDDIR (run through `make check`)")
    binary = shutil.which("beanstalkd")
    bs_bench = os.path.join(builddir, "bench", "beanstalk-bench")
    if binary is None or not os.path.exists(bs_bench):
        pytest.skip("needs beanstalkd (scripts/deps.sh bench) and bench/beanstalk-bench")
    up = False
    for _ in range(20):
        port = free_port()
        proc = subprocess.Popen([binary, "-l", "127.0.0.1", "-p", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not up and time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                up = True
            except OSError:
                time.sleep(0.02)
        if up:
            break
        proc.kill()
        proc.wait()
    if not up:
        pytest.fail("could not start beanstalkd")
    yield port, proc, bs_bench
    proc.kill()
    proc.wait()


def run_bs_drain(beanstalkd, jobs):
    """Run beanstalk-bench --scenario=drain against the fixture's server; return (completed
    process, RESULT fields)."""
    port, proc, bs_bench = beanstalkd
    out = subprocess.run([bs_bench, "--scenario=drain", "--port=%d" % port, "--jobs=%d" % jobs,
                          "--server-pid=%d" % proc.pid, "--timeout=60", "--stall=10"],
                         capture_output=True, timeout=120, universal_newlines=True)
    lines = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
    assert len(lines) == 1, out.stdout + out.stderr
    return out, dict(kv.split("=", 1) for kv in lines[0].split()[1:])


def bs_command(port, line):
    """Send one beanstalkd command (bytes, with its body if any); return its one-line reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(line)
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = s.recv(4096)
            assert chunk, "beanstalkd closed the connection"
            reply += chunk
        return reply


def test_beanstalk_bench_drain_counts_every_job(beanstalkd):
    """beanstalk-bench --scenario=drain: every put acknowledged, then every job reserved once
    with its body and deleted; beanstalkd's RSS per queued job and the drain rate reported
    with spur-bench drain's keys; beanstalkd holds no job afterwards."""
    proc, r = run_bs_drain(beanstalkd, 2000)
    assert (r["scenario"], r["status"], r["anomalies"]) == ("drain", "ok", "0"), proc.stderr
    assert int(r["jobs"]) == 2000 and r["queue_left"] == "0"
    for key in ("queue_jobs_per_s", "jobs_per_s", "cpu_us_per_job", "queue_cpu_us_per_job"):
        assert float(r[key]) >= 0, key
    assert float(r["jobs_per_s"]) > 0 and float(r["queue_jobs_per_s"]) > 0
    assert int(r["rss_queued"]) > int(r["rss_before"]) > 0  # 2000 jobs of 64 bytes grew it
    assert int(r["rss_bytes_per_job"]) > 0
    assert proc.returncode == 0, proc.stderr


def test_beanstalk_bench_drain_reports_a_foreign_job(beanstalkd):
    """A job the bench did not put (a wrong body) is an anomaly, and so is a job beanstalkd
    still holds after the drain (a delayed one: no worker can reserve it)."""
    port = beanstalkd[0]
    assert bs_command(port, b"put 1024 0 60 5\r\nhello\r\n").startswith(b"INSERTED ")
    proc, r = run_bs_drain(beanstalkd, 200)
    assert int(r["anomalies"]) > 0 and proc.returncode == 1
    assert "wrong body" in proc.stderr
    assert bs_command(port, b"put 1024 3600 60 5\r\nlater\r\n").startswith(b"INSERTED ")
    proc, r = run_bs_drain(beanstalkd, 200)
    assert r["status"] == "ok" and int(r["jobs"]) == 200, proc.stderr
    assert r["queue_left"] == "1" and r["anomalies"] == "1" and proc.returncode == 1
    assert "lists 1 job after the drain" in proc.stderr


def test_run_sh_drain_with_beanstalkd(tmp_path):
    """bench/run.sh --scenarios=drain runs beanstalkd too (beanstalk-bench --scenario=drain, the
    same jobs): the table has its drain jobs/s and RSS per queued job, and 'vs bs' ratios."""
    import re
    import shutil
    builddir = os.environ.get("SPUR_BUILDDIR")
    spurd = os.environ.get("SPURD")
    if not builddir or not spurd:
        pytest.skip("SPUR_BUILDDIR and SPURD are set by `make check`")
    bs_bench = os.path.join(builddir, "bench", "beanstalk-bench")
    if shutil.which("beanstalkd") is None or not os.path.exists(bs_bench):
        pytest.skip("needs beanstalkd (scripts/deps.sh bench) and bench/beanstalk-bench")
    srcdir = os.environ.get("SPUR_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    out = tmp_path / "run"
    proc = subprocess.run(["bash", os.path.join(srcdir, "bench", "run.sh"), "--spurd=" + spurd,
                           "--bench=" + bench_binary(), "--beanstalk-bench=" + bs_bench,
                           "--servers=spurd,beanstalkd", "--scenarios=drain",
                           "--conditions=quiet", "--drain-runs=1", "--drain-jobs=2000",
                           "--drain-timeout=60", "--out=%s" % out],
                          capture_output=True, timeout=300, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Failed runs" not in proc.stdout and (out / "failures.txt").read_text() == "", \
        proc.stdout
    runs = [l for l in proc.stdout.splitlines() if l.startswith("[") and " drain " in l]
    assert len(runs) == 2 and all("B/job" in l for l in runs), proc.stdout
    # beanstalkd ran the 2000 jobs of spur-bench's drain
    assert "jobs=2000 " in (out / "beanstalkd" / "drain-1" / "bench.out").read_text()
    header = [l for l in proc.stdout.splitlines() if l.startswith("scenario ")]
    assert len(header) == 1, proc.stdout
    cols = header[0].split()
    assert cols[2:4] == ["spurd", "beanstalkd"] and "bs" in cols, header[0]
    table = {l.split()[1]: l.split() for l in proc.stdout.splitlines()
             if l.startswith("drain ")}
    rss = table.get("rss_B/job")
    assert rss is not None, proc.stdout
    assert re.fullmatch(r"[0-9.]+", rss[3]) and float(rss[3]) > 0, rss  # beanstalkd's column
    assert re.fullmatch(r"[0-9.]+", rss[-2]) and float(rss[-2]) > 0, rss  # vs bs
    assert float(table["drain_jobs/s"][3]) > 0, table["drain_jobs/s"]
