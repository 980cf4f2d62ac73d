#!/usr/bin/env python3
"""Exports small Hugging Face and torchvision models to ONNX for dsc's tests.

Runs where PyTorch, transformers and torchvision are installed (the GPU
machine; no GPU is used). Every model is exported with both exporters, for
training (TorchScript: TrainingMode.TRAINING, no constant folding; dynamo:
optimize=False) and for inference (the defaults), with external data, and
the weight files are deleted: only the graphs are kept. A manifest records
what PyTorch itself says about each model (unique parameter count,
buffers, hidden size), which dsc's tests compare against.

    python3 utils/export_models.py OUTDIR [NAME...]

With names, only those models are exported (their manifest entries can be
merged into test/Graph/Inputs/pytorch-manifest.json).
"""
import json
import os
import sys
import time
import traceback

import onnx
import torch
import torchvision
import transformers

torch.manual_seed(0)


class Logits(torch.nn.Module):
    """Returns only the logits, so every exporter sees one tensor output."""

    def __init__(self, model, key, family):
        super().__init__()
        self.model = model
        self.key = key
        self.family = family
        self.decoder = family in ("gpt2", "llama")

    def forward(self, x):
        if self.key == "image":
            return self.model(pixel_values=x).logits
        if self.decoder:
            return self.model(input_ids=x, use_cache=False).logits
        if self.family == "t5":
            return self.model(input_ids=x, decoder_input_ids=x,
                              use_cache=False).logits
        return self.model(input_ids=x).logits


def hf_models():
    gpt2 = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000,
                                   n_positions=128)
    gpt2_small = transformers.GPT2Config()  # 12 layers, 768 wide: GPT-2 small.
    llama = transformers.LlamaConfig(hidden_size=64, intermediate_size=176,
                                     num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, vocab_size=1000,
                                     max_position_embeddings=128,
                                     tie_word_embeddings=False)
    bert = transformers.BertConfig(hidden_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, intermediate_size=128,
                                   vocab_size=1000, max_position_embeddings=128)
    vit = transformers.ViTConfig(hidden_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=128,
                                 image_size=32, patch_size=8, num_labels=10)
    # T5 ties the LM head to the shared embedding and keeps relative
    # position buckets in the first block only: both test the counting.
    t5 = transformers.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2,
                               num_decoder_layers=2, num_heads=4,
                               vocab_size=1000)
    tokens = torch.randint(0, 1000, (2, 16))
    image = torch.randn(2, 3, 32, 32)
    return [
        ("gpt2-tiny", "gpt2", transformers.GPT2LMHeadModel(gpt2), "text", tokens),
        ("gpt2-small", "gpt2", transformers.GPT2LMHeadModel(gpt2_small), "text", tokens),
        ("llama-gqa-tiny", "llama", transformers.LlamaForCausalLM(llama), "text", tokens),
        ("bert-tiny", "bert", transformers.BertForMaskedLM(bert), "text", tokens),
        ("t5-tiny", "t5", transformers.T5ForConditionalGeneration(t5), "text", tokens),
        ("vit-tiny", "vit", transformers.ViTForImageClassification(vit), "image", image),
    ]


def describe(model, wrapped_key):
    params = list(model.named_parameters())  # named_parameters() drops tied copies
    config = getattr(model, "config", None)
    hidden = None
    if config is not None:
        hidden = (getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
                  or getattr(config, "d_model", None))
    return {
        "parameters_unique": sum(p.numel() for _, p in params),
        "parameters_trainable": sum(p.numel() for _, p in params if p.requires_grad),
        "parameter_names": [n for n, _ in params],
        "buffers": {n: b.numel() for n, b in model.named_buffers()},
        "hidden_size": hidden,
        "num_layers": getattr(config, "num_hidden_layers", None) if config else None,
        "tied": bool(getattr(config, "tie_word_embeddings", False)) if config else False,
    }


def graph_facts(path):
    m = onnx.load(path, load_external_data=False)
    inits = m.graph.initializer
    return {
        "ir_version": m.ir_version,
        "opsets": {o.domain or "ai.onnx": o.version for o in m.opset_import},
        "nodes": len(m.graph.node),
        "initializers": len(inits),
        "initializer_numel": int(sum(
            int(torch.tensor(list(t.dims)).prod().item()) if t.dims else 1 for t in inits)),
        "functions": len(m.functions),
        "producer": f"{m.producer_name} {m.producer_version}",
    }


def export(model, family, key, example, path, dynamo, training):
    wrapped = Logits(model, key, family) if key in ("text", "image") else model
    wrapped.train(training)
    name = "input_ids" if key == "text" else "pixel_values"
    if dynamo:
        batch = torch.export.Dim("batch", min=1, max=64)
        shapes = {"x": {0: batch}}
        if key == "text":
            shapes = {"x": {0: batch, 1: torch.export.Dim("sequence", min=2, max=128)}}
        prog = torch.onnx.export(wrapped, (example,), dynamo=True,
                                 optimize=not training, dynamic_shapes=shapes,
                                 input_names=[name], output_names=["logits"])
        prog.save(path, external_data=True)
    else:
        axes = {name: {0: "batch"}}
        if key == "text":
            axes = {name: {0: "batch", 1: "sequence"}}
        kwargs = dict(input_names=[name], output_names=["logits"],
                      dynamic_axes=axes, opset_version=17, dynamo=False)
        if training:
            kwargs.update(training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        torch.onnx.export(wrapped, (example,), path, **kwargs)
        m = onnx.load(path)
        onnx.save_model(m, path, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data", size_threshold=0)
    # Keep the graph, drop the weights.
    for f in os.listdir(os.path.dirname(path)):
        if f.startswith(os.path.basename(path)) and f != os.path.basename(path):
            os.remove(os.path.join(os.path.dirname(path), f))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    models = hf_models()
    models.append(("resnet18", "resnet", torchvision.models.resnet18(), "raw",
                   torch.randn(2, 3, 64, 64)))
    manifest = {"torch": torch.__version__, "transformers": transformers.__version__,
                "torchvision": torchvision.__version__, "onnx": onnx.__version__,
                "models": {}}
    only = set(sys.argv[2:])
    for name, family, model, key, example in models:
        if only and name not in only:
            continue
        entry = describe(model, key)
        entry["family"] = family
        entry["exports"] = {}
        for exporter in ("torchscript", "dynamo"):
            for mode in ("train", "infer"):
                tag = f"{name}.{exporter}-{mode}.onnx"
                path = os.path.join(out, tag)
                start = time.time()
                try:
                    export(model, family, key, example, path, exporter == "dynamo",
                           mode == "train")
                    facts = graph_facts(path)
                    facts["seconds"] = round(time.time() - start, 1)
                    entry["exports"][tag] = facts
                    print(f"ok   {tag} {facts}", flush=True)
                except Exception as e:  # Record and go on: one failure is a finding.
                    entry["exports"][tag] = {"error": f"{type(e).__name__}: {e}"[:2000]}
                    print(f"FAIL {tag}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                    traceback.print_exc(limit=3)
        manifest["models"][name] = entry
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
