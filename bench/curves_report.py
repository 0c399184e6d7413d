# SPDX-License-Identifier: BSD-3-Clause
"""Turn bench/curves.sh's curves.tsv into curves.json, one PNG per curve and a flatness check.

Usage: python3 bench/curves_report.py OUT/curves.tsv OUT

Every point is the median of its good runs. The flatness check takes, for each curve where the
work per job does not grow with the varied quantity (every curve but payload), the largest value
over the smallest of spurd's throughput and of its p99 latency; the bar is 2x. Plots need gnuplot
(Debian gnuplot-nox, scripts/deps.sh bench); without it the JSON and the check are still written.
"""
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

FLAT_BAR = 2.0
CURVES = {
    # name: (x axis, throughput label, does the work per job stay the same along x?)
    # waiters: the throughput is completions delivered per second, and the work per completion
    # stays the same; see FLAT_RULES for what its check leaves out.
    "queued": ("background jobs queued on another function", "jobs/s", True),
    "functions": ("functions (jobs dealt over them, workers share them)", "jobs/s", True),
    "workers": ("sleeping workers of the function that ignore NOOP", "jobs/s", True),
    "clients": ("clients each waiting on one unworked job", "jobs/s", True),
    "payload": ("payload bytes per job", "jobs/s", False),
    "waiters": ("waiters per coalesced job", "completions/s", True),
}
METRICS = ("jobs_per_s", "p50_us", "p99_us", "cpu_us_per_job", "setup_s")
# Per curve: (smallest x the check covers, whether p99 is checked). waiters: with 1 waiter every
# completion costs a whole serial round trip (one round in flight), so x = 1 is latency-bound and
# only shown; the fan-out latency of the last of N waiters grows with N by construction (N sends).
FLAT_RULES = {"waiters": (10, False)}


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def load(tsv):
    """Returns {curve: {server: {x: [rows]}}} in file order."""
    data = {}
    with open(tsv, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            data.setdefault(row["curve"], {}).setdefault(row["server"], {}).setdefault(
                int(row["x"]), []).append(row)
    return data


def points(rows_by_x):
    """Median point per x: dict with x, status, runs, and the median of every metric."""
    out = []
    for x in sorted(rows_by_x):
        rows = rows_by_x[x]
        good = [r for r in rows if r["status"] == "ok"]
        p = {"x": x, "runs": len(good), "failed_runs": sum(r["status"] == "failed" for r in rows)}
        if good:
            p["status"] = "ok"
            for m in METRICS:
                vals = [num(r[m]) for r in good if num(r[m]) is not None]
                p[m] = statistics.median(vals) if vals else None
        else:
            p["status"] = rows[0]["status"]
            p["note"] = rows[0]["note"]
        out.append(p)
    return out


def flatness(curve, pts):
    """(points, min, max, ratio) of throughput and of p99 over the good points, or None."""
    x_from, check_p99 = FLAT_RULES.get(curve, (0, True))
    good = [p for p in pts if p["status"] == "ok" and p.get("jobs_per_s") and p.get("p99_us")
            and p["x"] >= x_from]
    if len(good) < 2:
        return None
    res = {"points": len(good), "x_min": good[0]["x"], "x_max": good[-1]["x"]}
    for m in ("jobs_per_s", "p99_us", "cpu_us_per_job"):
        vals = [p[m] for p in good if p.get(m)]
        if vals:
            res[m] = {"min": min(vals), "max": max(vals), "ratio": max(vals) / min(vals)}
    res["p99_checked"] = check_p99
    res["flat"] = res["jobs_per_s"]["ratio"] <= FLAT_BAR and (
        not check_p99 or res["p99_us"]["ratio"] <= FLAT_BAR)
    return res


def plot(out, curve, servers):
    """Writes OUT/curve-CURVE.png (throughput and p99 against x, log scales) with gnuplot."""
    xlabel, ylabel, _ = CURVES.get(curve, (curve, "jobs/s", True))
    datdir = os.path.join(out, "data")
    os.makedirs(datdir, exist_ok=True)
    series = []
    for srv, pts in servers.items():
        path = os.path.join(datdir, f"{curve}-{srv}.dat")
        with open(path, "w") as f:
            f.write("# x jobs_per_s p99_us cpu_us_per_job\n")
            for p in pts:
                if p["status"] == "ok":
                    cpu = p.get("cpu_us_per_job")
                    f.write(f"{p['x']} {p['jobs_per_s']} {p['p99_us']} "
                            f"{cpu if cpu else 'NaN'}\n")
        series.append((srv, path))
    png = os.path.join(out, f"curve-{curve}.png")
    def plots(col):
        return ", ".join(f"'{path}' using 1:{col} with linespoints lw 2 title '{srv}'"
                         for srv, path in series)
    script = f"""
set terminal pngcairo size 1400,420 noenhanced font ',10'
set output '{png}'
set multiplot layout 1,3 title 'spur-bench scaling curve: {curve}'
set logscale x
set logscale y
set grid
set key bottom left
set xlabel '{xlabel}'
set ylabel '{ylabel} (higher is better)'
plot {plots(2)}
set ylabel 'p99 latency, us (lower is better)'
set key top left
plot {plots(3)}
set ylabel 'server CPU per job, us (lower is better)'
plot {plots(4)}
unset multiplot
"""
    gp = shutil.which("gnuplot")
    if gp is None:
        return None
    with open(os.path.join(datdir, f"{curve}.gp"), "w") as f:
        f.write(script)
    r = subprocess.run([gp], input=script, universal_newlines=True, stderr=subprocess.PIPE)
    if r.returncode != 0:
        print(f"gnuplot failed for {curve}: {r.stderr.strip()}", file=sys.stderr)
        return None
    return png


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tsv, out = sys.argv[1], sys.argv[2]
    data = load(tsv)
    doc = {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                    "node": platform.node()},
        "flat_bar": FLAT_BAR,
        "curves": {},
    }
    if shutil.which("gnuplot") is None:
        print("gnuplot not found: no PNG written (Debian: gnuplot-nox; scripts/deps.sh bench)")
    for curve, by_server in data.items():
        xlabel, ylabel, flat_applies = CURVES.get(curve, (curve, "jobs/s", False))
        servers = {srv: points(rows) for srv, rows in by_server.items()}
        entry = {"x": xlabel, "throughput": ylabel, "flatness_applies": flat_applies,
                 "servers": servers, "flatness": {}}
        for srv, pts in servers.items():
            entry["flatness"][srv] = flatness(curve, pts)
        png = plot(out, curve, servers)
        entry["png"] = os.path.basename(png) if png else None
        doc["curves"][curve] = entry
    path = os.path.join(out, "curves.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")

    print(f"Medians per point ({tsv}):")
    print(f"{'curve':<10} {'x':>9} " + " ".join(
        f"{s + ' ' + m:>24}" for s in next(iter(data.values())).keys()
        for m in ("jobs/s", "p99_us")) if data else "")
    for curve, entry in doc["curves"].items():
        xs = sorted({p["x"] for pts in entry["servers"].values() for p in pts})
        for x in xs:
            cells = []
            for srv, pts in entry["servers"].items():
                p = next((p for p in pts if p["x"] == x), None)
                for m in ("jobs_per_s", "p99_us"):
                    if p is None:
                        cells.append("-")
                    elif p["status"] != "ok":
                        cells.append(p["status"])
                    else:
                        v = p.get(m)
                        cells.append("-" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.1f}")
            print(f"{curve:<10} {x:>9} " + " ".join(f"{c:>24}" for c in cells))

    print()
    print(f"Flatness (largest / smallest over the curve; bar: within {FLAT_BAR:g}x where the work "
          "per job does not grow):")
    print(f"{'curve':<10} {'server':<12} {'x range':>17} {'jobs/s ratio':>13} {'p99 ratio':>10} "
          f"{'cpu ratio':>10}  verdict")
    for curve, entry in doc["curves"].items():
        for srv, fl in entry["flatness"].items():
            if fl is None:
                print(f"{curve:<10} {srv:<12} {'':>17} {'':>13} {'':>10}  fewer than 2 good points")
                continue
            if not entry["flatness_applies"]:
                verdict = "n/a (work per job grows)"
            elif srv != "spurd":
                verdict = "(for comparison)"
            else:
                verdict = "FLAT" if fl["flat"] else "NOT FLAT"
            xr = f"{fl['x_min']}..{fl['x_max']}"
            p99 = f"{fl['p99_us']['ratio']:.2f}x" + ("" if fl["p99_checked"] else "*")
            cpu = f"{fl['cpu_us_per_job']['ratio']:.2f}x" if "cpu_us_per_job" in fl else "n/a"
            print(f"{curve:<10} {srv:<12} {xr:>17} {fl['jobs_per_s']['ratio']:>12.2f}x "
                  f"{p99:>10} {cpu:>10}  {verdict}")
    print("(cpu ratio: the server's CPU time per job, largest / smallest; shown, not part of the"
          " verdict, but it is the figure a loaded machine disturbs least)")
    print("(* not part of the verdict: fan-out latency to N waiters grows with N by construction;"
          " the waiters check starts at 10 waiters, as 1 waiter is one serial round trip per"
          " completion)")
    skipped = [(c, s, p) for c, e in doc["curves"].items() for s, pts in e["servers"].items()
               for p in pts if p["status"] != "ok"]
    if skipped:
        print()
        print("Points not measured:")
        for c, s, p in skipped:
            print(f"  {c} {s} {p['x']}: {p['status']} ({p.get('note', '')})")
    print()
    print(f"JSON: {path}")
    for curve, entry in doc["curves"].items():
        if entry["png"]:
            print(f"PNG: {os.path.join(out, entry['png'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
