#!/usr/bin/env python3
"""Random starting weights for a model dsc plans, for dsrun --init.

    dsc inspect model.onnx --format json > model.json       # here
    python3 utils/random-weights.py model.json weights.safetensors [--seed N] [--bf16]

For graphs that carry no weights (dsc-modelgen writes none), so that dsrun
can train them for a speed run. Every parameter is drawn from N(0, 0.02)
as GPT-2 initializes its linear layers, except norm weights (1) and
biases (0). fp32 safetensors, or bf16 with --bf16 (half the file: 15 GiB
for an 8B model, which each rank reads whole); dsrun rounds them to the
plan's type. Tensors are drawn and written one at a time, so the model
never sits in memory whole. Needs numpy (the GPU machines have it beside
PyTorch).
"""
import argparse
import json
import struct

import numpy as np


def draw(rng, name, shape):
    if name.endswith("bias"):
        return np.zeros(shape, np.float32)
    if len(shape) == 1:
        return np.ones(shape, np.float32)
    data = rng.standard_normal(size=shape, dtype=np.float32)
    data *= 0.02
    return data


def bf16_bits(data):
    """fp32 to bf16, rounded to nearest even, as raw 16-bit words."""
    bits = data.view(np.uint32)
    rounded = bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))
    return (rounded >> 16).astype(np.uint16)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inspect_json")
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()

    model = json.load(open(args.inspect_json))
    params = [t for t in model["initializers"] if t["role"] == "parameter"]
    size = 2 if args.bf16 else 4
    header, offset = {}, 0
    for p in params:
        n = int(np.prod(p["dims"], dtype=np.int64))
        header[p["name"]] = {"dtype": "BF16" if args.bf16 else "F32",
                             "shape": p["dims"],
                             "data_offsets": [offset, offset + n * size]}
        offset += n * size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(args.seed)
    with open(args.out, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for p in params:
            data = draw(rng, p["name"], p["dims"])
            f.write((bf16_bits(data) if args.bf16 else data).tobytes())
    print(f"{len(params)} tensors, {offset / 2**20:.1f} MiB to {args.out}")


if __name__ == "__main__":
    main()
