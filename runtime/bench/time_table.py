#!/usr/bin/env python3
"""Assembles a time table (lib/Plan/TimeTables/GPU.yaml) from what
runtime/bench/time_tables.sh measured: the products' and attention's
grids as the benches print them (with the epilogues' costs), the kernel
kinds' rates from dsrun --calibration-out files, and from profiled runs
of the same plans two gaps: between two kernels of one instruction, the
profiled step's idle time there (nothing waited for) over its gaps;
between two instructions, its idle time there over those gaps, less one
kernel gap (the first kernel of an instruction counts one already); the
device's memory rate, the runs' mean of what their AdamW reached. Products
and attention come from the grids alone; a kind two runs measured takes the
first run's rate; each gap is the runs' mean. How compute and collectives
slow each other (sharing) comes from multi-GPU profiles that this command
does not run: --keep-sharing copies it from the table being replaced.
Writes the table to stdout.

    time_table.py --gpu H200 --products P.yaml --attention A.yaml \
        --library-log LOG [--calibration FILE:LOG:NAME]... [--keep-sharing OLD.yaml]
"""
import argparse
import datetime
import json
import re
import subprocess


def calibration(path):
    """The kernel rates: (kind, backward, flops, bytes)."""
    rates = []
    for line in open(path):
        m = re.match(r"\s*- \{ kind: ([\w-]+), backward: (\w+), "
                     r"flops_per_sec: (\d+), bytes_per_sec: (\d+) \}", line)
        if m:
            rates.append((m[1], m[2], int(m[3]), int(m[4])))
    return rates


def memory_rate(path):
    """The device AdamW's bandwidth a calibration measured (None: none)."""
    for line in open(path):
        m = re.match(r"memory_bytes_per_sec: (\d+)$", line.strip())
        if m:
            return int(m[1])
    return None


def profiled_kinds(text):
    """The profiled step's kernel kinds besides products and attention:
    {(kind, backward): (calls, us a call, bytes a call)}."""
    kinds = {}
    start = text.find("kernel profile of one step")
    if start < 0:
        return kinds
    for line in text[start:].splitlines()[2:]:
        m = re.match(r"\s+([\w-]+)( \(backward\))?\s+(\d+)\s+([\d.]+)\s+"
                     r"([\d.]+)\s+[\d.]+%\s+[\d.]+\s+([\d.]+)$", line)
        if not m:
            break
        kind, calls, ms, gbps = m[1], int(m[3]), float(m[4]), float(m[6])
        if kind in ("gemm", "attention", "attention-grad") or not calls:
            continue
        # GB/s times ms is MB: bytes a call.
        kinds[(kind, "true" if m[2] else "false")] = (
            calls, ms * 1e3 / calls, gbps * ms * 1e6 / calls)
    return kinds


def fit_latency(points):
    """A kind's fixed time and byte rate from (bytes, us) a call at two or
    more sizes (the smallest at most 2/3 of the largest), by least
    squares: (ns, bytes a second), or None. A negative fixed time means
    no fixed part the sizes can show."""
    sizes = [b for b, _ in points]
    if len(points) < 2 or min(sizes) > max(sizes) * 2 / 3:
        return None
    n = len(points)
    mb = sum(sizes) / n
    mt = sum(t for _, t in points) / n
    sxx = sum((b - mb) ** 2 for b in sizes)
    slope = sum((b - mb) * (t - mt) for b, t in points) / sxx
    fixed = mt - slope * mb
    if slope <= 0 or fixed <= 0:
        return None
    return round(fixed * 1e3), round(1e6 / slope)


def inside_idle(text):
    """The profiled step's idle time inside instructions: (ms, gaps)."""
    m = re.search(r"idle inside instructions: ([\d.]+) ms in (\d+) gaps", text)
    return (float(m[1]), int(m[2])) if m else None


def kernel_gap_ns(text):
    """The profiled step's idle time inside instructions over its gaps."""
    inside = inside_idle(text)
    return inside[0] * 1e6 / inside[1] if inside and inside[1] else None


def instruction_gap_ns(text, kernel_gap):
    """The profiled step's idle between instructions over those gaps,
    beyond the kernel gap their first kernels count: None where the log
    lacks the profile. (The lean step less the profile's kernels would
    count the instructions the profile leaves out, such as the optimizer
    step, as idle.)"""
    between = re.search(r"idle between instructions: ([\d.]+) ms in (\d+) gaps",
                        text)
    if not (between and int(between[2])):
        return None
    idle = float(between[1]) * 1e6 / int(between[2])
    return max(0.0, idle - (kernel_gap or 0))


def query(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--products", required=True)
    ap.add_argument("--attention", required=True)
    ap.add_argument("--library-log", required=True)
    ap.add_argument("--calibration", action="append", default=[])
    ap.add_argument("--keep-sharing")
    a = ap.parse_args()
    device = query(["nvidia-smi", "--query-gpu=name,driver_version",
                    "--format=csv,noheader"]).splitlines()[0]
    cuda = re.search(r"release ([\d.]+)", query(["nvcc", "--version"]))
    cudnn = re.search(r"cuDNN: ([^\n]*)", open(a.library_log).read())
    kinds, gaps, names, between, memory = {}, [], [], [], []
    points = {}
    for spec in a.calibration:
        path, log, name = spec.split(":")
        names.append(name)
        text = open(log).read()
        for key, (_, us, bytes_) in profiled_kinds(text).items():
            points.setdefault(key, []).append((bytes_, us))
        gap = kernel_gap_ns(text)
        step_gap = instruction_gap_ns(text, gap)
        if step_gap is not None:
            between.append(step_gap)
        for kind, backward, flops, bytes_ in calibration(path):
            # Products and attention come from the grids.
            if kind in ("gemm", "attention", "attention-grad"):
                continue
            kinds.setdefault((kind, backward), (flops, bytes_))
        if gap:
            gaps.append(gap)
        if rate := memory_rate(path):
            memory.append(rate)
    source = (f"{device} (name, driver); CUDA {cuda[1] if cuda else 'unknown'}; "
              f"{cudnn[1].strip() if cudnn else 'cuDNN unknown'}; "
              f"dsrun-gemm-bench --grid, dsrun-attention-bench --grid, "
              f"dsrun --calibration-out of {', '.join(names) or 'no run'}; "
              f"{datetime.date.today().isoformat()}")
    print(f"# Kernel times dsc plan uses on {a.gpu} without a calibration run,")
    print("# made by runtime/bench/time_tables.sh (include/dsc/Plan/TimeTables.h).")
    print(f"gpu: {a.gpu}")
    print(f"source: {json.dumps(source)}")
    print(open(a.products).read().rstrip())
    print(open(a.attention).read().rstrip())
    # A kind the profiles timed at several sizes: a fixed time a kernel
    # and the rate of its bytes beyond it.
    latencies = {}
    for key, pts in points.items():
        fitted = fit_latency(pts)
        if fitted and key in kinds:
            latencies[key] = fitted[0]
            kinds[key] = (0, fitted[1])
    if kinds:
        print("kernel_rates:")
        for (kind, backward), (flops, bytes_) in sorted(kinds.items()):
            print(f"  - {{ kind: {kind}, backward: {backward}, "
                  f"flops_per_sec: {flops}, bytes_per_sec: {bytes_} }}")
    if latencies:
        print("kernel_latencies:")
        for (kind, backward), ns in sorted(latencies.items()):
            print(f"  - {{ kind: {kind}, backward: {backward}, ns: {ns} }}")
    print(f"kernel_gap_ns: {round(sum(gaps) / len(gaps)) if gaps else 0}")
    print("instruction_gap_ns: "
          f"{round(sum(between) / len(between)) if between else 0}")
    if memory:
        print(f"memory_bytes_per_sec: {round(sum(memory) / len(memory))}")
    if a.keep_sharing:
        print(sharing_block(a.keep_sharing), end="")


def sharing_block(path):
    """The sharing: block of a table, as it stands there ('' if none)."""
    lines, inside = [], False
    for line in open(path):
        if line.startswith("sharing:"):
            inside = True
        elif inside and not line.startswith(" "):
            break
        if inside:
            lines.append(line if line.endswith("\n") else line + "\n")
    return "".join(lines)


if __name__ == "__main__":
    main()
