# SPDX-License-Identifier: BSD-3-Clause
"""Observability: the counters of `stats`, `stats functions`, `stats json`, `stats reset`, the
JSON documents (`status json`, `workers json`, `show jobs json`) checked against schemas, the
Prometheus text of `metrics` (promtool and python3-prometheus-client), and the connection and
job logs. Each counter is checked against the traffic that caused it. Spur-only: gearmand has
none of these commands.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from gearman_wire import (CAN_DO, CAN_DO_TIMEOUT, ECHO_REQ, GRAB_JOB, JOB_ASSIGN, JOB_CREATED,
                          NO_JOB, OPTION_REQ, OPTION_RES, SUBMIT_JOB, SUBMIT_JOB_BG,
                          SUBMIT_JOB_HIGH, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW_BG, WORK_COMPLETE,
                          WORK_EXCEPTION, WORK_FAIL, packet)

pytestmark = pytest.mark.skipif(bool(os.environ.get("SPUR_TEST_SERVER")),
                                reason="Spur's own admin commands")


# ------------------------------------------------------------------ helpers

def stats(c, sub=b""):
    """`stats` (or `stats SUB`) as {name: value}; the reply ends with END."""
    raw = c.admin(b"stats" + (b" " + sub if sub else b"") + b"\n", terminator=b"END\r\n")
    out = {}
    for line in raw.split(b"\r\n")[:-2]:
        tag, name, value = line.split(b" ", 2)
        assert tag == b"STAT", raw
        out[name.decode(errors="surrogateescape")] = value.decode()
    assert raw.endswith(b"\r\nEND\r\n") or raw == b"END\r\n"
    return out


def as_int(d):
    return {k: int(v) for k, v in d.items() if v.lstrip("-").isdigit()}


def json_line(c, line):
    return json.loads(c.admin(line + b"\n"))


def assign(w, fn=None):
    """GRAB_JOB on worker w; returns (handle, function, payload)."""
    w.send_packet(GRAB_JOB)
    body = w.expect(JOB_ASSIGN)
    h, f, data = body.split(b"\0", 2)
    if fn is not None:
        assert f == fn
    return h, f, data


def worker(s, fn, timeout_ms=None):
    w = s.connect()
    if timeout_ms is None:
        w.send_packet(CAN_DO, fn)
    else:
        w.send_packet(CAN_DO_TIMEOUT, fn, str(timeout_ms).encode())
    w.echo_roundtrip()
    return w


# the reasons a submit is refused (enum submit_result), as the counters name them
REFUSALS = ["bad_name", "queue_full", "too_many_functions", "no_memory", "store_error",
            "wait_refused"]


# A tiny JSON-schema checker (the subset the schemas below use: type, properties, required,
# additionalProperties, items, enum, minimum), so the test needs no python3-jsonschema.
def check_schema(value, schema, path="$"):
    t = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if t == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), f"{path}: {value!r}"
    elif t == "number":
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{path}: {value!r}"
    elif isinstance(t, list):
        assert any(_ok(value, {"type": x}) for x in t), f"{path}: {value!r} not {t}"
    elif t is not None:
        assert isinstance(value, types[t]), f"{path}: {value!r} is not {t}"
    if "enum" in schema:
        assert value in schema["enum"], f"{path}: {value!r}"
    if "minimum" in schema:
        assert value >= schema["minimum"], f"{path}: {value!r}"
    if isinstance(value, dict):
        for k in schema.get("required", []):
            assert k in value, f"{path}: missing {k}"
        props = schema.get("properties", {})
        for k, v in value.items():
            if k in props:
                check_schema(v, props[k], f"{path}.{k}")
            elif "additionalProperties" in schema:
                extra = schema["additionalProperties"]
                assert extra is not False, f"{path}: unexpected {k}"
                if isinstance(extra, dict):
                    check_schema(v, extra, f"{path}.{k}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            check_schema(v, schema["items"], f"{path}[{i}]")


def _ok(value, schema):
    try:
        check_schema(value, schema)
        return True
    except AssertionError:
        return False


def obj(props, extra=False):
    return {"type": "object", "required": list(props), "properties": props,
            "additionalProperties": extra}


COUNT = {"type": "integer", "minimum": 0}
PRIO = obj({"high": COUNT, "normal": COUNT, "low": COUNT, "total": COUNT})
EVENTS = ["submitted", "coalesced", "assigned", "retried", "completed", "failed", "exception",
          "timed_out", "requeued", "lost", "cancelled", "abandoned"]
HIST = obj({"bounds": {"type": "array", "items": {"type": "number"}},
            "counts": {"type": "array", "items": COUNT}, "count": COUNT,
            "sum": {"type": "number", "minimum": 0}})
KINDS4 = obj({"client": COUNT, "worker": COUNT, "admin": COUNT, "none": COUNT, "all": COUNT})
STATS_SCHEMA = obj({
    "version": {"type": "string"}, "pid": COUNT, "time": COUNT,
    "uptime_seconds": {"type": "number", "minimum": 0},
    "connections": obj({"open": COUNT,
                        "open_by_kind": obj({"client": COUNT, "worker": COUNT, "admin": COUNT,
                                             "all": COUNT}),
                        "total_by_kind": KINDS4, "rejected_by_kind": KINDS4, "total": COUNT,
                        "accept_errors": COUNT, "shed": COUNT}),
    "traffic": obj({k: COUNT for k in ["packets_in", "lines_in", "packets_out", "bytes_in",
                                       "bytes_out", "status_coalesced", "shed_bytes"]}),
    "protocol_errors": obj({k: COUNT for k in ["bad_magic", "wrong_magic", "too_large",
                                               "bad_command", "bad_args", "line_too_long",
                                               "unrecognised", "total"]}),
    "jobs": obj({"live": COUNT, "running": COUNT, "queued": PRIO, "memory_bytes": COUNT,
                 "events": obj({e: PRIO for e in EVENTS}),
                 "refused": obj({k: COUNT for k in REFUSALS})}),
    "store": obj({"enabled": {"type": "boolean"}, "commits": COUNT, "commit_failures": COUNT,
                  "replayed": COUNT, "batch_operations": HIST, "commit_seconds": HIST}),
    "functions_by_name": {"type": "object", "additionalProperties": obj({
        "events": obj({e: COUNT for e in EVENTS}), "wait_seconds": HIST, "run_seconds": HIST})},
    "functions": COUNT, "functions_evicted": COUNT, "workers": COUNT, "abilities": COUNT,
    "held_grabs": COUNT, "buffered_bytes": COUNT, "buffered_peak_bytes": COUNT,
    "permission_denied": obj({k: COUNT for k in ["submit", "can_do", "admin", "total"]}),
    "retry": obj({k: COUNT for k in ["retries_total", "failed_jobs", "failed_dropped_total",
                                     "waiting_jobs"]}),
    "schedules": obj({k: COUNT for k in ["count", "fired", "coalesced", "refused"]}),
    "broadcast": obj({k: COUNT for k in ["jobs_total", "unheard_total", "copies_delivered_total",
                                         "copies_lost_total", "refused_total", "copies_waiting",
                                         "functions"]}),
})
STATUS_SCHEMA = obj({"functions": {"type": "array", "items": obj({
    "function": {"type": "string"}, "total": COUNT, "running": COUNT,
    "available_workers": COUNT, "ready": COUNT, "queued": PRIO})}})
WORKERS_SCHEMA = obj({"workers": {"type": "array", "items": obj({
    "fd": COUNT, "ip": {"type": "string"}, "client_id": {"type": ["string", "null"]},
    "kind": {"type": "string"}, "functions": {"type": "array", "items": {"type": "string"}},
    "running": COUNT, "sleeping": {"type": "boolean"}})}})
JOBS_SCHEMA = obj({"jobs": {"type": "array", "items": obj({
    "handle": {"type": "string"}, "function": {"type": "string"}, "unique": {"type": "string"},
    "priority": {"enum": ["high", "normal", "low"]},
    "state": {"enum": ["queued", "scheduled", "running", "storing", "failed"]}, "retries": COUNT,
    "background": {"type": "boolean"}, "clients": COUNT, "payload_bytes": COUNT,
    "memory_bytes": COUNT})}})


def test_schema_checker_can_fail():
    with pytest.raises(AssertionError):
        check_schema({"a": "x"}, obj({"a": COUNT}))
    with pytest.raises(AssertionError):
        check_schema({"a": 1, "b": 2}, obj({"a": COUNT}))
    with pytest.raises(AssertionError):
        check_schema({}, obj({"a": COUNT}))


# ------------------------------------------------------------------ counters

def test_job_outcomes_are_counted_by_priority_and_function(server):
    w = worker(server, b"f")
    c = server.connect()
    c.send_packet(OPTION_REQ, b"exceptions")
    c.expect(OPTION_RES)
    for i in range(4):  # 4 normal foreground
        c.send_packet(SUBMIT_JOB, b"f", b"", b"n%d" % i)
        c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_HIGH, b"f", b"", b"h")
    c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_LOW_BG, b"f", b"", b"l")
    c.expect(JOB_CREATED)
    # the high job first, then the normal ones in order, then the low one
    results = [WORK_COMPLETE, WORK_COMPLETE, WORK_FAIL, WORK_EXCEPTION, WORK_COMPLETE,
               WORK_COMPLETE]
    for res in results:
        h, _, _ = assign(w, b"f")
        if res == WORK_FAIL:
            w.send_packet(res, h)
        else:
            w.send_packet(res, h, b"r")
    w.echo_roundtrip()
    a = server.connect()
    st = as_int(stats(a))
    assert st["jobs_submitted"] == 6
    assert (st["jobs_submitted_high"], st["jobs_submitted_normal"], st["jobs_submitted_low"]) == \
        (1, 4, 1)
    assert st["jobs_assigned"] == 6
    assert st["jobs_completed"] == 4
    assert st["jobs_completed_high"] == 1 and st["jobs_completed_low"] == 1
    assert st["jobs_failed"] == 1 and st["jobs_failed_normal"] == 1
    assert st["jobs_exception"] == 1
    for k in ("requeued", "retried", "lost", "cancelled", "abandoned", "timed_out", "coalesced"):
        assert st["jobs_" + k] == 0, k
    assert st["curr_jobs"] == 0 and st["job_memory_bytes"] == 0
    fs = as_int(stats(a, b"functions"))
    assert fs["f:submitted"] == 6 and fs["f:completed"] == 4 and fs["f:failed"] == 1
    assert fs["f:exception"] == 1 and fs["f:assigned"] == 6
    assert fs["f:wait_count"] == 6 and fs["f:run_count"] == 6
    assert fs["f:workers"] == 1 and fs["f:total"] == 0
    doc = json_line(a, b"stats json")
    check_schema(doc, STATS_SCHEMA)
    assert doc["jobs"]["events"]["completed"] == {"high": 1, "normal": 2, "low": 1, "total": 4}
    fn = doc["functions_by_name"]["f"]
    assert fn["events"]["failed"] == 1
    assert fn["wait_seconds"]["count"] == 6 and sum(fn["wait_seconds"]["counts"]) == 6
    assert fn["run_seconds"]["count"] == 6


def test_coalesced_cancelled_and_abandoned(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG, b"g", b"u1", b"x")
    h = c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_BG, b"g", b"u1", b"x")
    assert c.expect(JOB_CREATED) == h
    c.send_packet(SUBMIT_JOB_HIGH_BG, b"g", b"u1", b"x")  # coalesced, counted at its priority
    assert c.expect(JOB_CREATED) == h
    a = server.connect()
    st = as_int(stats(a))
    assert st["jobs_submitted"] == 1 and st["jobs_coalesced"] == 2
    assert st["jobs_coalesced_high"] == 1 and st["jobs_coalesced_normal"] == 1
    assert st["curr_jobs"] == 1 and st["job_memory_bytes"] > 0
    assert a.admin(b"cancel job " + h + b"\n") == b"OK\r\n"
    # a foreground job whose only client goes away is abandoned
    f = server.connect()
    f.send_packet(SUBMIT_JOB, b"g", b"", b"fg")
    f.expect(JOB_CREATED)
    f.close()
    # the close is handled before a later connection's request once the server saw the EOF:
    # poll stats until it shows (each read is a full round trip, no sleep)
    for _ in range(500):
        st = as_int(stats(a))
        if st["jobs_abandoned"] == 1:
            break
    assert st["jobs_cancelled"] == 1 and st["jobs_abandoned"] == 1
    assert st["curr_jobs"] == 0 and st["job_memory_bytes"] == 0


def test_requeue_retry_and_lost(server_factory):
    s = server_factory("--job-retries=2")
    c = s.connect()
    c.send_packet(SUBMIT_JOB, b"r", b"", b"p")
    c.expect(JOB_CREATED)
    w1 = worker(s, b"r")
    assign(w1, b"r")
    w1.close()  # lost once: re-queued
    w2 = worker(s, b"r")
    w2.send_packet(GRAB_JOB)
    # the re-queued job reaches w2 once w1's close was handled; NO_JOB before it: ask again
    for _ in range(500):
        magic, cmd, body = w2.read_packet()
        if cmd == JOB_ASSIGN:
            break
        assert cmd == NO_JOB
        w2.send_packet(GRAB_JOB)
    w2.close()  # lost twice: --job-retries=2 fails it
    assert c.expect(WORK_FAIL)
    a = s.connect()
    st = as_int(stats(a))
    assert st["jobs_requeued"] == 1
    assert st["jobs_retried"] == 1
    assert st["jobs_assigned"] == 2
    assert st["jobs_lost"] == 1
    assert st["curr_jobs"] == 0


def test_refused_submits_are_counted_by_reason_whatever_the_entry(server):
    c = server.connect()
    assert c.admin(b"create function rf\n") == b"OK\r\n"
    assert c.admin(b"maxqueue rf 1\n") == b"OK\r\n"
    c.send_packet(SUBMIT_JOB_BG, b"rf", b"", b"1")
    c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB_BG, b"rf", b"", b"2")  # a binary submit, refused
    assert c.expect(19) == b"QUEUE_ERROR\0Job queue is full"
    assert c.admin(b"submit rf 3\n") == b"ERR QUEUE_FULL Job+queue+is+full\r\n"  # and an admin one
    # the one counter, in all three outputs
    s = as_int(stats(c))
    assert {k: s["submits_refused_" + k] for k in REFUSALS} == \
        {k: 2 if k == "queue_full" else 0 for k in REFUSALS}
    assert json_line(c, b"stats json")["jobs"]["refused"]["queue_full"] == 2
    prom = metrics_text(c)
    assert 'spur_submits_refused_total{reason="queue_full"} 2\n' in prom
    assert 'spur_submits_refused_total{reason="bad_name"} 0\n' in prom


def test_can_do_timeout_is_counted(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB, b"t", b"", b"p")
    c.expect(JOB_CREATED)
    w = worker(server, b"t", timeout_ms=1)
    assign(w, b"t")
    assert c.expect(WORK_FAIL, timeout=10)
    st = as_int(stats(server.connect()))
    assert st["jobs_timed_out"] == 1 and st["jobs_completed"] == 0


def test_connections_traffic_and_protocol_errors(server):
    a = server.connect()
    base = as_int(stats(a))
    assert base["curr_connections_admin"] == 1 and base["total_connections_admin"] == 1
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG, b"k", b"", b"1234567890")
    c.expect(JOB_CREATED)
    w = worker(server, b"k")
    c.send(packet(99))  # unknown command: ERROR, stays open
    c.read_packet()
    c.send(b"\0RES" + b"\0\0\0\x10\0\0\0\0")  # response magic from a client
    c.read_packet()
    c.send(b"x" * 9000 + b"\n")  # admin line too long (--max-line-length 8192)
    c.read_line()
    c.send(b"version\n")  # an admin line: c is an admin connection too
    c.read_line()
    bad = server.connect()
    bad.send(b"\0BAD" + b"\0" * 8)  # bad magic: closed, a connection that did nothing
    bad.expect_closed()
    st = as_int(stats(a))
    assert st["curr_connections_client"] == 1 and st["curr_connections_worker"] == 1
    assert st["total_connections_client"] == 1 and st["total_connections_worker"] == 1
    assert st["total_connections_admin"] == 2  # c sent an admin line too
    assert st["rejected_connections_none"] == 1
    assert st["protocol_errors_bad_command"] == 1
    assert st["protocol_errors_wrong_magic"] == 1
    assert st["protocol_errors_line_too_long"] == 1
    assert st["protocol_errors_bad_magic"] == 1
    assert st["protocol_errors"] == base["protocol_errors"] + 4
    assert st["bytes_in"] >= base["bytes_in"] + 9000 + 10
    assert st["bytes_out"] > base["bytes_out"]
    assert st["packets_out"] >= base["packets_out"] + 3
    w.close()
    c.close()
    for _ in range(500):
        st = as_int(stats(a))
        if st["curr_connections_client"] == 0 and st["curr_connections_worker"] == 0:
            break
    assert st["curr_connections_client"] == 0 and st["curr_connections_worker"] == 0
    assert st["curr_connections"] == 1


def test_stats_reset_and_bad_arguments(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG, b"z", b"", b"x")
    c.expect(JOB_CREATED)
    a = server.connect()
    assert as_int(stats(a))["jobs_submitted"] == 1
    assert as_int(stats(a, b"functions"))["z:submitted"] == 1
    assert a.admin(b"stats reset\n") == b"RESET\r\n"
    st = as_int(stats(a))
    assert st["jobs_submitted"] == 0 and st["bytes_in"] < 100
    assert st["curr_jobs"] == 1  # gauges stay
    assert as_int(stats(a, b"functions"))["z:submitted"] == 0
    assert a.admin(b"stats foo\n") == b"ERR UNKNOWN_STATS_ARGUMENTS\r\n"
    assert a.admin(b"metrics x\n") == b"ERR UNKNOWN_ARGS Usage:+metrics\r\n"


def test_store_commits_batches_and_replay(server_factory):
    tmp = tempfile.mkdtemp(prefix="spur-obs-")
    db = "--store=sqlite:" + os.path.join(tmp, "q.db")
    s = server_factory(db)
    c = s.connect()
    for i in range(5):
        c.send_packet(SUBMIT_JOB_BG, b"d", b"", b"%d" % i)
        c.expect(JOB_CREATED)
    st = as_int(stats(s.connect()))
    assert st["store"] == 1
    assert st["store_commits"] >= 1
    assert st["store_batch_operations"] == 5
    doc = json_line(s.connect(), b"stats json")
    check_schema(doc, STATS_SCHEMA)
    assert doc["store"]["batch_operations"]["sum"] == 5
    assert doc["store"]["commit_seconds"]["count"] == doc["store"]["commits"]
    assert s.stop() == 0
    s2 = server_factory(db)
    a = s2.connect()
    for _ in range(500):  # the replay runs on the committer thread
        st = as_int(stats(a))
        if st["store_replayed"] == 5:
            break
    assert st["store_replayed"] == 5 and st["curr_jobs"] == 5
    shutil.rmtree(tmp, ignore_errors=True)


def test_a_reply_larger_than_the_output_limit_is_refused_before_it_is_built(server_factory):
    s = server_factory("--max-packet-size=1024", "--max-output-buffer=5120")
    w = s.connect()
    for i in range(20):
        w.send_packet(CAN_DO, b"function-%d" % i)
    w.echo_roundtrip()
    a = s.connect()
    too_large = b"ERR REPLY_TOO_LARGE The+reply+would+pass+max-output-buffer\r\n"
    assert a.admin(b"metrics\n") == too_large
    assert a.admin(b"stats json\n") == too_large
    assert a.admin(b"stats functions\n") == too_large
    # the connection goes on, and a reply within the limit is served
    assert a.admin(b"stats\n", terminator=b"END\r\n").startswith(b"STAT pid ")
    st = json.loads(a.admin(b"status json\n"))
    assert len(st["functions"]) == 20


# ------------------------------------------------------------------ JSON documents

def test_status_workers_and_jobs_json(server):
    w = worker(server, b"fa")
    w.send_packet(CAN_DO, b"fb")
    w.echo_roundtrip()
    c = server.connect()
    c.send_packet(SUBMIT_JOB_HIGH_BG, b"fa", b"u\xffq", b"x")
    h1 = c.expect(JOB_CREATED)
    c.send_packet(SUBMIT_JOB, b"fb", b"", b"yy")
    h2 = c.expect(JOB_CREATED)
    a = server.connect()
    st = json_line(a, b"status json")
    check_schema(st, STATUS_SCHEMA)
    rows = {r["function"]: r for r in st["functions"]}
    assert rows["fa"]["total"] == 1 and rows["fa"]["queued"]["high"] == 1
    assert rows["fa"]["available_workers"] == 1 and rows["fb"]["queued"]["normal"] == 1
    wk = json_line(a, b"workers json")
    check_schema(wk, WORKERS_SCHEMA)
    ws = [x for x in wk["workers"] if x["functions"]]
    assert len(ws) == 1 and ws[0]["functions"] == ["fa", "fb"] and ws[0]["kind"] == "worker"
    jobs = json_line(a, b"show jobs json")
    check_schema(jobs, JOBS_SCHEMA)
    by = {j["handle"]: j for j in jobs["jobs"]}
    assert by[h1.decode()]["unique"] == "u\\xffq"  # bytes that are not UTF-8, as \xNN
    assert by[h1.decode()]["priority"] == "high" and by[h1.decode()]["background"] is True
    assert by[h2.decode()]["clients"] == 1 and by[h2.decode()]["payload_bytes"] == 2
    # the old replies are unchanged
    assert a.admin(b"show jobs\n", terminator=b".\n").count(b"\n") == 3
    assert a.admin(b"show jobs json x\n") == b"ERR UNKNOWN_SHOW_ARGUMENTS\r\n"


def test_show_jobs_json_empty_and_long(server):
    a = server.connect()
    assert json_line(a, b"show jobs json") == {"jobs": []}
    c = server.connect()
    for i in range(1500):  # more than one slice of the listing
        c.send(packet(SUBMIT_JOB_BG, b"m", b"", b"%d" % i))
    for i in range(1500):
        c.expect(JOB_CREATED)
    jobs = json_line(a, b"show jobs json")
    check_schema(jobs, JOBS_SCHEMA)
    assert len(jobs["jobs"]) == 1500


# ------------------------------------------------------------------ Prometheus

def metrics_text(c):
    raw = c.admin(b"metrics\n", terminator=b"\n.\n")
    return raw[:-2].decode()


def busy_server(server):
    w = worker(server, b"p\"q\\r")
    c = server.connect()
    c.send_packet(SUBMIT_JOB, b"p\"q\\r", b"", b"x")
    c.expect(JOB_CREATED)
    h, _, _ = assign(w)
    w.send_packet(WORK_COMPLETE, h, b"done")
    c.expect(WORK_COMPLETE)
    c.send_packet(SUBMIT_JOB_BG, b"idle\xfe", b"", b"y")
    c.expect(JOB_CREATED)
    return w, c


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian prometheus)")
def test_metrics_pass_promtool(server, tmp_path):
    keep = busy_server(server)
    text = metrics_text(server.connect())
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    # and promtool does catch a broken exposition (the check can fail)
    bad = text.replace("# TYPE gearman_jobs gauge", "# TYPE gearman_jobs counter")
    r = subprocess.run(["promtool", "check", "metrics"], input=bad.encode(),
                       capture_output=True, timeout=60)
    assert r.returncode != 0
    del keep


def test_metrics_parse_with_prometheus_client(server):
    parser = pytest.importorskip("prometheus_client.parser")
    keep = busy_server(server)
    text = metrics_text(server.connect())
    fams = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert fams["gearman_jobs"].type == "gauge"

    def value(fam, name, **labels):
        for s in fams[fam].samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
        raise KeyError((fam, name, labels))

    fn = 'p"q\\r'
    assert value("gearman_workers", "gearman_workers", function=fn) == 1
    assert value("gearman_jobs", "gearman_jobs", function="idle\\xfe") == 1
    assert value("spur_jobs", "spur_jobs_total", event="completed", priority="normal") == 1
    assert value("spur_function_jobs", "spur_function_jobs_total", function=fn,
                 event="submitted") == 1
    assert fams["spur_job_run_seconds"].type == "histogram"
    assert value("spur_job_run_seconds", "spur_job_run_seconds_count", function=fn) == 1
    assert value("spur_job_run_seconds", "spur_job_run_seconds_bucket", function=fn,
                 le="+Inf") == 1
    assert value("spur_connections_open", "spur_connections_open", kind="worker") == 1
    assert value("spur_connections", "spur_connections_total", kind="worker") == 1
    assert value("spur_jobs_live", "spur_jobs_live") == 1
    assert value("spur_uptime_seconds", "spur_uptime_seconds") >= 0
    del keep


DASHBOARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                         "grafana-dashboard.json")


def test_grafana_dashboard_uses_exported_metrics_and_covers_the_spur_features(server, tmp_path):
    """docs/grafana-dashboard.json: every metric its queries name is one spurd exports, the
    features beyond Gearman have panels (dead letters, schedules, waiting jobs, TLS handshakes,
    refusals), panels do not overlap, and with promtool every query is valid PromQL."""
    with open(DASHBOARD) as f:
        dash = json.load(f)
    panels = dash["panels"]
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    used = set(re.findall(r"\b((?:spur|gearman)_[a-z_]+)", " ".join(exprs)))
    text = metrics_text(server.connect())
    families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    histograms = set(re.findall(r"^# TYPE (\S+) histogram", text, re.M))

    def exported(name):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        return name in families or (base in histograms and base != name)
    assert sorted(n for n in used if not exported(n)) == []
    for needed in ("spur_failed_jobs", "spur_schedules", "spur_schedule_fired_total",
                   "spur_waiting_jobs", "spur_tls_handshakes_total",
                   "spur_permission_denied_total", "spur_connections_rejected_total"):
        assert needed in used, f"no panel shows {needed}"
    assert len({p["id"] for p in panels}) == len(panels)
    cells = set()
    for p in panels:
        g = p["gridPos"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"panel {p['title']} overlaps another"
        cells |= mine
    if shutil.which("promtool") is None:
        return
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:q%d" % i,
         "expr": e.replace("$__rate_interval", "5m").replace("$instance", ".*")}
        for i, e in enumerate(exprs)]}]}
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    r = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# ------------------------------------------------------------------ logs

def test_info_logs_connections_and_debug_logs_jobs(server_factory):
    s = server_factory("--verbose=DEBUG")
    w = worker(s, b"lg")
    c = s.connect()
    c.send_packet(SUBMIT_JOB, b"lg", b"", b"x")
    h = c.expect(JOB_CREATED)
    assign(w)
    w.send_packet(WORK_COMPLETE, h, b"")
    c.expect(WORK_COMPLETE)
    c.close()
    w.close()
    a = s.connect()
    for _ in range(500):  # until both closes were handled
        st = as_int(stats(a))
        if st["curr_connections_client"] == 0 and st["curr_connections_worker"] == 0:
            break
    assert s.stop() == 0
    log = s.stderr_text()
    hs = h.decode()
    assert f"job {hs} (lg): created" in log
    assert f"job {hs} (lg): assigned" in log
    assert f"job {hs} (lg): completed" in log
    assert "connect fd" in log and "from 127.0.0.1" in log
    assert "disconnect fd" in log and "kind client" in log and "kind worker" in log


def test_info_level_logs_no_job_lines(server_factory):
    s = server_factory("--verbose=INFO")
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"lg", b"", b"x")
    c.expect(JOB_CREATED)
    c.close()
    a = s.connect()
    a.echo_roundtrip()
    assert s.stop() == 0
    log = s.stderr_text()
    assert "connect fd" in log
    assert "created" not in log


# ------------------------------------------------------------------ spuradmin

def run_spuradmin(s, *args):
    tool = os.environ.get("SPURADMIN")
    if not tool:
        pytest.skip("SPURADMIN is not set (run through `make check`)")
    p = subprocess.run([tool, "-h", s.addr[0], "-p", str(s.addr[1])] + list(args),
                       capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def test_spuradmin_stats_and_json(server):
    c = server.connect()
    c.send_packet(SUBMIT_JOB_BG, b"sa", b"uq", b"x")
    c.expect(JOB_CREATED)
    rc, out, err = run_spuradmin(server, "--stats")
    assert rc == 0 and err == b""
    lines = out.split(b"\r\n")
    assert lines[-2:] == [b"END", b""]
    assert b"STAT jobs_submitted 1" in lines
    rc, out, err = run_spuradmin(server, "--json", "--status", "--workers", "--stats",
                                 "--show-jobs")
    assert rc == 0 and err == b""
    docs = [json.loads(x) for x in out.splitlines()]
    # gearadmin's order: show jobs, workers, status, then stats
    check_schema(docs[0], JOBS_SCHEMA)
    check_schema(docs[1], WORKERS_SCHEMA)
    check_schema(docs[2], STATUS_SCHEMA)
    check_schema(docs[3], STATS_SCHEMA)
    assert docs[0]["jobs"][0]["unique"] == "uq"
    assert docs[3]["jobs"]["events"]["submitted"]["total"] == 1
    # every read option has a JSON form; the one-line replies become one-key objects
    rc, out, err = run_spuradmin(server, "--json", "--getpid", "--show-unique-jobs",
                                 "--server-verbose", "--server-version", "--priority-status")
    assert rc == 0 and err == b""
    docs = [json.loads(x) for x in out.splitlines()]
    assert len(docs) == 5
    assert docs[0] == {"pid": str(server.proc.pid)}
    check_schema(docs[1], JOBS_SCHEMA)
    assert docs[1]["jobs"][0]["unique"] == "uq"
    assert set(docs[2]) == {"verbose"} and docs[2]["verbose"]
    assert set(docs[3]) == {"version"} and docs[3]["version"]
    check_schema(docs[4], STATUS_SCHEMA)
    # gearadmin's prefix --stat still means --status (Spur's own options match exactly)
    rc, out, err = run_spuradmin(server, "--stat")
    assert rc == 0 and out == b"sa\t1\t0\t0\n.\n"
