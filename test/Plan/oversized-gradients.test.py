"""How long the gradients reduced where autograd left them live in a plan.

    oversized-gradients.test.py PLAN.yaml

Prints the buckets reduced in place, how many of their gradients are
alive when the optimizer steps, and the most of them alive at any one
instruction.
"""
import re
import sys

text = open(sys.argv[1]).read()
section = lambda name, after: text[text.index("\n" + name + ":"):text.index("\n" + after + ":")]
kinds = re.findall(r"\n  - kind: +(\S+)", section("program", "buffers"))
program = len(kinds)
step = kinds.index("optimizer-step")
in_place = set()
for bucket in re.split(r"\n  - kind: ", section("buckets", "fetch_units"))[1:]:
    if re.search(r"in_place: +true", bucket):
        in_place.update(int(t) for t in re.findall(r"tensor: (\d+)", bucket))
values = section("values", "kernels")
grad_buffer = {}
for m in re.finditer(r"kind: param-grad, .*?tensor: (\d+), buffer: (\d+)", values):
    if int(m.group(1)) in in_place:
        grad_buffer[int(m.group(2))] = int(m.group(1))
lives = []
buffers = re.split(r"\n  - name: ", section("buffers", "estimate"))[1:]
for index, buffer in enumerate(buffers):
    if index in grad_buffer:
        lives += [(int(b), int(e)) for b, e in re.findall(r"begin: (\d+), end: (\d+)", buffer)]
at_step = sum(1 for b, e in lives if b <= step < e)
most = max(sum(1 for b, e in lives if b <= i < e) for i in range(program))
print(f"in-place buckets: {len(in_place)}; alive at the optimizer step: {at_step}; most alive at once: {most}")
