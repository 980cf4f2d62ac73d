#!/usr/bin/env python3
"""Token files of real text without a tokenizer download: the bytes of the
Python sources found on the machine, one token per byte (ids < 256, inside
every model's vocabulary). Text has structure a model learns quickly, so
losses fall from ln(vocab) within tens of steps, which random ids never do.

    python3 runtime/bench/make_text_tokens.py OUT.bin [--mb N] [--llmc]
"""
import argparse
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dsrun_data import write_tokens  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=16)
    ap.add_argument("--llmc", action="store_true")
    a = ap.parse_args()
    want = int(a.mb * (1 << 20))
    roots = sorted(set(os.path.dirname(os.__file__) for _ in [0]))
    chunks, have = [], 0
    for root in roots:
        for path in sorted(glob.glob(os.path.join(root, "**", "*.py"),
                                     recursive=True)):
            try:
                data = open(path, "rb").read()
            except OSError:
                continue
            chunks.append(np.frombuffer(data, dtype=np.uint8))
            have += len(data)
            if have >= want:
                break
    ids = np.concatenate(chunks)[:want]
    write_tokens(a.out, ids, llmc=a.llmc)
    print(f"{a.out}: {ids.size} tokens from {len(chunks)} files")


if __name__ == "__main__":
    main()
