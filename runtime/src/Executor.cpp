//===- Executor.cpp - Set up, then run the program step by step -----------===//

#include "Executor.h"
#include "Preemption.h"

#include "Cli.h"

#include "HostMath.h"
#include "Kernels.h"
#include "NcclGroup.h"
#include "Trace.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

Executor *Current = nullptr;

uint64_t usedDeviceMemory(uint64_t *Total = nullptr) {
  size_t Free = 0, All = 0;
  CHECK_CUDA(cudaMemGetInfo(&Free, &All));
  if (Total)
    *Total = All;
  return All - Free;
}

} // namespace

void fatalError(const std::string &Message) {
  fprintf(stderr, "dsrun: %s\n", Message.c_str());
  fflush(stderr);
  std::_Exit(1);
}
std::string whereNow() {
  return Current ? " (" + Current->where() + ")" : std::string();
}

Executor::Executor(const plan::Plan &P, const ProcessInfo &Process,
                   const RunOptions &Options)
    : P(P), Process(Process), Options(Options), Buffers(P, Process.Rank),
      ParamType(ElementType(P.Settings.ParamDType)),
      CommType(ElementType(P.Settings.CommDType)),
      GradAccumType(ElementType(P.Settings.GradAccumDType)),
      Stage(P.Settings.ZeroStage), World(P.Settings.WorldSize),
      Shards(plan::partitionRanks(P.Settings)),
      ShardRank(plan::partitionRank(P.Settings, uint32_t(Process.Rank))) {
  Current = this;
  BucketOfTensor.assign(P.Tensors.size(), plan::NoIndex);
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    for (const plan::Segment &Seg : P.Buckets[B].Segments)
      BucketOfTensor[Seg.Tensor] = B;
  GradValue.assign(P.Tensors.size(), plan::NoIndex);
  for (uint32_t V = 0; V < P.Values.size(); ++V)
    if (P.Values[V].Kind == plan::ValueKind::ParamGrad &&
        P.Values[V].Tensor < P.Tensors.size())
      GradValue[P.Values[V].Tensor] = V;
}

Executor::~Executor() {
  if (StepGraph)
    cudaGraphExecDestroy(StepGraph);
  if (GroupArenaWindow)
    ncclCommWindowDeregister(GroupComm, GroupArenaWindow);
  if (ArenaWindow)
    ncclCommWindowDeregister(Comm, ArenaWindow);
  for (ncclComm_t *C : ownedComms())
    if (*C)
      ncclCommDestroy(*C);
  Current = nullptr;
}

bool Executor::allocateWindowedArena(uint64_t Bytes) {
  // NCCL 2.28 runs an all-gather on the copy engines only between buffers
  // of a symmetric window under the zero-CTA policy, and registers only
  // cuMem memory, which ncclMemAlloc gives (checkBeforeRunning has made
  // sure every rank's arena is laid out alike).
  if (ncclResult_t E = ncclMemAlloc(&NcclArena, Bytes); E != ncclSuccess) {
    fprintf(stderr, "dsrun: rank %d: ncclMemAlloc of the %llu MiB arena "
                    "failed: %s (%s)\n",
            Process.Rank, (unsigned long long)(Bytes >> 20),
            ncclGetErrorString(E), ncclGetLastError(Comm));
    return false;
  }
  for (auto [C, W] :
       {std::pair{Comm, &ArenaWindow}, {GroupComm, &GroupArenaWindow}})
    if (C)
      if (ncclResult_t E = ncclCommWindowRegister(C, NcclArena, Bytes, W,
                                                  NCCL_WIN_COLL_SYMMETRIC);
          E != ncclSuccess) {
        fprintf(stderr, "dsrun: rank %d: registering the arena as NCCL's "
                        "symmetric window failed: %s (%s)\n",
                Process.Rank, ncclGetErrorString(E), ncclGetLastError(C));
        // The peers may wait inside the registration: abort, so that
        // neither they nor this rank's teardown wait for it.
        abortCommunicators();
        return false;
      }
  return true;
}

void Executor::abortCommunicators() {
  // Aborting frees the windows registered on them.
  ArenaWindow = GroupArenaWindow = nullptr;
  for (ncclComm_t *C : ownedComms())
    if (*C) {
      ncclCommAbort(*C);
      *C = nullptr;
    }
}

std::string Executor::where() const {
  std::string S = "rank " + std::to_string(Process.Rank);
  if (Issuing) {
    const plan::Instruction &In = Issuing->In;
    S += ", instruction " + std::to_string(Issuing->Index) + " (" +
         plan::enumName(In.Kind) + " " + std::to_string(In.Arg) + ", micro " +
         std::to_string(In.Micro) + ")";
  }
  return S;
}

//===----------------------------------------------------------------------===//
// Set-up and checks.
//===----------------------------------------------------------------------===//

bool Executor::checkBeforeRunning() {
  const plan::Info &S = P.Settings;
  if (uint32_t(Process.WorldSize) != S.WorldSize) {
    fprintf(stderr,
            "dsrun: the plan is for %u ranks but this job has %d; plan again "
            "with --world-size %d or launch %u processes\n",
            S.WorldSize, Process.WorldSize, Process.WorldSize, S.WorldSize);
    return false;
  }
  if (S.OptimizerStates != 2) {
    fprintf(stderr,
            "dsrun: the plan's optimizer %s keeps %u state(s) per parameter; "
            "dsrun runs AdamW (2) only\n",
            S.Optimizer.c_str(), S.OptimizerStates);
    return false;
  }
  if (S.ZeroStage < 3 && S.CommDType != S.ParamDType) {
    fprintf(stderr, "dsrun: communication_data_type differs from the "
                    "parameters' at stage %u; dsrun reduces stage 0-2 "
                    "gradients in the parameter dtype only\n",
            S.ZeroStage);
    return false;
  }
  if ((S.OptimizerOffload == plan::OffloadDevice::NVMe ||
       S.ParamOffload == plan::OffloadDevice::NVMe) &&
      Options.NvmePath.empty()) {
    fprintf(stderr, "dsrun: the plan offloads to NVMe: give --nvme-path DIR, "
                    "a directory on the drive (the config's nvme_path)\n");
    return false;
  }
  if (!Options.CalibrationOut.empty() && Process.Rank == 0) {
    // Found out now, not after the steps have run; a file this check
    // creates is removed again, so a failed or dry run leaves none.
    const char *Path = Options.CalibrationOut.c_str();
    struct stat Info;
    bool Existed = lstat(Path, &Info) == 0; // A link counts, dangling or not.
    FILE *F = fopen(Path, "a");
    if (!F) {
      fprintf(stderr, "dsrun: --calibration-out: cannot write %s: %s\n",
              Path, strerror(errno));
      return false;
    }
    fclose(F);
    if (!Existed)
      unlink(Path);
  }
  if (size_t Classes = P.Layout.RankClasses.size();
      Options.CommCtaPolicy == RunOptions::CtaPolicy::Zero && Classes > 1) {
    // NCCL finds a peer's buffer at this rank's offset in the window, so
    // every rank's arena must be laid out alike: one rank class.
    fprintf(stderr, "dsrun: NCCL's zero-CTA policy needs every rank's arena "
                    "laid out alike; this plan has %zu rank classes "
                    "(partitions of unequal size)\n",
            Classes);
    return false;
  }
  std::string Short = checkRunnable(P);
  if (!Short.empty()) {
    fprintf(stderr, "dsrun: the plan cannot run: %s\n", Short.c_str());
    return false;
  }
  return true;
}

bool Executor::joinJob(ncclUniqueId &Id) {
  // Rank 0 hands on the NCCL id and where its watch listens (port and
  // host name; 0: no watch).
  std::string Blob, Error;
  if (Process.Rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&Id));
    Blob.assign(reinterpret_cast<const char *>(&Id), sizeof(Id));
    int WatchPort = 0;
    if (Process.WorldSize > 1 && Watcher.listen(Process.WorldSize, Error))
      WatchPort = Watcher.port();
    else if (Process.WorldSize > 1)
      fprintf(stderr, "dsrun: note: no watch of the ranks (%s): a rank that "
                      "stops will not be named\n",
              Error.c_str());
    char Host[256] = {};
    gethostname(Host, sizeof(Host) - 1);
    Blob += std::to_string(WatchPort) + " " + Host;
  }
  if (!exchangeBlob(Process, Blob, Options.TimeoutSeconds, Error) ||
      Blob.size() <= sizeof(Id)) {
    fprintf(stderr, "dsrun: %s\n",
            Error.empty() ? "bad NCCL id from rank 0" : Error.c_str());
    return false;
  }
  memcpy(&Id, Blob.data(), sizeof(Id));
  if (Process.Rank != 0) {
    std::string Where = Blob.substr(sizeof(Id));
    int WatchPort = atoi(Where.c_str());
    // torchrun's and Slurm's MASTER_ADDR reaches rank 0; an MPI job may
    // have none, and then rank 0's host name does.
    std::string Host = Process.Mpi ? Where.substr(Where.find(' ') + 1)
                                   : Process.MasterAddr;
    if (WatchPort && !Watcher.connect(Process.Rank, Host, WatchPort, Error))
      fprintf(stderr, "dsrun: rank %d: note: not watched (%s)\n",
              Process.Rank, Error.c_str());
  }
  return true;
}

bool Executor::setUp() {
  std::string NoDevice;
  int Devices = cudaDevices(NoDevice);
  if (Devices == 0) {
    fprintf(stderr, "dsrun: rank %d: %s\n", Process.Rank, NoDevice.c_str());
    return false;
  }
  CHECK_CUDA(cudaSetDevice(Process.LocalRank % Devices));
  if (!Options.HostThreads) {
    if (!Process.LocalSizeProblem.empty()) {
      fprintf(stderr, "dsrun: rank %d: %s\n", Process.Rank,
              Process.LocalSizeProblem.c_str());
      return false;
    }
    // DeepSpeedCPUAdam likewise takes every core the process is given: the
    // cores it is bound to, or the node's shared among its processes.
    unsigned Node = std::max(1u, std::thread::hardware_concurrency());
    unsigned Mine = Node;
    cpu_set_t Set;
    if (sched_getaffinity(0, sizeof(Set), &Set) == 0)
      Mine = unsigned(std::max(1, CPU_COUNT(&Set)));
    int Local = Process.LocalSize ? Process.LocalSize
                                  : std::min(Process.WorldSize, Devices);
    Options.HostThreads =
        Mine < Node ? Mine : std::max(1u, Node / unsigned(std::max(1, Local)));
  }
  // Reading the free memory creates the context: what is used then is the
  // context (and whatever else holds the GPU, nothing on a GPU of our own).
  CHECK_CUDA(cudaFree(nullptr));
  Memory.Context = usedDeviceMemory(&Memory.Total);

  const plan::RankEstimate &R = P.Estimates.Ranks[Buffers.Class];
  size_t Free = 0, All = 0;
  CHECK_CUDA(cudaMemGetInfo(&Free, &All));
  uint64_t Needed = R.DeviceArenaBytes + R.DeviceFixedBytes;
  uint64_t Have = Free + Memory.Context;
  if (Have < Needed) {
    std::string Top;
    for (const plan::CategoryBytes &C : R.AtPeak)
      Top += std::string(" ") + plan::enumName(C.What) + "=" +
             std::to_string(C.Bytes >> 20) + "MiB";
    fprintf(stderr,
            "dsrun: rank %d: the plan needs %llu MiB of device memory, the "
            "GPU has %llu MiB free; largest:%s\n",
            Process.Rank, (unsigned long long)(Needed >> 20),
            (unsigned long long)(Have >> 20), Top.c_str());
    return false;
  }

  Timing.create(P, Options.CommPriority);
  cudaStream_t Compute = Timing.stream(plan::Stream::Compute);
  CHECK_CUBLAS(cublasCreate(&Cublas));
  CHECK_CUBLAS(cublasSetStream(Cublas, Compute));
  if (Options.CommSMs) {
    // GEMMs that leave SMs free let overlapped collectives start and run at
    // once instead of waiting for GEMM blocks to retire.
    int SMs = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&SMs, cudaDevAttrMultiProcessorCount,
                                      Process.LocalRank % Devices));
    if (int(Options.CommSMs) >= SMs) {
      fprintf(stderr, "dsrun: --comm-sms %u leaves no SM of %d to compute\n",
              Options.CommSMs, SMs);
      return false;
    }
    CHECK_CUBLAS(cublasSetSmCountTarget(Cublas, SMs - int(Options.CommSMs)));
  }
  {
    // cuBLASLt runs the products in the plan's kernel workspace; cuBLAS
    // (the math attention) keeps its own, which the first GEMM allocates:
    // run one now, so that it is counted with the library's fixed cost.
    std::string Lt = Products.init();
    if (!Lt.empty()) {
      fprintf(stderr, "dsrun: %s\n", Lt.c_str());
      return false;
    }
    Products.setAlgorithms(P.Settings.Machine.GemmAlgorithms);
    void *Scratch = nullptr;
    CHECK_CUDA(cudaMalloc(&Scratch, 3 * 64 * 64 * 4));
    float One = 1, Zero = 0;
    float *M = static_cast<float *>(Scratch);
    CHECK_CUBLAS(cublasSgemm(Cublas, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &One,
                             M, 64, M + 4096, 64, &Zero, M + 8192, 64));
    CHECK_CUDA(cudaStreamSynchronize(Compute));
    CHECK_CUDA(cudaFree(Scratch));
  }
  Memory.Cublas = usedDeviceMemory();

  int Version = 0;
  CHECK_NCCL(ncclGetVersion(&Version));
  ncclUniqueId Id;
  if (!joinJob(Id))
    return false;
  std::string Error;
  bool ZeroCta = Options.CommCtaPolicy == RunOptions::CtaPolicy::Zero;
  ncclConfig_t Config =
      commConfig(Options.CommMinCTAs, int(Options.CommCtaPolicy));
  if (ncclResult_t E = ncclCommInitRankConfig(&Comm, Process.WorldSize, Id,
                                              Process.Rank, &Config);
      E != ncclSuccess) {
    fprintf(stderr, "dsrun: rank %d: ncclCommInitRankConfig failed: %s (%s)\n",
            Process.Rank, ncclGetErrorString(E), ncclGetLastError(nullptr));
    return false;
  }
  Communicators Split{Comm};
  const char *Which = nullptr;
  ncclResult_t E = splitCommunicators(P.Settings, Process.Rank, Split, Which);
  GroupComm = Split.Group, ReplicaComm = Split.Replicas;
  NodeComm = Split.Node == Split.Group ? nullptr : Split.Node;
  AcrossNodesComm = Split.AcrossNodes;
  if (E != ncclSuccess) {
    fprintf(stderr, "dsrun: rank %d: ncclCommSplit for %s failed: %s (%s)\n",
            Process.Rank, Which, ncclGetErrorString(E),
            ncclGetLastError(nullptr));
    return false;
  }
  {
    // NCCL sets up its buffers on the first collective: one now on each
    // communicator, so that they are counted with NCCL's fixed cost.
    void *One = nullptr;
    CHECK_CUDA(cudaMalloc(&One, 4096));
    cudaStream_t S = Timing.stream(plan::Stream::Comm);
    // The world's first, then the groups split from it.
    std::array<ncclComm_t *, 5> Owned = ownedComms();
    for (auto C = Owned.rbegin(); C != Owned.rend(); ++C)
      if (**C)
        CHECK_NCCL(ncclAllReduce(One, One, 1024, ncclFloat32, ncclSum, **C, S));
    CHECK_CUDA(cudaStreamSynchronize(S));
    CHECK_CUDA(cudaFree(One));
  }
  Memory.Nccl = usedDeviceMemory();
  if (Process.Rank == 0)
    fprintf(stderr, "dsrun: NCCL %d.%d.%d, %d rank(s), plan for ZeRO stage %u%s\n",
            Version / 10000, (Version / 100) % 100, Version % 100,
            Process.WorldSize, P.Settings.ZeroStage,
            ZeroCta ? "; all-gathers on the copy engines (NCCL's zero-CTA "
                      "policy, the arena a symmetric window)"
                    : "");

  // The arenas: everything the plan places, allocated once.
  char *Device = nullptr, *Host = nullptr;
  if (ZeroCta) {
    uint64_t Before = usedDeviceMemory();
    if (!allocateWindowedArena(Buffers.deviceBytes()))
      return false;
    Device = static_cast<char *>(NcclArena);
    // What ncclMemAlloc's granularity and the window's own buffers take
    // beyond the arena: the runtime's choice, reported beside the plan.
    uint64_t Used = usedDeviceMemory() - Before;
    WindowBytes = Used > Buffers.deviceBytes() ? Used - Buffers.deviceBytes() : 0;
  } else {
    CHECK_CUDA(cudaMalloc(reinterpret_cast<void **>(&Device),
                          Buffers.deviceBytes()));
  }
  CHECK_CUDA(cudaMemset(Device, 0, Buffers.deviceBytes()));
  if (Buffers.hostBytes()) {
    CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&Host), Buffers.hostBytes(),
                             cudaHostAllocDefault));
    memset(Host, 0, Buffers.hostBytes());
  }
  Buffers.bind(Device, Host);
  Memory.Arena = usedDeviceMemory();
  static_assert(sizeof(StepValues) <=
                    sizeof(float) * plan::ScratchLayout::StepValueFloats,
                "the step's values outgrow their place in the scratch");
  plan::ScratchLayout SL =
      plan::scratchLayout(P.Program.size(), P.Settings.GradAccum);
  const plan::RuntimeViews &RV = P.Places.Runtime;
  HostStep = reinterpret_cast<StepValues *>(Buffers.at(RV.HostScratch, 0));
  DeviceStep = reinterpret_cast<StepValues *>(Buffers.at(RV.Scratch, SL.StepValues));
  HostLosses = reinterpret_cast<float *>(Buffers.at(RV.HostScratch, SL.HostLosses));
  DeviceLosses = reinterpret_cast<float *>(Buffers.at(RV.Scratch, SL.Losses));
  if (!setUpSwap())
    return false;

  Calls.resize(P.Program.size());
  // Ranks agree on the collectives' timings through the scratch buffer.
  TimesTravel = P.Settings.WorldSize > 1;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    Calls[I] = collectiveCalls(Buffers, I);
    if (!Calls[I].empty())
      Timing.measure(I);
  }
  QgzLayouts.resize(P.Buckets.size());
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    if (P.Places.Buckets[B].Qgz != plan::NoIndex)
      QgzLayouts[B] = plan::qgzLayout(P, B);
  Counts.reset(P.Program.size());
  for (const plan::Instruction &In : P.Program)
    if (In.On == plan::Stream::Host || In.Kind == plan::InstrKind::Transfer)
      NoGraphReason = "the plan offloads: its host work and copies are "
                      "issued from the host each step";
  return true;
}

void Executor::initializeWeights() {
  cudaStream_t S = Timing.stream(plan::Stream::Compute);
  const plan::Info &Set = P.Settings;
  for (uint32_t Ti = 0; Ti < P.Tensors.size(); ++Ti) {
    const plan::Tensor &X = P.Tensors[Ti];
    const plan::TensorViews &V = P.Places.Tensors[Ti];
    if (Stage < 3) {
      initWeights(Buffers.at(V.Param), ParamType, nullptr, Ti, 0, X.Elems, X.Elems,
                  S);
      continue;
    }
    uint64_t Base = uint64_t(ShardRank) * X.ShardElems;
    if (X.Persistent) {
      initWeights(Buffers.at(V.Param), ParamType, nullptr, Ti, 0,
                  X.ShardElems * Shards, X.Elems, S);
    } else if (Set.ParamOffload == plan::OffloadDevice::None) {
      initWeights(Buffers.at(V.Shard), ParamType, nullptr, Ti, Base, X.ShardElems,
                  X.Elems, S);
    } else if (!ParamSwap) { // On NVMe: initializeSwap writes them.
      char *Dst = Buffers.at(V.Shard);
      for (uint64_t I = 0; I < X.ShardElems; ++I)
        storeAs(Dst, I, ParamType,
                Base + I < X.Elems ? startWeight(Ti, Base + I) : 0.0f);
    }
  }
  initializeSwap();
  // The master copy of what this rank owns starts as the stored 16-bit
  // weight; moments start at zero (the arenas are zeroed). With
  // NVMe it lives in the swap file (initializeSwap); in fp32 at stage 0 it
  // is the parameters themselves.
  uint32_t Master = P.Places.Owned.Master;
  if (OptimizerSwap || Master == plan::NoIndex ||
      P.Buffers[Buffers.view(Master).Buffer].Role == plan::BufferRole::Params16) {
    CHECK_CUDA(cudaStreamSynchronize(S));
    return;
  }
  bool BF16Master = Buffers.view(Master).Type == plan::DType::BF16;
  for (const plan::OwnedPiece &O : plan::ownedPieces(P, Process.Rank)) {
    uint64_t N = O.End - O.Begin;
    char *At = Buffers.at(Master, O.PartitionOffset);
    auto *To = reinterpret_cast<float *>(At);
    if (BF16Master) {
      // bf16 masters (on the device: checkRunnable) are the bf16 weights.
      initWeights(At, ElementType::BF16, nullptr, O.Tensor, O.Begin, N,
                  P.Tensors[O.Tensor].Elems, S);
    } else if (!Buffers.onDevice(Master)) {
      for (uint64_t I = 0; I < N; ++I)
        To[I] = storedValue(startWeight(O.Tensor, O.Begin + I), ParamType);
    } else {
      // The stored weight, rounded through the 16-bit type.
      initWeights(nullptr, ParamType, To, O.Tensor, O.Begin, N,
                  P.Tensors[O.Tensor].Elems, S);
    }
  }
  CHECK_CUDA(cudaStreamSynchronize(S));
}

//===----------------------------------------------------------------------===//
// The step.
//===----------------------------------------------------------------------===//

void Executor::issue(const Instr &C) {
  Issuing = &C;
  Timing.begin(C);
  switch (C.In.Kind) {
  case plan::InstrKind::Forward:
    compute(C, false);
    break;
  case plan::InstrKind::Backward:
    compute(C, true);
    gradients(C);
    break;
  case plan::InstrKind::Gather:
  case plan::InstrKind::GatherSecondary:
    gatherUnit(C);
    break;
  case plan::InstrKind::GatherParams:
  case plan::InstrKind::ReduceReplicas:
    collectives(C);
    break;
  case plan::InstrKind::Release:
    break; // The memory plan already reuses the bytes after this point.
  case plan::InstrKind::Reduce:
    reduce(C);
    break;
  case plan::InstrKind::ReduceAcrossNodes:
    reduceAcrossNodes(C);
    break;
  case plan::InstrKind::OptimizerStep:
    optimizerStep(C);
    break;
  case plan::InstrKind::Transfer:
    transfer(C);
    break;
  case plan::InstrKind::ClipGradients:
    clipGradients(C);
    break;
  }
  Timing.end(C);
  Issuing = nullptr;
}

void Executor::setStepValues(uint32_t Step) {
  // Only the previous step, finished, has read them.
  std::string Error;
  AdamW W = adamwFor(P.Settings, OptimizerStep, Error);
  if (!Error.empty())
    fatalError(Error);
  *HostStep = {Step,
               W.Lr,
               W.Beta1,
               W.Beta2,
               W.BiasCorrection1,
               W.BiasCorrection2,
               1.0f,
               0,
               float(Scaler.scale()),
               float(Scaler.scaleIfApplied())};
}

void Executor::finishStep(uint32_t Step) {
  Clips.push_back(HostStep->Clip);
  bool Overflow = HostStep->Overflow;
  if (real()) {
    double Loss = stepLoss();
    bool Fp16 = P.Settings.ParamDType == plan::DType::F16;
    // Every rank holds the same loss and flag (both summed over ranks), so
    // every rank stops here together.
    if (!std::isfinite(Loss) && !(Fp16 && Overflow))
      fatalError("step " + std::to_string(Step) + ": the loss is " +
                 std::to_string(Loss) + "; stopping (lower the learning "
                 "rate, or turn gradient_clipping on)");
    if (Overflow && !Fp16)
      fatalError("step " + std::to_string(Step) + ": the gradients hold an "
                 "inf or NaN; stopping (only fp16 skips such a step)");
    if (std::string Problem = Scaler.update(Overflow); !Problem.empty())
      fatalError("step " + std::to_string(Step) + ": " + Problem);
  }
  if (!Overflow)
    ++OptimizerStep;
}

void Executor::launchLeanStep(uint32_t Step) {
  cudaStream_t Compute = Timing.stream(plan::Stream::Compute);
  // A graph's replay issues no instruction from the host: the step is
  // all a message can say.
  CurrentStep = Step;
  Watcher.progress(Step, uint32_t(P.Program.size()));
  if (!StepGraph && Options.Graph && NoGraphReason.empty()) {
    uint64_t Before = usedDeviceMemory();
    CHECK_CUDA(
        cudaStreamBeginCapture(Compute, cudaStreamCaptureModeThreadLocal));
    Timing.Capturing = true;
    step(Step);
    Timing.Capturing = false;
    cudaGraph_t Graph = nullptr;
    CHECK_CUDA(cudaStreamEndCapture(Compute, &Graph));
    // Node priorities as captured: the communication stream's kernels
    // keep the highest priority (by default a graph's kernels take the
    // priority of the stream it is launched into).
    CHECK_CUDA(cudaGraphInstantiateWithFlags(
        &StepGraph, Graph, cudaGraphInstantiateFlagUseNodePriority));
    CHECK_CUDA(cudaGraphDestroy(Graph));
    // Uploaded now, so that the first launch is timed like the others.
    CHECK_CUDA(cudaGraphUpload(StepGraph, Compute));
    CHECK_CUDA(cudaStreamSynchronize(Compute));
    uint64_t After = usedDeviceMemory();
    GraphBytes = After > Before ? After - Before : 0;
  }
  if (!StepGraph) {
    step(Step);
    return;
  }
  setStepValues(Step); // A launch replays the copy; step() wrote them once.
  CHECK_CUDA(cudaGraphLaunch(StepGraph, Compute));
}

void Executor::runLeanSteps() {
  if (!Options.LeanSteps)
    return;
  Timing.Lean = true;
  std::vector<float> Ms;
  for (uint32_t K = 1; K <= Options.LeanSteps; ++K) {
    launchLeanStep(Options.Steps + K);
    waitForStep();
    finishStep(Options.Steps + K);
    Ms.push_back(Timing.stepMs());
  }
  Timing.Lean = false;
  reportLean(Ms);
}

void Executor::step(uint32_t Step) {
  cudaStream_t Compute = Timing.stream(plan::Stream::Compute);
  Counts.reset(P.Program.size());
  setStepValues(Step);
  CHECK_CUDA(cudaMemcpyAsync(DeviceStep, HostStep, sizeof(StepValues),
                             cudaMemcpyHostToDevice, Compute));
  Timing.markStepBegin();
  Timing.fork();
  CurrentStep = Step;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    Watcher.progress(Step, I);
    issue(Timing.instr(I, Step));
  }
  Watcher.progress(Step, uint32_t(P.Program.size()));
  Timing.join();
  if (real())
    readLosses(Compute);
  Timing.markStepEnd(Compute);
}

bool Executor::waitForStep() {
  return waitUntil([this] { return Timing.stepStatus(); });
}

bool Executor::waitUntil(const std::function<cudaError_t()> &Status,
                         const char *Agreeing) {
  // Poll, so that a peer that died (an NCCL error) or a hang ends the
  // process within the timeout instead of blocking forever. Agreements
  // between steps wait for the slowest rank's save or restore (rank 0
  // writes the consolidated weights alone): ten timeouts, unless past the
  // first the watch names a rank that stopped answering (a rank busy
  // saving still beats; one stopped or gone does not).
  int Seconds = Options.TimeoutSeconds * (Agreeing ? 10 : 1);
  auto Start = std::chrono::steady_clock::now();
  auto Deadline = Start + std::chrono::seconds(Seconds);
  auto NextLook = Start + std::chrono::seconds(Options.TimeoutSeconds);
  while (true) {
    cudaError_t E = Status();
    if (E == cudaSuccess)
      return true;
    if (E != cudaErrorNotReady)
      fatalError(std::string("step failed: ") + cudaGetErrorString(E) + " (rank " +
            std::to_string(Process.Rank) + ")");
    ncclResult_t Async = ncclSuccess;
    for (ncclComm_t *C : ownedComms())
      if (*C && (Async == ncclSuccess || Async == ncclInProgress))
        ncclCommGetAsyncError(*C, &Async);
    if (Async != ncclSuccess && Async != ncclInProgress) {
      abortCommunicators();
      fatalError("rank " + std::to_string(Process.Rank) +
            ": NCCL reports an error (a peer may have died): " +
            ncclGetErrorString(Async));
    }
    auto Now = std::chrono::steady_clock::now();
    if (Now > Deadline)
      abortStuck(Agreeing, Seconds);
    if (Agreeing && Now > NextLook) {
      if (Watcher.silentRank())
        abortStuck(Agreeing,
                   int(std::chrono::duration_cast<std::chrono::seconds>(
                           Now - Start)
                           .count()));
      NextLook = Now + std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void Executor::abortStuck(const char *Agreeing, int Seconds) {
  // Where this rank's GPU waits, and whom the watch has not heard from,
  // before the communicator goes.
  std::string What =
      (Agreeing ? std::string("the ranks did not agree on ") + Agreeing +
                      " after step " + std::to_string(CurrentStep)
                : "step " + std::to_string(CurrentStep) + " did not finish") +
      " within " + std::to_string(Seconds) + " s (--timeout " +
      std::to_string(Options.TimeoutSeconds) + ")";
  uint32_t I = Agreeing ? uint32_t(P.Program.size()) : Timing.firstUnfinished();
  if (I < P.Program.size())
    What += "; its GPU waits at instruction " + std::to_string(I) + " (" +
            instructionName(P, P.Program[I]) + " on the " +
            plan::enumName(P.Program[I].On) + " stream)";
  std::string Who = Watcher.suspects();
  if (Who.empty())
    Who = Watcher.watching()
              ? "every rank still answers the watch, so one is stuck inside "
                "the GPU or NCCL"
              : "no watch of the ranks names one";
  abortCommunicators();
  fatalError("rank " + std::to_string(Process.Rank) + ": " + What + "; " +
             Who + "; the communicator is aborted");
}

int Executor::run() {
  using Clock = std::chrono::steady_clock;
  auto Seconds = [](Clock::time_point From, Clock::time_point To) {
    return std::chrono::duration<double>(To - From).count();
  };
  if (!checkBeforeRunning())
    return 1;
  Clock::time_point Open = Clock::now();
  if (real() && !openTraining())
    return 1;
  Clock::time_point Read = Clock::now();
  if (!setUp())
    return 1;
  if (Options.DryRun) {
    fprintf(stderr, "dsrun: rank %d ready (dry run)\n", Process.Rank);
    return 0;
  }
  if (real() && !setUpTraining())
    return 1;
  Clock::time_point Placing = Clock::now();
  initializeWeights();
  restoreCheckpoint();
  Clock::time_point Ready = Clock::now();
  if (real() && Process.Rank == 0)
    fprintf(stderr,
            "dsrun: ready after %.1f s: tokens and weights read in %.1f s, "
            "NCCL and device memory set up in %.1f s, the weights and any "
            "checkpoint placed in %.1f s\n",
            Seconds(Options.Started, Ready), Seconds(Open, Read),
            Seconds(Read, Placing), Seconds(Placing, Ready));
  if (P.Settings.OptimizerOffload != plan::OffloadDevice::None) {
    // Every rank's host AdamW runs at the same time as the others', sharing
    // the node's memory: so does the triad it is compared with (an
    // all-reduce of one float lines the ranks up first).
    if (Comm && Process.WorldSize > 1) {
      cudaStream_t S = Timing.stream(plan::Stream::Comm);
      float *One = reinterpret_cast<float *>(Buffers.at(P.Places.Runtime.Scratch));
      CHECK_NCCL(ncclAllReduce(One, One, 1, ncclFloat32, ncclSum, Comm, S));
      waitUntil([S] { return cudaStreamQuery(S); });
    }
    HostTriadBytesPerSec = hostTriadBytesPerSec(Options.HostThreads);
  }
  // Training runs its lean steps in the same loop: each takes its tokens
  // and reports its loss. A resumed run goes on after the checkpoint's
  // step; its first steps are the timed ones.
  uint32_t Last = Options.Steps + (real() ? Options.LeanSteps : 0);
  uint32_t First = ResumeShard ? ResumeShard->header().Step : 0;
  std::vector<float> LeanMs;
  for (uint32_t Step = First + 1; Step <= Last; ++Step) {
    Timing.Lean = Step - First > Options.Steps;
    if (real())
      fillInputs(Step);
    Model.setProfiling(Step == Options.ProfileStep);
    auto Enqueue = std::chrono::steady_clock::now();
    if (Timing.Lean && Step != Options.ProfileStep)
      launchLeanStep(Step);
    else
      step(Step);
    double EnqueueMs = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - Enqueue)
                           .count();
    waitForStep();
    finishStep(Step);
    Memory.Peak = std::max(Memory.Peak, usedDeviceMemory());
    StepTiming Took;
    if (Timing.Lean) {
      Took.StepMs = Timing.stepMs();
      Took.Timed = false;
      LeanMs.push_back(float(Took.StepMs));
    } else {
      Took = measureStep();
      Timings.push_back(Took);
      if (Step - First == Options.Steps && !Options.TracePath.empty())
        writeTrace(Step);
    }
    Took.EnqueueMs = EnqueueMs;
    report(Step, Took);
    if (Step == Options.ProfileStep) {
      std::string Table = Model.profileReport(Took.StepMs);
      if (Process.Rank == 0)
        fputs(Table.c_str(), stderr);
    }
    int Stop = stopAgreed();
    if (!Options.SaveDir.empty() &&
        (Stop || Step == Last ||
         (Options.SaveEvery && Step % Options.SaveEvery == 0)))
      saveCheckpoint(Step);
    if (Stop && Step < Last) {
      if (Process.Rank == 0)
        fprintf(stderr, "dsrun: stopped after step %u on %s%s%s\n", Step,
                signalName(Stop),
                Options.SaveDir.empty() ? " (no --save: nothing saved)"
                                        : "; resume with --resume ",
                Options.SaveDir.c_str());
      return ExitStopped;
    }
    if (!Options.ValDataPath.empty() &&
        (Step == Last || (Options.EvalEvery && Step % Options.EvalEvery == 0)))
      evaluate(Step);
  }
  Timing.Lean = false;
  for (float Ms : LeanMs)
    LeanMeanMs += Ms / double(LeanMs.size());
  // Every rank runs the lean steps and the verification (collectives
  // both), even where rank 0 could not write its calibration.
  bool Reported = reportSummary();
  if (real()) {
    reportLean(LeanMs);
    bool Saved = Options.SaveWeightsPath.empty() ||
                 (Options.SaveMasters
                      ? writeMasterWeights(Options.SaveWeightsPath, Last)
                      : writeWeights(Options.SaveWeightsPath));
    return Saved && Reported ? 0 : 1;
  }
  runLeanSteps();
  if (Options.Verify && !verify(Options.Steps + Options.LeanSteps))
    return 1;
  return Reported ? 0 : 1;
}

} // namespace dsrun
