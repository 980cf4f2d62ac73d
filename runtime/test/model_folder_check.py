#!/usr/bin/env python3
"""Model folders in and out of dsrun against transformers (ctest -L gpu:
gpu-model-folder, through model_folder_check.sh).

    model_folder_check.py make OUT LLAMA_DIR GPT2_CONFIG.json
        OUT/llama-sharded: the fixture Llama saved by save_pretrained in
        shards of 20 KB (an index and several files); OUT/gpt2-sharded and
        OUT/gpt2-single: a tiny GPT-2 with tied embeddings (seed 0), in
        shards and in one file.
    model_folder_check.py check SAVED_DIR SINGLE.safetensors TOKENS SEQ
                                MICRO WORLD DSRUN_JSON
        SAVED_DIR (dsrun --save-weights DIR) loads in transformers with no
        missing, unexpected or mismatched keys; every tensor equals the one
        dsrun wrote as one file from the same run; and its loss on the
        first validation batch (as dsrun --val-data --eval-batches 1 reads
        it) is dsrun's within 0.5 % (bf16 kernels on both sides).
"""
import json
import os
import sys

import numpy
import torch
import transformers
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "bench"))
import dsrun_data  # noqa: E402


def make(out, llama_dir, gpt2_config):
    llama = transformers.AutoModelForCausalLM.from_pretrained(llama_dir)
    llama.save_pretrained(f"{out}/llama-sharded", max_shard_size="20KB")
    config = transformers.GPT2Config(**json.load(open(gpt2_config)))
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(config)
    gpt2.save_pretrained(f"{out}/gpt2-sharded", max_shard_size="20KB")
    gpt2.save_pretrained(f"{out}/gpt2-single")
    for name in ["llama-sharded", "gpt2-sharded", "gpt2-single"]:
        files = sorted(os.listdir(f"{out}/{name}"))
        print(f"{name}: {', '.join(files)}")


def validation_loss(model, tokens, seq, micro, world):
    """The mean loss over the first validation batch of each rank, as
    dsrun --val-data --eval-batches 1 reads them."""
    val = dsrun_data.read_tokens(tokens)
    model.cuda().eval()
    losses = []
    with torch.no_grad():
        for r in range(world):
            rows = [(r * micro + i) * seq for i in range(micro)]
            w = torch.from_numpy(numpy.stack(
                [val[s:s + seq + 1] for s in rows]).astype(numpy.int64)).cuda()
            logits = model(input_ids=w[:, :-1]).logits.float()
            losses.append(torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1)))
    return float(torch.stack(losses).mean())


def load_saved(saved, dtype):
    """A folder dsrun saved, through from_pretrained: the model, what the
    loading reported (missing, unexpected, mismatched keys) and the weight
    files; prints one line about them."""
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        saved, output_loading_info=True, torch_dtype=dtype)
    problems = {k: v for k, v in info.items() if v}
    shards = [f for f in os.listdir(saved) if f.endswith(".safetensors")]
    print(f"{saved}: {len(shards)} weight file(s), loading info "
          f"{problems or 'clean'}")
    return model, problems, shards


def folder_tensors(folder):
    """Every tensor of a folder's safetensors files, by name."""
    out = {}
    for f in os.listdir(folder):
        if f.endswith(".safetensors"):
            out.update(load_file(os.path.join(folder, f)))
    return out


def loss_matches(model, tokens, seq, micro, world, dsrun_json):
    """The model's loss on the first validation batch against the last
    val_loss of dsrun's log, within 0.5 % (bf16 kernels on both sides)."""
    loss = validation_loss(model, tokens, seq, micro, world)
    ran = [json.loads(l) for l in open(dsrun_json) if "val_loss" in l]
    theirs = ran[-1]["val_loss"]
    close = abs(loss - theirs) <= 0.005 * abs(theirs)
    print(f"validation loss: transformers {loss:.6f}, dsrun {theirs:.6f}"
          f" ({'within' if close else 'NOT within'} 0.5 %)")
    return close


def check(saved, single, tokens, seq, micro, world, dsrun_json):
    model, problems, shards = load_saved(saved, torch.bfloat16)
    ok = not problems and len(shards) > 1  # --max-shard-size cut it
    mine, theirs = folder_tensors(saved), load_file(single)
    same = mine.keys() == theirs.keys() and all(
        torch.equal(mine[k], theirs[k]) for k in mine)
    print(f"tensors equal to the single file's: {same} ({len(mine)} tensors)")
    ok = ok and same
    return loss_matches(model, tokens, seq, micro, world, dsrun_json) and ok


def masters(fp32_dir, bf16_dir):
    """dsrun --save-dtype fp32's folder: fp32 tensors that load in
    transformers, and that round to nearest even to the bf16 weights the
    same run saved (the parameters are the rounded masters)."""
    _, problems, _ = load_saved(fp32_dir, torch.float32)
    mine, theirs = folder_tensors(fp32_dir), folder_tensors(bf16_dir)
    fp32 = all(t.dtype == torch.float32 for t in mine.values())
    same = mine.keys() == theirs.keys() and all(
        torch.equal(mine[k].to(torch.bfloat16), theirs[k]) for k in mine)
    print(f"{len(mine)} fp32 tensors: {fp32}; rounded to bf16, equal to the "
          f"16-bit save: {same}")
    return fp32 and same and not problems


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(*sys.argv[2:5])
    elif sys.argv[1] == "masters":
        sys.exit(0 if masters(sys.argv[2], sys.argv[3]) else 1)
    else:
        a = sys.argv[2:]
        sys.exit(0 if check(a[0], a[1], a[2], int(a[3]), int(a[4]),
                            int(a[5]), a[6]) else 1)
