#!/usr/bin/env python3
"""The comparisons of docs/training.md ("200 steps on two GPUs"), from
losses.tsv: per pair of runs, the median per-step difference, the steps
more than 1 % apart, the worst step, the first step beyond 1 %, and the
means of the last 50 steps.   python3 pairs.py [losses.tsv]"""
import csv, os, sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "losses.tsv")
rows = list(csv.DictReader(open(path), delimiter="\t"))
runs = {c: {int(r["step"]): float(r[c]) for r in rows if r[c]} for c in rows[0] if c != "step"}

def pair(a, b):
    x, y = runs[a], runs[b]
    steps = sorted(set(x) & set(y))
    rel = {s: abs(x[s] - y[s]) / abs(y[s]) for s in steps}
    r = sorted(rel.values())
    worst = max(steps, key=rel.get)
    first = next((s for s in steps if rel[s] > 0.01), "-")
    tail = steps[-50:]
    mx, my = (sum(d[s] for s in tail) / len(tail) for d in (x, y))
    print(f"| {a} | {b} | {100 * r[len(r) // 2]:.3f} % | {sum(v > 0.01 for v in r)} | "
          f"{100 * rel[worst]:.2f} % (step {worst}) | {first} | {mx:.4f} / {my:.4f} ({100 * (mx - my) / my:+.2f} %) |")

print("| run | against | median step | steps above 1 % | worst step | first above 1 % | last 50 steps, mean |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for m in ("gpt2-small", "llama-1b"):
    pair(f"{m}-w2-bf16-eager", f"{m}-w2-bf16-ref")
    for v in ("s0", "s1", "s2", "s3", "s2-cpu", "s3-cpuparam"):
        pair(f"{m}-{v}-w2", f"{m}-w2-bf16-ref")
    for v in ("s1", "s2", "s3"):
        pair(f"{m}-{v}-w2", f"{m}-s0-w2")
pair("gpt2-small-s1-fp16-w2", "gpt2-small-w2-fp16-ref")
for v in ("s2", "s2-cpu", "s3-cpuparam"):
    pair(f"llama-1b-{v}-w1", "llama-1b-w1-bf16-ref")
pair("gpt2-small-s1-fp32-w1", "gpt2-small-w1-fp32-ref")
pair("llama-1b-s1-fp32-w1", "llama-1b-w1-fp32-ref")
