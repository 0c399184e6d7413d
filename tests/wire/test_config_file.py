# SPDX-License-Identifier: BSD-3-Clause
"""spurd's config file as the daemon reads it: comments, quoting, @FILE, errors with FILE:LINE,
and the packaged /etc/spur/spurd.conf (dist/spurd.conf) listing every option."""
import os
import re
import subprocess

import pytest

from conftest import EXTERNAL
from gearman_wire import ERROR, JOB_CREATED, SUBMIT_JOB_BG

SRCDIR = os.environ.get("SPUR_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DIST_CONF = os.path.join(SRCDIR, "dist", "spurd.conf")

pytestmark = pytest.mark.spur_only


def spurd():
    binary = os.environ.get("SPURD")
    if not binary or EXTERNAL:
        pytest.skip("needs the spurd binary")
    return binary


def run(*args):
    return subprocess.run([spurd(), *args], capture_output=True, timeout=30, text=True)


def test_server_started_with_at_file_applies_comments_and_quoting(server_factory, tmp_path):
    cfg = tmp_path / "spurd.conf"
    cfg.write_text("# the handle prefix has a space, so it is quoted\n"
                   "\n"
                   "   --job-handle-prefix='H:my host'   # trailing comment\n"
                   "#--job-handle-prefix=H:commented-out\n"
                   "--max-function-name=\"8\"\n")
    s = server_factory("@" + str(cfg))
    c = s.connect()
    c.send_packet(SUBMIT_JOB_BG, b"f", b"", b"x")
    assert c.expect(JOB_CREATED).startswith(b"H:my host:")
    c.send_packet(SUBMIT_JOB_BG, b"f" * 9, b"", b"x")
    assert c.read_packet()[1] == ERROR, "a name over --max-function-name=8 is refused"
    c.close()


@pytest.mark.parametrize("text,line,msg", [
    ("--port=0\n\n# comment\n--no-such-option\n", 4, "unknown option '--no-such-option'"),
    ("--backlog=x\n", 1, "invalid --backlog value 'x'"),
    ("\n--log-file='unterminated\n", 2, "unterminated single quote"),
    ("port=4730\n", 1, "unexpected word 'port=4730' (write --port=4730)"),
])
def test_error_in_config_file_names_file_and_line_and_exits_1(tmp_path, text, line, msg):
    cfg = tmp_path / "bad.conf"
    cfg.write_text(text)
    r = run("--config-file=" + str(cfg))
    assert r.returncode == 1
    assert r.stderr == f"spurd: {cfg}:{line}: {msg} (see --help)\n"


@pytest.mark.parametrize("form", ["--config-file=", "@"])
def test_missing_config_file_gives_the_reason(tmp_path, form):
    r = run(form + str(tmp_path / "nope.conf"))
    assert r.returncode == 1
    assert r.stderr == (f"spurd: cannot read config file {tmp_path / 'nope.conf'}: "
                        "No such file or directory (see --help)\n")


def test_packaged_config_is_accepted_and_every_commented_option_too(tmp_path):
    # --check-args checks that the store's directory exists (the package creates
    # /var/lib/spur): here the files go to tmp_path
    with open(DIST_CONF) as f:
        text = f.read().replace("/var/lib/spur/", str(tmp_path) + "/")
    packaged = tmp_path / "spurd.conf"
    packaged.write_text(text)
    r = run("--config-file=" + str(packaged), "--check-args")
    assert r.returncode == 0, r.stderr
    uncommented = tmp_path / "all.conf"
    uncommented.write_text(re.sub(r"(?m)^#--", "--", text))
    r = run("--config-file=" + str(uncommented), "--check-args")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("store", ["--store=sqlite:{d}/missing/q.db",
                                   "--queue-type=libsqlite3 --libsqlite3-db={d}/missing/q.db"])
def test_check_args_fails_on_a_store_directory_that_does_not_exist(tmp_path, store):
    args = store.format(d=tmp_path).split()
    r = run(*args, "--check-args")
    assert r.returncode == 1
    assert r.stderr == (f"spurd: store {tmp_path}/missing/q.db: directory '{tmp_path}/missing': "
                        "No such file or directory (create it first)\n"), r.stderr
    (tmp_path / "missing").mkdir()
    r = run(*args, "--check-args")
    assert (r.returncode, r.stderr) == (0, "")


def test_packaged_config_lists_every_option_of_help():
    helptext = run("--help").stdout
    options = set(re.findall(r"^\s+(?:-\w, )?(--[a-z0-9-]+)", helptext, re.M))
    assert len(options) > 50, helptext
    with open(DIST_CONF) as f:
        conf = f.read()
    listed = set(re.findall(r"^#?(--[a-z0-9-]+)", conf, re.M))
    not_in_a_file = {"--help", "--version", "--check-args", "--config-file", "--check-policy",
                     "--dump", "--load"}
    assert sorted(options - not_in_a_file - listed) == [], "options missing from dist/spurd.conf"
    assert sorted(listed - options) == [], "dist/spurd.conf lists options --help does not"
