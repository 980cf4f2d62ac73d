#!/usr/bin/env python3
"""utils/prepare_tokens.py against the tokenizer it reads: a small BPE
tokenizer trained here, a model folder with its tokenizer.json and
config.json, text and JSONL inputs. Checks that the files hold each
document's ids followed by the end-of-text id, in order, split at the
--val fraction; that --nanogpt writes raw uint16; and that a vocab_size
too small and a bad JSONL line are refused by name.

    prepare_tokens_check.py WORKDIR

Exits 77 (skipped) where numpy or tokenizers is missing.
"""
import json
import os
import subprocess
import sys

try:
    import numpy as np
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from dsrun_data import read_tokens  # noqa: E402

SCRIPT = os.path.join(HERE, "..", "..", "utils", "prepare_tokens.py")
TEXTS = [
    "The quick brown fox jumps over the lazy dog.\nA second line.",
    "ZeRO partitions the optimizer states, the gradients and the weights.",
    "dsrun trains the plan that dsc made.",
    "Short.",
]


def run(*args, fails=False):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True,
                       text=True)
    if (p.returncode != 0) != fails:
        sys.exit(f"prepare_tokens.py {' '.join(args)}: exit {p.returncode}\n"
                 f"{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def main():
    work = sys.argv[1]
    model = os.path.join(work, "model")
    os.makedirs(model, exist_ok=True)
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(
        TEXTS * 20, trainers.BpeTrainer(vocab_size=400,
                                        special_tokens=["<unk>", "<|eot|>"]))
    tokenizer.save(os.path.join(model, "tokenizer.json"))
    eos = tokenizer.token_to_id("<|eot|>")
    vocab = tokenizer.get_vocab_size()
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump({"vocab_size": vocab, "eos_token_id": [eos]}, f)

    text = os.path.join(work, "a.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write(TEXTS[0])
    jsonl = os.path.join(work, "b.jsonl")
    with open(jsonl, "w", encoding="utf-8") as f:
        for t in TEXTS[1:]:
            f.write(json.dumps({"text": t, "id": 1}) + "\n\n")

    docs = [tokenizer.encode(t, add_special_tokens=False).ids + [eos]
            for t in TEXTS]
    total = sum(map(len, docs))
    split, held = len(docs), 0
    while split > 1 and held < 0.1 * total:
        split -= 1
        held += len(docs[split])
    assert 1 <= split < len(docs), split

    out, val = os.path.join(work, "train.bin"), os.path.join(work, "val.bin")
    run(model, out, text, jsonl, "--val", val, "--val-fraction", "0.1")
    header = np.fromfile(out, dtype=np.int32, count=3)
    assert list(header) == [20240520, 1, sum(map(len, docs[:split]))], header
    got_train, got_val = list(read_tokens(out)), list(read_tokens(val))
    assert got_train == sum(docs[:split], []), (got_train, docs[:split])
    assert got_val == sum(docs[split:], []), (got_val, docs[split:])

    raw = os.path.join(work, "raw.bin")
    run(model, raw, text, jsonl, "--nanogpt")
    assert list(np.fromfile(raw, dtype=np.uint16)) == sum(docs, [])

    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump({"vocab_size": eos, "eos_token_id": eos}, f)
    said = run(model, raw, text, fails=True)
    assert f"beyond vocab_size {eos}" in said, said

    bad = os.path.join(work, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"text": "fine"}\n{"text": \n')
    said = run(model, raw, bad, fails=True)
    assert "bad.jsonl:2: not JSON" in said, said
    print(f"prepare_tokens.py: {len(docs)} documents, {total} tokens, "
          f"{split} to the training file; --nanogpt and two refusals checked")


if __name__ == "__main__":
    main()
