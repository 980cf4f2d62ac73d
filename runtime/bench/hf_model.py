#!/usr/bin/env python3
"""A Hugging Face model for dsrun to train, and the same for PyTorch.

    python3 runtime/bench/hf_model.py MODEL OUT_DIR [--seed N] [--no-onnx]

MODEL is one of the presets below. Writes into OUT_DIR:
  config.json, model.safetensors  save_pretrained: the initial weights
                                  (dsrun --init; torch_reference.py --model)
  model.onnx                      the torch.onnx dynamo export (batch and
                                  sequence dynamic) for dsc plan; weights
                                  over 64 KiB go to model.onnx.data, which
                                  dsc plan does not need, so that the graph
                                  is small enough to carry between machines
  weights.sha256                  what the weights hash to: the same seed
                                  gives the same weights on any machine
                                  (they are drawn on the CPU)
Every preset has dropout 0 (one batch, one loss: losses compare exactly).
"""
import argparse
import hashlib
import os

import torch
import transformers

PRESETS = {
    # HF GPT-2 small, 124M.
    "gpt2-small": lambda: (transformers.GPT2LMHeadModel, transformers.GPT2Config(
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
    # GPT-2 XL, 1.5B.
    "gpt2-xl": lambda: (transformers.GPT2LMHeadModel, transformers.GPT2Config(
        n_embd=1600, n_layer=48, n_head=25, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0)),
    # A small GPT-2 for quick checks.
    "gpt2-tiny": lambda: (transformers.GPT2LMHeadModel, transformers.GPT2Config(
        n_embd=128, n_layer=2, n_head=4, n_positions=1024, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0)),
    # Llama structure, about 1.1B (TinyLlama's shape): GQA, RMSNorm,
    # rotary, SwiGLU, untied head.
    "llama-1b": lambda: (transformers.LlamaForCausalLM, transformers.LlamaConfig(
        hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
        num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
        max_position_embeddings=2048, rms_norm_eps=1e-5,
        tie_word_embeddings=False, attention_dropout=0.0)),
    "llama-tiny": lambda: (transformers.LlamaForCausalLM, transformers.LlamaConfig(
        hidden_size=128, intermediate_size=352, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=32000,
        max_position_embeddings=1024, rms_norm_eps=1e-5,
        tie_word_embeddings=False, attention_dropout=0.0)),
}


class Logits(torch.nn.Module):
    """Returns only the logits: dsc trains a model whose one output they are."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids).logits


def build(name, seed):
    cls, config = PRESETS[name]()
    config.use_cache = False
    torch.manual_seed(seed)
    return cls(config).float()


def export(model, path, max_seq):
    import onnx
    x = torch.randint(0, 100, (2, 16))
    dims = {0: torch.export.Dim("batch", min=1, max=1024),
            1: torch.export.Dim("sequence", min=2, max=max_seq)}
    prog = torch.onnx.export(Logits(model), (x,), dynamo=True, optimize=False,
                             dynamic_shapes=(dims,), input_names=["input_ids"],
                             output_names=["logits"])
    tmp = path + ".whole"
    prog.save(tmp, external_data=True)
    m = onnx.load(tmp)
    # The wrapper's "model." prefix off, so the names are the HF model's.
    for t in m.graph.initializer:
        if t.name.startswith("model."):
            old, t.name = t.name, t.name[len("model."):]
            for n in m.graph.node:
                for i, inp in enumerate(n.input):
                    if inp == old:
                        n.input[i] = t.name
    onnx.save_model(m, path, save_as_external_data=True,
                    all_tensors_to_one_file=True,
                    location=os.path.basename(path) + ".data",
                    size_threshold=64 << 10)
    for f in os.listdir(os.path.dirname(path) or "."):
        if f.startswith(os.path.basename(tmp)):
            os.remove(os.path.join(os.path.dirname(path) or ".", f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(PRESETS))
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-onnx", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model = build(a.model, a.seed)
    model.save_pretrained(a.out)
    h = hashlib.sha256()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().contiguous().numpy().tobytes())
    with open(os.path.join(a.out, "weights.sha256"), "w") as f:
        f.write(h.hexdigest() + "\n")
    n = sum(p.numel() for p in model.parameters())
    print(f"{a.model}: {n / 1e6:.1f} M parameters, weights {h.hexdigest()[:16]}")
    if not a.no_onnx:
        export(model, os.path.join(a.out, "model.onnx"),
               model.config.max_position_embeddings
               if hasattr(model.config, "max_position_embeddings")
               else model.config.n_positions)


if __name__ == "__main__":
    main()
