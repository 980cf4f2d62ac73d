"""Halves the last dim of the first output of the first KIND kernel of a
plan in YAML (dsc show), keeping its view inside its value.

    swiglu.test.py PLAN.yaml KIND OUT.yaml
"""
import re
import sys

src, kind, out = sys.argv[1:]
lines = open(src).read().split("\n")
start = next(i for i, l in enumerate(lines) if re.fullmatch(r"\s*- kind:\s+" + kind, l))
at = next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith("outputs:"))


def halve(m):
    dims = [int(d) for d in m.group(1).split(",")]
    dims[-1] //= 2
    return "shape: [ " + ", ".join(map(str, dims)) + " ]"


lines[at] = re.sub(r"shape: \[ ([0-9, ]+) \]", halve, lines[at], count=1)
open(out, "w").write("\n".join(lines))
