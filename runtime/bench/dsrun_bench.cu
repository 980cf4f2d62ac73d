//===- dsrun_bench.cu - Raw NCCL and copy-engine figures to compare with --===//
//
// Prints, in one run on the same machine dsrun ran on:
//   the bus bandwidth raw NCCL reaches for all-reduce, reduce-scatter and
//   all-gather from 1 MiB to 1 GiB (nccl-tests' convention), and
//   pinned and pageable host<->device copy bandwidth.
// dsrun's per-step report gives the same figures for the plan's own
// collectives and copies; docs/runtime.md sets them side by side.
//
// With --plan, it also issues every collective of that plan's step, the
// very calls dsrun makes (Collectives.h), one group at a time with nothing
// else running: raw NCCL at exactly the plan's message sizes; then the same
// calls again beside the plan's own GEMMs, which a low-priority stream
// runs over and over while they go (an overlapped collective shares the
// SMs with compute, in dsrun as in any runtime); and each of its
// host<->device copies, one at a time, at the plan's sizes.
//
//   dsrun-bench -n 2 [--plan plan.bin]
//   dsrun-bench --plan plan.bin --workload FILE
//
// The second form needs no GPU: it writes the plan's step as the GEMMs and
// the collective calls dsrun-bench runs, one per line, for
// torch_peer.py to run the same work through PyTorch.
//
//===----------------------------------------------------------------------===//

#include "Cli.h"
#include "Agreement.h"
#include "Collectives.h"
#include "Gemms.h"
#include "NcclGroup.h"
#include "Launch.h"
#include "NodeLaunch.h"
#include "Numbers.h"
#include "dsc/PlanFacts.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace dsrun;

#define CHECK(Call)                                                            \
  do {                                                                         \
    if (auto E_ = (Call); E_ != 0) {                                           \
      fprintf(stderr, "dsrun-bench: %s failed (%d)\n", #Call, int(E_));        \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/// Milliseconds per copy of Bytes between Host and Device (Kind gives the
/// direction) on stream S: Warm copies first, then the mean of Reps.
static float copyMs(void *Host, void *Device, size_t Bytes,
                    cudaMemcpyKind Kind, int Warm, int Reps, cudaStream_t S) {
  bool ToDevice = Kind == cudaMemcpyHostToDevice;
  auto Copy = [&] {
    CHECK(cudaMemcpyAsync(ToDevice ? Device : Host, ToDevice ? Host : Device,
                          Bytes, Kind, S));
  };
  cudaEvent_t A, B;
  cudaEventCreate(&A);
  cudaEventCreate(&B);
  for (int W = 0; W < Warm; ++W)
    Copy();
  cudaEventRecord(A, S);
  for (int R = 0; R < Reps; ++R)
    Copy();
  cudaEventRecord(B, S);
  CHECK(cudaEventSynchronize(B));
  float Ms = 0;
  cudaEventElapsedTime(&Ms, A, B);
  cudaEventDestroy(A);
  cudaEventDestroy(B);
  return Ms / Reps;
}

static double copyBandwidth(void *Host, void *Device, size_t Bytes,
                            cudaMemcpyKind Kind) {
  return double(Bytes) / (copyMs(Host, Device, Bytes, Kind, 2, 5, 0) / 1e3) /
         1e9;
}

/// Times each host<->device copy of a plan's step at the plan's size,
/// between pinned memory and the arena, with every rank copying at once as
/// in dsrun: first each copy alone, then all copies of each direction back
/// to back with the two directions at the same time (in dsrun gradients
/// leave while parameters arrive, and the two directions share the host's
/// memory and the PCIe link's credits).
static void planCopies(const dsc::plan::Plan &P, const Arena &L, char *Arena,
                       cudaStream_t S) {
  namespace plan = dsc::plan;
  uint64_t ArenaBytes = P.Estimates.Ranks[L.Class].DeviceArenaBytes;
  // Per direction (0: host to device, 1: device to host), the copy sizes.
  std::vector<uint64_t> Sizes[2];
  for (const plan::Instruction &In : P.Program) {
    if (In.Kind != plan::InstrKind::Transfer)
      continue;
    const plan::Transfer &X = P.Transfers[In.Arg];
    bool ToDevice = X.Kind == plan::TransferKind::HostToDevice;
    if (!ToDevice && X.Kind != plan::TransferKind::DeviceToHost)
      continue;
    // What dsrun copies: a unit's fetch is this rank's chunk (the plan
    // counts the page padding an NVMe-fed unit has in its aio buffer).
    uint64_t N = X.Point == plan::TransferPoint::BeforeGather
                     ? L.elems(P.Places.Units[X.Owner].Send) *
                           plan::dtypeBytes(P.Settings.ParamDType)
                     : X.Bytes;
    Sizes[ToDevice ? 0 : 1].push_back(std::min(N, ArenaBytes));
  }
  uint64_t Largest = 0;
  for (auto &Dir : Sizes)
    for (uint64_t N : Dir)
      Largest = std::max(Largest, N);
  if (!Largest)
    return;
  char *Host[2] = {nullptr, nullptr};
  for (char *&H : Host)
    CHECK(cudaHostAlloc(reinterpret_cast<void **>(&H), Largest,
                        cudaHostAllocDefault));
  const cudaMemcpyKind Kinds[2] = {cudaMemcpyHostToDevice,
                                   cudaMemcpyDeviceToHost};
  double Bytes[2] = {0, 0}, Alone[2] = {0, 0};
  double BothBytes[2] = {0, 0}, Both[2] = {0, 0};
  for (int D = 0; D < 2; ++D)
    for (uint64_t N : Sizes[D]) {
      Bytes[D] += double(N);
      Alone[D] += copyMs(Host[D], Arena, N, Kinds[D], 1, 1, S);
    }
  // Both directions together: the device side of the two directions is
  // the arena's two halves, so that neither reads what the other writes.
  cudaStream_t Dir[2];
  cudaEvent_t Begin[2], End[2];
  for (int D = 0; D < 2; ++D) {
    CHECK(cudaStreamCreateWithFlags(&Dir[D], cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&Begin[D]));
    CHECK(cudaEventCreate(&End[D]));
  }
  uint64_t Half = ArenaBytes / 2;
  CHECK(cudaDeviceSynchronize());
  for (int D = 0; D < 2; ++D) {
    cudaEventRecord(Begin[D], Dir[D]);
    char *Device = Arena + (D ? Half : 0);
    for (uint64_t N : Sizes[D]) {
      N = std::min(N, Half);
      BothBytes[D] += double(N);
      CHECK(cudaMemcpyAsync(D ? Host[D] : Device, D ? Device : Host[D], N,
                            Kinds[D], Dir[D]));
    }
    cudaEventRecord(End[D], Dir[D]);
  }
  for (int D = 0; D < 2; ++D) {
    CHECK(cudaEventSynchronize(End[D]));
    float Ms = 0;
    CHECK(cudaEventElapsedTime(&Ms, Begin[D], End[D]));
    Both[D] = Ms;
    cudaEventDestroy(Begin[D]);
    cudaEventDestroy(End[D]);
    CHECK(cudaStreamDestroy(Dir[D]));
  }
  auto Rate = [](double Bytes, double Ms) {
    return Ms > 0 ? Bytes / Ms / 1e6 : 0;
  };
  if (L.Rank == 0) {
    printf("the plan's copies alone: in %.1f MiB at %.1f GB/s, out %.1f MiB "
           "at %.1f GB/s\n",
           Bytes[0] / (1 << 20), Rate(Bytes[0], Alone[0]),
           Bytes[1] / (1 << 20), Rate(Bytes[1], Alone[1]));
    if (Bytes[0] > 0 && Bytes[1] > 0)
      printf("the plan's copies both ways at once: in %.1f MiB at %.1f GB/s, "
             "out %.1f MiB at %.1f GB/s\n",
             BothBytes[0] / (1 << 20), Rate(BothBytes[0], Both[0]),
             BothBytes[1] / (1 << 20), Rate(BothBytes[1], Both[1]));
  }
  for (char *H : Host)
    CHECK(cudaFreeHost(H));
}

using IssueFn = std::function<void(const std::vector<CollectiveCall> &,
                                   cudaStream_t)>;

using GroupList = std::vector<std::vector<CollectiveCall>>;

/// Every collective group of the step, in program order.
static GroupList stepGroups(const dsc::plan::Plan &P, const Arena &L) {
  GroupList Out;
  for (uint32_t I = 0; I < P.Program.size(); ++I)
    if (std::vector<CollectiveCall> G = collectiveCalls(L, I); !G.empty())
      Out.push_back(std::move(G));
  return Out;
}


static void printTotals(const char *Title, const char *Prefix,
                        const TotalsByKind &ByKind) {
  printf("%s\n", Title);
  for (auto &[Kind, T] : ByKind)
    printf("  %s%-15s %4u groups %10.1f MiB in %8.2f ms (bus %.1f GB/s)\n",
           Prefix, Kind.c_str(), T.Calls, T.Bytes / (1 << 20), T.Ms,
           T.Ms > 0 ? T.BusBytes / T.Ms / 1e6 : 0);
}

/// Totals per kind of Reps timings of each group (Ms[G * Reps + R]),
/// each agreed among the ranks as dsrun agrees on its own (Agreement.h).
static TotalsByKind agreedTotals(const GroupList &Groups,
                                 const std::vector<float> &Ms, int Reps,
                                 const Arena &L, ncclComm_t Comm,
                                 cudaStream_t S) {
  RankAgreement Agreement(Ms);
  void *Scratch = nullptr;
  CHECK(cudaMalloc(&Scratch, Agreement.scratchBytes()));
  const char *Failed = Agreement.issue(Scratch, Comm, S);
  if (!Failed) {
    CHECK(cudaStreamSynchronize(S));
    Failed = Agreement.collect(Scratch);
  }
  if (Failed) {
    fprintf(stderr, "dsrun-bench: %s failed while agreeing on times\n",
            Failed);
    exit(1);
  }
  CHECK(cudaFree(Scratch));
  TotalsByKind ByKind;
  for (size_t G = 0; G < Groups.size(); ++G) {
    bool Reduce = Groups[G][0].Kind == CollectiveKind::Reduce;
    double Sum = 0;
    for (int R = 0; R < Reps; ++R)
      Sum += Agreement.agreed(G * Reps + R, Reduce);
    addGroup(ByKind, Groups[G], Sum / Reps, L.P.Settings.WorldSize);
  }
  return ByKind;
}

/// Issues every collective group of the step on a highest-priority stream,
/// as dsrun does by default, while a lowest-priority stream runs the
/// plan's forward and backward GEMMs over and over until they have ended;
/// times each group, the ranks lined up before the first and the times
/// agreed among them as dsrun agrees on its own.
static void besideCompute(const dsc::plan::Plan &P, const Arena &L,
                          const GroupList &Groups, char *Arena,
                          uint64_t ArenaBytes, ncclComm_t Comm,
                          const IssueFn &Issue) {
  namespace plan = dsc::plan;
  // Decided from every rank class's workspace, so that all ranks take the
  // same way (the collectives below need every rank).
  int Least = 0, Greatest = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&Least, &Greatest));
  cudaStream_t Compute, CommS;
  CHECK(cudaStreamCreateWithPriority(&Compute, cudaStreamNonBlocking, Least));
  CHECK(cudaStreamCreateWithPriority(&CommS, cudaStreamNonBlocking, Greatest));
  cublasHandle_t H;
  CHECK(cublasCreate(&H));
  CHECK(cublasSetStream(H, Compute));
  // The plan's GEMM kernels on their operands' places in the arena.
  auto Step = [&] {
    for (const plan::Instruction &In : P.Program) {
      if (In.Kind != plan::InstrKind::Forward &&
          In.Kind != plan::InstrKind::Backward)
        continue;
      const plan::Op &Op = P.Ops[In.Arg];
      const plan::Interval &R =
          In.Kind == plan::InstrKind::Backward ? Op.Backward : Op.Forward;
      for (uint32_t K = R.Begin; K < R.End; ++K) {
        const plan::Kernel &Kr = P.Kernels[K];
        auto At = [&](const plan::TensorRef &T) {
          return Arena + L.offset(P.Places.Values[T.Value]) +
                 T.Offset * plan::dtypeBytes(P.Values[T.Value].Type);
        };
        if (Kr.kind() == plan::KernelKind::Gemm)
          CHECK(runGemmKernel(H, Kr, At(Kr.Inputs[0]), At(Kr.Inputs[1]),
                              At(Kr.Outputs[0]),
                              ElementType(P.Settings.ParamDType)));
      }
    }
  };
  cudaEvent_t A, B;
  CHECK(cudaEventCreate(&A));
  CHECK(cudaEventCreate(&B));
  Step(); // Warm-up: cuBLAS picks its kernels.
  CHECK(cudaEventRecord(A, Compute));
  Step();
  CHECK(cudaEventRecord(B, Compute));
  CHECK(cudaEventSynchronize(B));
  float StepMs = 0;
  // Every rank goes on whatever it measured: the collectives below must
  // be issued by all of them.
  CHECK(cudaEventElapsedTime(&StepMs, A, B));
  const int Reps = 2;
  std::vector<cudaEvent_t> Marks(Groups.size() + 1);
  for (cudaEvent_t &E : Marks)
    CHECK(cudaEventCreate(&E));
  // Allocated before the GEMMs are queued: an allocation may wait for
  // the device's queued work.
  float *One = nullptr;
  CHECK(cudaMalloc(reinterpret_cast<void **>(&One), sizeof(float)));
  // Two steps of GEMMs queued ahead, then one more each time one ends,
  // until the collectives have: every collective runs beside GEMMs.
  cudaEvent_t Ahead[2];
  for (cudaEvent_t &E : Ahead)
    CHECK(cudaEventCreateWithFlags(&E, cudaEventDisableTiming));
  CHECK(cudaEventRecord(A, Compute));
  for (cudaEvent_t E : Ahead) {
    Step();
    CHECK(cudaEventRecord(E, Compute));
  }
  // Start once the GEMMs have, and every rank with them.
  CHECK(cudaStreamWaitEvent(CommS, A, 0));
  CHECK(ncclAllReduce(One, One, 1, ncclFloat32, ncclSum, Comm, CommS));
  for (size_t G = 0; G < Groups.size(); ++G) {
    CHECK(cudaEventRecord(Marks[G], CommS));
    for (int R = 0; R < Reps; ++R)
      Issue(Groups[G], CommS);
  }
  CHECK(cudaEventRecord(Marks.back(), CommS));
  int Loops = 2;
  for (int K = 0;; K ^= 1, ++Loops) {
    CHECK(cudaEventSynchronize(Ahead[K]));
    cudaError_t Done = cudaEventQuery(Marks.back());
    if (Done == cudaSuccess)
      break;
    if (Done != cudaErrorNotReady)
      CHECK(Done);
    Step();
    CHECK(cudaEventRecord(Ahead[K], Compute));
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(One));
  std::vector<float> Ms(Groups.size());
  for (size_t G = 0; G < Groups.size(); ++G) {
    CHECK(cudaEventElapsedTime(&Ms[G], Marks[G], Marks[G + 1]));
    Ms[G] /= Reps;
  }
  TotalsByKind ByKind = agreedTotals(Groups, Ms, 1, L, Comm, CommS);
  if (L.Rank == 0) {
    char Title[160];
    snprintf(Title, sizeof Title,
             "the plan's collectives beside its GEMMs (%.2f ms of GEMMs a "
             "step alone, run %d times until they ended):",
             StepMs, Loops);
    printTotals(Title, "beside ", ByKind);
  }
  for (cudaEvent_t E : Marks)
    cudaEventDestroy(E);
  for (cudaEvent_t E : Ahead)
    cudaEventDestroy(E);
  cudaEventDestroy(A);
  cudaEventDestroy(B);
  cublasDestroy(H);
  cudaStreamDestroy(Compute);
  cudaStreamDestroy(CommS);
}

/// Times each group as dsrun times its collectives: one call at a time,
/// the ranks lined up before it by a one-element all-reduce, from the call
/// to its end on each rank; the shortest among the ranks (the last to join
/// waited for no one), the longest for reduces, as dsrun takes them. Raw
/// NCCL timed back to back hides each call's start behind the previous
/// one; a step's dependent calls cannot.
static TotalsByKind oneAtATime(const GroupList &Groups, const Arena &L,
                               ncclComm_t Comm, cudaStream_t S,
                               const IssueFn &Issue) {
  const int Reps = 5;
  std::vector<float> Ms(Groups.size() * Reps);
  float *One = nullptr;
  CHECK(cudaMalloc(reinterpret_cast<void **>(&One), sizeof(float)));
  cudaEvent_t A, B;
  CHECK(cudaEventCreate(&A));
  CHECK(cudaEventCreate(&B));
  for (size_t G = 0; G < Groups.size(); ++G)
    for (int R = 0; R < Reps; ++R) {
      CHECK(ncclAllReduce(One, One, 1, ncclFloat32, ncclSum, Comm, S));
      CHECK(cudaEventRecord(A, S));
      Issue(Groups[G], S);
      CHECK(cudaEventRecord(B, S));
      CHECK(cudaEventSynchronize(B));
      CHECK(cudaEventElapsedTime(&Ms[G * Reps + R], A, B));
    }
  TotalsByKind ByKind = agreedTotals(Groups, Ms, Reps, L, Comm, S);
  cudaEventDestroy(A);
  cudaEventDestroy(B);
  CHECK(cudaFree(One));
  return ByKind;
}

/// Times every collective group of a plan's step alone (back to back, then
/// one call at a time), then beside the plan's GEMMs, and prints the totals
/// per kind as dsrun's step report does.
static void planCollectives(const dsc::plan::Plan &P, const ProcessInfo &Me,
                            ncclComm_t Comm, cudaStream_t S) {
  Arena L(P, uint32_t(Me.Rank));
  char *Arena = nullptr;
  uint64_t Bytes = P.Estimates.Ranks[L.Class].DeviceArenaBytes;
  CHECK(cudaMalloc(reinterpret_cast<void **>(&Arena), Bytes));
  CHECK(cudaMemset(Arena, 0, Bytes));
  // ZeRO++ hpZ's and MiCS's groups run on their communicators, as dsrun's.
  Communicators Comms{Comm};
  const char *Which = nullptr;
  CHECK(splitCommunicators(P.Settings, Me.Rank, Comms, Which));
  IssueFn Issue = [&](const std::vector<CollectiveCall> &Group,
                      cudaStream_t On) {
    const char *Failed = nullptr;
    if (ncclResult_t R = issueGroup(Group, Arena, Comms, P.Settings.WorldSize,
                                    On, Failed)) {
      fprintf(stderr, "dsrun-bench: %s failed: %s\n", Failed,
              ncclGetErrorString(R));
      exit(1);
    }
  };
  GroupList Step = stepGroups(P, L);
  if (Step.empty()) {
    planCopies(P, L, Arena, S);
    CHECK(cudaFree(Arena));
    return;
  }
  TotalsByKind ByKind;
  cudaEvent_t A, B;
  cudaEventCreate(&A);
  cudaEventCreate(&B);
  const int Reps = 5;
  for (const std::vector<CollectiveCall> &Group : Step) {
    Issue(Group, S); // Warm-up.
    cudaEventRecord(A, S);
    for (int R = 0; R < Reps; ++R)
      Issue(Group, S);
    cudaEventRecord(B, S);
    CHECK(cudaEventSynchronize(B));
    float Ms = 0;
    cudaEventElapsedTime(&Ms, A, B);
    addGroup(ByKind, Group, Ms / Reps, P.Settings.WorldSize);
  }
  cudaEventDestroy(A);
  cudaEventDestroy(B);
  TotalsByKind Single = oneAtATime(Step, L, Comm, S, Issue);
  if (Me.Rank == 0) {
    printTotals("the plan's collectives alone (one step, the calls dsrun "
                "makes), back to back:",
                "", ByKind);
    printTotals("the same, one call at a time, timed as dsrun times them:",
                "single ", Single);
  }
  besideCompute(P, L, Step, Arena, Bytes, Comm, Issue);
  planCopies(P, L, Arena, S);
  CHECK(cudaFree(Arena));
  for (ncclComm_t C : {Comms.Group, Comms.Replicas,
                       Comms.Node == Comms.Group ? nullptr : Comms.Node,
                       Comms.AcrossNodes})
    if (C)
      ncclCommDestroy(C);
}

static int writeWorkload(const dsc::plan::Plan &P, const std::string &Path) {
  namespace plan = dsc::plan;
  FILE *F = fopen(Path.c_str(), "w");
  if (!F) {
    fprintf(stderr, "dsrun-bench: cannot write %s: %s\n", Path.c_str(),
            strerror(errno));
    return 1;
  }
  Arena L(P, 0);
  static const char *const TypeNames[] = {"f32", "f16", "bf16"};
  fprintf(F, "# dsrun workload 1: world %u, GEMMs in %s\n", P.Settings.WorldSize,
          TypeNames[unsigned(P.Settings.ParamDType)]);
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    if (In.Kind == plan::InstrKind::Forward ||
        In.Kind == plan::InstrKind::Backward) {
      const plan::Op &Op = P.Ops[In.Arg];
      const plan::Interval &R =
          In.Kind == plan::InstrKind::Backward ? Op.Backward : Op.Forward;
      for (uint32_t K = R.Begin; K < R.End; ++K) {
        const plan::Kernel &Kr = P.Kernels[K];
        if (const auto *G = std::get_if<plan::GemmAttrs>(&Kr.Attrs))
          fprintf(F, "gemm %lld %lld %lld %lld\n", (long long)G->Batch,
                  (long long)G->M, (long long)G->N, (long long)G->K);
      }
    }
    std::vector<CollectiveCall> Group = collectiveCalls(L, I);
    if (Group.empty())
      continue;
    fprintf(F, "group\n");
    for (const CollectiveCall &C : Group)
      fprintf(F, "call %s %llu %s %d\n", collectiveName(C.Kind),
              (unsigned long long)C.Count, TypeNames[unsigned(C.Type)],
              C.Root);
  }
  bool Failed = ferror(F);
  Failed |= fclose(F) != 0;
  if (Failed) {
    fprintf(stderr, "dsrun-bench: writing %s failed\n", Path.c_str());
    return 1;
  }
  return 0;
}

static const char *const BenchUsage =
    "usage: dsrun-bench -n PROCESSES [--plan plan.bin | --grid] [--comm-min-ctas N]\n"
    "       dsrun-bench --hostfile FILE [dsrun's --hostfile options] ...\n"
    "       dsrun-bench --plan plan.bin --workload FILE\n"
    "Raw NCCL and copy bandwidth; with --plan, the plan's own NCCL calls\n"
    "and copies (docs/runtime.md); with --grid, the collectives' bus\n"
    "bandwidth by size as a time table's collectives entry\n"
    "(runtime/bench/time_tables.sh); with --workload, the plan's GEMMs and\n"
    "NCCL calls written for runtime/bench/torch_peer.py.\n";

static int benchUsage(const char *Message) {
  fprintf(stderr, "dsrun-bench: %s\n%s", Message, BenchUsage);
  return 2;
}

static int bench(int argc, char **argv) {
  if (helpOrVersion(argc, argv, "dsrun-bench", BenchUsage))
    return 0;
  std::string PlanPath, WorkloadPath;
  int MinCTAs = 0;
  bool Grid = false;
  // -n, or --hostfile and its filters, as dsrun takes them.
  std::vector<std::string> Args(argv, argv + argc);
  LaunchRequest Launch;
  std::string LaunchError;
  if (!takeLaunchFlags(Args, Launch, LaunchError))
    return benchUsage(LaunchError.c_str());
  int Processes = Launch.Processes;
  bool Hostfile = !Launch.Hostfile.Hostfile.empty();
  for (size_t I = 1; I < Args.size(); ++I) {
    const std::string &A = Args[I];
    if (A == "--grid") {
      Grid = true;
      continue;
    }
    if (A != "--plan" && A != "--workload" && A != "--comm-min-ctas")
      return benchUsage(("unknown argument " + A).c_str());
    if (I + 1 >= Args.size())
      return benchUsage((A + " needs a value").c_str());
    const std::string &V = Args[++I];
    long N = 0;
    if (A == "--plan")
      PlanPath = V;
    else if (A == "--workload")
      WorkloadPath = V;
    else if (!parseCount(V, 1, 64, N))
      return benchUsage("--comm-min-ctas needs a count from 1 to 64");
    else
      MinCTAs = int(N);
  }
  if (!WorkloadPath.empty() && PlanPath.empty())
    return benchUsage("--workload needs --plan");
  if (Grid && !PlanPath.empty())
    return benchUsage("--grid times raw NCCL alone: leave out --plan");
  if (!WorkloadPath.empty() && (Processes || Hostfile))
    return benchUsage("--workload writes the plan's work to a file and runs "
                      "nothing: leave out -n and --hostfile");
  if (Processes && !getenv("DSRUN_CHILD"))
    return launchLocal(Processes, Args, Launch.Place);
  std::optional<dsc::plan::Plan> Plan;
  if (!PlanPath.empty()) {
    std::string Error;
    bool Unreadable = false;
    Plan = loadPlanFile(PlanPath, Error, Unreadable);
    if (!Plan) {
      fprintf(stderr, "dsrun-bench: %s\n", Error.c_str());
      return 1;
    }
    if (!WorkloadPath.empty())
      return writeWorkload(*Plan, WorkloadPath);
  }
  // Without a plan, any nodes of equal size.
  if (Hostfile)
    return launchNodes(Launch.Hostfile, Plan ? Plan->Settings.Nodes : 0,
                       Plan ? Plan->Settings.GpusPerNode : 0, Args);
  std::string Error;
  std::optional<ProcessInfo> Me = processFromEnvironment(Error);
  if (!Me) {
    fprintf(stderr, "dsrun-bench: %s\n", Error.c_str());
    return 2;
  }
  std::string NoDevice;
  int Devices = cudaDevices(NoDevice);
  if (!Devices) {
    fprintf(stderr, "dsrun-bench: %s\n", NoDevice.c_str());
    return 1;
  }
  CHECK(cudaSetDevice(Me->LocalRank % Devices));
  ncclUniqueId Id;
  std::string Blob;
  if (Me->Rank == 0) {
    CHECK(ncclGetUniqueId(&Id));
    Blob.assign(reinterpret_cast<char *>(&Id), sizeof(Id));
  }
  if (!exchangeBlob(*Me, Blob, 60, Error)) {
    fprintf(stderr, "dsrun-bench: %s\n", Error.c_str());
    return 1;
  }
  memcpy(&Id, Blob.data(), sizeof(Id));
  ncclComm_t Comm;
  ncclConfig_t Config = commConfig(unsigned(MinCTAs)); // As dsrun's.
  CHECK(ncclCommInitRankConfig(&Comm, Me->WorldSize, Id, Me->Rank, &Config));
  cudaStream_t S;
  CHECK(cudaStreamCreate(&S));
  if (Plan) {
    if (uint32_t(Me->WorldSize) != Plan->Settings.WorldSize) {
      fprintf(stderr, "dsrun-bench: the plan is for %u ranks, not %d\n",
              Plan->Settings.WorldSize, Me->WorldSize);
      return 1;
    }
    planCollectives(*Plan, *Me, Comm, S);
    ncclCommDestroy(Comm);
    return 0;
  }
  const size_t MaxBytes = size_t(1) << 30;
  void *Buffer = nullptr;
  CHECK(cudaMalloc(&Buffer, MaxBytes));
  cudaEvent_t A, B;
  cudaEventCreate(&A);
  cudaEventCreate(&B);
  int N = Me->WorldSize;
  // Bus bandwidth (nccl-tests' convention) of one kind at Bytes, the whole
  // buffer: 0 all-reduce, 1 reduce-scatter, 2 all-gather, 3 dsrun's stage-2
  // reduce (each rank's piece reduced to it, one ncclReduce a root in a
  // group; counted as a reduce-scatter, which it replaces).
  auto BusOf = [&](int Kind, size_t Bytes) {
    size_t Count = Bytes / 2, Piece = Bytes / N;
    char *Base = static_cast<char *>(Buffer);
    auto Run = [&] {
      if (Kind == 0)
        ncclAllReduce(Buffer, Buffer, Count, ncclBfloat16, ncclSum, Comm, S);
      else if (Kind == 1)
        ncclReduceScatter(Buffer, Base + Me->Rank * Piece, Count / N,
                          ncclBfloat16, ncclSum, Comm, S);
      else if (Kind == 2)
        ncclAllGather(Base + Me->Rank * Piece, Buffer, Count / N,
                      ncclBfloat16, Comm, S);
      else {
        ncclGroupStart();
        for (int Root = 0; Root < N; ++Root)
          ncclReduce(Base + Root * Piece, Base + Root * Piece, Count / N,
                     ncclBfloat16, ncclSum, Root, Comm, S);
        ncclGroupEnd();
      }
    };
    for (int W = 0; W < 3; ++W)
      Run();
    const int Reps = Bytes >= (256u << 20) ? 5 : 20;
    cudaEventRecord(A, S);
    for (int R = 0; R < Reps; ++R)
      Run();
    cudaEventRecord(B, S);
    cudaEventSynchronize(B);
    float Ms = 0;
    cudaEventElapsedTime(&Ms, A, B);
    double Seconds = Ms / 1e3 / Reps;
    const CollectiveKind Kinds[4] = {
        CollectiveKind::AllReduce, CollectiveKind::ReduceScatter,
        CollectiveKind::AllGather, CollectiveKind::ReduceScatter};
    return double(Bytes) * busFactor(Kinds[Kind], unsigned(N)) / Seconds;
  };
  if (Grid) {
    // Bus GB/s from 1 MiB to 1 GiB by twos: the entry time_table.py
    // copies as it is.
    std::vector<size_t> Sizes;
    for (size_t Bytes = 1 << 20; Bytes <= MaxBytes; Bytes *= 2)
      Sizes.push_back(Bytes);
    const char *Names[4] = {"all-reduce", "reduce-scatter", "all-gather",
                            "reduce"};
    std::string Out = "  - ranks: " + std::to_string(N) + "\n    sizes: [";
    for (size_t I = 0; I < Sizes.size(); ++I)
      Out += (I ? ", " : "") + std::to_string(Sizes[I]);
    Out += "]\n";
    for (int Kind = 0; Kind < 4; ++Kind) {
      Out += std::string("    ") + Names[Kind] + ": [";
      for (size_t I = 0; I < Sizes.size(); ++I) {
        char Rate[32];
        snprintf(Rate, sizeof(Rate), "%s%.1f", I ? ", " : "",
                 BusOf(Kind, Sizes[I]) / 1e9);
        Out += Rate;
      }
      Out += "]\n";
    }
    if (Me->Rank == 0)
      printf("%s", Out.c_str());
    ncclCommDestroy(Comm);
    return 0;
  }
  if (Me->Rank == 0)
    printf("raw NCCL, %d ranks, bf16 (bus bandwidth, nccl-tests convention)\n"
           "%12s %14s %14s %14s\n",
           N, "bytes", "all-reduce", "reduce-scatter", "all-gather");
  for (size_t Bytes = 1 << 20; Bytes <= MaxBytes; Bytes *= 4) {
    double Bus[3];
    for (int Kind = 0; Kind < 3; ++Kind)
      Bus[Kind] = BusOf(Kind, Bytes) / 1e9;
    if (Me->Rank == 0)
      printf("%12zu %11.1f GB/s %11.1f GB/s %11.1f GB/s\n", Bytes, Bus[0],
             Bus[1], Bus[2]);
  }
  if (Me->Rank == 0) {
    size_t Bytes = size_t(256) << 20;
    void *Pinned = nullptr;
    CHECK(cudaHostAlloc(&Pinned, Bytes, cudaHostAllocDefault));
    void *Pageable = malloc(Bytes);
    memset(Pageable, 1, Bytes);
    printf("host copies of 256 MiB: pinned H2D %.1f GB/s, D2H %.1f GB/s; "
           "pageable H2D %.1f GB/s, D2H %.1f GB/s\n",
           copyBandwidth(Pinned, Buffer, Bytes, cudaMemcpyHostToDevice),
           copyBandwidth(Pinned, Buffer, Bytes, cudaMemcpyDeviceToHost),
           copyBandwidth(Pageable, Buffer, Bytes, cudaMemcpyHostToDevice),
           copyBandwidth(Pageable, Buffer, Bytes, cudaMemcpyDeviceToHost));
  }
  ncclCommDestroy(Comm);
  return 0;
}

// An MPI job the rendezvous joined is left as dsrun leaves it.
int main(int argc, char **argv) { return leaveJob(bench(argc, argv)); }
