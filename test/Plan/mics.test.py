"""Where a MiCS plan splits tensors and when it all-reduces across replicas.

    mics.test.py PLAN.yaml

Prints whether every tensor's shard is its elements over the 2 ranks of
a shard group; how many buckets there are; and whether each bucket has one
reduce-replicas instruction, in the last micro step, after that bucket's
reduce of the same micro step, on its stream (which orders the two).
"""
import re
import sys

text = open(sys.argv[1]).read()
section = lambda name, after: text[text.index("\n" + name + ":"):text.index("\n" + after + ":")]
tensors = re.findall(r"\n +elems: +(\d+)\n(?:.*\n)*? +shard_elems: +(\d+)", section("tensors", "modules"))
halves = bool(tensors) and all(int(s) == (int(e) + 1) // 2 for e, s in tensors)
accumulation = int(re.search(r"\n  gradient_accumulation: +(\d+)", text).group(1))
program = re.findall(r"\n  - kind: +(\S+)\n +stream: +(\S+)\n +micro: +(\d+)\n +arg: +(\d+)",
                     section("program", "buffers"))
buckets = len(re.findall(r"\n  - kind: +(?:reduce-scatter|all-reduce)\n", section("buckets", "fetch_units")))
reduces, seen, ordered = {}, set(), True
for index, (kind, stream, micro, arg) in enumerate(program):
    if kind == "reduce":
        reduces[(arg, micro)] = (index, stream)
    elif kind == "reduce-replicas":
        before = reduces.get((arg, micro))
        ordered &= (int(micro) == accumulation - 1 and before is not None and
                    before[1] == stream and arg not in seen)
        seen.add(arg)
print(f"shards of half a tensor: {halves}; buckets {buckets}, reduce-replicas "
      f"in the last micro step after their bucket's reduce: "
      f"{ordered and len(seen) == buckets}")
