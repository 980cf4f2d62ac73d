#!/usr/bin/env python3
"""The time matrix: each plan's estimated step beside the lean step dsrun
measured (runtime/bench/time_matrix.sh), and how far apart they are.

    time_matrix.py PLANDIR RUNDIR [--json OUT.json]

PLANDIR holds each plan's `dsc plan` report (NAME.txt, its "step ~X ms"
line); RUNDIR holds dsrun's --json log of the same NAME. Prints one row a
plan and the largest miss; exits 1 when a plan has no measurement.
"""
import argparse
import glob
import json
import os
import re
import sys


def planned_ms(path):
    m = re.search(r"step ~([\d.]+) ms", open(path).read())
    return float(m[1]) if m else None


def measured_ms(path):
    try:
        for line in open(path):
            d = json.loads(line)
            if d.get("rank", 0) == 0 and "lean" in d and isinstance(d["lean"], dict):
                return d["lean"]["mean_ms"]
    except (OSError, ValueError):
        pass
    return None


def plans_beside_runs(plans, runs):
    """(name, planned ms, measured ms or None) for each plan report in
    plans, by name; reports with no step estimate (dsc tune's) are not
    plans."""
    for txt in sorted(glob.glob(os.path.join(plans, "*.txt"))):
        name = os.path.basename(txt)[:-4]
        p = planned_ms(txt)
        if p is not None:
            yield name, p, measured_ms(os.path.join(runs, name + ".json"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plans")
    ap.add_argument("runs")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows, missing = [], 0
    print(f"{'plan':28} {'planned ms':>10} {'measured ms':>11} {'miss':>7}")
    for name, p, m in plans_beside_runs(a.plans, a.runs):
        if m is None:
            print(f"{name:28} {p:10.1f} {'not measured':>11}")
            missing += 1
            continue
        miss = 100 * (p - m) / m
        rows.append({"plan": name, "planned_ms": p, "measured_ms": round(m, 2),
                     "miss_percent": round(miss, 1)})
        print(f"{name:28} {p:10.1f} {m:11.2f} {miss:+6.1f}%")
    if rows:
        worst = max(rows, key=lambda r: abs(r["miss_percent"]))
        within = sum(abs(r["miss_percent"]) <= 10 for r in rows)
        print(f"{within} of {len(rows)} within 10 %; the largest miss "
              f"{worst['miss_percent']:+.1f} % ({worst['plan']})")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
