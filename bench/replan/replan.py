#!/usr/bin/env python3
"""dsc's step estimate against the steps already measured, without a GPU.

    python3 bench/replan/replan.py [BIN_DIR] [--rows]

Plans again, with BIN_DIR's dsc and dsc-modelgen (build/bin; by default
those on PATH), every config whose measured step
docs/results records, and sets each plan's step beside it:
  - tune-8b, tune-xl: the tune checks (tune-check.json), the Llama-3-8B
    shape on 4 H200s and GPT-2 XL on 2;
  - matrix-h200, matrix-h100: the time matrix (time-matrix.json) at 1 and
    2 ranks;
  - nodes: tune's ranking over 2 simulated nodes of 2 (multi-node.json),
    the Llama 3.2 1B shape planned with --inter-node-gbps 40;
  - speed-8b: the Llama-3-8B shape's speed runs on 4 H200s
    (training-speed.json rows that name their plan and CTA policy).
The configs are under configs/ as they were planned; the models are the
dsc-modelgen shapes (8B, 1B) and the config.json files under models/,
which match runtime/bench/hf_model.py's models. Prints per set the
Spearman between the planned and the measured order, how many steps
land within 10 % and the largest miss (--rows: every row). A change to
the time model shows here what it does to every recorded measurement
before a GPU runs anything; the runs themselves are what they were.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "..", "docs", "results")


def spearman(a, b):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0] * len(v)
        for k, i in enumerate(order):
            r[i] = k
        return r
    ra, rb, n = ranks(a), ranks(b), len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb)) / (n * (n * n - 1))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = "--rows" in sys.argv
    found = shutil.which("dsc")
    bin_dir = args[0] if args else os.path.dirname(found) if found else None
    if not bin_dir:
        sys.exit(__doc__)
    dsc = os.path.join(bin_dir, "dsc")
    tmp = tempfile.mkdtemp()
    models = {}
    for name, shape in {"llama-8b": "--layers 32 --hidden 4096 --ffn 14336 --heads 32 --kv-heads 8 --vocab 128256",
                       "l1b": "--layers 16 --hidden 2048 --ffn 8192 --heads 32 --kv-heads 8 --vocab 128256"}.items():
        models[name] = os.path.join(tmp, name + ".onnx")
        subprocess.run([os.path.join(bin_dir, "dsc-modelgen"), "--arch", "llama", *shape.split(),
                        "--untied", "-o", models[name]], check=True, capture_output=True)
    for name in ("gpt2-small", "gpt2-xl", "llama-1b"):
        models[name] = os.path.join(HERE, "models", name)

    def step(config, model, flags):
        out = subprocess.run([dsc, "plan", os.path.join(HERE, "configs", config + ".json"), models[model],
                              "-o", os.path.join(tmp, "plan.bin"), *flags], capture_output=True, text=True)
        m = re.search(r"step ~([0-9.]+) ms", out.stdout)
        if not m:
            sys.exit(f"{config}: dsc plan failed: {out.stderr.strip()[-300:]}")
        return float(m.group(1))

    sets = {}
    tune = json.load(open(os.path.join(RESULTS, "tune-check.json")))["results"]
    for result in tune:
        for row in result["rows"]:
            name = row["plan"]
            if name.startswith("llama-8b"):
                # The tuned config is the ZeRO 3 micro batch 2 one; the
                # checkpointed rows are the micro batch 2 configs with every
                # layer checkpointed.
                config = name.replace("-tuned-", "-m2-").replace("-ckpt", "")
                flags = ["--gpu", "H200", "--world-size", "4", "--seq-len", "2048"]
                if "-ckpt" in name:
                    flags.append("--checkpoint-layers")
                sets.setdefault("tune-8b", []).append((name, step(config, "llama-8b", flags), row["measured_ms"]))
            else:
                flags = ["--gpu", "H200", "--world-size", "2", "--seq-len", "1024"]
                sets.setdefault("tune-xl", []).append((name, step(name, "gpt2-xl", flags), row["measured_ms"]))
    matrix = json.load(open(os.path.join(RESULTS, "time-matrix.json")))["results"]
    for result, gpu, cores in ((matrix[0], "H200", 32), (matrix[1], "H100", 16)):
        for row in result["rows"]:
            name = row["plan"]
            model = re.match(r"(.*?)-s[0-9]", name).group(1)
            world = int(name.rsplit("-w", 1)[1])
            flags = ["--gpu", gpu, "--world-size", str(world), "--seq-len", "1024",
                     "--host-threads", str(max(1, cores // world))]
            sets.setdefault("matrix-" + gpu.lower(), []).append(
                (name, step(name, model, flags), row["measured_ms"]))
    nodes = [r for r in json.load(open(os.path.join(RESULTS, "multi-node.json")))["results"]
             if "tune's ranking" in r.get("what", "")][0]
    for name, figures in nodes["configs"].items():
        flags = ["--nodes", "2", "--gpus-per-node", "2", "--gpu", "H200", "--inter-node-gbps", "40",
                 "--seq-len", "2048"]
        sets.setdefault("nodes", []).append((name, step("l1b-" + name, "l1b", flags), figures["measured_ms"]))
    # The 8B's runs beside compiled FSDP2 (training-speed.json), each with
    # the CTA policy it ran with.
    for result in json.load(open(os.path.join(RESULTS, "training-speed.json")))["results"]:
        for row in result.get("rows", []):
            if "plan" in row and "policy" in row:
                flags = ["--gpu", "H200", "--world-size", "4", "--seq-len", "2048",
                         "--comm-cta-policy", row["policy"]]
                sets.setdefault("speed-8b", []).append(
                    (row["plan"] + "-" + row["policy"], step(row["plan"], "llama-8b", flags), row["step_ms"]))
    for key, found in sets.items():
        misses = [(p - m) / m for _, p, m in found]
        worst = max(range(len(found)), key=lambda i: abs(misses[i]))
        print(f"{key:12s} {len(found):2d} steps: Spearman {spearman([p for _, p, _ in found], [m for _, _, m in found]):.3f}, "
              f"{sum(abs(x) <= 0.10 for x in misses)} within 10 %, largest miss {100 * misses[worst]:+.1f} % ({found[worst][0]})")
        if rows:
            for (name, p, m), x in zip(found, misses):
                print(f"  {name:32s} planned {p:8.1f} measured {m:8.1f} {100 * x:+6.1f} %")


if __name__ == "__main__":
    main()
