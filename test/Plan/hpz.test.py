"""What a ZeRO++ hpZ plan gathers from where, and what it holds for it.

    hpz.test.py PLAN.yaml

Prints how many gathers run over every rank and how many within the hpZ
group; whether each unit's first gather of the step is the one over every
rank (which keeps the secondary partition) and every later one is within
the group; how many secondary partitions the memory plan holds; and
whether each lives from its unit's first gather to the program's end (as
DeepSpeed keeps them through the optimizer step), so covering every
gather from it.
"""
import re
import sys

text = open(sys.argv[1]).read()
section = lambda name, after: text[text.index("\n" + name + ":"):text.index("\n" + after + ":")]
program = re.findall(r"\n  - kind: +(\S+)\n +stream: +\S+\n +micro: +(\d+)\n +arg: +(\d+)",
                     section("program", "buffers"))
first, ordered = {}, True
counts = {"gather": 0, "gather-secondary": 0}
for index, (kind, micro, arg) in enumerate(program):
    if kind not in counts:
        continue
    counts[kind] += 1
    ordered &= (kind == "gather") == (arg not in first)
    first.setdefault(arg, index)
secondaries = []
for buffer in re.split(r"\n  - name: +", section("buffers", "estimate"))[1:]:
    unit = re.match(r"hpz_secondary\.(\d+)\n", buffer)
    if unit:
        secondaries.append((unit.group(1), *re.findall(r"begin: (\d+), end: (\d+)", buffer)[0]))
spans = all(int(begin) == first.get(unit) and int(end) == len(program)
            for unit, begin, end in secondaries)
print(f"gathers over every rank: {counts['gather']}; within the group: "
      f"{counts['gather-secondary']}; first of each unit over every rank, "
      f"the rest within the group: {ordered}; secondary partitions: "
      f"{len(secondaries)}, each from its unit's first gather to the end: {spans}")
