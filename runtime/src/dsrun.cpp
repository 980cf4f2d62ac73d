//===- dsrun.cpp - Execute a plan on GPUs ---------------------------------===//
//
//   dsrun -n 2 plan.bin [--steps N] [--verify]     one process per local GPU
//   torchrun/srun/mpirun ... dsrun plan.bin        join that launcher's job
//
//===----------------------------------------------------------------------===//

#include "Cli.h"
#include "Executor.h"
#include "Weights.h"
#include "Launch.h"
#include "NodeLaunch.h"
#include "Numbers.h"
#include "Preemption.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;

static const char *const Usage =
    "usage: dsrun [-n PROCESSES | --hostfile FILE] plan.bin [options]\n"
    "Runs a plan made by dsc plan: one process per GPU (-n forks them on\n"
    "this node; under torchrun, srun or mpirun each process joins the job).\n"
    "\n"
    "Launching (docs/runtime.md):\n"
    "  -n G [--nodes N --node-rank I]\n"
    "                             G ranks here; with --nodes, node I of N\n"
    "                             (rank 0 at MASTER_ADDR:MASTER_PORT)\n"
    "  --hostfile FILE            DeepSpeed's hostfile ('HOST slots=N'): a\n"
    "                             node agent per host, through ssh (forked\n"
    "                             for this machine) or mpirun\n"
    "  --num-nodes N, --num-gpus G, --include SPEC, --exclude SPEC\n"
    "                             the hostfile's hosts and GPUs to use, as\n"
    "                             the deepspeed launcher reads them\n"
    "  --launcher auto|ssh|mpirun, --master-addr A, --master-port P,\n"
    "  --ssh-port P               how the nodes are started\n"
    "  --show-launch              print the nodes and their commands only\n"
    "\n"
    "Training (docs/training.md):\n"
    "  --data TOKENS.bin          nanoGPT or llm.c token file; trains the model\n"
    "  --init MODEL               the starting weights: an HF model folder\n"
    "                             (model.safetensors or its sharded index),\n"
    "                             or one .safetensors file\n"
    "  --seed N                   data order and dropout (default 1234)\n"
    "  --save-weights PATH        the trained 16-bit weights: a folder as\n"
    "                             save_pretrained writes it (shards, index,\n"
    "                             config.json), or PATH.safetensors, one file\n"
    "  --save-dtype bf16|fp16|fp32  the type --save-weights writes: the\n"
    "                             plan's 16-bit type (the default), or fp32\n"
    "                             for the fp32 master weights\n"
    "  --max-shard-size SIZE      largest shard of a saved folder (default\n"
    "                             5GB, as transformers; 500MB, 2GiB, ...)\n"
    "  --save DIR                 checkpoints: DIR/global_stepN (per-rank\n"
    "                             shards, the weights as --save-weights\n"
    "                             writes a folder) and DIR/latest\n"
    "  --save-every N             a checkpoint every N steps (default: after\n"
    "                             the last step only)\n"
    "  --resume DIR               go on from DIR's latest checkpoint (or DIR,\n"
    "                             a global_stepN); --steps counts from step 1\n"
    "  --val-data TOKENS.bin      the validation loss: the model's forward on\n"
    "                             the file's consecutive windows, no dropout\n"
    "  --eval-every N             evaluate every N steps (default: after the\n"
    "                             last step only)\n"
    "  --eval-batches N           micro batches each rank evaluates (default:\n"
    "                             every full batch of the file)\n"
    "  --timed-steps K            of the --steps, the first K timed instruction\n"
    "                             by instruction (3); the rest run lean\n"
    "  --profile-step N           time each kernel of step N; print where the\n"
    "                             step's time went\n"
    "  --deterministic            every kernel sums in a fixed order, so that\n"
    "                             runs repeat bit for bit (attention's\n"
    "                             backward on dsrun's flash kernels)\n"
    "Without --data (docs/runtime.md):\n"
    "  --compute synthetic|none   GEMMs and known gradients, or gradients only\n"
    "  --verify                   check every update bit for bit on the host\n"
    "  --lean-steps N             untimed steps after the measured ones (3)\n"
    "Both:\n"
    "  --graph on|off             run the lean steps as one CUDA graph\n"
    "  --steps N                  steps to run (3)\n"
    "  --json FILE                one JSON line per step (%r: per rank)\n"
    "  --trace FILE               the last timed step, measured and as\n"
    "                             planned, as a Chrome trace (%r: per rank)\n"
    "  --calibration-out FILE     write the measured figures for dsc plan\n"
    "                             (with --data: per-kind kernel rates from\n"
    "                             the --profile-step, the last by default)\n"
    "  --nvme-path DIR            where NVMe offload keeps its swap files\n"
    "  --timeout SECONDS          give up on a stuck step (300)\n"
    "  --term-timeout SECONDS     on SIGTERM or SIGINT: finish the step, save\n"
    "                             (--save), exit 75; exit 124 if that takes\n"
    "                             longer (25)\n"
    "  --host-threads N           threads of the host optimizer (default:\n"
    "                             the cores the process is bound to, or\n"
    "                             the node's over its processes)\n"
    "  --comm-priority high|normal, --comm-sms N, --comm-min-ctas N,\n"
    "  --comm-cta-policy default|efficiency|zero\n"
    "                             how collectives share the GPU (zero:\n"
    "                             all-gathers on the copy engines)\n"
    "  --dry-run                  set up and stop before the first step\n"
    "  --help, --version\n";

static int usage(const char *Message) {
  fprintf(stderr, "dsrun: %s\n%s", Message, Usage);
  return 2;
}

int main(int argc, char **argv) {
  if (helpOrVersion(argc, argv, "dsrun", Usage))
    return 0;
  RunOptions Options;
  std::string Error;
  uint32_t TimedSteps = 3;
  bool LeanStepsGiven = false, TimedStepsGiven = false;
  std::string PlanPath, SaveDType;
  // The ranks get the same arguments without the launch flags.
  std::vector<std::string> ChildArgs(argv, argv + argc);
  LaunchRequest Launch;
  if (!takeLaunchFlags(ChildArgs, Launch, Error))
    return usage(Error.c_str());
  for (size_t I = 1; I < ChildArgs.size(); ++I) {
    const std::string &A = ChildArgs[I];
    long V = 0;
    auto Value = [&](long Min, long Max) {
      if (I + 1 >= ChildArgs.size() ||
          !parseCount(ChildArgs[I + 1], Min, Max, V))
        return false;
      ++I;
      return true;
    };
    if (A == "--steps") {
      if (!Value(1, 100000))
        return usage("--steps needs a positive count");
      Options.Steps = uint32_t(V);
    } else if (A == "--lean-steps") {
      if (!Value(0, 1000))
        return usage("--lean-steps needs a count up to 1000");
      Options.LeanSteps = uint32_t(V);
      LeanStepsGiven = true;
    } else if (A == "--timed-steps") {
      if (!Value(1, 100000))
        return usage("--timed-steps needs a positive count");
      TimedSteps = uint32_t(V);
      TimedStepsGiven = true;
    } else if (A == "--profile-step") {
      if (!Value(1, 100000))
        return usage("--profile-step needs a step number");
      Options.ProfileStep = uint32_t(V);
    } else if (A == "--timeout") {
      if (!Value(1, 86400))
        return usage("--timeout needs seconds");
      Options.TimeoutSeconds = int(V);
    } else if (A == "--term-timeout") {
      if (!Value(1, 86400))
        return usage("--term-timeout needs seconds");
      Options.TermTimeoutSeconds = unsigned(V);
    } else if (A == "--host-threads") {
      if (!Value(1, 1024))
        return usage("--host-threads needs a count");
      Options.HostThreads = unsigned(V);
    } else if (A == "--verify") {
      Options.Verify = true;
    } else if (A == "--comm-priority") {
      if (I + 1 >= ChildArgs.size() ||
          (ChildArgs[I + 1] != "high" && ChildArgs[I + 1] != "normal"))
        return usage("--comm-priority needs 'high' or 'normal'");
      Options.CommPriority = ChildArgs[++I] == "high";
    } else if (A == "--graph") {
      if (I + 1 >= ChildArgs.size() ||
          (ChildArgs[I + 1] != "on" && ChildArgs[I + 1] != "off"))
        return usage("--graph needs 'on' or 'off'");
      Options.Graph = ChildArgs[++I] == "on";
    } else if (A == "--comm-sms") {
      if (!Value(0, 1024))
        return usage("--comm-sms needs a count of SMs");
      Options.CommSMs = unsigned(V);
    } else if (A == "--comm-min-ctas") {
      if (!Value(1, 64))
        return usage("--comm-min-ctas needs a count of CTAs from 1 to 64");
      Options.CommMinCTAs = unsigned(V);
    } else if (A == "--comm-cta-policy") {
      std::optional<plan::CommCtaPolicy> Policy =
          I + 1 < ChildArgs.size()
              ? plan::enumNamed<plan::CommCtaPolicy>(ChildArgs[I + 1])
              : std::nullopt;
      if (!Policy)
        return usage("--comm-cta-policy needs 'default', 'efficiency' or "
                     "'zero'");
      Options.CommCtaPolicy = *Policy;
      Options.CommCtaPolicyGiven = true;
      ++I;
    } else if (A == "--dry-run") {
      Options.DryRun = true;
    } else if (A == "--deterministic") {
      Options.Deterministic = true;
    } else if (A == "--compute") {
      if (I + 1 >= ChildArgs.size())
        return usage("--compute needs a mode");
      const std::string &Mode = ChildArgs[++I];
      if (Mode != "synthetic" && Mode != "none")
        return usage("--compute: 'synthetic' (GEMMs of the ops' shapes and "
                     "known gradients) or 'none' (known gradients only); "
                     "--data trains the model itself");
      Options.Compute = Mode == "synthetic"
                            ? RunOptions::ComputeMode::Synthetic
                            : RunOptions::ComputeMode::None;
    } else if (A == "--data" || A == "--init" || A == "--save-weights" ||
               A == "--save" || A == "--resume" || A == "--val-data") {
      if (I + 1 >= ChildArgs.size())
        return usage((A + " needs a " +
                      (A == "--save" || A == "--resume" ? "directory" : "file"))
                         .c_str());
      (A == "--data"           ? Options.DataPath
       : A == "--init"         ? Options.InitPath
       : A == "--save-weights" ? Options.SaveWeightsPath
       : A == "--save"         ? Options.SaveDir
       : A == "--val-data"     ? Options.ValDataPath
                               : Options.ResumeDir) = ChildArgs[++I];
    } else if (A == "--save-dtype") {
      if (I + 1 >= ChildArgs.size() ||
          (ChildArgs[I + 1] != "bf16" && ChildArgs[I + 1] != "fp16" &&
           ChildArgs[I + 1] != "fp32"))
        return usage("--save-dtype needs bf16, fp16 or fp32");
      SaveDType = ChildArgs[++I];
    } else if (A == "--max-shard-size") {
      std::optional<uint64_t> Size =
          I + 1 < ChildArgs.size() ? parseShardSize(ChildArgs[I + 1])
                                   : std::nullopt;
      if (!Size)
        return usage("--max-shard-size needs a size: bytes, or a number "
                     "with KB, MB, GB (powers of 1000) or KiB, MiB, GiB");
      Options.MaxShardBytes = *Size;
      ++I;
    } else if (A == "--save-every") {
      if (!Value(1, 1000000))
        return usage("--save-every needs a positive count of steps");
      Options.SaveEvery = uint32_t(V);
    } else if (A == "--eval-every" || A == "--eval-batches") {
      if (!Value(1, 1000000000))
        return usage((A + " needs a positive count").c_str());
      (A == "--eval-every" ? Options.EvalEvery : Options.EvalBatches) =
          uint32_t(V);
    } else if (A == "--seed") {
      if (I + 1 >= ChildArgs.size())
        return usage("--seed needs a number");
      char *End = nullptr;
      Options.Seed = strtoull(ChildArgs[++I].c_str(), &End, 10);
      if (!*ChildArgs[I].c_str() || *End)
        return usage("--seed needs a non-negative integer");
      Options.SeedGiven = true;
    } else if (A == "--nvme-path") {
      if (I + 1 >= ChildArgs.size())
        return usage("--nvme-path needs a directory");
      Options.NvmePath = ChildArgs[++I];
    } else if (A == "--json" || A == "--calibration-out" || A == "--trace") {
      if (I + 1 >= ChildArgs.size())
        return usage((A + " needs a file").c_str());
      (A == "--json"    ? Options.JsonLog
       : A == "--trace" ? Options.TracePath
                        : Options.CalibrationOut) = ChildArgs[++I];
    } else if (!A.empty() && A[0] == '-') {
      return usage(("unknown option " + A).c_str());
    } else if (PlanPath.empty()) {
      PlanPath = A;
    } else {
      return usage("one plan file only");
    }
  }
  if (PlanPath.empty())
    return usage("no plan file");
  if (Options.SaveEvery && Options.SaveDir.empty())
    return usage("--save-every needs --save DIR");
  if (!SaveDType.empty() && Options.SaveWeightsPath.empty())
    return usage("--save-dtype needs --save-weights PATH");
  if ((Options.EvalEvery || Options.EvalBatches) && Options.ValDataPath.empty())
    return usage("--eval-every and --eval-batches need --val-data FILE");
  if (!Options.DataPath.empty()) {
    if (Options.InitPath.empty())
      return usage("--data needs --init MODEL: the model's starting "
                   "weights (an HF model folder or model.safetensors of the "
                   "exported model)");
    if (Options.Verify)
      return usage("--verify checks the synthetic modes bit for bit; with "
                   "--data, compare losses with runtime/bench/train_compare.sh");
    if (LeanStepsGiven)
      return usage("with --data, --steps counts every step and "
                   "--timed-steps K says how many are timed instruction by "
                   "instruction; the rest run lean");
    if (Options.ProfileStep > Options.Steps)
      return usage("--profile-step is beyond the last step (--steps)");
    Options.Compute = RunOptions::ComputeMode::Real;
    // Events around every instruction cost the step time (docs/runtime.md):
    // only the first steps are timed in detail, every step trains.
    uint32_t Total = Options.Steps;
    // The kernel rates dsc plan learns come from one profiled step.
    if (!Options.CalibrationOut.empty() && !Options.ProfileStep)
      Options.ProfileStep = Total;
    Options.Steps = std::min(Total, TimedSteps);
    Options.LeanSteps = Total - Options.Steps;
  } else if (!Options.InitPath.empty() || !Options.SaveWeightsPath.empty() ||
             !Options.SaveDir.empty() || !Options.ResumeDir.empty() ||
             !Options.ValDataPath.empty() || Options.ProfileStep ||
             TimedStepsGiven) {
    return usage("--init, --save-weights, --save, --resume, --val-data, "
                 "--timed-steps and --profile-step train with --data");
  }

  if (Launch.Processes && !getenv("DSRUN_CHILD"))
    return launchLocal(Launch.Processes, ChildArgs, Launch.Place);

  bool Unreadable = false;
  std::optional<plan::Plan> P = loadPlanFile(PlanPath, Error, Unreadable);
  if (!P) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return Unreadable ? 2 : 1;
  }
  if (!SaveDType.empty()) {
    // The 16-bit weights the model computes with, or the fp32 masters the
    // optimizer keeps.
    std::string Computes = plan::enumName(P->Settings.ParamDType);
    if (SaveDType == "fp32" && P->Settings.ParamDType != plan::DType::F32) {
      if (P->Settings.MasterDType != plan::DType::F32)
        return usage(("--save-dtype fp32: the plan keeps its master weights "
                      "in " + std::string(plan::enumName(
                                  P->Settings.MasterDType)) +
                      " (bf16_master_weights_and_grads); they save as " +
                      Computes)
                         .c_str());
      Options.SaveMasters = true;
    } else if (SaveDType != "fp32" && SaveDType != Computes) {
      return usage(("--save-dtype " + SaveDType + ": the plan computes in " +
                    Computes + "; its weights save as " + Computes +
                    (Computes == "fp32" ? "" : " or, from the masters, fp32"))
                       .c_str());
    }
  }
  if (!Launch.Hostfile.Hostfile.empty())
    return launchNodes(Launch.Hostfile, P->Settings.Nodes,
                       P->Settings.GpusPerNode, ChildArgs);
  // A rank: SIGTERM stops it after the step in flight (Preemption.h).
  catchStopSignals(Options.TermTimeoutSeconds);
  std::optional<ProcessInfo> Process = processFromEnvironment(Error);
  if (!Process) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return 2;
  }
  // NCCL's CTA policy: the plan's, whose times assume it, or the flag's.
  if (!Options.CommCtaPolicyGiven)
    Options.CommCtaPolicy = P->Settings.CtaPolicy;
  else if (Options.CommCtaPolicy != P->Settings.CtaPolicy &&
           Process->Rank == 0)
    fprintf(stderr,
            "dsrun: --comm-cta-policy %s, where the plan's times assume %s\n",
            plan::enumName(Options.CommCtaPolicy),
            plan::enumName(P->Settings.CtaPolicy));
  Executor E(*P, *Process, Options);
  return leaveJob(E.run());
}
