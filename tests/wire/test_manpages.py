# SPDX-License-Identifier: BSD-3-Clause
"""The man pages list exactly the options the programs' --help lists, and the sections a
packager expects: spurd(8) against `spurd --help`, spuradmin(1) against `spuradmin --help`,
spur(1) against `spur -H`; libgearman-compat(3) exists and names what a program needs."""
import os
import re
import subprocess

import pytest

SRCDIR = os.environ.get("SPUR_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILDDIR = os.environ.get("SPUR_BUILDDIR")
MAN = os.path.join(SRCDIR, "docs", "man")

LONG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")
SHORT = re.compile(r"(?<![\w-])-[A-Za-z0-9](?![\w-])")


def binary(name):
    if not BUILDDIR:
        pytest.skip("SPUR_BUILDDIR is not set (run through `make check`)")
    return os.path.join(BUILDDIR, "src" if name == "spurd" else "admin", name)


def help_options(argv):
    """The options of a --help text: in each line that starts an option (indented at most 8
    columns, then '-'), the option column before its description (two spaces, or ' - ')."""
    # the timeout only keeps a hung program from hanging the suite: `spur -H` once took over
    # 10 s to start on a machine loaded by a CPU hog and the soak tests
    text = subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
    opts = set()
    for line in text.splitlines():
        m = re.match(r"^([ \t]{1,8})-", line.expandtabs(8))
        if not m:
            continue
        col = line.expandtabs(8).strip()
        col = re.split(r" {2,}| - ", col, maxsplit=1)[0]
        col = re.sub(r"\(=[^)]*\)", "", col)  # gearadmin style defaults: (=localhost)
        opts |= set(LONG.findall(col)) | set(SHORT.findall(col))
    assert len(opts) > 5, text
    return opts


def man_text(page):
    with open(os.path.join(MAN, page), encoding="utf-8") as f:
        return f.read()


def plain(roff):
    """roff source with the escapes that matter here undone: \\- and font changes."""
    return re.sub(r"\\f[BIRP]", "", roff.replace("\\-", "-").replace("\\(mu", "x"))


def sections(roff):
    """{section name: its source} for the .SH sections of a page."""
    out = {}
    name = None
    for line in roff.splitlines():
        if line.startswith(".SH "):
            name = line[4:].strip().strip('"')
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return out


def man_options(page):
    """The options named in the tags (the line after .TP) of a page's OPTIONS section."""
    opts = set()
    lines = sections(man_text(page))["OPTIONS"].splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith(".TP"):
            tag = plain(lines[i + 1])
            opts |= set(LONG.findall(tag)) | set(SHORT.findall(tag))
    return opts


def diff_message(page, in_help, in_man):
    return (f"\n{page}: options in --help but not in the page: {sorted(in_help - in_man)}"
            f"\n{page}: options in the page but not in --help: {sorted(in_man - in_help)}")


@pytest.mark.parametrize("page,argv", [
    ("spurd.8", ["spurd", "--help"]),
    ("spuradmin.1", ["spuradmin", "--help"]),
    ("spur.1", ["spur", "-H"]),
])
def test_man_page_lists_exactly_the_options_of_help(page, argv):
    in_help = help_options([binary(argv[0])] + argv[1:])
    in_man = man_options(page)
    assert in_help == in_man, diff_message(page, in_help, in_man)


@pytest.mark.parametrize("page,wanted", [
    ("spurd.8", ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "CONFIG FILE", "SIGNALS",
                 "EXIT STATUS", "FILES", "SEE ALSO"]),
    ("spuradmin.1", ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"]),
    ("spur.1", ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"]),
    ("libgearman-compat.3", ["NAME", "SYNOPSIS", "DESCRIPTION", "NOT IMPLEMENTED", "SEE ALSO"]),
])
def test_man_page_has_its_sections(page, wanted):
    have = list(sections(man_text(page)))
    assert [s for s in wanted if s not in have] == [], have


def test_spurd_page_names_every_signal_spurd_handles():
    text = plain(sections(man_text("spurd.8"))["SIGNALS"])
    for sig in ("SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGPIPE"):
        assert sig in text


def test_library_page_says_how_to_build_against_it():
    text = plain(man_text("libgearman-compat.3"))
    for needle in ("pkg-config", "libgearman-compat", "#include <libgearman/gearman.h>",
                   "libgearman-compat.so.1", "libgearman-compat-dev"):
        assert needle in text, needle
