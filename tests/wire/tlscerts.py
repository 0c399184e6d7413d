# SPDX-License-Identifier: BSD-3-Clause
"""Test certificates, made at test time with the openssl CLI, and a TLS-terminating proxy.

make_certs(dir) -> dict of paths:
  ca, ca_key             the test CA (self-signed)
  server, server_key     a server certificate from that CA, SAN IP:127.0.0.1 and DNS:localhost
  client, client_key     a client certificate from that CA (CN spur-test-client)
  other_ca, other_ca_key another CA that signed none of the above (for "wrong CA" tests)
  other_client, other_client_key  a client certificate from the other CA
  wrong_name, wrong_name_key      a server certificate from the CA for the name other.invalid only

TlsProxy(backend, certs, require_client_cert=True, server_cert="server"): a TLS server on 127.0.0.1 (port chosen by the
kernel) that forwards each connection's bytes to backend (host, port) in plain TCP. With
require_client_cert it refuses a client without a certificate from certs["ca"]. Any TLS server
(spurd --ssl, gearmand --ssl, this proxy) is described to the tests by (host, port, ca path).
"""
import os
import select
import socket
import ssl
import subprocess
import threading


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True, timeout=60)


def _key(dir, name):
    path = os.path.join(dir, name)
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-out", path, cwd=dir)
    return path


def _ca(dir, name, cn):
    key = _key(dir, name + ".key")
    cert = os.path.join(dir, name + ".pem")
    _openssl("req", "-x509", "-new", "-key", key, "-out", cert, "-days", "3", "-subj", "/CN=" + cn,
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=dir)
    return cert, key


def _leaf(dir, name, cn, ca, ca_key, ext):
    key = _key(dir, name + ".key")
    csr = os.path.join(dir, name + ".csr")
    cert = os.path.join(dir, name + ".pem")
    extfile = os.path.join(dir, name + ".ext")
    with open(extfile, "w") as f:
        f.write(ext)
    _openssl("req", "-new", "-key", key, "-out", csr, "-subj", "/CN=" + cn, cwd=dir)
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert, "-days", "3", "-extfile", extfile, cwd=dir)
    return cert, key


def make_certs(dir):
    """Write a CA, a server and a client certificate (and a second, unrelated CA) into dir."""
    os.makedirs(dir, exist_ok=True)
    ca, ca_key = _ca(dir, "ca", "spur-test-ca")
    other_ca, other_ca_key = _ca(dir, "other-ca", "spur-test-other-ca")
    server, server_key = _leaf(dir, "server", "localhost", ca, ca_key,
                               "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                               "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    client, client_key = _leaf(dir, "client", "spur-test-client", ca, ca_key,
                               "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    other_client, other_client_key = _leaf(dir, "other-client", "spur-test-other-client",
                                           other_ca, other_ca_key,
                                           "basicConstraints=CA:FALSE\n"
                                           "extendedKeyUsage=clientAuth\n")
    wrong_name, wrong_name_key = _leaf(dir, "wrong-name", "other.invalid", ca, ca_key,
                                       "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                                       "subjectAltName=DNS:other.invalid\n")
    return {"wrong_name": wrong_name, "wrong_name_key": wrong_name_key,
            "ca": ca, "ca_key": ca_key, "server": server, "server_key": server_key,
            "client": client, "client_key": client_key, "other_ca": other_ca,
            "other_ca_key": other_ca_key, "other_client": other_client,
            "other_client_key": other_client_key}


class TlsProxy:
    """TLS in front of a plain server: one thread accepts, one thread per connection pumps."""

    def __init__(self, backend, certs, require_client_cert=True, server_cert="server"):
        self.backend = tuple(backend)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs[server_cert], certs[server_cert + "_key"])
        ctx.load_verify_locations(certs["ca"])
        ctx.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_NONE
        self.ctx = ctx
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.addr = self.lsock.getsockname()
        self.handshakes_ok = 0      # connections whose handshake succeeded
        self.handshakes_failed = 0  # connections refused in the handshake
        self.peer_names = []        # the client certificates' subject CNs, in order
        self._lock = threading.Lock()
        self._stop = False
        self._threads = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self):
        while not self._stop:
            try:
                raw, _ = self.lsock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(raw,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, raw):
        raw.settimeout(10)
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            with self._lock:
                self.handshakes_failed += 1
            raw.close()
            return
        cert = tls.getpeercert()
        with self._lock:
            self.handshakes_ok += 1
            if cert:
                cn = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]
                self.peer_names.append(cn[0] if cn else "")
        try:
            back = socket.create_connection(self.backend, timeout=10)
        except OSError:
            tls.close()
            return
        tls.settimeout(None)
        back.settimeout(None)
        try:
            self._pump(tls, back)
        finally:
            for s in (tls, back):
                try:
                    s.close()
                except OSError:
                    pass

    def _pump(self, tls, back):
        while not self._stop:
            # bytes already decrypted inside the TLS object are invisible to select()
            ready = [tls] if tls.pending() else select.select([tls, back], [], [], 0.5)[0]
            for s in ready:
                try:
                    data = s.recv(65536)
                except ssl.SSLWantReadError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                (back if s is tls else tls).sendall(data)

    def close(self):
        self._stop = True
        try:
            self.lsock.close()
        except OSError:
            pass
        for t in self._threads[1:]:
            t.join(timeout=5)
