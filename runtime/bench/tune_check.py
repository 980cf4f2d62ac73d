#!/usr/bin/env python3
"""Checks dsc tune's ranking against measured steps (issue 34): the plans
of utils/tune-check-plans.sh, each trained by runtime/bench/time_matrix.sh.

    tune_check.py PLANDIR RUNDIR [--json OUT.json]

Ranks the plans by their planned step and by their measured lean step
(the same global batch, so tokens/s orders as the step does), prints
both with Spearman's rank correlation, and how far the tuned config's
measured step is from the fastest measured. Exits 1 when the first
choice is more than 5 % slower than the fastest or Spearman is under
0.8 (issue 34's bar), 2 when a plan was not measured.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from time_matrix import plans_beside_runs  # noqa: E402


def ranks(values):
    """Average ranks (1 = smallest), ties sharing the mean of their places."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plans")
    ap.add_argument("runs")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for name, p, m in plans_beside_runs(a.plans, a.runs):
        if m is None:
            print(f"{name}: not measured")
            return 2
        rows.append({"plan": name, "planned_ms": p, "measured_ms": round(m, 2)})
    tuned = [r for r in rows if "-tuned-" in r["plan"]]
    if len(rows) < 2 or len(tuned) != 1:
        print("need the tuned plan and others beside it")
        return 2
    rho = spearman([r["planned_ms"] for r in rows], [r["measured_ms"] for r in rows])
    fastest = min(rows, key=lambda r: r["measured_ms"])
    gap = 100 * (tuned[0]["measured_ms"] - fastest["measured_ms"]) / fastest["measured_ms"]
    print(f"{'plan':34} {'planned ms':>10} {'measured ms':>11}")
    for r in sorted(rows, key=lambda r: r["measured_ms"]):
        print(f"{r['plan']:34} {r['planned_ms']:10.1f} {r['measured_ms']:11.2f}")
    ok = round(rho, 6) >= 0.8 and gap <= 5
    print(f"Spearman {rho:.2f} over {len(rows)} configs; the tuned config "
          f"{gap:+.1f} % from the fastest measured ({fastest['plan']}): "
          f"{'PASS' if ok else 'FAIL'} (>= 0.8 and within 5 %)")
    if a.json:
        json.dump({"rows": rows, "spearman": rho, "tuned_vs_fastest_percent": gap},
                  open(a.json, "w"), indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
