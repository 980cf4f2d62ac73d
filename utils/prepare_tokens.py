#!/usr/bin/env python3
"""Text or JSONL into the token files dsrun reads, with the model folder's
own tokenizer (its tokenizer.json, through the `tokenizers` library), as
nanoGPT's and llm.c's prepare scripts do.

    python3 utils/prepare_tokens.py MODEL_DIR OUT.bin INPUT... \
        [--field text] [--val OUT_VAL.bin --val-fraction 0.005] [--nanogpt]

INPUT is a .txt file (one document each) or a .jsonl file (one document a
line, its text under --field). Each document is encoded without special
tokens and followed by the tokenizer's end-of-text token (config.json's
eos_token_id), so that samples crossing a document's end see where it
ends. The file is llm.c's format: a 1024-byte header, then uint16 ids
(magic 20240520, version 1), or where an id passes 65535 uint32 ids (magic
20240801, version 7, as llm.c writes Llama 3 data); --nanogpt writes raw
uint16 ids
instead, refused where an id does not fit. Every id must lie below
config.json's vocab_size; dsrun checks the same when it reads the file.
With --val, the last documents, about --val-fraction of the tokens, go to
a second file for dsrun --val-data.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "runtime", "bench"))
from dsrun_data import write_tokens  # noqa: E402


def documents(path, field):
    if path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{number}: not JSON: {e}")
                if not isinstance(record, dict) or \
                        not isinstance(record.get(field), str):
                    sys.exit(f"{path}:{number}: no string under '{field}'")
                yield record[field]
    else:
        with open(path, encoding="utf-8") as f:
            yield f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--field", default="text")
    ap.add_argument("--val")
    ap.add_argument("--val-fraction", type=float, default=0.005)
    ap.add_argument("--nanogpt", action="store_true")
    a = ap.parse_args()
    from tokenizers import Tokenizer

    tokenizer_path = os.path.join(a.model, "tokenizer.json")
    if not os.path.exists(tokenizer_path):
        sys.exit(f"{a.model}: no tokenizer.json (save the tokenizer with "
                 f"the model: tokenizer.save_pretrained)")
    tokenizer = Tokenizer.from_file(tokenizer_path)
    config = json.load(open(os.path.join(a.model, "config.json")))
    vocab = config.get("vocab_size")
    eos = config.get("eos_token_id")
    if isinstance(eos, list):
        eos = eos[0]
    if eos is None:
        sys.exit(f"{a.model}/config.json: no eos_token_id to end documents")

    docs = []
    for path in a.inputs:
        for text in documents(path, a.field):
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            docs.append(np.array(ids + [eos], dtype=np.int64))
    if not docs:
        sys.exit("no documents in the inputs")
    total = sum(d.size for d in docs)
    split = len(docs)
    if a.val:
        held = 0
        while split > 1 and held < a.val_fraction * total:
            split -= 1
            held += docs[split].size
    for path, part in [(a.out, docs[:split]), (a.val, docs[split:])]:
        if not path:
            continue
        ids = np.concatenate(part)
        top = int(ids.max())
        if vocab is not None and top >= vocab:
            sys.exit(f"id {top} is beyond vocab_size {vocab} of "
                     f"{a.model}/config.json: not this model's tokenizer?")
        if a.nanogpt and top > 65535:
            sys.exit(f"id {top} does not fit nanoGPT's uint16 file; leave "
                     f"out --nanogpt for llm.c's format")
        write_tokens(path, ids, llmc=not a.nanogpt)
        print(f"{path}: {ids.size} tokens from {len(part)} documents "
              f"(largest id {top}, vocab_size {vocab})")


if __name__ == "__main__":
    main()
