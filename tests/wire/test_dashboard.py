# SPDX-License-Identifier: BSD-3-Clause
"""The web dashboard (docs/DASHBOARD.md), in a real headless Chromium driven by Selenium (Debian's
chromium, chromium-driver and python3-selenium; skipped with the reason when one is missing), and
its JSON documents with curl.

The page refreshes every 2 seconds; every wait here polls the DOM (or the server) with a bounded
deadline. A screenshot of each page is saved as an artifact under
$SPUR_BUILDDIR/tests/artifacts/dashboard/ (else the test's tmp_path); docs/img/ holds copies.
"""
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse

import pytest

from conftest import EXTERNAL, poll
from gearman_wire import (CAN_DO, GRAB_JOB, JOB_ASSIGN, JOB_CREATED, NO_JOB, PRE_SLEEP, NOOP,
                          SET_CLIENT_ID, SUBMIT_JOB_BG, SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_LOW_BG,
                          WORK_FAIL, admin_status)

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException, WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover - the reason is given by the skip below
    HAVE_SELENIUM = False

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WHY_NO_BROWSER = (None if HAVE_SELENIUM and CHROMIUM and CHROMEDRIVER else
                  "browser tests need Debian's chromium, chromium-driver and python3-selenium "
                  "(scripts/deps.sh installs them): missing " +
                  ", ".join(n for n, ok in (("python3-selenium", HAVE_SELENIUM),
                                            ("chromium", CHROMIUM),
                                            ("chromium-driver", CHROMEDRIVER)) if not ok))

pytestmark = [pytest.mark.spur_only,
              pytest.mark.skipif(EXTERNAL is not None, reason="needs its own spurd")]
browser_only = pytest.mark.skipif(WHY_NO_BROWSER is not None, reason=WHY_NO_BROWSER or "")

DEADLINE = 30.0  # generous: CI runs beside a CPU hog and under ASan
XSS = b"x<img/src=x/onerror=window.__xss=1>"


class Dash:
    """A spurd with its HTTP listener (and so the dashboard) on a free port."""

    def __init__(self, server, port_file):
        self.server = server
        with open(port_file) as f:
            self.port = int(f.read())
        self.url = "http://127.0.0.1:%d" % self.port

    def curl(self, path, data=None, headers=()):
        args = ["curl", "-sS", "--max-time", str(DEADLINE), "-D", "-", "-o",
                os.path.join(self.server.tmpdir, "body"), "-w", "\n%{http_code}"]
        for h in headers:
            args += ["-H", h]
        if data is not None:
            args += ["--data-binary", data]
        r = subprocess.run(args + [self.url + path], capture_output=True, timeout=DEADLINE + 10)
        assert r.returncode == 0, r.stderr
        head, _, code = r.stdout.rpartition(b"\n")
        headers = {}
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k:
                headers[k.strip().lower().decode()] = v.strip().decode()
        with open(os.path.join(self.server.tmpdir, "body"), "rb") as f:
            return int(code), headers, f.read()

    def api(self, path):
        status, _, body = self.curl("/dash/api/" + path)
        assert status == 200, body
        return json.loads(body)


@pytest.fixture
def dash_factory(server_factory, tmp_path):
    def make(*args):
        d = tmp_path / ("s%d" % len(list(tmp_path.iterdir())))
        d.mkdir()
        pf = str(d / "http-port")
        s = server_factory("--http-port=0", "--http-listen=127.0.0.1", "--http-port-file=" + pf,
                           *args, tmpdir=str(d))
        return Dash(s, pf)
    return make


@pytest.fixture
def browser():
    if WHY_NO_BROWSER:
        pytest.skip(WHY_NO_BROWSER)
    opts = Options()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    except WebDriverException as e:
        pytest.skip("chromium does not start here: %s" % e.msg)
    drv.set_page_load_timeout(DEADLINE)
    yield drv
    drv.quit()


def artifact_dir(tmp_path):
    b = os.environ.get("SPUR_BUILDDIR")
    d = os.path.join(b, "tests", "artifacts", "dashboard") if b else str(tmp_path)
    os.makedirs(d, exist_ok=True)
    return d


def shot(drv, tmp_path, name):
    """Saves a screenshot of the page as an artifact."""
    path = os.path.join(artifact_dir(tmp_path), name + ".png")
    drv.save_screenshot(path)
    return path


def wait_dom(drv, cond, what, timeout=DEADLINE):
    """Polls cond(drv) (a Selenium lookup may fail while the page redraws) until it is true."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            v = cond(drv)
            if v:
                return v
        except WebDriverException as e:  # a redraw replaced the element
            last = e
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s (%s)" % (what, last))


def row_cells(drv, func):
    """The overview row of func: {class or column: text}."""
    for tr in drv.find_elements(By.CSS_SELECTOR, "tbody tr[data-function]"):
        if tr.get_attribute("data-function") == func:
            return {k: tr.find_element(By.CSS_SELECTOR, "td." + k).text
                    for k in ("queued", "running", "workers")}
    return None


def submit(c, func, unique=b"", cmd=SUBMIT_JOB_BG, data=b"x"):
    c.send_packet(cmd, func, unique, data)
    return c.expect(JOB_CREATED)


def dead_letter(s, func=b"F", unique=b"u1"):
    """Makes one dead-letter job of func (a policy of 1 retry, failed twice); returns its
    handle."""
    a, c, w = s.connect(), s.connect(), s.connect()
    assert a.admin("retry %s 1 0\n" % func.decode()) == b"OK\r\n"
    h = submit(c, func, unique)
    w.send_packet(CAN_DO, func)
    for _ in range(2):
        w.send_packet(PRE_SLEEP)
        w.expect(NOOP, timeout=DEADLINE)
        w.send_packet(GRAB_JOB)
        assert w.expect(JOB_ASSIGN).split(b"\0")[0] == h
        w.send_packet(WORK_FAIL, h)
    w.echo_roundtrip()
    w.close()
    poll(lambda: b"\t" in a.admin("show failed jobs\n", b".\n"), "the dead-letter job")
    a.close()
    c.close()
    return h


# ---------------------------------------------------------------- JSON, headers, assets

def test_page_and_assets_are_served_with_a_strict_csp(dash_factory):
    d = dash_factory()
    status, h, body = d.curl("/")
    assert status == 200 and h["content-type"].startswith("text/html")
    csp = h["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert h["x-content-type-options"] == "nosniff"
    assert b"<script src=\"/dash/app.js\"" in body
    assert b"<script>" not in body and b" style=" not in body  # nothing inline: the CSP allows none
    total = len(body)
    for path in ("/dash/app.js", "/dash/app.css"):
        status, h, plain = d.curl(path)
        assert status == 200 and "content-security-policy" in h
        total += len(plain)
        status, h, gz = d.curl(path, headers=["Accept-Encoding: gzip"])
        assert status == 200 and h["content-encoding"] == "gzip" and len(gz) < len(plain)
    assert total < 200 * 1024  # the whole page, uncompressed
    assert b"http://" not in plain and b"https://" not in plain  # nothing from another host
    assert d.curl("/dash/nope")[0] == 404 and d.curl("/dash/api/nope")[0] == 404


def test_overview_json_is_paged_sorted_and_filtered_over_10000_functions(dash_factory):
    d = dash_factory()
    a = d.server.connect()
    lines = b"".join(b"create function f%05d\n" % i for i in range(10000))
    a.send(lines)
    for _ in range(10000):
        assert a.read_line(timeout=DEADLINE) == b"OK\r\n"
    poll(lambda: d.api("overview?limit=1")["page"]["total"] == 10000, "10000 functions")
    c = d.server.connect()
    for _ in range(3):
        submit(c, b"f00042")
    o = d.api("overview?offset=100&limit=50")
    assert o["page"] == {"total": 10000, "offset": 100, "limit": 50, "admin": False}
    assert [f["name"] for f in o["functions"]] == ["f%05d" % i for i in range(100, 150)]
    top = d.api("overview?limit=1&sort=queued&desc=1")["functions"][0]
    assert top["name"] == "f00042" and top["queued"]["total"] == 3
    f = d.api("overview?q=F0004&limit=500")
    assert f["page"]["total"] == 10 and len(f["functions"]) == 10
    assert d.api("overview?limit=100000")["page"]["limit"] == 500  # bounded page


def test_overview_marks_paused_and_limited_functions(dash_factory):
    d = dash_factory()
    a = d.server.connect()
    for line in (b"create function plain\n", b"pause held\n", b"limit capped concurrency 2\n"):
        a.send(line)
        assert a.read_line(timeout=DEADLINE) == b"OK\r\n"
    marks = lambda: {f["name"]: f["marks"] for f in d.api("overview?limit=500")["functions"]}
    poll(lambda: marks().get("capped") == ["limited"], "the limited mark")
    m = marks()
    assert m["held"] == ["paused"] and m["plain"] == []
    a.send(b"resume held\n")
    assert a.read_line(timeout=DEADLINE) == b"OK\r\n"
    poll(lambda: "held" not in marks() or marks()["held"] == [], "the paused mark gone")


def test_job_lookup_and_waiting_json(dash_factory):
    d = dash_factory()
    c = d.server.connect()
    h1 = submit(c, b"first", b"u-first")
    a = d.server.connect()
    out = a.admin("submit second --after %s --unique u-second -- p\n" % h1.decode())
    assert out.startswith(b"OK "), out
    h2 = out.split()[1]
    j = d.api("job?handle=" + urllib.parse.quote(h1.decode()))
    assert j["found"] and j["job"]["function"] == "first" and j["extra"]["dependents"] == 1
    j = d.api("job?unique=u-second")
    assert j["job"]["handle"] == h2.decode() and j["job"]["state"] == "waiting"
    assert j["extra"]["waits_for"] == [h1.decode()]
    w = d.api("waiting")
    assert w["total"] == 1 and w["jobs"][0]["waits_for"] == [h1.decode()]
    assert d.api("job?handle=H:nope:1") == {"found": False}


# ---------------------------------------------------------------- in the browser

@browser_only
def test_overview_shows_the_functions_and_counts_status_reports(dash_factory, browser,
                                                                tmp_path):
    d = dash_factory()
    c, w = d.server.connect(), d.server.connect()
    w.send_packet(SET_CLIENT_ID, b"resizer-1")
    w.send_packet(CAN_DO, b"resize")
    for i in range(3):
        submit(c, b"resize", b"r%d" % i, cmd=(SUBMIT_JOB_HIGH_BG, SUBMIT_JOB_BG,
                                              SUBMIT_JOB_LOW_BG)[i])
    submit(c, b"report")
    submit(c, b"report")
    w.echo_roundtrip()
    st = admin_status(d.server.connect())
    browser.get(d.url + "/")
    for name, (total, running, workers) in st.items():
        cells = wait_dom(browser, lambda b: row_cells(b, name.decode()), name.decode())
        assert cells == {"queued": str(total - running), "running": str(running),
                         "workers": str(workers)}
    assert "Live" in browser.find_element(By.ID, "conn").text
    shot(browser, tmp_path, "overview")
    # the function's detail: its worker and its queue head
    browser.find_element(By.LINK_TEXT, "resize").click()
    wait_dom(browser, lambda b: "resizer-1" in b.find_element(By.ID, "main").text, "the worker")
    text = browser.find_element(By.ID, "main").text
    assert "r0" in text and "r2" in text and "high" in text
    shot(browser, tmp_path, "function")
    browser.get(d.url + "/#charts")
    wait_dom(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "svg.chart")) == 3, "charts")
    wait_dom(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "svg.chart path"), "a line")
    shot(browser, tmp_path, "charts")


@browser_only
def test_a_submitted_job_changes_the_page_without_a_reload(dash_factory, browser):
    d = dash_factory()
    c = d.server.connect()
    submit(c, b"grow")
    browser.get(d.url + "/")
    wait_dom(browser, lambda b: (row_cells(b, "grow") or {}).get("queued") == "1", "1 queued")
    browser.execute_script("window.__same_page = 1;")
    t0 = time.monotonic()
    submit(c, b"grow")
    wait_dom(browser, lambda b: (row_cells(b, "grow") or {}).get("queued") == "2", "2 queued")
    took = time.monotonic() - t0
    assert browser.execute_script("return window.__same_page;") == 1  # no reload
    # the page asks every 2 s: within 3 s, with slack for a loaded CI machine
    assert took < 3.0 + 7.0, took


@browser_only
def test_retrying_a_dead_letter_job_from_the_page_runs_it(dash_factory, browser, tmp_path):
    d = dash_factory("--http-admin")
    h = dead_letter(d.server).decode()
    browser.get(d.url + "/#failed")
    row = 'tr[data-handle="%s"]' % h
    wait_dom(browser, lambda b: b.find_elements(By.CSS_SELECTOR, row), "the dead-letter row")
    assert "WORK_FAIL" in browser.find_element(By.CSS_SELECTOR, row).text
    shot(browser, tmp_path, "dead-letters")
    btn = wait_dom(browser, lambda b: [x for x in b.find_elements(By.CSS_SELECTOR, row + " button")
                                       if x.is_enabled()], "an enabled Retry button")[0]
    btn.click()
    wait_dom(browser, lambda b: b.switch_to.alert, "the confirmation").accept()
    wait_dom(browser, lambda b: not b.find_elements(By.CSS_SELECTOR, row), "the row to go")
    w = d.server.connect()
    w.send_packet(CAN_DO, b"F")
    w.send_packet(GRAB_JOB)
    assert w.expect(JOB_ASSIGN).split(b"\0")[0] == h.encode()  # it runs again


@browser_only
def test_actions_are_refused_without_http_admin(dash_factory, browser):
    d = dash_factory()
    h = dead_letter(d.server).decode()
    browser.get(d.url + "/#failed")
    row = 'tr[data-handle="%s"]' % h
    wait_dom(browser, lambda b: b.find_elements(By.CSS_SELECTOR, row), "the dead-letter row")
    btn = browser.find_element(By.CSS_SELECTOR, row + " button")
    assert not btn.is_enabled() and "--http-admin" in btn.get_attribute("title")
    # the page's own request, as a script would send it: refused, and nothing changed
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/admin', {method: 'POST', headers: {'X-Spur-Admin': '1'}, body: 'purge failed'})"
        ".then(r => done(r.status), e => done(String(e)));")
    assert status == 404
    assert d.api("failed")["total"] == 1


def test_a_foreign_origin_is_refused(dash_factory):
    d = dash_factory("--http-admin")
    h = dead_letter(d.server)
    for origin in ("http://evil.example", "null", "http://127.0.0.1:1"):
        status, _, body = d.curl("/admin", data="retry job " + h.decode(),
                                 headers=["X-Spur-Admin: 1", "Origin: " + origin])
        assert status == 403 and b"cross-site" in body
    status, _, _ = d.curl("/admin", data="retry job " + h.decode())  # no X-Spur-Admin: a form
    assert status == 403
    assert d.api("failed")["total"] == 1
    status, _, body = d.curl("/admin", data="retry job " + h.decode(),
                             headers=["X-Spur-Admin: 1", "Origin: " + d.url])
    assert status == 200 and body.startswith(b"OK"), body
    assert d.api("failed")["total"] == 0


@browser_only
def test_an_xss_function_name_shows_as_text(dash_factory, browser, tmp_path):
    d = dash_factory("--http-admin")
    h = dead_letter(d.server, func=XSS, unique=b"<script>window.__xss=2</script>").decode()
    submit(d.server.connect(), XSS, b"<b>u</b>")
    a = d.server.connect()
    assert a.admin(b"schedule add <i>s</i> @every 1h ".decode() + XSS.decode() + " p\n") == b"OK\r\n"
    browser.get(d.url + "/")
    name = XSS.decode()
    wait_dom(browser, lambda b: row_cells(b, name), "the row of the XSS name")
    link = browser.find_element(By.CSS_SELECTOR, "tbody tr[data-function] a")
    assert link.text == name and link.get_attribute("title") == name
    for view in ("#function/" + urllib.parse.quote(name, safe=""), "#failed", "#schedules",
                 "#job/" + urllib.parse.quote(h, safe="")):
        browser.get(d.url + "/" + view)
        wait_dom(browser, lambda b: name in b.find_element(By.ID, "main").text, view)
        assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script, main b, main i")
        assert browser.execute_script("return window.__xss;") is None
    assert "<script>window.__xss=2</script>" in browser.find_element(By.ID, "main").text
    shot(browser, tmp_path, "job")


@browser_only
def test_schedules_added_and_removed_from_the_page(dash_factory, browser, tmp_path):
    d = dash_factory("--http-admin")
    browser.get(d.url + "/#schedules")
    box = wait_dom(browser, lambda b: [x for x in b.find_elements(By.ID, "sched-text")
                                       if x.is_enabled()], "the enabled form")[0]
    box.send_keys("nightly 0 3 * * * report --priority low {\"day\":1}")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_dom(browser, lambda b: b.switch_to.alert, "the confirmation").accept()
    wait_dom(browser, lambda b: "nightly" in b.find_element(By.ID, "main").text, "the schedule")
    assert d.api("schedules")["schedules"][0]["spec"] == "0 3 * * *"
    shot(browser, tmp_path, "schedules")
    browser.find_element(By.XPATH, "//tbody//button[text()='Remove']").click()
    wait_dom(browser, lambda b: b.switch_to.alert, "the confirmation").accept()
    poll(lambda: d.api("schedules")["schedules"] == [], "the schedule removed", timeout=DEADLINE)


@browser_only
def test_waiting_jobs_page_and_lookup(dash_factory, browser, tmp_path):
    d = dash_factory()
    c, a = d.server.connect(), d.server.connect()
    h1 = submit(c, b"extract", b"batch-7").decode()
    out = a.admin("submit load --after %s --unique load-7 -- p\n" % h1)
    h2 = out.split()[1].decode()
    browser.get(d.url + "/#waiting")
    wait_dom(browser, lambda b: h2 in b.find_element(By.ID, "main").text, "the waiting job")
    assert h1 in browser.find_element(By.ID, "main").text
    shot(browser, tmp_path, "waiting")
    browser.get(d.url + "/#job")
    browser.find_element(By.ID, "job-kind").send_keys("unique")
    browser.find_element(By.ID, "job-key").send_keys("load-7")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_dom(browser, lambda b: "waiting" in b.find_element(By.ID, "main").text, "the job")
    assert h1 in browser.find_element(By.ID, "main").text


@browser_only
def test_a_lost_connection_is_shown_and_recovers(dash_factory, browser):
    d = dash_factory()
    browser.get(d.url + "/")
    wait_dom(browser, lambda b: "Live" in b.find_element(By.ID, "conn").text, "live")
    d.server.proc.send_signal(signal.SIGSTOP)
    try:
        wait_dom(browser, lambda b: "lost" in b.find_element(By.ID, "conn").text, "lost")
    finally:
        d.server.proc.send_signal(signal.SIGCONT)
    wait_dom(browser, lambda b: "Live" in b.find_element(By.ID, "conn").text, "live again")


@browser_only
def test_narrow_window_and_keyboard(dash_factory, browser, tmp_path):
    d = dash_factory()
    submit(d.server.connect(), b"narrow")
    browser.set_window_size(400, 800)
    browser.get(d.url + "/")
    wait_dom(browser, lambda b: row_cells(b, "narrow"), "the row")
    # labelled controls, one h1, a table with column headers, no horizontal page scroll
    assert browser.find_element(By.CSS_SELECTOR, "label[for=filter]").text
    assert len(browser.find_elements(By.TAG_NAME, "h1")) == 1
    assert browser.find_elements(By.CSS_SELECTOR, "thead th[scope=col]")
    assert browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth + 1;")
    browser.find_element(By.ID, "filter").send_keys("narr")
    wait_dom(browser, lambda b: "1 of 1" in b.find_element(By.TAG_NAME, "caption").text,
             "the filtered table")
    shot(browser, tmp_path, "narrow")


@browser_only
def test_the_page_stays_live_within_the_http_limits(dash_factory, browser):
    """--http-max-connections, --http-idle-timeout and --http-request-timeout small: the
    browser's kept-alive connections are closed under it between refreshes, and the page
    goes on refreshing."""
    d = dash_factory("--http-max-connections=4", "--http-idle-timeout=1",
                     "--http-request-timeout=2")
    c = d.server.connect()
    submit(c, b"limited")
    browser.get(d.url + "/")
    wait_dom(browser, lambda b: (row_cells(b, "limited") or {}).get("queued") == "1", "1 queued")
    for n in (2, 3):  # each change is seen after an idle close of the previous connection
        time.sleep(1.5)
        submit(c, b"limited")
        wait_dom(browser, lambda b: (row_cells(b, "limited") or {}).get("queued") == str(n),
                 "%d queued" % n)
    assert "Live" in browser.find_element(By.ID, "conn").text
