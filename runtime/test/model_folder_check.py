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


def check(saved, single, tokens, seq, micro, world, dsrun_json):
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        saved, output_loading_info=True, torch_dtype=torch.bfloat16)
    problems = {k: v for k, v in info.items() if v}
    shards = [f for f in os.listdir(saved) if f.endswith(".safetensors")]
    print(f"{saved}: {len(shards)} weight file(s), loading info "
          f"{problems or 'clean'}")
    ok = not problems and len(shards) > 1  # --max-shard-size cut it
    mine = {}
    for f in shards:
        mine.update(load_file(os.path.join(saved, f)))
    theirs = load_file(single)
    same = mine.keys() == theirs.keys() and all(
        torch.equal(mine[k], theirs[k]) for k in mine)
    print(f"tensors equal to the single file's: {same} ({len(mine)} tensors)")
    ok = ok and same
    loss = validation_loss(model, tokens, seq, micro, world)
    ran = [json.loads(l) for l in open(dsrun_json) if "val_loss" in l]
    theirs_loss = ran[-1]["val_loss"]
    close = abs(loss - theirs_loss) <= 0.005 * abs(theirs_loss)
    print(f"validation loss: transformers {loss:.6f}, dsrun {theirs_loss:.6f}"
          f" ({'within' if close else 'NOT within'} 0.5 %)")
    return ok and close


def masters(fp32_dir, bf16_dir):
    """dsrun --save-dtype fp32's folder: fp32 tensors that load in
    transformers, and that round to nearest even to the bf16 weights the
    same run saved (the parameters are the rounded masters)."""
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        fp32_dir, output_loading_info=True, torch_dtype=torch.float32)
    problems = {k: v for k, v in info.items() if v}
    def tensors(d):
        out = {}
        for f in os.listdir(d):
            if f.endswith(".safetensors"):
                out.update(load_file(os.path.join(d, f)))
        return out
    mine, theirs = tensors(fp32_dir), tensors(bf16_dir)
    fp32 = all(t.dtype == torch.float32 for t in mine.values())
    same = mine.keys() == theirs.keys() and all(
        torch.equal(mine[k].to(torch.bfloat16), theirs[k]) for k in mine)
    print(f"{fp32_dir}: {len(mine)} fp32 tensors: {fp32}; loading info "
          f"{problems or 'clean'}; rounded to bf16, equal to the 16-bit "
          f"save: {same}")
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
