# SPDX-License-Identifier: BSD-3-Clause
"""Client-side TLS: libgearman-compat (GEARMAN_CLIENT_SSL / GEARMAN_WORKER_SSL), spuradmin --ssl
and spur -S, against a TLS server.

The TLS server is described by `TlsTarget` (host, port, CA file). It is spurd's own TLS listener
(--ssl-listen, client certificate required), or tlscerts.TlsProxy, a TLS-terminating proxy that
requires and verifies a client certificate, in front of a plain job server (gearmand and spurd).
Debian's gearmand 1.1.20 accepts --ssl but is built without TLS (it keeps speaking plain TCP), so
it cannot be the TLS server itself.
"""
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import free_port
from tlscerts import TlsProxy, make_certs
from test_libgearman_compat import driver, parse, admin, wait_until

DEADLINE = 30


@pytest.fixture(scope="module")
def certs():
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is not installed (apt-get install openssl)")
    d = tempfile.mkdtemp(prefix="spur-tls-certs-")
    yield make_certs(d)
    shutil.rmtree(d, ignore_errors=True)


class TlsTarget:
    """A TLS server to test against: where it is, the CA that signed its certificate, and the
    plain server behind it (for admin checks that do not need TLS)."""

    def __init__(self, host, port, ca, plain=None, proxy=None):
        self.host, self.port, self.ca, self.plain, self.proxy = host, port, ca, plain, proxy

    @property
    def addr(self):
        return "%s:%d" % (self.host, self.port)


class SpurdTls:
    """What the tests read from the TLS end when it is spurd's own listener, as from the proxy:
    handshakes done and failed (admin 'stats', over the plain port) and the verified client
    certificates' names (spurd's INFO log line)."""

    def __init__(self, server, port):
        self.server, self.port = server, port

    def _stat(self, name):
        c = self.server.connect()
        try:
            c.send(b"stats\n")
            while True:  # "STAT name value" lines, then "END"
                line = c.read_line().decode().rstrip("\r\n")
                if line == "END":
                    raise AssertionError(f"no {name} in stats")
                words = line.split()
                if words[:2] == ["STAT", name]:
                    return int(words[2])
        finally:
            c.close()

    @property
    def handshakes_ok(self):
        return self._stat("tls_handshakes")

    @property
    def handshakes_failed(self):
        return self._stat("tls_handshake_failures")

    @property
    def peer_names(self):
        marker = "TLS client certificate verified: "
        return [line.split(marker, 1)[1].split(", ")[0]
                for line in self.server.stderr_text().splitlines() if marker in line]


@pytest.fixture(params=["gearmand", "spurd", "spurd-tls"])
def backend(request, gearmand_factory, server_factory, certs):
    """A plain job server for the proxy to forward to; "spurd-tls" also serves TLS itself on
    another port (backend.tls), client certificate required."""
    if request.param == "gearmand":
        return gearmand_factory()
    if request.param == "spurd":
        return server_factory()
    port = free_port()
    s = server_factory(f"--ssl-listen=127.0.0.1:{port}", "--ssl-certificate=" + certs["server"],
                       "--ssl-key=" + certs["server_key"], "--ssl-ca-file=" + certs["ca"],
                       "--ssl-verify-client=require", "--verbose=INFO")
    s.tls = SpurdTls(s, port)
    return s


@pytest.fixture
def proxy_factory(certs):
    started = []

    def make(backend_server, require_client_cert=True):
        p = TlsProxy(backend_server.addr, certs, require_client_cert=require_client_cert)
        started.append(p)
        return p

    yield make
    for p in started:
        p.close()


@pytest.fixture
def tls_target(backend, proxy_factory, certs):
    """The TLS server: spurd's TLS listener, or the proxy (client certificate required) in front
    of `backend`."""
    if getattr(backend, "tls", None) is not None:
        return TlsTarget("127.0.0.1", backend.tls.port, certs["ca"], plain=backend,
                         proxy=backend.tls)
    p = proxy_factory(backend)
    return TlsTarget("127.0.0.1", p.addr[1], certs["ca"], plain=backend, proxy=p)


def tls_env(certs, ca=None, cert="client", key="client_key", **extra):
    """The environment libgearman reads its TLS files from."""
    env = dict(os.environ)
    for k in ("GEARMAND_CA_CERTIFICATE", "GEARMAN_CLIENT_PEM", "GEARMAN_CLIENT_KEY",
              "LIBGEARMAN_COMPAT_SSL_VERIFY"):
        env.pop(k, None)
    env["GEARMAND_CA_CERTIFICATE"] = ca or certs["ca"]
    if cert:
        env["GEARMAN_CLIENT_PEM"] = certs[cert]
    if key:
        env["GEARMAN_CLIENT_KEY"] = certs[key]
    env.update(extra)
    return env


def run(args, env, timeout=DEADLINE):
    p = subprocess.run([str(a) for a in args], capture_output=True, timeout=timeout, env=env)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def drive(target, env, *args):
    rc, out, err = run([driver(), "-s", target.addr, "-t", 10000, "-S"] + list(args), env)
    assert rc == 0, f"lgc_driver {args} exited {rc}\n{out}\n{err}"
    return parse(out)


def start(args, env):
    return subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)


def finish(proc, timeout=DEADLINE):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"did not exit within {timeout}s:\n{out}\n{err}")
    return proc.returncode, parse(out.decode(errors="replace")), err.decode(errors="replace")


# ---------------------------------------------------------------- libgearman-compat

def test_compat_client_and_worker_over_tls(tls_target, certs):
    env = tls_env(certs)
    w = start([driver(), "-s", tls_target.addr, "-S", "-c", 3, "worker", "rev"], env)
    try:
        for payload in ("hello", "tls world", "x" * 1000):
            r = drive(tls_target, env, "do", "rev", payload)
            assert r["rc"] == "GEARMAN_SUCCESS", r
            assert r["reversed"] == "1"
        rc, out, err = finish(w)
        assert rc == 0 and out["done"] == "3", (out, err)
    finally:
        if w.poll() is None:
            w.kill()
            w.communicate()
    # every connection went through the proxy's handshake with our client certificate
    assert tls_target.proxy.handshakes_ok >= 4
    assert set(tls_target.proxy.peer_names) == {"spur-test-client"}


def test_compat_large_payloads_and_non_blocking_tasks_over_tls(tls_target, certs):
    env = tls_env(certs)
    # 3 MB each way: many TLS records, partial writes, records left pending in the session
    w = start([driver(), "-s", tls_target.addr, "-S", "-c", 1, "worker", "big"], env)
    try:
        r = drive(tls_target, env, "-z", 3000000, "do", "big", "")
        assert r["rc"] == "GEARMAN_SUCCESS" and r["result_size"] == "3000000"
        assert r["reversed"] == "1"
        assert finish(w)[0] == 0
    finally:
        if w.poll() is None:
            w.kill()
            w.communicate()
    w = start([driver(), "-s", tls_target.addr, "-S", "-c", 20, "worker", "rev"], env)
    try:
        r = drive(tls_target, env, "-n", "tasks", "rev", 20)
        assert r["complete"] == "20" and r["wrong"] == "0", r
        assert finish(w)[1]["done"] == "20"
    finally:
        if w.poll() is None:
            w.kill()
            w.communicate()


def test_compat_worker_echo_and_client_background_over_tls(tls_target, certs):
    env = tls_env(certs)
    assert drive(tls_target, env, "wecho", "ping")["rc"] == "GEARMAN_SUCCESS"
    r = drive(tls_target, env, "bg", "later", "data")
    assert r["rc"] == "GEARMAN_SUCCESS" and r["handle"] != ""
    # the job reached the server behind the proxy
    wait_until(lambda: "later\t1\t0\t0" in admin(tls_target.plain, "status\n"), "job queued")


def test_compat_set_ssl_names_the_files(tls_target, certs):
    # gearman_client_set_ssl(client, true, ca, cert, key) without any environment
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GEARMAND_", "GEARMAN_CLIENT_", "LIBGEARMAN_COMPAT_"))}
    files = "%s:%s:%s" % (certs["ca"], certs["client"], certs["client_key"])
    rc, out, err = run([driver(), "-s", tls_target.addr, "-t", 10000, "-F", files, "echo", "x"],
                       env)
    assert parse(out)["rc"] == "GEARMAN_SUCCESS", out + err


def test_compat_wrong_ca_fails_clearly(tls_target, certs):
    env = tls_env(certs, ca=certs["other_ca"])
    t0 = time.monotonic()
    r = drive(tls_target, env, "echo", "x")
    assert r["rc"] == "GEARMAN_COULD_NOT_CONNECT"
    assert "certificate" in r["error"] and "127.0.0.1" in r["error"], r
    assert time.monotonic() - t0 < 9  # failed at the handshake, not after the 10 s timeout


def test_compat_verify_none_accepts_an_unknown_ca(tls_target, certs):
    env = tls_env(certs, ca=certs["other_ca"], LIBGEARMAN_COMPAT_SSL_VERIFY="none")
    assert drive(tls_target, env, "echo", "x")["rc"] == "GEARMAN_SUCCESS"


def test_compat_host_name_is_verified(backend, proxy_factory, certs):
    # a certificate from the right CA, but for another name: refused; "localhost" is in the
    # good certificate's names as well as 127.0.0.1
    env = tls_env(certs)
    good = proxy_factory(backend)
    assert drive(TlsTarget("localhost", good.addr[1], certs["ca"]), env, "echo", "x")["rc"] == \
        "GEARMAN_SUCCESS"
    p = TlsProxy(backend.addr, certs, server_cert="wrong_name")
    try:
        r = drive(TlsTarget("127.0.0.1", p.addr[1], certs["ca"]), env, "echo", "x")
    finally:
        p.close()
    assert r["rc"] == "GEARMAN_COULD_NOT_CONNECT" and "certificate" in r["error"], r


def test_compat_missing_client_certificate_is_refused(tls_target, certs):
    env = tls_env(certs, cert=None, key=None)
    r = drive(tls_target, env, "echo", "x")
    assert r["rc"] != "GEARMAN_SUCCESS"
    assert "TLS" in r["error"], r
    # with TLS 1.3 the client's side of the handshake ends before the server has checked the
    # client certificate: the server's refusal is counted a moment after the client gives up
    wait_until(lambda: tls_target.proxy.handshakes_failed >= 1, "the refused handshake")


def test_compat_unreadable_client_certificate_is_an_invalid_argument(tls_target, certs):
    env = tls_env(certs, GEARMAN_CLIENT_PEM="/nonexistent/client.pem")
    r = drive(tls_target, env, "echo", "x")
    assert r["rc"] == "GEARMAN_INVALID_ARGUMENT" and "/nonexistent/client.pem" in r["error"], r


def test_compat_tls_to_a_plain_server_fails_without_hanging(backend, certs):
    env = tls_env(certs)
    plain = TlsTarget(backend.addr[0], backend.addr[1], certs["ca"])
    t0 = time.monotonic()
    r = drive(plain, env, "echo", "x")
    assert r["rc"] in ("GEARMAN_COULD_NOT_CONNECT", "GEARMAN_TIMEOUT"), r
    assert time.monotonic() - t0 < 15


# ---------------------------------------------------------------- spuradmin and spur

def admin_bin(name):
    builddir = os.environ.get("SPUR_BUILDDIR")
    if not builddir:
        pytest.skip("SPUR_BUILDDIR is not set (run through `make check`)")
    return os.path.join(builddir, "admin", name)


def spuradmin_tls(target, certs, *args, env=None, files=True):
    cmd = [admin_bin("spuradmin"), "-h", target.host, "-p", str(target.port), "--timeout=10",
           "--ssl"]
    if files:
        cmd += ["--ssl-ca-file", certs["ca"], "--ssl-certificate", certs["client"],
                "--ssl-key", certs["client_key"]]
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("GEARMAND_", "GEARMAN_CLIENT_", "LIBGEARMAN_COMPAT_"))}
    p = subprocess.run(cmd + list(args), capture_output=True, timeout=DEADLINE,
                       env=env if env is not None else clean)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def spuradmin_plain(server, *args):
    p = subprocess.run([admin_bin("spuradmin"), "-h", server.addr[0], "-p", str(server.addr[1])]
                       + list(args), capture_output=True, timeout=DEADLINE)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def test_spuradmin_ssl_status_workers_version(tls_target, certs):
    env = tls_env(certs)
    w = start([driver(), "-s", tls_target.addr, "-S", "-c", 1, "worker", "tlsfunc"], env)
    try:
        wait_until(lambda: "tlsfunc\t0\t0\t1" in admin(tls_target.plain, "status\n"), "worker")
        rc, out, err = spuradmin_tls(tls_target, certs, "--status")
        assert (rc, err) == (0, ""), err
        assert out == spuradmin_plain(tls_target.plain, "--status")[1]
        assert "tlsfunc\t0\t0\t1\n" in out
        rc, out, err = spuradmin_tls(tls_target, certs, "--server-version")
        assert (rc, err) == (0, "") and out == spuradmin_plain(tls_target.plain,
                                                               "--server-version")[1]
        rc, out, err = spuradmin_tls(tls_target, certs, "--workers")
        assert rc == 0 and err == "" and " : tlsfunc\n" in out and out.endswith(".\n"), out
    finally:
        w.kill()
        w.communicate()
    assert set(tls_target.proxy.peer_names) == {"spur-test-client"}


def test_spuradmin_ssl_files_from_the_environment(tls_target, certs):
    rc, out, err = spuradmin_tls(tls_target, certs, "--getpid", env=tls_env(certs), files=False)
    assert rc == 0 and err == "" and out.strip().isdigit(), (out, err)


def test_spuradmin_ssl_wrong_ca_fails_clearly(tls_target, certs):
    cmd_env = tls_env(certs, ca=certs["other_ca"])
    rc, out, err = spuradmin_tls(tls_target, certs, "--status", env=cmd_env, files=False)
    assert rc == 1 and out == ""
    assert err.startswith("Error: TLS connection to 127.0.0.1:%d failed: server certificate "
                          "not verified" % tls_target.port), err


def test_spuradmin_ssl_without_client_certificate_fails(tls_target, certs):
    rc, out, err = spuradmin_tls(tls_target, certs, "--status", "--ssl-ca-file", certs["ca"],
                                 files=False)
    assert rc == 1 and out == "" and err.startswith("Error: "), err
    # with TLS 1.3 the client's side of the handshake ends before the server has checked the
    # client certificate: the server's refusal is counted a moment after the client gives up
    wait_until(lambda: tls_target.proxy.handshakes_failed >= 1, "the refused handshake")


def test_spur_cli_over_tls(tls_target, certs):
    env = tls_env(certs)
    host, port = tls_target.host, str(tls_target.port)
    w = start([admin_bin("spur"), "-S", "-h", host, "-p", port, "-w", "-f", "tlsrev", "-c", "1"],
              env)
    try:
        wait_until(lambda: "tlsrev\t0\t0\t1" in admin(tls_target.plain, "status\n"), "worker")
        p = subprocess.run([admin_bin("spur"), "-S", "-h", host, "-p", port, "-t", "10000",
                            "-f", "tlsrev", "-s"], capture_output=True, timeout=DEADLINE, env=env)
        assert p.returncode == 0, p.stderr
        w.communicate(timeout=DEADLINE)
        assert w.returncode == 0
    finally:
        if w.poll() is None:
            w.kill()
            w.communicate()
    # background job through spur -S -b lands behind the proxy
    p = subprocess.run([admin_bin("spur"), "-S", "-h", host, "-p", port, "-b", "-f", "tlsbg",
                        "payload"], capture_output=True, timeout=DEADLINE, env=env)
    assert p.returncode == 0, p.stderr
    wait_until(lambda: "tlsbg\t1\t0\t0" in admin(tls_target.plain, "status\n"), "queued job")
    # wrong CA: a clear error, exit 1
    p = subprocess.run([admin_bin("spur"), "-S", "-h", host, "-p", port, "-t", "10000", "-b",
                        "-f", "tlsbg", "x"], capture_output=True, timeout=DEADLINE,
                       env=tls_env(certs, ca=certs["other_ca"]))
    assert p.returncode == 1 and b"certificate" in p.stderr, p.stderr


def test_spuradmin_top_over_tls(server_factory, proxy_factory, certs):
    # top needs Spur's stats json: spurd behind the proxy; one frame, then end of input
    spurd = server_factory()
    p = proxy_factory(spurd)
    env = tls_env(certs)
    assert drive(TlsTarget("127.0.0.1", p.addr[1], certs["ca"]), env, "bg", "tlstop", "x")[
        "rc"] == "GEARMAN_SUCCESS"
    r = subprocess.run([admin_bin("spuradmin"), "-h", "127.0.0.1", "-p", str(p.addr[1]), "--ssl",
                        "--ssl-ca-file", certs["ca"], "--ssl-certificate", certs["client"],
                        "--ssl-key", certs["client_key"], "top"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"\033[?1049h") and b"FUNCTION" in r.stdout
    assert b"tlstop" in r.stdout and r.stderr == b""
