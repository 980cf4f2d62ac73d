#!/usr/bin/env python3
"""Random starting weights for a model dsc plans, for dsrun --init.

    dsc inspect model.onnx --format json > model.json       # here
    python3 utils/random-weights.py model.json weights.safetensors [--seed N]

For graphs that carry no weights (dsc-modelgen writes none), so that dsrun
can train them for a speed run. Every parameter is drawn from N(0, 0.02)
as GPT-2 initializes its linear layers, except norm weights (1) and
biases (0). fp32 safetensors: dsrun rounds them to the plan's type.
Needs numpy (the GPU machines have it beside PyTorch).
"""
import argparse
import json
import struct

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inspect_json")
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    model = json.load(open(args.inspect_json))
    params = [t for t in model["initializers"] if t["role"] == "parameter"]
    rng = np.random.default_rng(args.seed)
    header, blobs, offset = {}, [], 0
    for p in params:
        shape = p["dims"]
        name = p["name"]
        if name.endswith("bias"):
            data = np.zeros(shape, np.float32)
        elif len(shape) == 1:
            data = np.ones(shape, np.float32)
        else:
            data = rng.normal(0.0, 0.02, size=shape).astype(np.float32)
        raw = data.tobytes()
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(args.out, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    print(f"{len(params)} tensors, {offset / 2**20:.1f} MiB to {args.out}")


if __name__ == "__main__":
    main()
