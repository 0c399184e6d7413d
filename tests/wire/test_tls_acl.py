# SPDX-License-Identifier: BSD-3-Clause
"""Access rules keyed on TLS client certificates, end to end: spurd's own TLS listener verifies
the certificate, its names reach the connection (peer.cert_names), and --admin-allow=cert:NAME
and the --policy principals cert:NAME decide on them. Python's ssl module speaks raw Gearman
packets and admin lines; the certificates are made at test time (tlscerts.py)."""
import os
import shutil
import socket
import ssl
import tempfile

import pytest

from conftest import free_port
from gearman_wire import (CAN_DO, ERROR, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NO_JOB,
                          SUBMIT_JOB_BG, SUBMIT_JOB_HIGH_BG, Conn)
from tlscerts import _leaf, make_certs

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="the openssl CLI is not installed")

CLIENT_EXT = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="spur-tls-acl-")
    c = make_certs(d)
    for name, cn in (("ops", "ops-admin"), ("submitter", "report-client"),
                     ("worker", "report-worker")):
        c[name], c[name + "_key"] = _leaf(d, name, cn, c["ca"], c["ca_key"], CLIENT_EXT)
    c["dir"] = d
    yield c
    shutil.rmtree(d, ignore_errors=True)


class TlsConn(Conn):
    """A gearman_wire Conn over a TLS client socket presenting the certificate `who`."""

    def __init__(self, port, certs, who, timeout=10.0):  # pylint: disable=super-init-not-called
        ctx = ssl.create_default_context(cafile=certs["ca"])
        ctx.load_cert_chain(certs[who], certs[who + "_key"])
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.addr = ("127.0.0.1", port)
        self.timeout = timeout
        self.buf = b""


@pytest.fixture
def secured(server_factory, certs):
    """spurd with a TLS listener requiring a client certificate, admin changes allowed to the
    certificate ops-admin only, and a policy keyed on certificate names."""
    policy = os.path.join(certs["dir"], "policy")
    with open(policy, "w") as f:
        f.write("allow submit reports.* cert:report-client\n"
                "allow can_do reports.* cert:report-worker\n"
                "allow all    *         cert:ops-admin\n")
    port = free_port()
    s = server_factory(f"--ssl-listen=127.0.0.1:{port}", "--ssl-certificate=" + certs["server"],
                       "--ssl-key=" + certs["server_key"], "--ssl-ca-file=" + certs["ca"],
                       "--ssl-verify-client=require", "--admin-allow=cert:ops-admin",
                       "--policy=" + policy)
    s.tls_port = port
    return s


def admin_line(c, line):
    c.send(line.encode() + b"\n")
    return c.read_line().decode()


def denied(c):
    magic, cmd, body = c.read_packet()
    return cmd == ERROR and body.startswith(b"PERMISSION_DENIED\0")


def test_admin_changes_follow_the_client_certificate(secured, certs):
    ops = TlsConn(secured.tls_port, certs, "ops")
    other = TlsConn(secured.tls_port, certs, "submitter")
    for c in (ops, other):  # reads stay open to everyone (--admin-read=all)
        assert admin_line(c, "version").startswith("OK ")
    assert admin_line(other, "maxqueue reports.daily 5").startswith("ERR PERMISSION_DENIED ")
    assert admin_line(other, "create function reports.daily").startswith(
        "ERR PERMISSION_DENIED ")
    assert admin_line(ops, "maxqueue reports.daily 5") == "OK\r\n"
    assert admin_line(other, "drop function reports.daily").startswith("ERR PERMISSION_DENIED ")
    # the refused connection is still served
    assert admin_line(other, "version").startswith("OK ")
    # the plain port is neither local to a certificate nor listed: refused too
    plain = secured.connect()
    assert admin_line(plain, "maxqueue reports.daily 7").startswith("ERR PERMISSION_DENIED ")


def test_function_permissions_follow_the_client_certificate(secured, certs):
    sub = TlsConn(secured.tls_port, certs, "submitter")
    wrk = TlsConn(secured.tls_port, certs, "worker")
    # the worker certificate may not submit, the submitter may not work
    wrk.send_packet(SUBMIT_JOB_BG, b"reports.daily", b"", b"x")
    assert denied(wrk)
    sub.send_packet(CAN_DO, b"reports.daily")
    assert denied(sub)
    # outside the allowed prefix nobody but ops-admin may do anything
    sub.send_packet(SUBMIT_JOB_HIGH_BG, b"billing.run", b"", b"x")
    assert denied(sub)
    # what each certificate is allowed goes through, on the same connections
    sub.send_packet(SUBMIT_JOB_BG, b"reports.daily", b"u1", b"payload")
    handle = sub.expect(JOB_CREATED)
    wrk.send_packet(CAN_DO, b"reports.daily")
    wrk.send_packet(GRAB_JOB)
    magic, cmd, body = wrk.read_packet()
    assert cmd == JOB_ASSIGN, (cmd, body)
    assert body == handle + b"\0reports.daily\0payload"
    # the submitter's refused CAN_DO gave it no ability: it grabs nothing
    sub.send_packet(GRAB_JOB)
    magic, cmd, body = sub.read_packet()
    assert cmd == NO_JOB
    # ops-admin may do everything
    ops = TlsConn(secured.tls_port, certs, "ops")
    ops.send_packet(SUBMIT_JOB_BG, b"billing.run", b"", b"x")
    ops.expect(JOB_CREATED)


def test_refusals_are_counted_and_name_the_certificate(secured, certs):
    sub = TlsConn(secured.tls_port, certs, "submitter")
    sub.send_packet(CAN_DO, b"reports.daily")
    assert denied(sub)
    assert admin_line(sub, "maxqueue x 1").startswith("ERR PERMISSION_DENIED ")
    plain = secured.connect()
    plain.send(b"stats\n")
    stats = {}
    while True:
        line = plain.read_line().decode().rstrip("\r\n")
        if line == "END":
            break
        words = line.split()
        if words[0] == "STAT":
            stats[words[1]] = words[2]
    assert stats["permission_denied_can_do"] == "1"
    assert stats["permission_denied_admin"] == "1"
    log = secured.stderr_text()
    assert "permission denied: can_do 'reports.daily'" in log
    assert "cert report-client" in log, log
