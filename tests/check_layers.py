#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails when a src/ module depends on a module of a higher layer, or modules depend in a cycle.

src/LAYERS lists the layer folders of src/, lowest first. A module is a file name without its
extension (engine.c + engine.h = engine) and belongs to the layer of its folder. Link edges come
from `nm` over libspur.a: module A depends on B when A's object uses a symbol B's object defines.
Include edges come from `#include "b.h"` lines in A's .c and .h. An edge may point to the module's
own layer or a lower one, never up; the only cycle allowed is the core model (engine, job, func,
worker). Every .c and .h under src/ must be in a listed layer folder.

usage: check_layers.py SRCDIR LIBSPUR_A
"""
import os
import re
import subprocess
import sys

CORE = {"engine", "job", "func", "worker"}


def read_layers(srcdir):
    """The layer folders of SRCDIR/LAYERS, lowest first ('#' starts a comment)."""
    names = []
    with open(os.path.join(srcdir, "LAYERS"), encoding="utf-8") as fh:
        for line in fh:
            words = line.split("#", 1)[0].split()
            if words:
                names.append(words[0])
    return names


def modules(srcdir, layers):
    """{module: rank} for every .c/.h of the layer folders; the files found outside them."""
    rank, stray = {}, []
    for path in source_files(srcdir):
        rel = os.path.relpath(os.path.dirname(path), srcdir)
        if rel not in layers:
            stray.append(os.path.relpath(path, srcdir))
            continue
        f = os.path.basename(path)
        rank[f.rsplit(".", 1)[0]] = layers.index(rel)
    return rank, stray


def module_of_object(name):
    base = os.path.basename(name)
    base = re.sub(r"^libspur_a-", "", base)
    return re.sub(r"\.o$", "", base)


def link_edges(lib):
    out = subprocess.run(["nm", "-A", lib], check=True, capture_output=True, text=True).stdout
    defs, uses = {}, []
    for line in out.splitlines():
        # "lib.a:obj.o:0000000000000000 T name" or "lib.a:obj.o:                 U name"
        m = re.match(r"^[^:]+:([^:]+):\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        mod = module_of_object(obj)
        if kind == "U":
            uses.append((mod, sym))
        elif kind.isupper():
            defs[sym] = mod
    edges = {}
    for mod, sym in uses:
        to = defs.get(sym)
        if to is not None and to != mod:
            edges.setdefault(mod, {}).setdefault(to, set()).add(sym)
    return edges


def source_files(srcdir):
    for root, _dirs, files in os.walk(srcdir):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(root, f)


def include_edges(srcdir):
    edges = {}
    for path in sorted(source_files(srcdir)):
        f = os.path.basename(path)
        mod = f.rsplit(".", 1)[0]
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s+"([^"]+)\.h"', line)
                if m and m.group(1) != mod:
                    edges.setdefault(mod, {}).setdefault(m.group(1), set()).add(f)
    return edges


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    nodes = set(edges) | {t for v in edges.values() for t in v}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps


def report(kind, edges, allowed_cycle):
    bad = 0
    for comp in cycles(edges):
        if comp <= allowed_cycle:
            continue
        bad += 1
        print(f"{kind} cycle among: {' '.join(sorted(comp))}")
        for a in sorted(comp):
            for b in sorted(edges.get(a, {})):
                if b in comp:
                    why = sorted(edges[a][b])
                    more = f" (+{len(why) - 4} more)" if len(why) > 4 else ""
                    print(f"  {a} -> {b}: {', '.join(why[:4])}{more}")
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    srcdir, lib = sys.argv[1], sys.argv[2]
    layers = read_layers(srcdir)
    rank, stray = modules(srcdir, layers)
    bad = 0
    for f in stray:
        bad += 1
        print(f"{f}: not in a layer folder of {os.path.join(srcdir, 'LAYERS')}")
    link, incl = link_edges(lib), include_edges(srcdir)
    for kind, edges in (("link", link), ("include", incl)):
        for a in sorted(edges):
            for b in sorted(edges[a]):
                if a not in rank or b not in rank or rank[b] <= rank[a]:
                    continue
                bad += 1
                why = sorted(edges[a][b])
                more = f" (+{len(why) - 4} more)" if len(why) > 4 else ""
                print(f"{kind} edge up: {a} ({layers[rank[a]]}) -> {b} ({layers[rank[b]]}): "
                      f"{', '.join(why[:4])}{more}")
    bad += report("link", link, CORE) + report("include", incl, CORE)
    if bad:
        print(f"FAIL: {bad} layer problem(s); layers, lowest first: {' '.join(layers)}")
        return 1
    print(f"ok: {len(rank)} modules in {len(layers)} layers ({' < '.join(layers)}); no edge "
          f"points up; the only cycle is the core ({', '.join(sorted(CORE))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
