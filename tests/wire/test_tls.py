# SPDX-License-Identifier: BSD-3-Clause
"""Server-side TLS (--ssl, --ssl-listen, --ssl-verify-client, --ssl-handshake-timeout, SIGHUP
reload): Python's ssl module speaking raw Gearman packets and admin lines over TLS, openssl
s_client, and certificates made at test time with the openssl CLI (docs/SECURITY.md has the
same commands)."""
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

import pytest

from conftest import free_port, poll, start_spurd
from gearman_wire import (CAN_DO, ECHO_REQ, ECHO_RES, GRAB_JOB, JOB_ASSIGN, JOB_CREATED,
                          SUBMIT_JOB, WORK_COMPLETE, Conn, packet)

OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="the openssl CLI is not installed")

CA_CNF = """[ ca ]
default_ca = test_ca
[ test_ca ]
database = {dir}/index.txt
new_certs_dir = {dir}
serial = {dir}/serial
default_md = sha256
policy = any
unique_subject = no
copy_extensions = copy
[ any ]
commonName = supplied
"""


def run(*args, cwd):
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def key_and_csr(d, name, subj):
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subj, cwd=d)


def make_ca(d, name, cn):
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "30", "-subj", f"/CN={cn}",
        cwd=d)


def sign(d, name, ca, ext):
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(ext + "\n")
    run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
        "-CAcreateserial", "-out", f"{name}.pem", "-days", "30", "-extfile", f"{name}.ext",
        cwd=d)


@pytest.fixture(scope="module")
def certs():
    """A CA; server certificates (SAN 127.0.0.1, localhost); client certificates: good, signed
    by another CA, expired (made with `openssl ca -startdate -enddate`)."""
    d = tempfile.mkdtemp(prefix="spur-tls-")
    make_ca(d, "ca", "Spur Test CA")
    make_ca(d, "other-ca", "Other CA")
    for srv in ("server", "server2"):
        key_and_csr(d, srv, f"/CN={srv}.spur.test")
        sign(d, srv, "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost")
    key_and_csr(d, "client", "/CN=worker-1")
    sign(d, "client", "ca", "subjectAltName=DNS:w1.example,email:ops@example.com")
    key_and_csr(d, "stranger", "/CN=stranger")
    sign(d, "stranger", "other-ca", "subjectAltName=DNS:stranger.example")
    key_and_csr(d, "expired", "/CN=expired")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write(CA_CNF.format(dir=d))
    open(os.path.join(d, "index.txt"), "w").close()
    with open(os.path.join(d, "serial"), "w") as f:
        f.write("1000\n")
    run("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key",
        "-in", "expired.csr", "-out", "expired.pem", "-notext",
        "-startdate", "20200101000000Z", "-enddate", "20200201000000Z", cwd=d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def p(certs, name):
    return os.path.join(certs, name)


def tls_args(certs, *more, server="server"):
    return ["--ssl-certificate=" + p(certs, server + ".pem"),
            "--ssl-key=" + p(certs, server + ".key"), *more]


def client_ctx(certs, cert=None):
    ctx = ssl.create_default_context(cafile=p(certs, "ca.pem"))
    if cert is not None:
        ctx.load_cert_chain(p(certs, cert + ".pem"), p(certs, cert + ".key"))
    return ctx


class TlsConn(Conn):
    """A Conn (gearman_wire) whose socket is a TLS client socket."""

    def __init__(self, addr, ctx, timeout=5.0):  # pylint: disable=super-init-not-called
        raw = socket.create_connection(addr, timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.addr = addr
        self.timeout = timeout
        self.buf = b""


def refused(addr, ctx, timeout=10.0):
    """True if the server refuses this client: the handshake fails, or (TLS 1.3, where the
    client finishes first) the first request gets an alert or the end instead of a reply."""
    try:
        c = TlsConn(addr, ctx, timeout=timeout)
    except (ssl.SSLError, ConnectionError):
        return True
    try:
        c.send(packet(ECHO_REQ, b"x"))
        c.read_packet(timeout)
    except (ssl.SSLError, ConnectionError, BrokenPipeError):
        return True
    finally:
        c.close()
    return False


def tls_stats(c):
    """The tls_* counters of admin `stats` over connection c."""
    raw = c.admin(b"stats\n", terminator=b"END\r\n")
    out = {}
    for line in raw.split(b"\r\n"):
        parts = line.split(b" ")
        if len(parts) == 3 and parts[1].startswith(b"tls_"):
            out[parts[1].decode()] = int(parts[2])
    return out


def wait_log(server, text, timeout=10.0):
    deadline = time.monotonic() + timeout
    while text not in server.stderr_text():
        assert time.monotonic() < deadline, f"{text!r} not logged:\n{server.stderr_text()}"
        time.sleep(0.02)


def test_job_flows_over_tls_and_admin_lines_work(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs))
    ctx = client_ctx(certs)
    w = TlsConn(s.addr, ctx)
    c = TlsConn(s.addr, ctx)
    w.send_packet(CAN_DO, b"rev")
    c.send_packet(SUBMIT_JOB, b"rev", b"u1", b"hello")
    handle = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN) == handle + b"\0rev\0hello"
    w.send_packet(WORK_COMPLETE, handle, b"olleh")
    assert c.expect(WORK_COMPLETE) == handle + b"\0olleh"
    a = TlsConn(s.addr, ctx)
    assert a.admin("version\n").startswith(b"OK ")
    status = a.admin("status\n", b".\n")
    assert b"rev\t0\t0\t1\n" in status
    assert b"127.0.0.1" in a.admin("workers\n", b".\n")
    # a large payload: many records each way, writes that fill the socket
    big = os.urandom(3 << 20)
    c.send_packet(SUBMIT_JOB, b"rev", b"u2", big)
    handle = c.expect(JOB_CREATED)
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN, timeout=30) == handle + b"\0rev\0" + big
    w.send_packet(WORK_COMPLETE, handle, big)
    assert c.expect(WORK_COMPLETE, timeout=30) == handle + b"\0" + big
    for x in (w, c, a):
        x.close()


def test_pipelined_requests_past_the_input_quota_are_all_answered(server_factory, certs):
    """Thousands of requests in one burst: input stops at the per-iteration quota with decrypted
    bytes left inside OpenSSL, which no socket event announces; they must still be read."""
    s = server_factory("--ssl", *tls_args(certs))
    c = TlsConn(s.addr, client_ctx(certs), timeout=30)
    reqs = [packet(ECHO_REQ, b"%06d" % i + b"x" * 50) for i in range(5000)]
    c.send(b"".join(reqs))
    for i in range(5000):
        assert c.expect(ECHO_RES, timeout=30) == b"%06d" % i + b"x" * 50
    lines = b"".join(b"version\n" for _ in range(3000))
    c.send(lines)
    for _ in range(3000):
        assert c.read_line(timeout=30).startswith(b"OK ")


def test_openssl_s_client_runs_admin_commands(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs))
    proc = subprocess.Popen([OPENSSL, "s_client", "-connect", f"127.0.0.1:{s.addr[1]}",
                             "-CAfile", p(certs, "ca.pem"), "-verify_return_error", "-quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(b"version\nstatus\n")
        proc.stdin.flush()
        out = b""
        deadline = time.monotonic() + 20
        while not (b"OK " in out and out.endswith(b".\n")):
            left = deadline - time.monotonic()
            assert left > 0, out
            r, _, _ = select.select([proc.stdout], [], [], left)
            if r:
                chunk = os.read(proc.stdout.fileno(), 65536)
                assert chunk, f"s_client ended: {out!r}"
                out += chunk
        assert out.startswith(b"OK "), out
    finally:
        proc.kill()
        proc.wait()


def test_plain_and_tls_listeners_side_by_side(server_factory, certs):
    tls_port = free_port()
    tmp = tempfile.mkdtemp(prefix="spurd-test-")
    sock = os.path.join(tmp, "spurd.sock")
    s = server_factory(f"--ssl-listen=127.0.0.1:{tls_port}", "--unix=" + sock,
                       *tls_args(certs), tmpdir=tmp)
    plain = s.connect()
    plain.echo_roundtrip(b"plain")
    t = TlsConn(("127.0.0.1", tls_port), client_ctx(certs))
    t.echo_roundtrip(b"tls")
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(5)
    u.connect(sock)
    u.sendall(b"version\n")
    assert u.recv(100).startswith(b"OK ")
    u.close()
    # the plain port does not speak TLS, the TLS port does not speak plain
    assert refused(s.addr, client_ctx(certs))
    raw = Conn(("127.0.0.1", tls_port))
    raw.send(packet(ECHO_REQ, b"x"))
    raw.expect_closed()
    # a job crosses from a plain client to a TLS worker
    t.send_packet(CAN_DO, b"f")
    plain.send_packet(SUBMIT_JOB, b"f", b"", b"data")
    handle = plain.expect(JOB_CREATED)
    t.send_packet(GRAB_JOB)
    assert t.expect(JOB_ASSIGN) == handle + b"\0f\0data"
    t.send_packet(WORK_COMPLETE, handle, b"ok")
    assert plain.expect(WORK_COMPLETE) == handle + b"\0ok"
    wait_log(s, f"listening for TLS on 127.0.0.1:{tls_port}")


def test_verify_require_refuses_wrong_ca_expired_and_no_certificate(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs, "--ssl-ca-file=" + p(certs, "ca.pem"),
                                          "--ssl-verify-client=require", "--verbose=INFO"))
    good = TlsConn(s.addr, client_ctx(certs, "client"))
    good.echo_roundtrip(b"good")
    # the verified names reach the peer (logged at INFO once the handshake is done)
    wait_log(s, "TLS client certificate verified: worker-1, w1.example, ops@example.com")
    assert refused(s.addr, client_ctx(certs))
    assert refused(s.addr, client_ctx(certs, "stranger"))
    assert refused(s.addr, client_ctx(certs, "expired"))
    good.echo_roundtrip(b"still served")
    log = s.stderr_text()
    assert "TLS handshake with 127.0.0.1 failed" in log
    assert "certificate has expired" in log
    assert "unable to get local issuer certificate" in log


def test_verify_optional_serves_no_certificate_but_refuses_a_bad_one(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs, "--ssl-ca-file=" + p(certs, "ca.pem"),
                                          "--ssl-verify-client=optional"))
    anon = TlsConn(s.addr, client_ctx(certs))
    anon.echo_roundtrip(b"anonymous")
    TlsConn(s.addr, client_ctx(certs, "client")).echo_roundtrip(b"good")
    assert refused(s.addr, client_ctx(certs, "stranger"))
    assert refused(s.addr, client_ctx(certs, "expired"))
    anon.echo_roundtrip(b"still served")


def test_verify_none_ignores_client_certificates(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs))
    TlsConn(s.addr, client_ctx(certs, "stranger")).echo_roundtrip(b"not checked")


def test_stalled_handshake_is_closed_after_the_timeout_others_served(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs, "--ssl-handshake-timeout=1"))
    t0 = time.monotonic()
    silent = Conn(s.addr)  # connects and says nothing
    half = Conn(s.addr)  # starts a ClientHello and stops
    half.send(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    ok = TlsConn(s.addr, client_ctx(certs))
    ok.echo_roundtrip(b"served meanwhile")
    silent.expect_closed(timeout=15)
    half.expect_closed(timeout=15)
    assert time.monotonic() - t0 >= 0.9
    ok.echo_roundtrip(b"still served")
    st = tls_stats(ok)
    assert st["tls_handshake_timeouts"] == 2, st
    assert st["tls_handshakes"] == 1, st


def test_plaintext_packet_on_a_tls_port_closes_only_that_connection(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs))
    ok = TlsConn(s.addr, client_ctx(certs))
    raw = Conn(s.addr)
    raw.send(packet(ECHO_REQ, b"plain"))
    raw.expect_closed()
    ok.echo_roundtrip(b"served")
    wait_log(s, "wrong version number")
    assert tls_stats(ok) == {"tls_handshakes": 1, "tls_handshake_failures": 1,
                             "tls_handshake_timeouts": 0}


def server_cn(addr, certs):
    t = TlsConn(addr, client_ctx(certs))
    cert = t.sock.getpeercert()
    t.close()
    return dict(x[0] for x in cert["subject"])["commonName"]


def test_sighup_reloads_the_certificate_for_new_connections(server_factory, certs):
    d = tempfile.mkdtemp(prefix="spur-tls-reload-")
    shutil.copy(p(certs, "server.pem"), os.path.join(d, "cert.pem"))
    shutil.copy(p(certs, "server.key"), os.path.join(d, "key.pem"))
    s = server_factory("--ssl", "--ssl-certificate=" + os.path.join(d, "cert.pem"),
                       "--ssl-key=" + os.path.join(d, "key.pem"))
    assert server_cn(s.addr, certs) == "server.spur.test"
    old = TlsConn(s.addr, client_ctx(certs))
    old.echo_roundtrip(b"before")
    shutil.copy(p(certs, "server2.pem"), os.path.join(d, "cert.pem"))
    shutil.copy(p(certs, "server2.key"), os.path.join(d, "key.pem"))
    s.proc.send_signal(signal.SIGHUP)
    wait_log(s, "TLS certificate, key and CA reloaded")
    assert server_cn(s.addr, certs) == "server2.spur.test"
    old.echo_roundtrip(b"after")  # the open connection keeps its session
    # a failed reload keeps the context in use and says why
    with open(os.path.join(d, "key.pem"), "w") as f:
        f.write("not a key\n")
    s.proc.send_signal(signal.SIGHUP)
    wait_log(s, "TLS files not reloaded, the old ones stay in use")
    assert server_cn(s.addr, certs) == "server2.spur.test"
    old.echo_roundtrip(b"still")
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("args, message", [
    (["--ssl"], "need --ssl-certificate and --ssl-key"),
    (["--ssl", "--ssl-certificate=/nonexistent.pem", "--ssl-key=/nonexistent.key"],
     "cannot read --ssl-certificate /nonexistent.pem"),
    (["--ssl-verify-client=require"], "needs --ssl-ca-file"),
    (["--ssl", "--ssl-ca-file=/nonexistent-ca.pem"], "cannot read --ssl-ca-file"),
    (["--ssl", "KEY=client"], "mismatch"),
    (["--ssl", "CERT=server.key"], "cannot load --ssl-certificate"),
])
def test_bad_tls_files_stop_the_start_with_a_clear_message(certs, args, message):
    binary = os.environ.get("SPURD")
    if not binary:
        pytest.skip("SPURD is not set")
    base = {"--ssl-certificate": p(certs, "server.pem"), "--ssl-key": p(certs, "server.key")}
    argv = [binary, "--port=0", "--listen=127.0.0.1"]
    for a in args:
        if a.startswith("KEY="):
            base["--ssl-key"] = p(certs, a[4:] + ".key")
        elif a.startswith("CERT="):
            base["--ssl-certificate"] = p(certs, a[5:])
        else:
            argv.append(a)
    if args[0] == "--ssl" and len(args) > 1 and not args[1].startswith("--ssl-cert"):
        argv += [f"{k}={v}" for k, v in base.items()]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr, r.stderr


# ------------------------------------------------------------------ partial records (issue 27.4)

PARTIAL_CONNS = 64  # connections that each hold a partial record


def partial_record(addr, ctx, size=16384, timeout=30.0):
    """A TLS connection (socket, SSLObject) that has sent one application record of size
    plaintext bytes but its last byte: the server holds a record it cannot decrypt yet."""
    raw = socket.create_connection(addr, timeout=timeout)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            data = out.read()
            if data:
                raw.sendall(data)
            chunk = raw.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed during the handshake")
            inc.write(chunk)
    data = out.read()
    if data:
        raw.sendall(data)
    obj.write(b"\0" * size)  # one record
    rec = out.read()
    assert len(rec) > size
    raw.sendall(rec[:-1])
    return raw, obj


def closed(raw):
    """True once the server closed raw (end of input or a reset), without blocking."""
    raw.setblocking(False)
    try:
        while True:
            chunk = raw.recv(65536)  # session tickets first (TLS 1.3), then the end
            if not chunk:
                return True
    except BlockingIOError:
        return False
    except ConnectionError:
        return True
    finally:
        raw.setblocking(True)


def buffered(c):
    st = dict(line.split(b" ")[1:3] for line in
              c.admin(b"stats\n", terminator=b"END\r\n").split(b"\r\n") if line.count(b" ") == 2)
    return {k.decode(): int(v) for k, v in st.items() if v.isdigit()}


def test_partial_records_count_in_buffered_bytes(server_factory, certs):
    """Each connection holding 16 KiB of a record counts at least that much in buffered_bytes,
    and the bytes no longer count once the connections are gone."""
    s = server_factory("--ssl", *tls_args(certs))
    ctx = client_ctx(certs)
    ok = TlsConn(s.addr, ctx)
    before = buffered(ok)["buffered_bytes"]
    held = [partial_record(s.addr, ctx) for _ in range(PARTIAL_CONNS)]
    want = before + PARTIAL_CONNS * 16384
    poll(lambda: buffered(ok)["buffered_bytes"] >= want, "partial records counted", timeout=30)
    ok.echo_roundtrip(b"served meanwhile")
    for raw, _ in held:
        raw.close()
    poll(lambda: buffered(ok)["buffered_bytes"] <= before + 4096, "bytes released", timeout=30)
    ok.close()


def test_partial_records_are_closed_by_the_idle_timeout(server_factory, certs):
    s = server_factory("--ssl", *tls_args(certs, "--idle-timeout=1"))
    ctx = client_ctx(certs)
    held = [partial_record(s.addr, ctx) for _ in range(PARTIAL_CONNS)]
    ok = TlsConn(s.addr, ctx)
    poll(lambda: all(closed(raw) for raw, _ in held), "partial records closed", timeout=30)
    ok.echo_roundtrip(b"a whole record is served")
    for raw, _ in held:
        raw.close()


def test_partial_records_are_shed_over_the_buffer_budget(server_factory, certs):
    budget = 2 * 65536 + (64 << 10)  # the smallest --max-buffer-memory for this packet size
    s = server_factory("--ssl", *tls_args(certs, "--max-packet-size=65536",
                                          "--max-buffer-memory=" + str(budget)))
    ctx = client_ctx(certs)
    ok = TlsConn(s.addr, ctx)
    held = [partial_record(s.addr, ctx) for _ in range(PARTIAL_CONNS)]
    poll(lambda: buffered(ok)["connections_shed"] >= PARTIAL_CONNS - budget // 16384,
         "connections shed", timeout=30)
    assert buffered(ok)["buffered_bytes"] <= budget
    ok.echo_roundtrip(b"a reader is not shed")
    for raw, _ in held:
        raw.close()
