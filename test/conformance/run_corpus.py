#!/usr/bin/env python3
"""Runs dsc lint over the shared config corpus and checks the outcome.

valid/      real ds_config files: none may get an error, except the files
            DeepSpeed itself rejects (known-invalid.txt, shipped with the
            corpus) and the ones listed in expected.txt with the reason why.
accelerate/ real accelerate YAML configs: none may get an error.
invalid/    configs DeepSpeed rejects, from its own tests (target deepspeed,
            at the world size each .why.txt states): at least 95% must get
            an error. Conditional cases are run with the flags that state
            their condition (expected.txt).
"""
import argparse
import json
import os
import re
import subprocess
import sys


def lint(dsc, path, flags):
    out = subprocess.run([dsc, "lint", "--format=json", *flags, path],
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"dsc failed on {path} ({out.returncode}): {out.stderr}")
    doc = json.loads(out.stdout)
    return [d for f in doc["files"] for d in f["diagnostics"]]


def errors(diags):
    return [d for d in diags if d["severity"] == "error"]


def read_expectations(path):
    rejected, flags = {}, {}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("flags "):
            _, name, rest = line.split(" ", 2)
            flags[name] = rest.split("#")[0].split()
        else:
            name, reason = line.split(None, 1)
            rejected[name] = reason
    return rejected, flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--expect", required=True)
    args = ap.parse_args()
    corpus = args.corpus
    known = set()
    for line in open(os.path.join(corpus, "known-invalid.txt"), encoding="utf-8"):
        line = line.split("#")[0].strip()
        if line:
            known.add(line)
    rejected, flags = read_expectations(args.expect)
    failures = []

    # valid/
    valid = sorted(os.listdir(os.path.join(corpus, "valid")))
    clean = warned = expected_errors = 0
    for name in valid:
        diags = lint(args.dsc, os.path.join(corpus, "valid", name), [])
        errs = errors(diags)
        key = "valid/" + name
        if errs and name not in known and key not in rejected:
            failures.append(f"{key}: unexpected error: {errs[0]['message']}"
                            f" [{errs[0]['code']}] at line {errs[0]['line']}")
        elif not errs and key in rejected:
            failures.append(f"{key}: listed in expected.txt but lints clean")
        elif errs:
            expected_errors += 1
        elif diags:
            warned += 1
        else:
            clean += 1
    print(f"valid: {len(valid)} files: {clean} clean, {warned} with warnings "
          f"only, {expected_errors} rejected as expected "
          f"(known-invalid.txt or expected.txt)")

    # accelerate/
    yamls = sorted(os.listdir(os.path.join(corpus, "accelerate")))
    for name in yamls:
        errs = errors(lint(args.dsc, os.path.join(corpus, "accelerate", name), []))
        if errs:
            failures.append(f"accelerate/{name}: unexpected error: "
                            f"{errs[0]['message']} [{errs[0]['code']}]")
    print(f"accelerate: {len(yamls)} files checked")

    # invalid/
    invalid_root = os.path.join(corpus, "invalid")
    cases = []
    for folder, _, files in os.walk(invalid_root):
        for f in sorted(files):
            if f.endswith(".json"):
                cases.append(os.path.relpath(os.path.join(folder, f), invalid_root))
    caught, missed = 0, []
    for case in sorted(cases):
        why = open(os.path.join(invalid_root, case[:-5] + ".why.txt"),
                   encoding="utf-8").read()
        m = re.search(r"^world size:\s*(\d+)", why, re.M)
        world = m.group(1) if m else "1"
        extra = flags.get("invalid/" + case, [])
        diags = lint(args.dsc, os.path.join(invalid_root, case),
                     ["--target=deepspeed", f"--world-size={world}", *extra])
        if errors(diags):
            caught += 1
        else:
            missed.append(case)
    share = 100.0 * caught / len(cases)
    print(f"invalid: {caught} of {len(cases)} rejected ({share:.1f}%)")
    for case in missed:
        print(f"  not rejected: invalid/{case}")
    if share < 95.0:
        failures.append(f"invalid: only {share:.1f}% rejected, need 95%")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
