#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Takes the screenshots of docs/DASHBOARD.md: starts a spurd (BUILD/src/spurd) with the HTTP
listener and --http-admin, gives it a minute of load (workers that take a few milliseconds per job,
clients submitting at three priorities), a few dead-letter jobs, schedules and waiting jobs, then
saves each page of the dashboard, as headless Chromium shows it, into OUTDIR (default docs/img/).

usage: scripts/dash-screenshots.py BUILD [OUTDIR] [SECONDS]
Needs chromium, chromium-driver and python3-selenium (scripts/deps.sh test)."""
import atexit
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "wire"))
from gearman_wire import (CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NO_JOB, PRE_SLEEP, NOOP,  # noqa: E402
                          SET_CLIENT_ID, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW_BG,
                          WORK_COMPLETE, WORK_EXCEPTION, Conn)
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

build = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "docs", "img")
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60
tmp = tempfile.mkdtemp(prefix="dash-shots-")
proc = subprocess.Popen([os.path.join(build, "src", "spurd"), "--port=0", "--listen=127.0.0.1",
                         "--port-file=" + tmp + "/p", "--http-port=0", "--http-listen=127.0.0.1",
                         "--http-port-file=" + tmp + "/hp", "--http-admin"])
atexit.register(proc.terminate)  # also when something below fails
while not os.path.exists(tmp + "/p"):
    time.sleep(0.05)
addr = ("127.0.0.1", int(open(tmp + "/p").read()))
url = "http://127.0.0.1:%d/" % int(open(tmp + "/hp").read())
stop = time.monotonic() + seconds + 60  # the load runs on while the pages are shot


def worker(name, funcs, delay, fail=b""):
    try:
        work(name, funcs, delay, fail)
    except (OSError, AssertionError):
        pass  # spurd stopped


def work(name, funcs, delay, fail):
    w = Conn(addr)
    w.send_packet(SET_CLIENT_ID, name)
    for f in funcs:
        w.send_packet(CAN_DO, f)
    while time.monotonic() < stop:
        w.send_packet(GRAB_JOB)
        _, cmd, body = w.read_packet(timeout=30)
        if cmd == NO_JOB:
            w.send_packet(PRE_SLEEP)
            w.read_packet(timeout=30)  # NOOP
            continue
        h = body.split(b"\0")[0]
        time.sleep(delay)
        if fail and body.split(b"\0")[2].endswith(fail):
            w.send_packet(WORK_EXCEPTION, h, b"ValueError: bad input <row 7>")
        else:
            w.send_packet(WORK_COMPLETE, h, b"ok")


def client(func, rate):
    try:
        submit_loop(func, rate)
    except (OSError, AssertionError):
        pass  # spurd stopped


def submit_loop(func, rate):
    c = Conn(addr)
    i = 0
    while time.monotonic() < stop:
        cmd = (SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_BG, SUBMIT_JOB_BG, SUBMIT_JOB_LOW_BG)[i % 4]
        c.send_packet(cmd, func, b"%s-%d" % (func, i), b"p%d" % i)
        c.expect(JOB_CREATED)
        i += 1
        time.sleep(1.0 / rate * (1.5 if (i // 200) % 2 else 0.7))


a = Conn(addr)
a.admin("retry thumbnail 1 0\n")
a.admin("schedule add nightly-report 0 3 * * * report --priority low {\"day\":1}\n")
a.admin("schedule add cleanup @every 15m cleanup-tmp --unique cleanup {}\n")
threads = [threading.Thread(target=worker, args=(b"resizer-%d" % i, [b"resize"], 0.004))
           for i in range(3)]
threads += [threading.Thread(target=worker, args=(b"mailer", [b"send-mail"], 0.02)),
            threading.Thread(target=worker, args=(b"thumbs", [b"thumbnail"], 0.01, b"37"))]
threads += [threading.Thread(target=client, args=(f, r)) for f, r in
            ((b"resize", 300), (b"send-mail", 60), (b"thumbnail", 20), (b"report", 2))]
for t in threads:
    t.daemon = True
    t.start()
c = Conn(addr)
c.send_packet(SUBMIT_JOB_BG, b"extract", b"batch-42", b"x")
h = c.expect(JOB_CREATED)
a.admin("submit load --after %s --unique load-42 -- {}\n" % h.decode())
time.sleep(2)
a.admin("maxqueue resize 0 5000 0\n")  # (the function exists now)
time.sleep(seconds)

opts = Options()
opts.binary_location = "/usr/bin/chromium"
for x in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
    opts.add_argument(x)
drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
os.makedirs(out, exist_ok=True)
for name, frag in (("overview", "#overview"), ("charts", "#charts"),
                   ("function", "#function/resize"), ("dead-letters", "#failed"),
                   ("schedules", "#schedules"), ("waiting", "#waiting"),
                   ("job", "#job/" + h.decode())):
    drv.get(url + frag)
    time.sleep(2.5)  # two refreshes: the rates need two samples
    drv.save_screenshot(os.path.join(out, "dash-%s.png" % name))
drv.quit()
proc.terminate()
proc.wait()
print("screenshots in", out)
