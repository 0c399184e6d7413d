# SPDX-License-Identifier: BSD-3-Clause
"""Smoke tests for bench/spur-bench: tiny runs must finish with every job accounted for.

Functional only: nothing here asserts on speed. The bench binary comes from SPUR_BENCH, or
$SPUR_BUILDDIR/bench/spur-bench (set by `make check`).
"""
import os
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
