#!/usr/bin/env python3
"""Plans a Hugging Face config.json and PyTorch's dynamo export of the same
model, and requires the two to be the same program.

Pairs: the fixture Llama and GPT-2 of test/Compute/Inputs (their configs
in pytorch-fixtures.json), and each tiny family of Inputs/hf-tiny whose
export hf_families_check.py made on a GPU machine (Inputs/hf-exports).
For each pair:
  - dsc lower prints the same training program, values renumbered in order
    of appearance;
  - dsc plan writes the same plan: dsc show equal but for the model's path
    and hash, and the names outside the tensors and modules (of ops,
    kernels, values and buffers: ONNX node and tensor names, which differ
    between the exporter and dsc's builder);
  - the plan's report is the same but for the model's path.
Prints one line per pair; a failure shows the first differing lines.
"""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

dsc, inputs, compute_inputs, fixtures_json = sys.argv[1:5]
tmp = tempfile.mkdtemp()

DS_CONFIG = """{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
 "bf16": {"enabled": true},
 "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100},
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}"""


def run(*args):
    p = subprocess.run([dsc, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def renumber(text):
    seen, count = {}, {"%": 0, "#": 0}

    def sub(m):
        if m.group(0) not in seen:
            seen[m.group(0)] = m.group(1) + str(count[m.group(1)])
            count[m.group(1)] += 1
        return seen[m.group(0)]
    return re.sub(r"([%#])\d+", sub, text)


def show(path):
    rc, text = run("show", path)
    if rc:
        return [f"dsc show failed: {text.strip()[:300]}"]
    out, section = [], ""
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+):", line)
        if m:
            section = m.group(1)
        if re.match(r"^\s+(model|model_hash):", line):
            continue
        if section not in ("tensors", "modules"):
            line = re.sub(r"name: *('[^']*'|[^,}\s]+)", "name: _", line)
        out.append(line)
    return out


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return (f"line {i + 1}:\n  export: {x[:200]}\n"
                    f"  config: {y[:200]}")
    return f"lengths {len(a)} and {len(b)}"


def compare(name, export, config_dir):
    config = os.path.join(tmp, "ds_config.json")
    open(config, "w").write(DS_CONFIG)
    problems = []
    lowered = []
    for model in (export, config_dir):
        rc, text = run("lower", model, "--batch", "2", "--seq-len", "16")
        lowered.append(renumber(text).splitlines())
        if rc:
            problems.append(f"dsc lower {model}: {text.strip()[:300]}")
    if not problems and lowered[0] != lowered[1]:
        problems.append("lower: " + first_difference(*lowered))
    shows, reports = [], []
    for tag, model in (("export", export), ("config", config_dir)):
        plan = os.path.join(tmp, f"{name}-{tag}.bin")
        rc, text = run("plan", config, model, "--world-size", "2",
                       "--seq-len", "16", "-o", plan)
        if rc:
            problems.append(f"dsc plan {model}: {text.strip()[:300]}")
            continue
        reports.append(text.replace(model, "MODEL").splitlines())
        shows.append(show(plan))
    if len(shows) == 2:
        if shows[0] != shows[1]:
            problems.append("show: " + first_difference(*shows))
        if reports[0] != reports[1]:
            problems.append("report: " + first_difference(*reports))
    if problems:
        print(f"FAIL {name}: " + "\n  ".join(problems))
        return False
    print(f"same program: {name} ({len(lowered[0])} lines lowered, "
          f"{len(shows[0])} lines of plan)")
    return True


pairs = []
fixtures = json.load(open(fixtures_json))
for name in ("llama-train", "gpt2-train"):
    folder = os.path.join(tmp, name)
    os.makedirs(folder)
    json.dump(fixtures["models"][name]["config"],
              open(os.path.join(folder, "config.json"), "w"))
    pairs.append((name, os.path.join(compute_inputs, f"{name}.dynamo.onnx"),
                  folder))
exports = os.path.join(inputs, "hf-exports")
for gz in sorted(os.listdir(exports)) if os.path.isdir(exports) else []:
    family = gz.split(".")[0]
    onnx = os.path.join(tmp, family + ".dynamo.onnx")
    open(onnx, "wb").write(gzip.open(os.path.join(exports, gz)).read())
    pairs.append((family, onnx, os.path.join(inputs, "hf-tiny", family)))
failed = sum(not compare(*p) for p in pairs)
print(f"{len(pairs)} pairs checked, {failed} failed")
