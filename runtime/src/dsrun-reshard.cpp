//===- dsrun-reshard.cpp - A checkpoint for another plan ------------------===//
//
//   dsrun-reshard CHECKPOINT NEW_PLAN.bin OUT_DIR [--from-plan PLAN.bin]
//   dsrun-reshard CHECKPOINT --fp32-weights OUT[.safetensors] [--max-shard-size SIZE]
//                 [--from-plan PLAN.bin]
//   dsrun-reshard --check CHECKPOINT [--from-plan PLAN.bin]
//
// Host-only: no GPU needed (Reshard.h says what it moves).
//
//===----------------------------------------------------------------------===//

#include "Arena.h"
#include "Checkpoint.h"
#include "Cli.h"
#include "Reshard.h"
#include "Weights.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;

static const char *const Usage =
    "usage: dsrun-reshard CHECKPOINT NEW_PLAN.bin OUT_DIR [--from-plan "
    "PLAN.bin]\n"
    "Rewrites a dsrun checkpoint for another plan of the same model: another\n"
    "world size, ZeRO stage or offload. Every rank's shard of NEW_PLAN is\n"
    "built from the checkpoint's shards: the parameters, fp32 master\n"
    "weights and Adam moments moved exactly, the step, scheduler position,\n"
    "seed and loss scale kept. Then: dsrun NEW_PLAN.bin --resume OUT_DIR.\n"
    "\n"
    "   or: dsrun-reshard CHECKPOINT --fp32-weights OUT [--max-shard-size 5GB]\n"
    "Writes the checkpoint's fp32 master weights, every tensor whole (what\n"
    "DeepSpeed's zero_to_fp32.py gives), under the names of the\n"
    "checkpoint's weights: a model folder as save_pretrained writes it\n"
    "(shards, index, config.json), or OUT.safetensors, one file.\n"
    "\n"
    "   or: dsrun-reshard --check CHECKPOINT\n"
    "Checks a checkpoint: every rank's shard there, of one step, written by\n"
    "its plan, every byte matching its checksum. Exit 0 when it is whole.\n"
    "\n"
    "  CHECKPOINT          a --save directory (its latest) or a global_stepN\n"
    "  --from-plan PLAN    the plan that wrote the checkpoint (default: the\n"
    "                      plan.bin dsrun saves beside the shards)\n"
    "  --help, --version\n";

static int fail(const std::string &Message) {
  fprintf(stderr, "dsrun-reshard: %s\n", Message.c_str());
  return 1;
}

int main(int argc, char **argv) {
  if (helpOrVersion(argc, argv, "dsrun-reshard", Usage))
    return 0;
  std::vector<std::string> Positional;
  std::string FromPlanPath, Fp32Path;
  uint64_t MaxShardBytes = 5000000000ull; // transformers' default
  bool Check = false;
  for (int I = 1; I < argc; ++I) {
    std::string A = argv[I];
    if (A == "--from-plan") {
      if (I + 1 >= argc)
        return fail("--from-plan needs the plan that wrote the checkpoint");
      FromPlanPath = argv[++I];
    } else if (A == "--check") {
      Check = true;
    } else if (A == "--fp32-weights") {
      if (I + 1 >= argc)
        return fail("--fp32-weights needs the folder or safetensors file to "
                    "write");
      Fp32Path = argv[++I];
    } else if (A == "--max-shard-size") {
      std::optional<uint64_t> Size =
          I + 1 < argc ? parseShardSize(argv[I + 1]) : std::nullopt;
      if (!Size)
        return fail("--max-shard-size needs a size: bytes, or a number with "
                    "KB, MB, GB (powers of 1000) or KiB, MiB, GiB");
      MaxShardBytes = *Size;
      ++I;
    } else if (A.size() > 1 && A[0] == '-') {
      fprintf(stderr, "dsrun-reshard: unknown option '%s'\n%s", A.c_str(),
              Usage);
      return 1;
    } else {
      Positional.push_back(A);
    }
  }
  if (Check && !Fp32Path.empty())
    return fail("--check and --fp32-weights: one at a time");
  if (Positional.size() != (Fp32Path.empty() && !Check ? 3u : 1u)) {
    fputs(Usage, stderr);
    return 1;
  }
  std::string Error;
  std::string FromDir = checkpointToResume(Positional[0], Error);
  if (FromDir.empty())
    return fail(Error);
  if (FromPlanPath.empty())
    FromPlanPath = checkpointPlanPath(FromDir);
  bool Unreadable = false;
  std::optional<plan::Plan> From = loadPlanFile(FromPlanPath, Error, Unreadable);
  if (!From)
    return fail(Unreadable && FromPlanPath == checkpointPlanPath(FromDir)
                    ? Error + " (a checkpoint written before dsrun saved its "
                              "plan beside it: give --from-plan)"
                    : Error);
  ReshardReport Report;
  if (Check) {
    if (!checkCheckpoint(FromDir, *From, Report, Error))
      return fail(Error);
    printf("dsrun-reshard: %s: step %u, %u shard(s), %.1f MiB, every "
           "checksum matches\n",
           FromDir.c_str(), Report.Step, From->Settings.WorldSize,
           Report.BytesRead / 1048576.0);
    return 0;
  }
  if (!Fp32Path.empty()) {
    if (!writeFp32Weights(FromDir, *From, Fp32Path, MaxShardBytes, Report,
                          Error))
      return fail(Error);
    printf("dsrun-reshard: step %u's fp32 weights, %zu tensors (%.1f MiB) in "
           "%s\n",
           Report.Step, From->Tensors.size(), Report.BytesWritten / 1048576.0,
           Fp32Path.c_str());
    return 0;
  }
  std::optional<plan::Plan> To = loadPlanFile(Positional[1], Error, Unreadable);
  if (!To)
    return fail(Error);
  // A checkpoint for a plan dsrun would refuse to run helps nobody.
  if (std::string Why = checkRunnable(*To); !Why.empty())
    return fail(Positional[1] + ": " + Why);
  if (!reshardCheckpoint(FromDir, *From, *To, Positional[2], Report, Error))
    return fail(Error);
  printf("dsrun-reshard: step %u's checkpoint, %u rank(s) at ZeRO %u -> %u "
         "rank(s) at ZeRO %u in %s (%.1f MiB read, %.1f MiB written)\n",
         Report.Step, From->Settings.WorldSize, From->Settings.ZeroStage,
         To->Settings.WorldSize, To->Settings.ZeroStage,
         Positional[2].c_str(), Report.BytesRead / 1048576.0,
         Report.BytesWritten / 1048576.0);
  return 0;
}
