//===- Executor.cpp - Set up, then run the program step by step -----------===//

#include "Executor.h"

#include "Cli.h"

#include "HostMath.h"
#include "Kernels.h"
#include "NcclGroup.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

Executor *Current = nullptr;

} // namespace

void fatalError(const std::string &Message) {
  fprintf(stderr, "dsrun: %s\n", Message.c_str());
  fflush(stderr);
  std::_Exit(1);
}
std::string whereNow() {
  return Current ? " (" + Current->where() + ")" : std::string();
}

namespace {

/// Work a stream runs as a host callback: one slot per instruction (two
/// for transfers), reused every step.
struct HostTask {
  std::function<void()> Work;
};

void CUDART_CB runHostTask(void *Data) {
  static_cast<HostTask *>(Data)->Work();
}

std::vector<HostTask> Tasks;

uint64_t usedDeviceMemory(uint64_t *Total = nullptr) {
  size_t Free = 0, All = 0;
  CHECK_CUDA(cudaMemGetInfo(&Free, &All));
  if (Total)
    *Total = All;
  return All - Free;
}

} // namespace

Executor::Executor(const plan::Plan &P, const ProcessInfo &Process,
                   const RunOptions &Options)
    : P(P), Process(Process), Options(Options), L(P, Process.Rank) {
  Current = this;
  BucketOfTensor.assign(P.Tensors.size(), plan::NoIndex);
  SegmentOfTensor.assign(P.Tensors.size(), 0);
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    for (uint32_t K = 0; K < P.Buckets[B].Segments.size(); ++K) {
      BucketOfTensor[P.Buckets[B].Segments[K].Tensor] = B;
      SegmentOfTensor[P.Buckets[B].Segments[K].Tensor] = K;
    }
}

Executor::~Executor() {
  if (StepGraph)
    cudaGraphExecDestroy(StepGraph);
  if (HostStep)
    cudaFreeHost(HostStep);
  if (Comm)
    ncclCommDestroy(Comm);
  Current = nullptr;
}

std::string Executor::where() const {
  std::string S = "rank " + std::to_string(Process.Rank);
  if (CurrentInstruction < P.Program.size()) {
    const plan::Instruction &In = P.Program[CurrentInstruction];
    S += ", instruction " + std::to_string(CurrentInstruction) + " (" +
         plan::enumName(In.Kind) + " " + std::to_string(In.Arg) + ", micro " +
         std::to_string(In.Micro) + ")";
  }
  return S;
}

char *Executor::at(const BufferView &V, uint64_t ByteOffset) const {
  if (!V)
    return nullptr;
  char *Base = V.B->Space == plan::MemorySpace::Device ? DeviceArena : HostArena;
  return Base + V.Offset + ByteOffset;
}
char *Executor::device(const std::string &Name) const {
  BufferView V = L.buffer(Name);
  return V && V.B->Space == plan::MemorySpace::Device ? at(V) : nullptr;
}
char *Executor::host(const std::string &Name) const {
  BufferView V = L.buffer(Name);
  return V && V.B->Space == plan::MemorySpace::Host ? at(V) : nullptr;
}

void Executor::measureBegin(cudaStream_t S) {
  mark(MeasuredStart[CurrentInstruction], S);
}
void Executor::measureEnd(cudaStream_t S) {
  mark(MeasuredFinish[CurrentInstruction], S);
}
void Executor::mark(cudaEvent_t E, cudaStream_t S) {
  if (Lean && E != StepBegin && E != StepEnd)
    return;
  CHECK_CUDA(cudaEventRecordWithFlags(
      E, S, Capturing ? cudaEventRecordExternal : cudaEventRecordDefault));
}

void Executor::onHost(cudaStream_t S, uint32_t Slot, std::function<void()> W) {
  Tasks[Slot].Work = std::move(W);
  CHECK_CUDA(cudaLaunchHostFunc(S, runHostTask, &Tasks[Slot]));
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
  std::string Short = checkRuntimeNeeds(L);
  if (!Short.empty()) {
    fprintf(stderr, "dsrun: the plan cannot run: %s (was it edited? plan "
                    "again with dsc plan)\n",
            Short.c_str());
    return false;
  }
  std::string Hazard = checkMemoryOrdering(P, L.Class);
  if (!Hazard.empty()) {
    fprintf(stderr, "dsrun: the plan is unsafe to run: %s\n", Hazard.c_str());
    return false;
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
  // Reading the free memory creates the context: what is used then is the
  // context (and whatever else holds the GPU, nothing on a GPU of our own).
  CHECK_CUDA(cudaFree(nullptr));
  Memory.Context = usedDeviceMemory(&Memory.Total);

  const plan::RankEstimate &R = P.Estimates.Ranks[L.Class];
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

  // NCCL's kernels run on SMs. At the highest priority the block
  // scheduler hands them SMs as the GEMMs' blocks retire instead of after
  // every block queued before (the default; --comm-priority normal
  // gives every stream the same priority).
  int Least = 0, Greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&Least, &Greatest));
  for (unsigned K = 0; K < plan::NumStreams; ++K)
    CHECK_CUDA(cudaStreamCreateWithPriority(
        &Streams[K], cudaStreamNonBlocking,
        K == unsigned(plan::Stream::Comm) && Options.CommPriority ? Greatest
                                                                  : Least));

  CHECK_CUBLAS(cublasCreate(&Cublas));
  CHECK_CUBLAS(cublasSetStream(Cublas, stream(plan::Stream::Compute)));
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
    // (the math attention) keeps its own. The first GEMM allocates it.
    std::string Lt = Products.init();
    if (!Lt.empty()) {
      fprintf(stderr, "dsrun: %s\n", Lt.c_str());
      return false;
    }
    void *Scratch = nullptr;
    CHECK_CUDA(cudaMalloc(&Scratch, 3 * 64 * 64 * 4));
    float One = 1, Zero = 0;
    float *A = static_cast<float *>(Scratch);
    CHECK_CUBLAS(cublasSgemm(Cublas, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &One,
                             A, 64, A + 4096, 64, &Zero, A + 8192, 64));
    CHECK_CUDA(cudaStreamSynchronize(stream(plan::Stream::Compute)));
    CHECK_CUDA(cudaFree(Scratch));
  }
  Memory.Cublas = usedDeviceMemory();

  int Version = 0;
  CHECK_NCCL(ncclGetVersion(&Version));
  ncclUniqueId Id;
  std::string Blob;
  if (Process.Rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&Id));
    Blob.assign(reinterpret_cast<const char *>(&Id), sizeof(Id));
  }
  std::string Error;
  if (!exchangeBlob(Process, Blob, Options.TimeoutSeconds, Error) ||
      Blob.size() != sizeof(Id)) {
    fprintf(stderr, "dsrun: %s\n",
            Error.empty() ? "bad NCCL id from rank 0" : Error.c_str());
    return false;
  }
  memcpy(&Id, Blob.data(), sizeof(Id));
  ncclConfig_t Config = commConfig(Options.CommMinCTAs);
  if (ncclResult_t E = ncclCommInitRankConfig(&Comm, Process.WorldSize, Id,
                                              Process.Rank, &Config);
      E != ncclSuccess) {
    fprintf(stderr, "dsrun: rank %d: ncclCommInitRankConfig failed: %s (%s)\n",
            Process.Rank, ncclGetErrorString(E), ncclGetLastError(nullptr));
    return false;
  }
  {
    // NCCL sets up its buffers on the first collective.
    void *One = nullptr;
    CHECK_CUDA(cudaMalloc(&One, 4096));
    CHECK_NCCL(ncclAllReduce(One, One, 1024, ncclFloat32, ncclSum, Comm,
                             stream(plan::Stream::Comm)));
    CHECK_CUDA(cudaStreamSynchronize(stream(plan::Stream::Comm)));
    CHECK_CUDA(cudaFree(One));
  }
  Memory.Nccl = usedDeviceMemory();
  if (Process.Rank == 0)
    fprintf(stderr, "dsrun: NCCL %d.%d.%d, %d rank(s), plan for ZeRO stage %u\n",
            Version / 10000, (Version / 100) % 100, Version % 100,
            Process.WorldSize, P.Settings.ZeroStage);

  // The arenas: everything the plan places, allocated once.
  ArenaBytes = R.DeviceArenaBytes;
  uint64_t StepValuesAt = (ArenaBytes + 255) / 256 * 256;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void **>(&DeviceArena),
                        StepValuesAt + 256));
  CHECK_CUDA(cudaMemset(DeviceArena, 0, ArenaBytes));
  DeviceStep = reinterpret_cast<StepValues *>(DeviceArena + StepValuesAt);
  CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&HostStep),
                           sizeof(StepValues), cudaHostAllocDefault));
  if (R.HostArenaBytes) {
    CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&HostArena),
                             R.HostArenaBytes, cudaHostAllocDefault));
    memset(HostArena, 0, R.HostArenaBytes);
  }
  // Staging for offloaded gradients and parameters (host, pinned): the
  // largest share of a bucket and the largest sub-group.
  if (P.Settings.OptimizerOffload != plan::OffloadDevice::None) {
    uint64_t Share = 0;
    for (const plan::Bucket &B : P.Buckets)
      Share = std::max(Share, B.Elems);
    GradStagingBytes = Share * 4 + 256;
    uint64_t Group = 0;
    for (auto [Lo, Hi] : L.SubGroupRange)
      Group = std::max(Group, Hi - Lo);
    ParamStagingBytes = Group * 4 + 256;
    CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&GradStaging),
                             GradStagingBytes, cudaHostAllocDefault));
    CHECK_CUDA(cudaHostAlloc(reinterpret_cast<void **>(&ParamStaging),
                             ParamStagingBytes, cudaHostAllocDefault));
  }
  Memory.Arena = usedDeviceMemory();
  resolveValues();
  if (!setUpSwap())
    return false;

  // Events: timing, and for lean steps (which record no timing events)
  // one per instruction another stream waits for.
  std::vector<bool> WaitedOn(P.Program.size(), false);
  for (const plan::Instruction &In : P.Program)
    for (uint32_t W : In.Waits)
      WaitedOn[W] = true;
  size_t N = P.Program.size();
  Done.assign(N, nullptr);
  Start.assign(N, nullptr);
  Finish.assign(N, nullptr);
  MeasuredStart.assign(N, nullptr);
  MeasuredFinish.assign(N, nullptr);
  CopiesIssued.assign(N, 0);
  IoBytes.assign(N, 0);
  IoNanos.assign(N, 0);
  HostAdamNanos.assign(N, 0);
  ConvertElems.assign(N, 0);
  ConvertNanos.assign(N, 0);
  Calls.resize(N);
  // Ranks agree on the collectives' timings through the scratch buffer
  // (checkRuntimeNeeds made sure every rank has one large enough).
  TimesTravel = P.Settings.WorldSize > 1;
  for (uint32_t I = 0; I < N; ++I) {
    if (WaitedOn[I])
      CHECK_CUDA(cudaEventCreateWithFlags(&Done[I], cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreate(&Start[I]));
    CHECK_CUDA(cudaEventCreate(&Finish[I]));
    Calls[I] = collectiveCalls(L, I);
    if (P.Program[I].Kind == plan::InstrKind::Transfer || !Calls[I].empty()) {
      CHECK_CUDA(cudaEventCreate(&MeasuredStart[I]));
      CHECK_CUDA(cudaEventCreate(&MeasuredFinish[I]));
    }
  }
  for (cudaEvent_t &E : Joins)
    CHECK_CUDA(cudaEventCreateWithFlags(&E, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreate(&StepBegin));
  CHECK_CUDA(cudaEventCreate(&StepEnd));
  CHECK_CUDA(cudaEventCreateWithFlags(&StepFork, cudaEventDisableTiming));
  Tasks.resize(P.Program.size() * 2);
  for (const plan::Instruction &In : P.Program)
    if (In.On == plan::Stream::Host || In.Kind == plan::InstrKind::Transfer)
      NoGraphReason = "the plan offloads: its host work and copies are "
                      "issued from the host each step";
  return true;
}

void Executor::resolveValues() {
  ValueAddress.assign(P.Values.size(), nullptr);
  for (uint32_t V = 0; V < P.Values.size(); ++V)
    if (L.ValueOffset[V] != NoOffset)
      ValueAddress[V] = DeviceArena + L.ValueOffset[V];
}

void Executor::initializeWeights() {
  cudaStream_t S = stream(plan::Stream::Compute);
  ElementType T = L.Param;
  unsigned PB = elementBytes(T);
  const plan::Info &Set = P.Settings;
  bool Offloaded = Set.OptimizerOffload != plan::OffloadDevice::None;
  for (uint32_t Ti = 0; Ti < P.Tensors.size(); ++Ti) {
    const plan::Tensor &X = P.Tensors[Ti];
    if (L.Stage < 3) {
      initWeights(device("params16") + L.paramOffset(Ti) * PB, T, nullptr, Ti,
                  0, X.Elems, X.Elems, S);
      continue;
    }
    uint64_t Base = uint64_t(Process.Rank) * X.ShardElems;
    if (X.Persistent) {
      initWeights(device("persistent_params") + L.persistentOffset(Ti) * PB,
                  T, nullptr, Ti, 0, X.ShardElems * L.World, X.Elems, S);
    } else if (Set.ParamOffload == plan::OffloadDevice::None) {
      initWeights(device("params16") + L.shardOffset(Ti) * PB, T, nullptr, Ti,
                  Base, X.ShardElems, X.Elems, S);
    } else if (!ParamSwap) { // On NVMe: initializeSwap writes them.
      char *Dst = host("params16") + L.shardOffset(Ti) * PB;
      for (uint64_t I = 0; I < X.ShardElems; ++I)
        storeAs(Dst, I, T,
                Base + I < X.Elems ? startWeight(Ti, Base + I) : 0.0f);
    }
  }
  initializeSwap();
  // The fp32 master copy of what this rank owns starts as the stored
  // 16-bit weight; moments start at zero (the arenas are zeroed).
  if (!L.buffer("master_params")) {
    CHECK_CUDA(cudaStreamSynchronize(S));
    return;
  }
  for (const OwnedRange &O : L.Owned) {
    uint64_t N = O.End - O.Begin;
    if (Offloaded) {
      float *Master =
          reinterpret_cast<float *>(host("master_params")) + O.PartitionOffset;
      for (uint64_t I = 0; I < N; ++I)
        Master[I] = storedValue(startWeight(O.Tensor, O.Begin + I), T);
    } else {
      // The stored weight, rounded through the 16-bit type.
      float *Master = reinterpret_cast<float *>(device("master_params")) +
                      O.PartitionOffset;
      initWeights(nullptr, T, Master, O.Tensor, O.Begin, N,
                  P.Tensors[O.Tensor].Elems, S);
    }
  }
  CHECK_CUDA(cudaStreamSynchronize(S));
}

//===----------------------------------------------------------------------===//
// The step.
//===----------------------------------------------------------------------===//

void Executor::issue(uint32_t Index, uint32_t Step) {
  CurrentInstruction = Index;
  const plan::Instruction &In = P.Program[Index];
  cudaStream_t S = stream(In.On);
  // A measured step waits on the timing events themselves, which saves a
  // record per waited-on instruction (lean steps record no timing events
  // and wait on their own).
  for (uint32_t W : In.Waits)
    CHECK_CUDA(cudaStreamWaitEvent(S, Lean ? Done[W] : Finish[W], 0));
  mark(Start[Index], S);
  switch (In.Kind) {
  case plan::InstrKind::Forward:
    compute(In, false, Step);
    break;
  case plan::InstrKind::Backward:
    compute(In, true, Step);
    gradients(In.Arg, In.Micro, S);
    break;
  case plan::InstrKind::Gather:
    gatherUnit(In.Arg, S);
    break;
  case plan::InstrKind::GatherParams:
    collectives(S);
    break;
  case plan::InstrKind::Release:
    break; // The memory plan already reuses the bytes after this point.
  case plan::InstrKind::Reduce:
    reduce(In.Arg, In.Micro, S);
    break;
  case plan::InstrKind::OptimizerStep:
    optimizerStep(In.Arg, S, In.On == plan::Stream::Host);
    break;
  case plan::InstrKind::Transfer:
    transfer(In.Arg, In.Micro, S);
    break;
  case plan::InstrKind::ClipGradients:
    clipGradients(S, In.On == plan::Stream::Host);
    break;
  }
  mark(Finish[Index], S);
  if (Lean && Done[Index])
    CHECK_CUDA(cudaEventRecord(Done[Index], S));
}

void Executor::setStepValues(uint32_t Step) {
  // Only the previous step, finished, has read them.
  std::string Error;
  AdamW A = adamwFor(P.Settings, OptimizerStep, Error);
  if (!Error.empty())
    fatalError(Error);
  *HostStep = {Step,
               A.Lr,
               A.Beta1,
               A.Beta2,
               A.BiasCorrection1,
               A.BiasCorrection2,
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
  cudaStream_t Compute = stream(plan::Stream::Compute);
  if (!StepGraph && Options.Graph && NoGraphReason.empty()) {
    CHECK_CUDA(
        cudaStreamBeginCapture(Compute, cudaStreamCaptureModeThreadLocal));
    Capturing = true;
    step(Step);
    Capturing = false;
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
  Lean = true;
  uint64_t Before = usedDeviceMemory();
  std::vector<float> Ms;
  for (uint32_t K = 1; K <= Options.LeanSteps; ++K) {
    launchLeanStep(Options.Steps + K);
    waitForStep();
    finishStep(Options.Steps + K);
    float StepMs = 0;
    CHECK_CUDA(cudaEventElapsedTime(&StepMs, StepBegin, StepEnd));
    Ms.push_back(StepMs);
  }
  // What the graph took (its launch resources), apart from the plan.
  uint64_t After = usedDeviceMemory();
  Lean = false;
  reportLean(Ms, StepGraph && After > Before ? After - Before : 0);
}

void Executor::step(uint32_t Step) {
  cudaStream_t Compute = stream(plan::Stream::Compute);
  std::fill(CopiesIssued.begin(), CopiesIssued.end(), 0);
  std::fill(IoBytes.begin(), IoBytes.end(), 0);
  std::fill(IoNanos.begin(), IoNanos.end(), 0);
  std::fill(ConvertElems.begin(), ConvertElems.end(), 0);
  std::fill(ConvertNanos.begin(), ConvertNanos.end(), 0);
  setStepValues(Step);
  CHECK_CUDA(cudaMemcpyAsync(DeviceStep, HostStep, sizeof(StepValues),
                             cudaMemcpyHostToDevice, Compute));
  mark(StepBegin, Compute);
  forkStreams();
  for (uint32_t I = 0; I < P.Program.size(); ++I)
    issue(I, Step);
  CurrentInstruction = plan::NoIndex;
  joinStreams();
  if (real())
    readLosses(Compute);
  mark(StepEnd, Compute);
}

void Executor::forkStreams() {
  cudaStream_t Compute = stream(plan::Stream::Compute);
  CHECK_CUDA(cudaEventRecord(StepFork, Compute));
  for (cudaStream_t S : Streams)
    if (S != Compute)
      CHECK_CUDA(cudaStreamWaitEvent(S, StepFork, 0));
}

void Executor::joinStreams() {
  cudaStream_t Compute = stream(plan::Stream::Compute);
  for (unsigned K = 0; K < plan::NumStreams; ++K)
    if (Streams[K] != Compute) {
      CHECK_CUDA(cudaEventRecord(Joins[K], Streams[K]));
      CHECK_CUDA(cudaStreamWaitEvent(Compute, Joins[K], 0));
    }
}

bool Executor::waitForStep() {
  // Poll, so that a peer that died (an NCCL error) or a hang ends the
  // process within the timeout instead of blocking forever.
  auto Deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(Options.TimeoutSeconds);
  while (true) {
    cudaError_t E = cudaEventQuery(StepEnd);
    if (E == cudaSuccess)
      return true;
    if (E != cudaErrorNotReady)
      fatalError(std::string("step failed: ") + cudaGetErrorString(E) + " (rank " +
            std::to_string(Process.Rank) + ")");
    ncclResult_t Async = ncclSuccess;
    ncclCommGetAsyncError(Comm, &Async);
    if (Async != ncclSuccess && Async != ncclInProgress) {
      ncclCommAbort(Comm);
      Comm = nullptr;
      fatalError("rank " + std::to_string(Process.Rank) +
            ": NCCL reports an error (a peer may have died): " +
            ncclGetErrorString(Async));
    }
    if (std::chrono::steady_clock::now() > Deadline) {
      ncclCommAbort(Comm);
      Comm = nullptr;
      fatalError("rank " + std::to_string(Process.Rank) + ": a step took more "
            "than " + std::to_string(Options.TimeoutSeconds) +
            " s; aborting (a peer is stuck or gone)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

int Executor::run() {
  if (!checkBeforeRunning() || (real() && !openTraining()) || !setUp())
    return 1;
  if (Options.DryRun) {
    fprintf(stderr, "dsrun: rank %d ready (dry run)\n", Process.Rank);
    return 0;
  }
  if (real() && !setUpTraining())
    return 1;
  initializeWeights();
  restoreCheckpoint();
  // Training runs its lean steps in the same loop: each takes its tokens
  // and reports its loss. A resumed run goes on after the checkpoint's
  // step; its first steps are the timed ones.
  uint32_t Last = Options.Steps + (real() ? Options.LeanSteps : 0);
  uint32_t First = ResumeShard ? ResumeShard->header().Step : 0;
  std::vector<float> LeanMs;
  for (uint32_t Step = First + 1; Step <= Last; ++Step) {
    Lean = Step - First > Options.Steps;
    if (real())
      fillInputs(Step);
    Model.setProfiling(Step == Options.ProfileStep);
    auto Enqueue = std::chrono::steady_clock::now();
    step(Step);
    double EnqueueMs = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - Enqueue)
                           .count();
    waitForStep();
    finishStep(Step);
    Memory.Peak = std::max(Memory.Peak, usedDeviceMemory());
    StepTiming T;
    if (Lean) {
      float Ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&Ms, StepBegin, StepEnd));
      T.StepMs = Ms;
      T.Timed = false;
      LeanMs.push_back(Ms);
    } else {
      T = measureStep();
      Timings.push_back(T);
    }
    T.EnqueueMs = EnqueueMs;
    report(Step, T);
    if (Step == Options.ProfileStep) {
      std::string Table = Model.profileReport(T.StepMs);
      if (Process.Rank == 0)
        fputs(Table.c_str(), stderr);
    }
    if (!Options.SaveDir.empty() &&
        (Step == Last || (Options.SaveEvery && Step % Options.SaveEvery == 0)))
      saveCheckpoint(Step);
    if (!Options.ValDataPath.empty() &&
        (Step == Last || (Options.EvalEvery && Step % Options.EvalEvery == 0)))
      evaluate(Step);
  }
  Lean = false;
  for (float Ms : LeanMs)
    LeanMeanMs += Ms / double(LeanMs.size());
  // Every rank runs the lean steps and the verification (collectives
  // both), even where rank 0 could not write its calibration.
  bool Reported = reportSummary();
  if (real()) {
    reportLean(LeanMs, 0);
    bool Saved = Options.SaveWeightsPath.empty() ||
                 writeWeights(Options.SaveWeightsPath);
    return Saved && Reported ? 0 : 1;
  }
  runLeanSteps();
  if (Options.Verify && !verify(Options.Steps + Options.LeanSteps))
    return 1;
  return Reported ? 0 : 1;
}

} // namespace dsrun
