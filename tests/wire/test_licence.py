# SPDX-License-Identifier: BSD-3-Clause
"""Every source file the project writes starts with its SPDX licence line, and LICENSE is there."""
import os

import pytest

TAG = "SPDX-License-Identifier: BSD-3-Clause"
SRCDIR = os.environ.get("SPUR_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DIRS = ["src", "admin", "libgearman-compat", "tests", "fuzz", "bench", "scripts", ".ci", "docs/man"]
EXTS = (".c", ".h", ".cc", ".hpp", ".py", ".sh", ".am", ".pl", ".php", ".ini", ".1", ".3", ".8")
TOP = ["configure.ac", "Makefile.am"]


def source_files():
    out = [os.path.join(SRCDIR, t) for t in TOP]
    for d in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(SRCDIR, d)):
            dirnames[:] = [x for x in dirnames if x not in ("__pycache__", "corpus", ".deps")]
            for name in filenames:
                if name.endswith(EXTS) or dirpath.endswith(".ci"):
                    out.append(os.path.join(dirpath, name))
    return sorted(out)


def test_licence_file_is_bsd_3_clause():
    with open(os.path.join(SRCDIR, "LICENSE"), encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in text


def test_every_source_file_starts_with_its_spdx_line():
    files = source_files()
    assert len(files) > 100, files  # the walk found the tree
    missing = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = [f.readline() for _ in range(3)]
        if not any(TAG in line for line in head):
            missing.append(os.path.relpath(path, SRCDIR))
    assert missing == [], "files without an SPDX line: %s" % missing
