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
// else running: raw NCCL at exactly the plan's message sizes; and each of
// its host<->device copies, one at a time, at the plan's sizes.
//
//   dsrun-bench -n 2 [--plan plan.bin]
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"
#include "NcclGroup.h"
#include "Launch.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

/// Times each host<->device copy of a plan's step alone, at the plan's
/// size, between pinned memory and the arena: what the copy engines give
/// for those sizes with every rank copying at once, as in dsrun.
static void planCopies(const dsc::plan::Plan &P, const Layout &L, char *Arena,
                       cudaStream_t S) {
  namespace plan = dsc::plan;
  uint64_t Largest = 0;
  for (const plan::Transfer &X : P.Transfers)
    Largest = std::max(Largest, X.Bytes);
  if (!Largest)
    return;
  uint64_t ArenaBytes = P.Estimates.Ranks[L.Class].DeviceArenaBytes;
  char *Host = nullptr;
  CHECK(cudaHostAlloc(reinterpret_cast<void **>(&Host), Largest,
                      cudaHostAllocDefault));
  // Per direction: host to device, device to host.
  double Bytes[2] = {0, 0}, Ms[2] = {0, 0};
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
                     ? L.chunkElems(X.Owner) * elementBytes(L.Param)
                     : X.Bytes;
    N = std::min(N, ArenaBytes);
    Bytes[ToDevice ? 0 : 1] += double(N);
    Ms[ToDevice ? 0 : 1] +=
        copyMs(Host, Arena, N,
               ToDevice ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, 1,
               1, S);
  }
  if (L.Rank == 0)
    printf("the plan's copies alone: in %.1f MiB at %.1f GB/s, out %.1f MiB "
           "at %.1f GB/s\n",
           Bytes[0] / (1 << 20), Ms[0] > 0 ? Bytes[0] / Ms[0] / 1e6 : 0,
           Bytes[1] / (1 << 20), Ms[1] > 0 ? Bytes[1] / Ms[1] / 1e6 : 0);
  CHECK(cudaFreeHost(Host));
}

/// Times every collective group of a plan's step alone and prints the
/// totals per kind, as dsrun's step report does.
static void planCollectives(const dsc::plan::Plan &P, const ProcessInfo &Me,
                            ncclComm_t Comm, cudaStream_t S) {
  namespace plan = dsc::plan;
  Layout L(P, uint32_t(Me.Rank));
  char *Arena = nullptr;
  uint64_t Bytes = P.Estimates.Ranks[L.Class].DeviceArenaBytes;
  CHECK(cudaMalloc(reinterpret_cast<void **>(&Arena), Bytes));
  CHECK(cudaMemset(Arena, 0, Bytes));
  auto Issue = [&](const std::vector<CollectiveCall> &Group) {
    const char *Failed = nullptr;
    if (ncclResult_t R = issueGroup(Group, Arena, Comm, S, Failed)) {
      fprintf(stderr, "dsrun-bench: %s failed: %s\n", Failed,
              ncclGetErrorString(R));
      exit(1);
    }
  };
  struct Totals {
    double Bytes = 0, BusBytes = 0, Ms = 0;
    unsigned Groups = 0;
  };
  std::map<std::string, Totals> ByKind;
  cudaEvent_t A, B;
  cudaEventCreate(&A);
  cudaEventCreate(&B);
  const int Reps = 5;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    std::vector<CollectiveCall> Group = collectiveCalls(L, I);
    if (Group.empty())
      continue;
    Issue(Group); // Warm-up.
    cudaEventRecord(A, S);
    for (int R = 0; R < Reps; ++R)
      Issue(Group);
    cudaEventRecord(B, S);
    CHECK(cudaEventSynchronize(B));
    float Ms = 0;
    cudaEventElapsedTime(&Ms, A, B);
    Totals &T = ByKind[collectiveName(Group[0].Kind)];
    for (const CollectiveCall &C : Group)
      T.Bytes += double(C.messageBytes(L.World));
    T.BusBytes += busBytes(Group, L.World);
    T.Ms += Ms / Reps;
    ++T.Groups;
  }
  if (Me.Rank == 0) {
    printf("the plan's collectives alone (one step, the calls dsrun makes):\n");
    for (auto &[Kind, T] : ByKind)
      printf("  %-15s %4u groups %10.1f MiB in %8.2f ms (bus %.1f GB/s)\n",
             Kind.c_str(), T.Groups, T.Bytes / (1 << 20), T.Ms,
             T.Ms > 0 ? T.BusBytes / T.Ms / 1e6 : 0);
  }
  planCopies(P, L, Arena, S);
  CHECK(cudaFree(Arena));
}

static int bench(int argc, char **argv) {
  std::string PlanPath;
  for (int I = 1; I + 1 < argc; ++I)
    if (std::string(argv[I]) == "--plan")
      PlanPath = argv[I + 1];
  if (argc >= 3 && std::string(argv[1]) == "-n" && !getenv("DSRUN_CHILD")) {
    std::vector<std::string> Args = {argv[0]};
    if (!PlanPath.empty())
      Args.insert(Args.end(), {"--plan", PlanPath});
    return launchLocal(atoi(argv[2]), Args, 29600, 10);
  }
  std::optional<dsc::plan::Plan> Plan;
  if (!PlanPath.empty()) {
    std::string Error;
    bool Unreadable = false;
    Plan = loadPlanFile(PlanPath, Error, Unreadable);
    if (!Plan) {
      fprintf(stderr, "dsrun-bench: %s\n", Error.c_str());
      return 1;
    }
  }
  std::string Error;
  std::optional<ProcessInfo> Me = processFromEnvironment(Error);
  if (!Me) {
    fprintf(stderr, "dsrun-bench: %s\n", Error.c_str());
    return 2;
  }
  int Devices = 0;
  CHECK(cudaGetDeviceCount(&Devices));
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
  CHECK(ncclCommInitRank(&Comm, Me->WorldSize, Id, Me->Rank));
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
  if (Me->Rank == 0)
    printf("raw NCCL, %d ranks, bf16 (bus bandwidth, nccl-tests convention)\n"
           "%12s %14s %14s %14s\n",
           N, "bytes", "all-reduce", "reduce-scatter", "all-gather");
  for (size_t Bytes = 1 << 20; Bytes <= MaxBytes; Bytes *= 4) {
    size_t Count = Bytes / 2;
    double Bus[3];
    for (int Kind = 0; Kind < 3; ++Kind) {
      auto Run = [&] {
        if (Kind == 0)
          ncclAllReduce(Buffer, Buffer, Count, ncclBfloat16, ncclSum, Comm, S);
        else if (Kind == 1)
          ncclReduceScatter(Buffer,
                            static_cast<char *>(Buffer) + Me->Rank * (Bytes / N),
                            Count / N, ncclBfloat16, ncclSum, Comm, S);
        else
          ncclAllGather(static_cast<char *>(Buffer) + Me->Rank * (Bytes / N),
                        Buffer, Count / N, ncclBfloat16, Comm, S);
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
      double Factor = N == 1 ? 1 : Kind == 0 ? 2.0 * (N - 1) / N
                                             : double(N - 1) / N;
      Bus[Kind] = double(Bytes) * Factor / Seconds / 1e9;
    }
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
