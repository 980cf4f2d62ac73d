"""What a ZeRO++ qwZ plan holds for its quantized gathers.

    qwz.test.py PLAN.yaml

For each fetch unit: a rank's chunk (its shards of the unit's tensors),
the quantization groups DeepSpeed's CUDAQuantizer would cut it into
(its loop, written out here as partition_parameters.py has it), and the
unit's qwz_gather buffer, which must hold every rank's int8 chunk (padded
to 4 bytes) and a fp32 scale per group of every rank; with hpZ groups,
room for the scales of every group member (where more), then the rank's
quantized secondary partition (chunk x world / group, padded to 4 bytes)
and its scales. Prints how many units there are, how many buffers
match, and the views' types.
"""
import math
import re
import sys

text = open(sys.argv[1]).read()
section = lambda name, after: text[text.index("\n" + name + ":"):text.index("\n" + after + ":")]
world = int(re.search(r"\n  world_size: +(\d+)", text).group(1))
hpz = int(re.search(r"\n  hpz_partition_size: +(\d+)", text).group(1))
shards = [int(s) for s in re.findall(r"\n    shard_elems: +(\d+)", section("tensors", "modules"))]
units = [[int(t) for t in ts.split(",")]
         for ts in re.findall(r"\n    tensors: +\[ ([0-9, ]+) \]", section("fetch_units", "transfers"))]

def groups(numel):
    # DeepSpeed's CUDAQuantizer.quantize, target group size 8000.
    g = math.ceil(numel / 8000)
    while g < numel:
        if numel % (8 * g) == 0:
            break
        g += 1
    while numel % (8 * g * 2) == 0 and numel / g > 8000:
        g *= 2
    assert numel % (8 * g) == 0 and numel / g < 16000 and numel > g
    return g

sizes = {}
for buffer in re.split(r"\n  - name: +", section("buffers", "estimate"))[1:]:
    unit = re.match(r"qwz_gather\.(\d+)\n", buffer)
    if unit:
        sizes[int(unit.group(1))] = int(re.search(r"bytes: +\[ (\d+)", buffer).group(1))
right = 0
for u, tensors in enumerate(units):
    chunk = sum(shards[t] for t in tensors)
    pad = lambda n: (n + 3) // 4 * 4
    scales = groups(chunk) * world
    want = pad(chunk * world) + scales * 4
    if hpz > 1:
        secondary = chunk * world // hpz
        scales = max(scales, groups(secondary) * hpz)
        want = pad(pad(chunk * world) + scales * 4 + secondary) + groups(secondary) * 4
    right += sizes.get(u) == want
types = sorted(set(re.findall(r"dtype: (int8|fp32)", section("views", "placement"))))
print(f"units: {len(units)}; qwz_gather buffers: {len(sizes)}, of DeepSpeed's "
      f"size: {right}; view types: {' '.join(types)}")
