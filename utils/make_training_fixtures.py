#!/usr/bin/env python3
"""Exports tiny trainable models with their weights and PyTorch's loss and
gradients on one fixed batch: the golden values dsc's reference interpreter
is checked against (test/Compute).

Runs where PyTorch, transformers and safetensors are installed (the GPU
machine; the references are computed on the CPU in fp32, so they do not
depend on the GPU or TF32):

    python3 utils/make_training_fixtures.py OUTDIR

For each model NAME it writes
  NAME.dynamo.onnx       torch.onnx.export(dynamo=True), weights inline,
                         batch and sequence dynamic
  NAME.torchscript.onnx  the TorchScript exporter (opset 17), same
  NAME.fixture.safetensors
                         the batch ("input_ids" or "pixel_values"), the
                         targets ("labels"), the mean loss ("loss") and
                         "grad.<HF parameter name>" for every parameter
and gpt2-static.{dynamo,torchscript}.onnx, exported at a fixed [2, 16]
(for the re-specialization tests), and manifest.json (configs, names,
shapes, what each export's onnxruntime logits differ from PyTorch's).

Every model is built with dropout 0 so that one batch has one loss. The
exporters see a wrapper that returns the logits alone; the wrapper's
prefix is taken off the initializers' names afterwards, so the graph
carries Hugging Face's parameter names.
"""
import json
import os
import sys
import traceback

import torch
import transformers
from safetensors.torch import save_file

SEED = 0
BATCH, SEQ = 2, 16


def models():
    gpt2 = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=128, n_positions=32,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    llama = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
        max_position_embeddings=64, tie_word_embeddings=False,
        attention_dropout=0.0, rms_norm_eps=1e-5)
    bert = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, vocab_size=128, max_position_embeddings=64,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    vit = transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, image_size=16, patch_size=4, num_labels=10,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return [
        ("gpt2-train", "causal-lm", transformers.GPT2LMHeadModel, gpt2, 32),
        ("llama-train", "causal-lm", transformers.LlamaForCausalLM, llama, 64),
        ("bert-train", "masked-lm", transformers.BertForMaskedLM, bert, 64),
        ("vit-train", "sequence-classification",
         transformers.ViTForImageClassification, vit, None),
    ]


def batch(loss, vocab, gen):
    """The inputs and targets of the fixed batch."""
    if loss == "sequence-classification":
        return (torch.randn(BATCH, 3, 16, 16, generator=gen),
                torch.randint(0, 10, (BATCH,), generator=gen))
    tokens = torch.randint(0, vocab, (BATCH, SEQ + 1), generator=gen)
    if loss == "causal-lm":  # Targets are the next tokens (nanoGPT, llm.c).
        return tokens[:, :SEQ].contiguous(), tokens[:, 1:].contiguous()
    ids = tokens[:, :SEQ].contiguous()
    labels = ids.clone()  # Masked LM: a quarter of the positions count.
    keep = torch.rand(BATCH, SEQ, generator=gen) < 0.25
    keep[:, 0] = True
    labels[~keep] = -100
    return ids, labels


class Logits(torch.nn.Module):
    """Returns only the logits, so every exporter sees one tensor output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).logits


def strip_prefix(path, prefix="model."):
    """Renames the wrapper's initializers to the HF model's own names."""
    import onnx
    m = onnx.load(path)
    renames = {t.name: t.name[len(prefix):] for t in m.graph.initializer
               if t.name.startswith(prefix)}
    for t in m.graph.initializer:
        t.name = renames.get(t.name, t.name)
    for n in m.graph.node:
        for i, name in enumerate(n.input):
            if name in renames:
                n.input[i] = renames[name]
    onnx.save(m, path)


def reference(model, loss, x, y):
    model.zero_grad(set_to_none=True)
    logits = model(x).logits.float()
    v = logits.shape[-1]
    value = torch.nn.functional.cross_entropy(
        logits.reshape(-1, v), y.reshape(-1), ignore_index=-100)
    value.backward()
    grads = {"grad." + n: p.grad.detach().clone().contiguous()
             for n, p in model.named_parameters()}
    return value.detach(), grads


def export(model, x, path, dynamo, dynamic, text, max_seq):
    name = "input_ids" if text else "pixel_values"
    if dynamo:
        shapes = None
        if dynamic:
            dims = {0: torch.export.Dim("batch", min=1, max=64)}
            if text:
                dims[1] = torch.export.Dim("sequence", min=2, max=max_seq)
            shapes = (dims,)
        prog = torch.onnx.export(Logits(model), (x,), dynamo=True, optimize=False,
                                 dynamic_shapes=shapes, input_names=[name],
                                 output_names=["logits"])
        prog.save(path, external_data=False)
    else:
        kwargs = dict(input_names=[name], output_names=["logits"],
                      opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
        if dynamic:
            axes = {0: "batch", 1: "sequence"} if text else {0: "batch"}
            kwargs["dynamic_axes"] = {name: axes}
        torch.onnx.export(Logits(model), (x,), path, **kwargs)
    strip_prefix(path)


def check_with_ort(path, model, x):
    """The largest difference between onnxruntime's logits and PyTorch's."""
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feed = {sess.get_inputs()[0].name: x.numpy()}
        got = torch.from_numpy(sess.run(None, feed)[0])
        with torch.no_grad():
            want = model(x).logits
        return float((got - want).abs().max())
    except Exception as e:  # A finding, not a reason to stop.
        return f"{type(e).__name__}: {str(e)[:300]}"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = {"torch": torch.__version__,
                "transformers": transformers.__version__,
                "batch": BATCH, "seq": SEQ, "models": {}}
    for name, loss, cls, config, max_seq in models():
        torch.manual_seed(SEED)
        config.use_cache = False
        model = cls(config).float().train()
        gen = torch.Generator().manual_seed(SEED + 1)
        x, y = batch(loss, config.vocab_size if hasattr(config, "vocab_size")
                     else 0, gen)
        value, grads = reference(model, loss, x, y)
        tensors = {"input_ids" if x.dtype == torch.int64 else "pixel_values": x,
                   "labels": y, "loss": value.reshape(1)}
        tensors.update(grads)
        save_file(tensors, os.path.join(out, f"{name}.fixture.safetensors"))
        entry = {"loss": loss, "config": config.to_diff_dict(),
                 "loss_value": float(value),
                 "parameters": {n: list(p.shape)
                                for n, p in model.named_parameters()},
                 "exports": {}}
        print(f"{name}: loss {float(value):.6f}", flush=True)
        text = x.dtype == torch.int64
        variants = [("dynamo", True, True), ("torchscript", False, True)]
        if name == "gpt2-train":
            variants += [("static-dynamo", True, False),
                         ("static-torchscript", False, False)]
        for tag, dynamo, dynamic in variants:
            file = (f"{name}.{tag}.onnx" if dynamic else
                    f"gpt2-static.{tag.split('-')[1]}.onnx")
            path = os.path.join(out, file)
            try:
                export(model, x, path, dynamo, dynamic, text, max_seq)
                entry["exports"][file] = {
                    "bytes": os.path.getsize(path),
                    "ort_max_abs_diff": check_with_ort(path, model, x)}
                print(f"ok   {file} {entry['exports'][file]}", flush=True)
            except Exception as e:
                entry["exports"][file] = {"error": f"{type(e).__name__}: {e}"[:2000]}
                print(f"FAIL {file}: {type(e).__name__}: {str(e)[:300]}",
                      flush=True)
                traceback.print_exc(limit=3)
        manifest["models"][name] = entry
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
