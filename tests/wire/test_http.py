# SPDX-License-Identifier: BSD-3-Clause
"""The HTTP front-end (docs/HTTP.md): GET /healthz and the route table, job submission as
gearmand's -r http protocol does it (POST /FUNC), with curl for the client side and raw sockets
for malformed requests, keep-alive and HTTP/1.0; the limits (--http-max-body,
--http-max-header-size, --http-max-connections, --http-idle-timeout); a client that goes away
while its job waits or runs.

Workers speak raw Gearman bytes (gearman_wire). Every wait is bounded; where a test must know
that the server reached a state, it polls an observable (admin status, GET_STATUS_UNIQUE) with a
generous deadline instead of sleeping.
"""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from conftest import EXTERNAL
from gearman_wire import (CAN_DO, GET_STATUS_UNIQUE, GRAB_JOB, GRAB_JOB_UNIQ, JOB_ASSIGN,
                          JOB_ASSIGN_UNIQ, NOOP, PRE_SLEEP, STATUS_RES_UNIQUE, WORK_COMPLETE,
                          WORK_DATA, WORK_EXCEPTION, WORK_FAIL, SUBMIT_JOB_BG, JOB_CREATED,
                          admin_status)

pytestmark = [pytest.mark.spur_only,
              pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")]

ADMIN = ["X-Spur-Admin: 1"]  # what POST /admin needs (a cross-site form cannot send it)
DEADLINE = 20.0  # generous bound for anything the server must do (CI runs under a CPU hog)


class Http:
    """A spurd with its HTTP listener on a free port."""

    def __init__(self, server, port_file):
        self.server = server
        with open(port_file) as f:
            self.port = int(f.read())
        self.url = "http://127.0.0.1:%d" % self.port

    def curl(self, path, data=None, headers=(), method=None, extra=()):
        """Run curl; return (status, {lower-case header: value}, body bytes)."""
        d = self.server.tmpdir
        hfile, bfile = os.path.join(d, "curl.h"), os.path.join(d, "curl.b")
        args = ["curl", "-sS", "--max-time", str(DEADLINE), "-D", hfile, "-o", bfile,
                "-w", "%{http_code}"]
        for h in headers:
            args += ["-H", h]
        if data is not None:
            args += ["--data-binary", "@-"]
        if method:
            args += ["-X", method]
        args += list(extra) + [self.url + path]
        r = subprocess.run(args, input=data, capture_output=True, timeout=DEADLINE + 10)
        assert r.returncode == 0, r.stderr
        return int(r.stdout), parse_headers(open(hfile, "rb").read()), open(bfile, "rb").read()

    def curl_bg(self, path, data, headers=()):
        """Start curl in the background (a foreground job that waits); returns the Popen and the
        files its headers and body go to."""
        d = self.server.tmpdir
        n = len(os.listdir(d))
        hfile, bfile = os.path.join(d, "bg%d.h" % n), os.path.join(d, "bg%d.b" % n)
        dfile = os.path.join(d, "bg%d.d" % n)
        with open(dfile, "wb") as f:
            f.write(data)
        args = ["curl", "-sS", "--max-time", str(DEADLINE), "-D", hfile, "-o", bfile,
                "-w", "%{http_code}", "--data-binary", "@" + dfile]
        for h in headers:
            args += ["-H", h]
        p = subprocess.Popen(args + [self.url + path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        return p, hfile, bfile

    def raw(self, timeout=DEADLINE):
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)


def parse_headers(raw):
    """The last header block of curl's -D output as a dict (keys lower-case)."""
    blocks = [b for b in raw.split(b"\r\n\r\n") if b.strip()]
    out = {}
    for line in blocks[-1].split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        out[k.strip().lower().decode()] = v.strip().decode()
    return out


def finish_bg(p, hfile, bfile):
    out, err = p.communicate(timeout=DEADLINE + 10)
    assert p.returncode == 0, err
    return int(out), parse_headers(open(hfile, "rb").read()), open(bfile, "rb").read()


def read_response(sock, buf=b""):
    """Read one HTTP response with a Content-Length from sock. Returns (status line, headers,
    body, rest of buf)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before a response: %r" % buf
        buf += chunk
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode()
    n = int(headers.get("content-length", "0"))
    while len(buf) < n:
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside a body"
        buf += chunk
    return lines[0].decode(), headers, buf[:n], buf[n:]


def assert_closed(sock):
    """The server closes sock (after whatever it still sends)."""
    sock.settimeout(DEADLINE)
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return
        if not chunk:
            return


def wait_for(cond, what):
    deadline = time.monotonic() + DEADLINE
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.01)


@pytest.fixture
def http_factory_real(server_factory, tmp_path):
    """server_factory with the HTTP port file in the server's own directory."""
    def make(*args):
        d = tmp_path / ("s%d" % len(list(tmp_path.iterdir())))
        d.mkdir()
        pf = str(d / "http-port")
        s = server_factory("--http-port=0", "--http-listen=127.0.0.1", "--http-port-file=" + pf,
                           *args, tmpdir=str(d))
        return Http(s, pf)
    return make


@pytest.fixture
def http(http_factory_real):
    return http_factory_real()


class Worker:
    """A raw-bytes worker for one function."""

    def __init__(self, server, func):
        self.c = server.connect(timeout=DEADLINE)
        self.func = func
        self.c.send_packet(CAN_DO, func)

    def next_job(self, uniq=False):
        """Sleep until woken, then grab a job: returns (handle, unique or None, payload)."""
        while True:
            self.c.send_packet(PRE_SLEEP)
            self.c.expect(NOOP, timeout=DEADLINE)
            self.c.send_packet(GRAB_JOB_UNIQ if uniq else GRAB_JOB)
            magic, cmd, body = self.c.read_packet(timeout=DEADLINE)
            if cmd in (JOB_ASSIGN, JOB_ASSIGN_UNIQ):
                parts = body.split(b"\0", 3 if uniq else 2)
                if uniq:
                    return parts[0], parts[2], parts[3]
                return parts[0], None, parts[2]

    def close(self):
        self.c.close()


# ------------------------------------------------------------------ routes


def test_healthz_answers_200_with_keep_alive_and_head(http):
    status, headers, body = http.curl("/healthz")
    assert status == 200 and body == b"ok\n"
    status, headers, body = http.curl("/healthz", extra=["-I"])  # HEAD
    assert status == 200 and headers["content-length"] == "3"
    # two GETs on one connection: the first answer does not close it
    s = http.raw()
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    line, headers, body, rest = read_response(s)
    assert line == "HTTP/1.1 200 OK" and body == b"ok\n"
    assert headers.get("connection", "").lower() != "close"
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    line, headers, body, rest = read_response(s, rest)
    assert line == "HTTP/1.1 200 OK" and body == b"ok\n"
    s.close()


def test_healthz_waits_for_the_store_replay_with_a_store(http_factory_real, tmp_path):
    h = http_factory_real("--store=sqlite:" + str(tmp_path / "q.db"))
    status, _, body = h.curl("/healthz")
    assert status == 200 and body == b"ok\n"  # the port file is written after the replay began;
    # an empty store's replay is done by the time a request is served, or answers 503


def test_unknown_path_404_bad_method_405(http):
    assert http.curl("/nope")[0] == 404
    assert http.curl("/")[0] == 200  # the dashboard (DASHBOARD.md)
    status, headers, _ = http.curl("/healthz", data=b"x")  # POST to a page
    assert status == 405 and headers["allow"] == "GET, HEAD"
    status, headers, _ = http.curl("/metrics", data=b"x")
    assert status == 405 and headers["allow"] == "GET, HEAD"
    status, headers, _ = http.curl("/fn", method="DELETE")
    assert status == 405 and headers["allow"] == "POST, PUT"
    assert http.curl("/healthz")[0] == 200


def test_observability_pages(http):
    """GET /metrics, /status.json, /workers.json, /stats.json serve what the admin commands
    'metrics', 'status json', 'workers json' and 'stats json' render (docs/OBSERVABILITY.md)."""
    status, _, _ = http.curl("/obsfn", data=b"x", headers=["X-Gearman-Background: true"])
    assert status == 200
    status, headers, body = http.curl("/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = body.decode().splitlines()
    assert 'gearman_jobs{function="obsfn"} 1' in lines
    assert 'gearman_workers{function="obsfn"} 0' in lines
    assert lines[-1] != "." and body.endswith(b"\n"), "no admin terminator over HTTP"
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                           timeout=DEADLINE)
        assert r.returncode == 0, r.stdout + r.stderr
    c = http.server.connect()
    c.sock.sendall(b"status json\n")
    admin = json.loads(c.read_line())
    c.close()
    for path in ("/status.json", "/workers.json", "/stats.json"):
        status, headers, body = http.curl(path)
        assert status == 200 and headers["content-type"] == "application/json", path
        doc = json.loads(body)
        if path == "/status.json":
            assert doc == admin
            assert doc["functions"][0]["function"] == "obsfn"
        elif path == "/stats.json":
            assert doc["pid"] == http.server.proc.pid and doc["uptime_seconds"] >= 0
        else:
            assert isinstance(doc, (dict, list))


def test_observability_page_larger_than_the_output_limit_is_refused(http_factory_real):
    h = http_factory_real("--max-packet-size=16k", "--max-output-buffer=64k")
    c = h.server.connect()
    c.sock.sendall(b"".join(b"create function f%05d\n" % i for i in range(3000)))
    c.sock.sendall(b"status\n")
    buf = b""
    while not buf.endswith(b".\n"):  # every function exists
        chunk = c.sock.recv(1 << 16)
        assert chunk
        buf += chunk
    c.close()
    status, _, body = h.curl("/status.json")
    assert status == 500 and b"too large" in body, (status, body[:200])
    assert h.curl("/healthz")[0] == 200, "the server keeps serving"


# ------------------------------------------------------------------ submission


def test_background_submit_returns_handle_and_the_worker_gets_the_payload(http):
    status, headers, body = http.curl("/bgfn", data=b"payload\0with nul",
                                      headers=["X-Gearman-Background: true"])
    assert status == 200 and body == b""
    assert headers["x-gearman-command"] == "JOB_CREATED"
    handle = headers["x-gearman-job-handle"].encode()
    assert handle.startswith(b"H:")
    w = Worker(http.server, "bgfn")
    got, _, payload = w.next_job()
    assert got == handle and payload == b"payload\0with nul"
    w.c.send_packet(WORK_COMPLETE, handle, b"")
    w.c.echo_roundtrip()
    w.close()


def test_foreground_submit_returns_work_data_chunks_intact(http):
    w = Worker(http.server, "fg")
    p = http.curl_bg("/fg", b"in", headers=["X-Gearman-Unique: u-fg"])
    handle, _, payload = w.next_job()
    assert payload == b"in"
    # gearmand drops the last byte of each WORK_DATA chunk; spurd keeps every byte
    w.c.send_packet(WORK_DATA, handle, b"abc")
    w.c.send_packet(WORK_DATA, handle, b"d")
    w.c.send_packet(WORK_COMPLETE, handle, b"ef\0g")
    status, headers, body = finish_bg(*p)
    assert status == 200
    assert body == b"abcdef\0g"
    assert headers["x-gearman-job-handle"].encode() == handle
    assert headers["x-gearman-command"] == "WORK_COMPLETE"
    w.close()


def test_put_submits_like_post(http):
    status, headers, _ = http.curl("/putfn", data=b"x", method="PUT",
                                   headers=["X-Gearman-Background: true"])
    assert status == 200 and headers["x-gearman-command"] == "JOB_CREATED"
    c = http.server.connect()
    assert admin_status(c)[b"putfn"][0] == 1
    c.close()


def test_priority_header_orders_background_jobs(http):
    for prio, data in (("low", b"L"), ("normal", b"N"), ("high", b"H")):
        status, _, _ = http.curl("/prio", data=data, headers=["X-Gearman-Background: true",
                                                              "X-Gearman-Priority: " + prio])
        assert status == 200
    status, _, _ = http.curl("/prio", data=b"N2", headers=["X-Gearman-Background: true"])
    assert status == 200
    w = Worker(http.server, "prio")
    order = []
    for _ in range(4):
        handle, _, payload = w.next_job()
        order.append(payload)
        w.c.send_packet(WORK_COMPLETE, handle, b"")
    assert order == [b"H", b"N", b"N2", b"L"]
    w.close()


def test_bad_priority_is_400(http):
    status, _, body = http.curl("/fn", data=b"x", headers=["X-Gearman-Priority: urgent"])
    assert status == 400 and b"X-Gearman-Priority" in body


def test_same_unique_coalesces_two_requests_onto_one_job(http):
    w = Worker(http.server, "co")
    c = http.server.connect(timeout=DEADLINE)

    def waiting(n):
        c.send_packet(GET_STATUS_UNIQUE, b"same")
        args = c.expect(STATUS_RES_UNIQUE).split(b"\0")
        return args[1] == b"1" and int(args[5]) == n

    p1 = http.curl_bg("/co", b"one", headers=["X-Gearman-Unique: same"])
    wait_for(lambda: waiting(1), "the first request to wait on its job")
    p2 = http.curl_bg("/co", b"two", headers=["X-Gearman-Unique: same"])
    wait_for(lambda: waiting(2), "both requests to wait on the job")
    handle, unique, payload = w.next_job(uniq=True)
    assert unique == b"same" and payload == b"one"
    w.c.send_packet(WORK_COMPLETE, handle, b"shared result")
    for p in (p1, p2):
        status, headers, body = finish_bg(*p)
        assert status == 200 and body == b"shared result"
        assert headers["x-gearman-job-handle"].encode() == handle
    assert admin_status(c).get(b"co", (0,))[0] == 0
    c.close()
    w.close()


def test_no_unique_header_does_not_coalesce_equal_bodies(http):
    for _ in range(2):
        assert http.curl("/nu", data=b"same", headers=["X-Gearman-Background: true"])[0] == 200
    c = http.server.connect()
    assert admin_status(c)[b"nu"][0] == 2
    c.close()


def test_worker_failure_and_exception_are_500_with_a_clear_body(http):
    w = Worker(http.server, "bad")
    p = http.curl_bg("/bad", b"x")
    handle, _, _ = w.next_job()
    w.c.send_packet(WORK_DATA, handle, b"partial")
    w.c.send_packet(WORK_FAIL, handle)
    status, headers, body = finish_bg(*p)
    assert status == 500 and headers["x-gearman-command"] == "WORK_FAIL"
    assert b"failed" in body and b"partial" not in body
    p = http.curl_bg("/bad", b"y")
    handle, _, _ = w.next_job()
    w.c.send_packet(WORK_EXCEPTION, handle, b"division by zero")
    status, headers, body = finish_bg(*p)
    assert status == 500 and headers["x-gearman-command"] == "WORK_EXCEPTION"
    assert b"division by zero" in body
    w.close()


def test_engine_errors_are_4xx_or_5xx(http):
    # a function name that cannot be (longer than --max-function-name)
    status, headers, body = http.curl("/" + "f" * 513, data=b"x")
    assert status == 400 and b"function name too long" in body
    # a space (URL-decoded by the server) is a byte of a name like any other, as in gearmand
    assert http.curl("/has%20space", data=b"x", headers=["X-Gearman-Background: true"])[0] == 200
    status, _, body = http.curl("/fn", data=b"x", headers=["X-Gearman-Unique: " + "u" * 65])
    assert status == 400
    # maxqueue: a full queue is 503
    c = http.server.connect()
    assert http.curl("/full", data=b"1", headers=["X-Gearman-Background: true"])[0] == 200
    assert c.admin("maxqueue full 1\n").startswith(b"OK")
    status, _, body = http.curl("/full", data=b"2", headers=["X-Gearman-Background: true"])
    assert status == 503 and b"QUEUE_ERROR" in body
    c.close()


def test_keep_alive_serves_submissions_one_after_another(http):
    s = http.raw()
    rest = b""
    handles = set()
    for i in range(3):
        s.sendall(b"POST /ka HTTP/1.1\r\nHost: x\r\nX-Gearman-Background: true\r\n"
                  b"Content-Length: 1\r\n\r\n" + str(i).encode())
        line, headers, body, rest = read_response(s, rest)
        assert line == "HTTP/1.1 200 OK"
        handles.add(headers["x-gearman-job-handle"])
    assert len(handles) == 3
    # and a foreground one on the same connection
    w = Worker(http.server, "ka2")
    s.sendall(b"POST /ka2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
    handle, _, payload = w.next_job()
    assert payload == b"hi"
    w.c.send_packet(WORK_COMPLETE, handle, b"done")
    line, headers, body, rest = read_response(s, rest)
    assert line == "HTTP/1.1 200 OK" and body == b"done"
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    line, _, body, rest = read_response(s, rest)
    assert body == b"ok\n"
    s.close()
    w.close()


def test_http_1_0_request_is_answered_and_closed(http):
    s = http.raw()
    s.sendall(b"POST /old HTTP/1.0\r\nX-Gearman-Background: true\r\nContent-Length: 3\r\n\r\nabc")
    line, headers, body, rest = read_response(s)
    assert line.startswith("HTTP/1.") and " 200 " in line
    assert headers["x-gearman-command"] == "JOB_CREATED"
    assert_closed(s)
    s.close()


def test_chunked_body_is_accepted(http):
    status, headers, _ = http.curl("/chunk", data=b"abcdef",
                                   headers=["Transfer-Encoding: chunked",
                                            "X-Gearman-Background: true"])
    assert status == 200
    w = Worker(http.server, "chunk")
    handle, _, payload = w.next_job()
    assert payload == b"abcdef"
    w.close()


# ------------------------------------------------------------------ limits and bad requests


def test_oversize_body_is_413_and_the_server_keeps_serving(http_factory_real):
    h = http_factory_real("--http-max-body=1024")
    assert h.curl("/big", data=b"x" * 1024, headers=["X-Gearman-Background: true"])[0] == 200
    status, _, body = h.curl("/big", data=b"x" * 1025, headers=["X-Gearman-Background: true"])
    assert status == 413 and b"--http-max-body" in body
    # a chunked body has no length up front: it is dropped as it passes the limit, then 413
    status, _, _ = h.curl("/big", data=b"y" * 5000, headers=["Transfer-Encoding: chunked",
                                                             "X-Gearman-Background: true"])
    assert status == 413
    c = h.server.connect()
    assert admin_status(c)[b"big"][0] == 1
    c.close()
    assert h.curl("/healthz")[0] == 200


def test_oversize_headers_are_431(http_factory_real):
    h = http_factory_real("--http-max-header-size=2048")
    s = h.raw()
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
    line, _, _, _ = read_response(s)
    assert " 431 " in line
    s.close()
    status, _, _ = h.curl("/healthz", headers=["X-Small: " + "b" * 1000])
    assert status == 200


@pytest.mark.parametrize("request_bytes", [
    b"HELLO\r\n\r\n",
    b"GET\r\n\r\n",
    b"POST /fn HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"POST /fn HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"zz\r\n",
    b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nNo colon here\r\n\r\n",
    b"\x00\x01\x02\x03\r\n\r\n",
])
def test_malformed_request_gets_4xx_or_a_close_and_others_are_served(http_factory_real,
                                                                    request_bytes):
    # libmicrohttpd closes some malformed requests without an answer, and waits for the end of
    # others (a NUL in the request line) until the idle timeout
    http = http_factory_real("--http-idle-timeout=2")
    s = http.raw()
    s.sendall(request_bytes)
    s.settimeout(DEADLINE)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data:
                break
    except ConnectionResetError:
        pass
    s.close()
    if data:
        status = int(data.split(b" ", 2)[1])
        assert 400 <= status < 600 and status != 500, data
    assert http.curl("/healthz")[0] == 200


def test_connection_limit_closes_the_extra_connection(http_factory_real):
    h = http_factory_real("--http-max-connections=2")
    held = []
    for _ in range(2):
        s = h.raw()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[2] == b"ok\n"  # accepted and kept open
        held.append(s)
    extra = h.raw()
    assert_closed(extra)
    extra.close()
    held.pop().close()

    def served():
        try:
            return h.curl("/healthz")[0] == 200
        except AssertionError:
            return False
    wait_for(served, "a free HTTP connection slot")
    for s in held:
        s.close()


def test_idle_connection_times_out(http_factory_real):
    h = http_factory_real("--http-idle-timeout=1")
    s = h.raw()
    s.sendall(b"GET /heal")  # an unfinished request line
    t0 = time.monotonic()
    assert_closed(s)
    assert time.monotonic() - t0 < DEADLINE
    s.close()


# ------------------------------------------------------------------ clients that go away


def test_client_gone_while_its_job_is_queued_drops_the_job(http):
    s = http.raw()
    s.sendall(b"POST /gone HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nq")
    c = http.server.connect(timeout=DEADLINE)
    wait_for(lambda: admin_status(c).get(b"gone", (0,))[0] == 1, "the job to be queued")
    s.close()
    # like a vanished binary client: a queued job nobody waits for is dropped
    wait_for(lambda: admin_status(c).get(b"gone", (0,))[0] == 0, "the job to be dropped")
    assert http.curl("/healthz")[0] == 200
    c.close()


def test_client_gone_while_its_job_runs_lets_the_job_finish(http):
    w = Worker(http.server, "run")
    s = http.raw()
    s.sendall(b"POST /run HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nr")
    handle, _, _ = w.next_job()
    s.close()
    c = http.server.connect(timeout=DEADLINE)
    # the job is still running on the worker
    assert admin_status(c)[b"run"][:2] == (1, 1)
    w.c.send_packet(WORK_DATA, handle, b"x" * 100000)
    w.c.send_packet(WORK_COMPLETE, handle, b"late")
    w.c.echo_roundtrip()  # accepted, no ERROR
    wait_for(lambda: admin_status(c).get(b"run", (0,))[0] == 0, "the job to finish")
    assert http.curl("/healthz")[0] == 200
    c.close()
    w.close()


def test_requests_waiting_at_shutdown_are_released(http):
    p = http.curl_bg("/never", b"x")
    c = http.server.connect(timeout=DEADLINE)
    wait_for(lambda: admin_status(c).get(b"never", (0,))[0] == 1, "the job to be queued")
    c.close()
    assert http.server.stop() == 0  # no leak, no crash (ASan) with a suspended request
    p[0].communicate(timeout=DEADLINE + 10)


def test_gearmand_option_names_turn_http_on(server_factory, tmp_path):
    pf = str(tmp_path / "http-port")
    s = server_factory("-r", "http", "--http-port=0", "--http-listen=127.0.0.1",
                       "--http-port-file=" + pf)
    h = Http(s, pf)
    assert h.curl("/healthz")[0] == 200


def test_result_of_a_job_finishing_during_graceful_shutdown_is_answered(http):
    w = Worker(http.server, "last")
    p = http.curl_bg("/last", b"x")
    handle, _, _ = w.next_job()
    c = http.server.connect(timeout=DEADLINE)
    c.send(b"shutdown graceful\n")
    assert c.read_line().startswith(b"OK")
    w.c.send_packet(WORK_COMPLETE, handle, b"the answer")
    status, headers, body = finish_bg(*p)
    assert status == 200 and body == b"the answer"
    assert http.server.proc.wait(timeout=DEADLINE) == 0
    c.close()
    w.close()


def test_bodies_being_received_count_in_the_buffer_budget(http_factory_real):
    # budget 2 x 1 MiB + 64 KiB: two 900 KB bodies fit, a third passes it, and the worst holder
    # is closed (answered 503 once its body is in); the other two are served
    h = http_factory_real("--max-packet-size=1M", "--max-buffer-memory=2162688")
    socks = []
    for i in range(3):
        s = h.raw()
        s.sendall(b"POST /budget HTTP/1.1\r\nHost: x\r\nX-Gearman-Background: true\r\n"
                  b"Content-Length: 900001\r\n\r\n" + b"b" * 900000)
        socks.append(s)
    wait_for(lambda: "over --max-buffer-memory" in h.server.stderr_text(),
             "the bodies to pass the budget")
    statuses = []
    for s in socks:
        s.sendall(b"!")
        line, _, body, _ = read_response(s)
        statuses.append(int(line.split()[1]))
        s.close()
    assert sorted(statuses) == [200, 200, 503], statuses
    c = h.server.connect()
    assert admin_status(c)[b"budget"][0] == 2
    c.close()
    assert h.curl("/healthz")[0] == 200


def test_large_result_in_many_chunks_is_intact(http):
    w = Worker(http.server, "big")
    p = http.curl_bg("/big", b"x", headers=["X-Gearman-Unique: -"])
    handle, _, _ = w.next_job()
    chunks = [bytes([i % 251]) * (70000 + i) for i in range(20)]
    for ch in chunks:
        w.c.send_packet(WORK_DATA, handle, ch)
    w.c.send_packet(WORK_COMPLETE, handle, b"end")
    status, headers, body = finish_bg(*p)
    assert status == 200
    assert body == b"".join(chunks) + b"end"
    w.close()


def test_a_request_waiting_on_its_job_is_not_idle(http_factory_real):
    h = http_factory_real("--http-idle-timeout=1")
    w = Worker(h.server, "slow")
    p = h.curl_bg("/slow", b"x")
    handle, _, _ = w.next_job()
    time.sleep(2.5)  # the subject: more than the idle timeout passes while the job runs
    w.c.send_packet(WORK_COMPLETE, handle, b"finally")
    status, _, body = finish_bg(*p)
    assert status == 200 and body == b"finally"
    w.close()


def test_the_idle_sweep_leaves_a_waiting_http_request_alone(http_factory_real):
    # --idle-timeout's sweep walks the connections only: it used to walk every engine peer and
    # read an HTTP request's memory as a connection's (its result buffer's size landed on the
    # connection's partial_since), so a request holding part of its result was "closed" as a
    # connection
    h = http_factory_real("--idle-timeout=1")
    w = Worker(h.server, "part")
    p = h.curl_bg("/part", b"x")
    handle, _, _ = w.next_job()
    w.c.send_packet(WORK_DATA, handle, b"first ")
    w.c.echo_roundtrip()  # the part is in the request's answer
    # a connection with a half-sent packet: once it is closed, a sweep ran while the request
    # held its part
    half = socket.create_connection(h.server.addr, timeout=DEADLINE)
    half.sendall(b"\0REQ")
    assert_closed(half)
    half.close()
    w.c.send_packet(WORK_COMPLETE, handle, b"last")
    status, headers, body = finish_bg(*p)
    assert (status, body) == (200, b"first last")
    assert headers["x-gearman-command"] == "WORK_COMPLETE"
    w.c.echo_roundtrip()  # the worker is alive too
    w.close()
    assert h.curl("/healthz")[0] == 200


def test_http_is_served_while_the_gearman_port_is_at_max_connections(http_factory_real):
    h = http_factory_real("--max-connections=1")
    a = h.server.connect(timeout=DEADLINE)
    a.echo_roundtrip()
    b = socket.create_connection(h.server.addr, timeout=DEADLINE)  # waits in the backlog
    wait_for(lambda: "--max-connections (1) reached" in h.server.stderr_text(),
             "the Gearman listener to pause")
    assert h.curl("/healthz")[0] == 200
    a.close()
    b.close()


# ------------------------------------------------------------------ admin commands (--http-admin)


def test_admin_over_http_is_off_unless_asked(http):
    status, _, body = http.curl("/admin", data=b"status")
    assert status == 404 and b"--http-admin" in body
    c = http.server.connect()
    assert c.admin("create function nothere\n") == b"OK\r\n"  # the admin port is unaffected
    c.close()


def test_admin_over_http_answers_lines_and_whole_listings(http_factory_real):
    h = http_factory_real("--http-admin")
    status, headers, body = h.curl("/admin", data=b"create function hf\n", headers=ADMIN)
    assert (status, body) == (200, b"OK\r\n")
    assert headers["content-type"].startswith("text/plain")
    # a listing written in slices over several loop turns is answered whole
    c = h.server.connect()
    n = 3000
    for i in range(n):
        c.send_packet(SUBMIT_JOB_BG, b"hf", b"u%d" % i, b"p")
    for i in range(n):
        c.expect(JOB_CREATED)
    assert admin_status(c)[b"hf"][0] == n
    status, _, body = h.curl("/admin", data=b"show jobs", headers=ADMIN)
    lines = body.split(b"\n")
    assert status == 200 and body.endswith(b".\n")
    assert len([ln for ln in lines if ln.startswith(b"H:")]) == n
    status, _, body = h.curl("/admin", data=b"stats", headers=ADMIN)
    assert status == 200 and body.startswith(b"STAT ") and body.endswith(b"END\r\n")
    # errors: an ERR reply is 400, a second line, NUL or an empty body are refused unsent
    assert h.curl("/admin", data=b"no such command", headers=ADMIN)[0] == 400
    for bad in (b"status\r\nshutdown", b"status\nshutdown", b"sta\0tus", b"", b"\r\n"):
        status, _, body = h.curl("/admin", data=bad, headers=ADMIN)
        assert status == 400 and b"one admin command line" in body, (bad, status, body)
    assert h.curl("/admin", method="GET")[0] == 405
    long_line = b"x" * 70000
    assert h.curl("/admin", data=long_line, headers=ADMIN)[0] == 413
    assert h.curl("/healthz")[0] == 200, "the server keeps serving"
    c.close()


def test_admin_over_http_obeys_admin_allow(http_factory_real):
    """HTTP requests come from the listener "http": --admin-allow rules govern them as any
    connection's; a refusal is 403 and nothing changes."""
    h = http_factory_real("--http-admin", "--admin-allow=unix")
    status, _, body = h.curl("/admin", data=b"shutdown", headers=ADMIN)
    assert status == 403 and body.startswith(b"ERR PERMISSION_DENIED")
    assert h.curl("/admin", data=b"status", headers=ADMIN)[0] == 200, "reads stay allowed"
    h2 = http_factory_real("--http-admin", "--admin-allow=listener:http")
    assert h2.curl("/admin", data=b"create function viahttp", headers=ADMIN)[0] == 200
    c = h2.server.connect()
    assert b"viahttp" in admin_status(c)
    c.close()


# ------------------------------------------------------------------ hardening behind a proxy


def read_answer_and_close(sock):
    """Read what the server sends until it closes sock. Returns (status, bytes, closed): closed is
    False when the server kept the connection open past the deadline."""
    sock.settimeout(DEADLINE)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    except socket.timeout:
        return (int(data.split(b" ", 2)[1]) if data else 0), data, False
    return (int(data.split(b" ", 2)[1]) if data else 0), data, True


def stat(server, name):
    """A counter of admin `stats`."""
    c = server.connect(timeout=DEADLINE)
    raw = c.admin(b"stats\n", terminator=b"END\r\n")
    c.close()
    for line in raw.split(b"\r\n"):
        parts = line.split(b" ")
        if len(parts) == 3 and parts[1] == name.encode():
            return int(parts[2])
    raise AssertionError("no stat %s in %r" % (name, raw))


def test_x_spur_after_checks_the_function_name_like_a_plain_submit(http):
    """A name with a line break gets the same answer through X-Spur-After as through a plain
    POST: every entry point checks names with one check (func_name_ok), and the listings escape
    what it lets through, so no path can forge a row of `status`."""
    def post(extra):
        s = http.raw()
        s.sendall(b"POST /ok%0Aforged%090%090%091 HTTP/1.1\r\nHost: x\r\n"  # ok\nforged\t0..
                  b"X-Gearman-Background: true\r\n" + extra + b"Content-Length: 1\r\n\r\np")
        line, _, body, _ = read_response(s)
        s.close()
        return int(line.split(" ")[1]), None, body
    plain = post(b"")
    after = post(b"X-Spur-After: \r\n")  # no handle: the job is queued at once
    assert after[0] == plain[0], (plain, after)
    c = http.server.connect()
    rows = admin_status(c)
    c.close()
    # the name may be accepted (every byte but NUL is, as on gearmand), but then it is listed
    # escaped: never a row of its own
    assert b"forged" not in rows, rows
    if plain[0] == 400:
        assert b"INVALID_ARGUMENT" in after[2], after


@pytest.mark.parametrize("framing", [
    b"Content-Length: 1\r\nContent-Length: 2\r\n",
    b"Content-Length: 1\r\nTransfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: chunked\r\nContent-Length: 1\r\n",
    b"Content-Length: 1\r\nTransfer-Encoding : chunked\r\n",  # space before the colon
    b"Content-Length : 1\r\n",
    b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
    b"Transfer-Encoding: identity\r\n",
])
def test_ambiguous_body_framing_is_400_and_closed(http, framing):
    """RFC 9112 section 6.3: two different Content-Length headers, or Content-Length with
    Transfer-Encoding, are refused and the connection closed (a proxy in front may frame the
    body the other way: what it sees as the next request must not be served)."""
    s = http.raw()
    s.sendall(b"POST /smuggle HTTP/1.1\r\nHost: x\r\nX-Gearman-Background: true\r\n" + framing +
              b"\r\n1\r\na\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    status, data, closed = read_answer_and_close(s)
    s.close()
    assert status == 400 and closed, data
    assert b"ok\n" not in data, "the smuggled request was served"
    c = http.server.connect()
    assert b"smuggle" not in admin_status(c)
    c.close()
    # the same value twice is one length (RFC 9110 allows it) and is served
    s = http.raw()
    s.sendall(b"POST /twice HTTP/1.1\r\nHost: x\r\nX-Gearman-Background: true\r\n"
              b"Content-Length: 1\r\nContent-Length: 1\r\n\r\na")
    assert " 200 " in read_response(s)[0]
    s.close()


def test_nul_in_the_path_is_400(http):
    """%00 would cut the name at the NUL: /fn%00rest must not submit to fn."""
    for path in (b"/fn%00rest", b"/fn%00", b"/admin%00x"):
        s = http.raw()
        s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nX-Gearman-Background: true\r\n"
                  b"Content-Length: 1\r\n\r\na")
        line, _, body, _ = read_response(s)
        s.close()
        assert " 400 " in line and b"NUL" in body, (path, line, body)
    c = http.server.connect()
    assert b"fn" not in admin_status(c)
    c.close()
    assert http.curl("/healthz")[0] == 200


def test_one_header_over_the_header_limit_is_431(http_factory_real):
    """--http-max-header-size bounds the request line and headers together, even when they fit
    libmicrohttpd's memory pool (which is larger than the limit)."""
    h = http_factory_real("--http-max-header-size=2048")
    for extra in (b"X-Big: " + b"a" * 3000 + b"\r\n",
                  b"".join(b"X-%d: %s\r\n" % (i, b"b" * 100) for i in range(25))):
        s = h.raw()
        s.sendall(b"POST /big HTTP/1.1\r\nHost: x\r\nX-Gearman-Background: true\r\n" + extra +
                  b"Content-Length: 1\r\n\r\na")
        line, _, _, _ = read_response(s)
        s.close()
        assert " 431 " in line, line
    c = h.server.connect()
    assert b"big" not in admin_status(c)
    c.close()
    assert h.curl("/healthz", headers=["X-Small: " + "b" * 1500])[0] == 200


def test_slow_clients_cannot_hold_every_connection_slot(http_factory_real):
    """Clients that trickle their request head (or body) hold their slots only until
    --http-request-timeout; then they are closed, counted and logged, and a new client is
    served. The trickle keeps each connection from being idle, so --http-idle-timeout alone
    would never free the slots."""
    n = 3
    h = http_factory_real("--http-max-connections=%d" % n, "--http-request-timeout=1",
                          "--http-idle-timeout=30", "--verbose=WARNING")
    assert stat(h.server, "http_request_timeouts") == 0
    slow = []
    t0 = time.monotonic()  # before the first accept: no slot can free before t0 + 1 s
    for i in range(n):
        s = h.raw()
        if i == n - 1:  # a body that never ends
            s.sendall(b"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab")
        else:           # a head that never ends
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b")
        slow.append(s)

    def trickle():
        for s in slow:
            try:
                s.send(b"b")
            except OSError:
                pass

    def served():
        trickle()
        s = h.raw(timeout=2)
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            return read_response(s)[2] == b"ok\n"
        except (OSError, AssertionError):
            return False
        finally:
            s.close()
    # every slot is held: a new client is turned away until the deadline passes
    wait_for(served, "a slot freed by --http-request-timeout")
    assert time.monotonic() - t0 >= 0.9
    for s in slow:
        status, data, closed = read_answer_and_close(s)
        assert closed, data
        s.close()
    wait_for(lambda: stat(h.server, "http_request_timeouts") >= n, "the timeouts counted")
    wait_for(lambda: "--http-request-timeout" in h.server.stderr_text(), "the timeouts logged")


def test_request_deadline_on_a_kept_alive_connection_runs_from_its_first_byte(
        http_factory_real):
    """On a kept-alive connection the next request's deadline starts with its first byte: a
    connection that trickles its second request is closed, one that waits idle between
    requests is left to --http-idle-timeout."""
    h = http_factory_real("--http-request-timeout=1", "--http-idle-timeout=30")
    idle, slow = h.raw(), h.raw()
    for s in (idle, slow):  # idle first: a deadline wrongly run from its answer ends sooner
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[2] == b"ok\n"
    slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ")
    slow.settimeout(0.2)
    t0 = time.monotonic()

    def slow_closed():
        try:
            slow.send(b"a")
            return slow.recv(100) == b""
        except socket.timeout:
            return False
        except OSError:
            return True
    wait_for(slow_closed, "the trickling connection to be closed")
    assert time.monotonic() - t0 >= 0.9
    slow.close()
    idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_response(idle)[2] == b"ok\n", "an idle kept-alive connection is not slow"
    idle.close()
    assert stat(h.server, "http_request_timeouts") == 1


def test_admin_over_http_refuses_what_a_cross_site_form_can_send(http_factory_real):
    """A web page can make a browser POST a form (text/plain, no custom header) to the admin
    route; with the origin of another site. Both are refused with 403 and nothing runs."""
    h = http_factory_real("--http-admin")
    # no X-Spur-Admin header: what a form sends
    status, _, body = h.curl("/admin", data=b"create function csrf1",
                             headers=["Content-Type: text/plain"])
    assert status == 403 and b"X-Spur-Admin" in body, (status, body)
    # a foreign Origin, even with the header
    status, _, body = h.curl("/admin", data=b"create function csrf2",
                             headers=["X-Spur-Admin: 1", "Origin: http://evil.example"])
    assert status == 403 and b"Origin" in body, (status, body)
    status, _, _ = h.curl("/admin", data=b"create function csrf3",
                          headers=["X-Spur-Admin: 1", "Origin: null"])
    assert status == 403
    c = h.server.connect()
    rows = admin_status(c)
    assert b"csrf1" not in rows and b"csrf2" not in rows and b"csrf3" not in rows, rows
    # the same origin, or none (curl, scripts): served
    assert h.curl("/admin", data=b"create function ok1",
                  headers=["X-Spur-Admin: 1",
                           "Origin: http://127.0.0.1:%d" % h.port])[0] == 200
    assert h.curl("/admin", data=b"create function ok2", headers=["X-Spur-Admin: 1"])[0] == 200
    rows = admin_status(c)
    assert b"ok1" in rows and b"ok2" in rows
    c.close()
