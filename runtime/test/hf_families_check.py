#!/usr/bin/env python3
"""Each model family dsc builds from config.json, against transformers
(ctest -L gpu: gpu-hf-families, through hf_families_check.sh).

    hf_families_check.py make CONFIG_DIR OUT
        OUT/<family>: the model of CONFIG_DIR/<family>/config.json, seeded
        weights, saved by save_pretrained in shards of 20 KB; and
        OUT/exports/<family>.dynamo.onnx: its torch.onnx dynamo export
        (batch and sequence dynamic, weights left out), for the test that
        plans a config and its export alike.
    hf_families_check.py check SAVED_DIR TOKENS SEQ MICRO WORLD DSRUN_JSON
        SAVED_DIR (dsrun --save-weights DIR) loads in transformers with no
        missing, unexpected or mismatched keys, in several shards, and its
        loss on the first validation batch is dsrun's within 0.5 %.
"""
import os
import sys

import torch
import transformers

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "bench"))
from hf_model import Logits  # noqa: E402
from model_folder_check import load_saved, loss_matches  # noqa: E402


def export(model, path):
    """The dynamo export as make_training_fixtures.py makes it (the
    wrapper's "model." prefix taken off the initializers), the parameters'
    data left out: buffers (rotary frequencies, Gemma's embedding scale)
    keep theirs, which dsc folds."""
    import onnx
    x = torch.randint(0, 100, (2, 16))
    dims = {0: torch.export.Dim("batch", min=1, max=1024),
            1: torch.export.Dim("sequence", min=2, max=64)}
    prog = torch.onnx.export(Logits(model), (x,), dynamo=True, optimize=False,
                             dynamic_shapes=(dims,), input_names=["input_ids"],
                             output_names=["logits"])
    m = onnx.load_model_from_string(prog.model_proto.SerializeToString())
    params = {n for n, _ in model.named_parameters()}
    renames = {t.name: t.name[len("model."):] for t in m.graph.initializer
               if t.name.startswith("model.")}
    for n in m.graph.node:
        for i, name in enumerate(n.input):
            n.input[i] = renames.get(name, name)
    for t in m.graph.initializer:
        t.name = renames.get(t.name, t.name)
        if t.name not in params:
            continue
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        for k, v in (("location", "weights.bin"), ("offset", "0"),
                     ("length", "0")):
            e = t.external_data.add()
            e.key, e.value = k, v
    onnx.save_model(m, path)


def make(configs, out):
    os.makedirs(f"{out}/exports", exist_ok=True)
    for family in sorted(os.listdir(configs)):
        config = transformers.AutoConfig.from_pretrained(f"{configs}/{family}")
        torch.manual_seed(0)
        # Gemma 2's soft-capping runs only in eager attention, as dsc
        # builds it.
        attn = "eager" if family == "gemma2" else "sdpa"
        model = transformers.AutoModelForCausalLM.from_config(
            config, torch_dtype=torch.float32, attn_implementation=attn)
        model.save_pretrained(f"{out}/{family}", max_shard_size="20KB")
        count = sum(p.numel() for p in model.parameters())
        files = len(os.listdir(f"{out}/{family}"))
        print(f"{family}: {count} parameters, {files} files")
        model.train()
        try:
            export(model, f"{out}/exports/{family}.dynamo.onnx")
        except Exception as e:  # Reported, not fatal: training still runs.
            print(f"{family}: export failed: {type(e).__name__}: {e}"[:300])


def check(saved, tokens, seq, micro, world, dsrun_json):
    model, problems, shards = load_saved(saved, torch.bfloat16)
    close = loss_matches(model, tokens, seq, micro, world, dsrun_json)
    return not problems and len(shards) > 1 and close


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    else:
        a = sys.argv[2:]
        sys.exit(0 if check(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), a[5])
                 else 1)
