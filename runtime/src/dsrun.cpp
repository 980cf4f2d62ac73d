//===- dsrun.cpp - Execute a plan on GPUs ---------------------------------===//
//
//   dsrun -n 2 plan.bin [--steps N] [--verify]     one process per local GPU
//   torchrun/srun/mpirun ... dsrun plan.bin        join that launcher's job
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "Launch.h"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;

static int usage(const char *Message) {
  fprintf(stderr,
          "dsrun: %s\n"
          "usage: dsrun [-n PROCESSES] plan.bin [--steps N] [--verify] "
          "[--data TOKENS.bin --init WEIGHTS.safetensors [--seed N] "
          "[--save-weights FILE]] "
          "[--compute synthetic|none] [--json FILE] [--calibration-out FILE] "
          "[--timeout SECONDS] [--host-threads N] [--nvme-path DIR] "
          "[--comm-priority high|normal] [--comm-sms N] [--comm-min-ctas N] "
          "[--lean-steps N] [--graph on|off] "
          "[--dry-run]\n",
          Message);
  return 2;
}

static bool number(const char *Text, long Min, long Max, long &Out) {
  char *End = nullptr;
  Out = strtol(Text, &End, 10);
  return Text && *Text && !*End && Out >= Min && Out <= Max;
}

int main(int argc, char **argv) {
  RunOptions Options;
  std::string PlanPath;
  long Processes = 0;
  // The children get the same arguments without -n.
  std::vector<std::string> ChildArgs = {argv[0]};
  for (int I = 1; I < argc; ++I) {
    if (std::string(argv[I]) == "-n") {
      if (I + 1 >= argc || !number(argv[I + 1], 1, 64, Processes))
        return usage("-n needs a process count from 1 to 64");
      ++I;
      continue;
    }
    ChildArgs.push_back(argv[I]);
  }
  for (size_t I = 1; I < ChildArgs.size(); ++I) {
    const std::string &A = ChildArgs[I];
    long V = 0;
    auto Value = [&](long Min, long Max) {
      if (I + 1 >= ChildArgs.size() ||
          !number(ChildArgs[I + 1].c_str(), Min, Max, V))
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
    } else if (A == "--timeout") {
      if (!Value(1, 86400))
        return usage("--timeout needs seconds");
      Options.TimeoutSeconds = int(V);
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
    } else if (A == "--dry-run") {
      Options.DryRun = true;
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
    } else if (A == "--data" || A == "--init" || A == "--save-weights") {
      if (I + 1 >= ChildArgs.size())
        return usage((A + " needs a file").c_str());
      (A == "--data"   ? Options.DataPath
       : A == "--init" ? Options.InitPath
                       : Options.SaveWeightsPath) = ChildArgs[++I];
    } else if (A == "--seed") {
      if (I + 1 >= ChildArgs.size())
        return usage("--seed needs a number");
      char *End = nullptr;
      Options.Seed = strtoull(ChildArgs[++I].c_str(), &End, 10);
      if (!*ChildArgs[I].c_str() || *End)
        return usage("--seed needs a non-negative integer");
    } else if (A == "--nvme-path") {
      if (I + 1 >= ChildArgs.size())
        return usage("--nvme-path needs a directory");
      Options.NvmePath = ChildArgs[++I];
    } else if (A == "--json" || A == "--calibration-out") {
      if (I + 1 >= ChildArgs.size())
        return usage((A + " needs a file").c_str());
      (A == "--json" ? Options.JsonLog : Options.CalibrationOut) =
          ChildArgs[++I];
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
  if (!Options.DataPath.empty()) {
    Options.Compute = RunOptions::ComputeMode::Real;
    Options.LeanSteps = 0; // Every step trains and reports its loss.
  } else if (!Options.InitPath.empty() || !Options.SaveWeightsPath.empty()) {
    return usage("--init and --save-weights train with --data");
  }

  if (Processes && !getenv("DSRUN_CHILD")) {
    int Port = 29500 + int(std::random_device()() % 2000);
    if (const char *P = getenv("MASTER_PORT"))
      Port = atoi(P);
    return launchLocal(int(Processes), ChildArgs, Port, 10);
  }

  std::string Error;
  bool Unreadable = false;
  std::optional<plan::Plan> P = loadPlanFile(PlanPath, Error, Unreadable);
  if (!P) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return Unreadable ? 2 : 1;
  }
  std::optional<ProcessInfo> Process = processFromEnvironment(Error);
  if (!Process) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return 2;
  }
  Executor E(*P, *Process, Options);
  return leaveJob(E.run());
}
