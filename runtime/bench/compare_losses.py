#!/usr/bin/env python3
"""Per-step losses of dsrun beside the PyTorch reference's.

    python3 runtime/bench/compare_losses.py DSRUN.json REFERENCE.jsonl [--tolerance 0.01]

DSRUN.json is dsrun's --json log (rank 0's lines with a loss); the
reference is torch_reference.py's --json. Prints the steps side by side
(every step up to 10, then every tenth, and the worst), the largest
relative difference, and exits 1 when it is above the tolerance.
"""
import argparse
import json
import sys


def losses(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        if "loss" in d and d.get("rank", 0) == 0:
            out[int(d["step"])] = float(d["loss"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dsrun")
    ap.add_argument("reference")
    ap.add_argument("--tolerance", type=float, default=0.01)
    a = ap.parse_args()
    mine, ref = losses(a.dsrun), losses(a.reference)
    steps = sorted(set(mine) & set(ref))
    if not steps:
        print("no common steps")
        return 1
    worst, worst_step = 0.0, steps[0]
    for s in steps:
        rel = abs(mine[s] - ref[s]) / max(abs(ref[s]), 1e-12)
        if rel > worst:
            worst, worst_step = rel, s
    for s in steps:
        if s <= 10 or s % 10 == 0 or s == worst_step or s == steps[-1]:
            rel = abs(mine[s] - ref[s]) / max(abs(ref[s]), 1e-12)
            print(f"step {s:5d}  dsrun {mine[s]:.5f}  pytorch {ref[s]:.5f}  "
                  f"diff {100 * rel:.3f}%")
    ok = worst <= a.tolerance
    # How far apart the runs are as a whole: once a run is chaotic (a loss
    # spike), the worst step says little and these say more.
    rels = sorted(abs(mine[s] - ref[s]) / max(abs(ref[s]), 1e-12) for s in steps)
    tail = steps[-50:]
    m_tail = sum(mine[s] for s in tail) / len(tail)
    r_tail = sum(ref[s] for s in tail) / len(tail)
    print(f"median {100 * rels[len(rels) // 2]:.3f}%, "
          f"{sum(r > a.tolerance for r in rels)} steps above the tolerance, "
          f"mean of the last {len(tail)} steps {m_tail:.4f} / {r_tail:.4f} "
          f"({100 * abs(m_tail - r_tail) / abs(r_tail):.3f}%)")
    print(f"{len(steps)} steps, worst {100 * worst:.3f}% at step {worst_step}: "
          f"{'PASS' if ok else 'FAIL'} (tolerance {100 * a.tolerance:.2f}%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
