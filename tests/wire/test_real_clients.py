# SPDX-License-Identifier: BSD-3-Clause
"""Real Gearman clients and workers, as users run them: Debian's gearman and gearadmin tools,
Perl's Gearman::Client/Worker (libgearman-client-perl) and PHP's pecl gearman (php-gearman).

Each test runs against spurd, and against gearmand too, so a failure here is spurd's fault.
"""
import os
import shutil
import subprocess

import pytest


HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(HERE, "clients")


def need(binary):
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} is not installed")


def test_gearman_cli_worker_and_client(both):
    need("gearman")
    host, port = both.addr
    worker = subprocess.Popen(["gearman", "-h", host, "-p", str(port), "-w", "-c", "2",
                               "-f", "rev", "--", "rev"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out = subprocess.run(["gearman", "-h", host, "-p", str(port), "-f", "rev"],
                             input=b"hello\n", capture_output=True, timeout=20)
        assert out.returncode == 0, out.stderr
        assert out.stdout == b"olleh\n"
        out = subprocess.run(["gearman", "-h", host, "-p", str(port), "-f", "rev", "-b"],
                             input=b"bg\n", capture_output=True, timeout=20)
        assert out.returncode == 0, out.stderr
        assert worker.wait(timeout=20) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_gearadmin_status_and_workers(both):
    need("gearadmin")
    host, port = both.addr
    w = both.connect()
    w.send_packet(1, b"adminfn")  # CAN_DO
    w.echo_roundtrip()
    out = subprocess.run(["gearadmin", "-h", host, "-p", str(port), "--status"],
                         capture_output=True, timeout=20)
    assert out.returncode == 0
    assert b"adminfn\t0\t0\t1\n" in out.stdout
    out = subprocess.run(["gearadmin", "-h", host, "-p", str(port), "--workers"],
                         capture_output=True, timeout=20)
    assert out.returncode == 0
    assert b" : adminfn\n" in out.stdout
    out = subprocess.run(["gearadmin", "-h", host, "-p", str(port), "--server-version"],
                         capture_output=True, timeout=20)
    assert out.returncode == 0 and out.stdout.strip()


def test_perl_worker_and_client(both):
    need("perl")
    if subprocess.run(["perl", "-MGearman::Client", "-e", "1"]).returncode != 0:
        pytest.skip("libgearman-client-perl is not installed")
    server = "%s:%d" % both.addr
    worker = subprocess.Popen(["perl", os.path.join(CLIENTS, "worker.pl"), server, "3"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        out = subprocess.run(["perl", os.path.join(CLIENTS, "client.pl"), server, "abc", "hello"],
                             capture_output=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout == b"cba\nolleh\nBG OK\n"
        assert worker.wait(timeout=30) == 0, worker.stderr.read()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_php_worker_and_client(both):
    need("php")
    if b"gearman" not in subprocess.run(["php", "-m"], capture_output=True).stdout:
        pytest.skip("php-gearman is not installed")
    host, port = both.addr
    worker = subprocess.Popen(["php", os.path.join(CLIENTS, "worker.php"), host, str(port), "6"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        out = subprocess.run(["php", os.path.join(CLIENTS, "client.php"), host, str(port)],
                             capture_output=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout == b"HELLO\nHIGH\nBG OK\nA,B,C\n"
        assert worker.wait(timeout=30) == 0, worker.stderr.read()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
