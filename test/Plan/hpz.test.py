"""What a ZeRO++ hpZ plan gathers from where, and what it holds for it.

    hpz.test.py PLAN.yaml

Prints how many gathers run over every rank and how many within the hpZ
group, whether each unit's first gather of the step is the one over every
rank (which keeps the secondary partition) and every later one is within
the group, and how many secondary partitions the memory plan holds.
"""
import re
import sys

text = open(sys.argv[1]).read()
section = lambda name, after: text[text.index("\n" + name + ":"):text.index("\n" + after + ":")]
program = re.findall(r"\n  - kind: +(\S+)\n +stream: +\S+\n +micro: +(\d+)\n +arg: +(\d+)",
                     section("program", "buffers"))
seen, ordered = set(), True
counts = {"gather": 0, "gather-secondary": 0}
for kind, micro, arg in program:
    if kind not in counts:
        continue
    counts[kind] += 1
    ordered &= (kind == "gather") == (arg not in seen)
    seen.add(arg)
secondaries = len(re.findall(r"\n  - name: +hpz_secondary", section("buffers", "estimate")))
print(f"gathers over every rank: {counts['gather']}; within the group: "
      f"{counts['gather-secondary']}; first of each unit over every rank, "
      f"the rest within the group: {ordered}; secondary partitions: {secondaries}")
