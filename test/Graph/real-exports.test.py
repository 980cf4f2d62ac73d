#!/usr/bin/env python3
"""Compares dsc inspect with what PyTorch said about the same models.

Inputs/ holds ONNX graphs (weights dropped) that utils/export_models.py
exported from Hugging Face and torchvision models, and the manifest it
wrote with PyTorch's own count of unique parameters and hidden size.

For exports made for training, dsc's parameter count must equal PyTorch's
exactly and the hidden size must match. For exports made for inference,
dsc must say that its count is not exact (folded or merged weights) unless
the count is exact anyway.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

dsc, inputs = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(inputs, "pytorch-manifest.json")))
failures = []
checked = 0
with tempfile.TemporaryDirectory() as tmp:
    for name, model in sorted(manifest["models"].items()):
        for export, facts in sorted(model["exports"].items()):
            if "error" in facts:
                continue
            path = os.path.join(tmp, export)
            with gzip.open(os.path.join(inputs, export + ".gz")) as src, \
                    open(path, "wb") as dst:
                dst.write(src.read())
            out = subprocess.run([dsc, "inspect", "--format=json", path],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                failures.append(f"{export}: dsc failed: {out.stderr.strip()}")
                continue
            report = json.loads(out.stdout)
            params = report["parameters"]
            checked += 1
            if export.endswith("-train.onnx"):
                if params["total"] != model["parameters_unique"]:
                    failures.append(f"{export}: {params['total']} parameters, "
                                    f"PyTorch counts {model['parameters_unique']}")
                if params["trainable"] != params["total"] or params["frozen"]:
                    failures.append(f"{export}: trainable/frozen wrong: {params}")
                if not params["exact"]:
                    failures.append(f"{export}: a training export flagged "
                                    f"as inexact: {report['inference_signs']}")
                want = model["hidden_size"] or 512  # resnet18: widest conv
                if report["hidden_size"] != want:
                    failures.append(f"{export}: hidden size "
                                    f"{report['hidden_size']}, want {want}")
                if not report["modules"] or report["modules"][0]["parameters"] <= 0:
                    failures.append(f"{export}: no modules")
            else:
                exact_anyway = params["total"] == model["parameters_unique"]
                if params["exact"] and not exact_anyway:
                    failures.append(f"{export}: inference export counted "
                                    f"{params['total']} (PyTorch "
                                    f"{model['parameters_unique']}) and "
                                    f"called exact")
for f in failures:
    print("FAIL:", f)
print(f"{checked} exports checked, {len(failures)} failed")
sys.exit(1 if failures or checked < 15 else 0)
