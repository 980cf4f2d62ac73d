"""A frontier plan's estimate against DeepSpeed's own arithmetic.

    frontier.test.py MODEL.json CONFIG.json ESTIMATE.json SEQ ckpt|plain

MODEL.json is dsc inspect --format json of the model, ESTIMATE.json dsc
estimate --format json of the plan. Prints the peak a rank needs, its three
largest categories and the verdict, then checks each category of the
fullest rank against what DeepSpeed allocates for the config, derived here
from the model's tensors alone (DeepSpeed's stage_1_and_2.py and stage3.py
arithmetic, not dsc's code):

  params16        stage 3: each tensor's shard, ceil(n / ranks) elements,
                  or below the persistence threshold the whole tensor, as
                  the all-gather of its updated shards writes it (ranks x
                  ceil(n / ranks)); stage 1/2: every parameter, the flat
                  buffer padded to 2 x ranks (nccl_start_alignment_factor);
                  2 bytes each
  master and      the partition, 4 + 2 x 4 bytes an element, where the
  Adam states     optimizer lives (device, host or NVMe)
  reduce buckets  reduce_bucket_size 16-bit elements in each of the bucket
                  buffers (2 under overlap_comm, else 1)
  grads           at most the 16-bit partition (stage 2: the gradients
                  overlapping it) and the gradients reduced from autograd's
                  storage in flight: 3 (max_param_reduce_events + 1) and
                  the one being made, plus one waited for, of the largest
  gathered        at most 2 bytes x (stage3_max_live_parameters +
                  stage3_prefetch_bucket_size) and one more largest module
  activations     at least each layer's checkpointed input (B x T x hidden,
                  2 bytes); at most that and one layer's working set and
                  the logits and their gradient
"""
import json
import math
import sys

GiB = 2 ** 30
model = json.load(open(sys.argv[1]))
config = json.load(open(sys.argv[2]))
est = json.load(open(sys.argv[3]))
zero = config.get("zero_optimization", {})
stage = zero.get("stage", 0)
ranks = est["world_size"]
micro, seq = est["micro_batch"], int(sys.argv[4])
ckpt = sys.argv[5] == "ckpt"
hidden, layers = model["hidden_size"], model["layers"]
tensors = [t for t in model["initializers"] if t["role"] == "parameter" and not t["frozen"]]
sizes = [math.prod(t["dims"]) for t in tensors]
total = sum(sizes)
largest = max(sizes)
modules = {}
for t, n in zip(tensors, sizes):
    modules[t["module"]] = modules.get(t["module"], 0) + n
largest_module = max(modules.values())
vocab = max(t["dims"][0] for t in tensors if len(t["dims"]) == 2)
ffn = max(min(t["dims"]) for t in tensors if len(t["dims"]) == 2 and max(t["dims"]) != vocab
          and max(t["dims"]) != hidden) if layers else hidden
threshold = zero.get("stage3_param_persistence_threshold", 100000)
rbs = int(float(zero.get("reduce_bucket_size", 5e8)))
max_live = int(float(zero.get("stage3_max_live_parameters", 1e9)))
prefetch = int(float(zero.get("stage3_prefetch_bucket_size", 5e7)))
overlap = zero.get("overlap_comm", stage == 3)
offload = zero.get("offload_optimizer", {}).get("device", "none")

rank = max(est["ranks"], key=lambda r: r["device_peak_bytes"])
dev, host = rank["by_category"], rank.get("host_by_category", {})
peak = rank["device_peak_bytes"]
top = sorted(((b, c) for c, b in dev.items() if c not in
              ("cuda_context", "cublas_workspace", "nccl_buffers", "arena_fragmentation")),
             reverse=True)[:3]
fit = est.get("fit", {})
verdict = "fits" if fit.get("fits") else "does not fit"
print(f"peak {peak / GiB:.1f} GiB; largest " +
      ", ".join(f"{c} {b / GiB:.1f}" for b, c in top) + f"; {verdict} {fit.get('gpu', '')}")

problems = []


def near(name, have, want, slack):
    if abs(have - want) > slack:
        problems.append(f"{name}: {have} bytes, DeepSpeed's arithmetic gives {want}")


def within(name, have, low, high):
    if not low <= have <= high:
        problems.append(f"{name}: {have} bytes, outside [{low}, {high}]")


if stage == 3:
    shards = [-(-n // ranks) * (ranks if n <= threshold else 1) for n in sizes]
    near("params16", dev.get("params16", 0), 2 * sum(shards), 2 * 4096)
    partition = sum(-(-n // ranks) for n in sizes)
else:
    padded = -(-total // (2 * ranks)) * 2 * ranks
    near("params16", dev.get("params16", 0), 2 * padded, 2 * 4096)
    partition = padded // ranks
states = dev.get("master_params", 0) + dev.get("optimizer_states", 0)
if offload == "cpu":
    states = host.get("master_params", 0) + host.get("optimizer_states", 0)
if offload == "nvme":
    states = rank.get("nvme_bytes", 0)
near("master and Adam states", states, 12 * partition, 12 * partition // 100)
buffers = 2 if overlap else 1
near("reduce buckets", dev.get("reduce_buckets", 0), buffers * 2 * rbs, 0)
in_flight = 5 * 2 * largest
own = 2 * partition if offload == "none" else 0
if stage < 3:
    own = 2 * (partition + largest) * 2 if offload == "none" else 0
within("grads", dev.get("grads", 0), 0, own + in_flight)
if stage == 3:
    within("gathered params", dev.get("gathered_params", 0), 0,
           2 * (max_live + prefetch) + 2 * largest_module)
checkpoints = layers * micro * seq * hidden * 2
working = micro * seq * (40 * hidden + 12 * ffn) * 2 + 2 * micro * seq * vocab * 2
low = checkpoints if ckpt else 4 * checkpoints
high = checkpoints + working if ckpt else layers * working
within("activations", dev.get("activations", 0), low, high)
print("DeepSpeed's arithmetic: " + ("agrees" if not problems else "; ".join(problems)))
