//===- Executor.h - Run one rank's program ----------------------*- C++ -*-===//
//
// One device arena and one pinned host arena of the planned sizes hold
// every buffer at its planned offset; five CUDA streams (compute,
// communication, copy in, copy out, and a host stream whose work runs as
// host callbacks) execute the instructions in program order per stream,
// ordered across streams by the event recorded after each instruction
// someone waits for. Nothing is allocated inside the step loop (a CUDA
// graph of the lean steps, with --graph on, is instantiated before the
// first of them).
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_EXECUTOR_H
#define DSRUN_EXECUTOR_H

#include "Checkpoint.h"
#include "Checks.h"
#include "Collectives.h"
#include "Exposed.h"
#include "Launch.h"
#include "Nvme.h"
#include "Layout.h"
#include "LossScaler.h"
#include "ModelProgram.h"
#include "TokenData.h"
#include "Weights.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dsrun {


struct RunOptions {
  uint32_t Steps = 3;
  bool Verify = false;
  std::string JsonLog;
  std::string CalibrationOut;
  unsigned HostThreads = 8;
  int TimeoutSeconds = 300;
  /// Stop after setting up (checks, arenas, NCCL), before any step.
  bool DryRun = false;
  /// Where NVMe offload keeps its swap files (the config's nvme_path, as
  /// mounted on this machine).
  std::string NvmePath;
  /// Run the communication stream at the highest priority (on 2 H200s,
  /// in two sessions: collectives beside compute 3 points closer to raw
  /// NCCL, steps no longer; --comm-priority normal turns it off).
  bool CommPriority = true;
  /// SMs cuBLAS leaves free for NCCL's kernels (0: cuBLAS takes them all).
  unsigned CommSMs = 0;
  /// The fewest CTAs (channels) NCCL's kernels take, through the
  /// communicator's config (0: NCCL decides). Beside GEMMs NCCL's own
  /// choice can leave large all-reduces short of what more channels carry.
  unsigned CommMinCTAs = 0;
  /// Steps run after the measured ones with nothing timed inside them
  /// but the whole step: the per-instruction events that the step split
  /// and the collectives' rates need cost the step itself 4-12 ms on 2
  /// H200s (docs/runtime.md), so these give the step time a run without
  /// them has. --verify checks the state after them too (its host
  /// reference costs time in proportion to every step run).
  uint32_t LeanSteps = 3;
  /// Training (--data): the step whose kernels are each timed, and the
  /// table of where its time went printed (0: none).
  uint32_t ProfileStep = 0;
  /// Run the lean steps as one captured CUDA graph where the plan allows
  /// it (no offload: host work and its copies are issued from the host).
  /// Off by default: 3-8 % shorter stage-1 steps and none shorter at
  /// stage 3, for 36-76 MiB of device memory the plan does not hold.
  bool Graph = false;
  /// What forward and backward run. Real: the compute program's kernels
  /// on token data (--data), the model's real gradients. Synthetic: the
  /// ops' GEMMs on their operands (timing) and known gradients that
  /// --verify checks exactly. None: known gradients only, so the step is
  /// the plan's communication, copies and optimizer alone, which shows
  /// what the runtime itself costs its collectives.
  enum class ComputeMode { None, Synthetic, Real };
  ComputeMode Compute = ComputeMode::Synthetic;
  /// Real training: the token file, the initial weights, the seed of the
  /// data order and of dropout, and where to save the trained weights.
  std::string DataPath, InitPath, SaveWeightsPath;
  uint64_t Seed = 1234;
  bool SeedGiven = false;
  /// Checkpoints (Checkpoint.h): --save's directory and every how many
  /// steps (0: after the last step only), and --resume's directory.
  std::string SaveDir, ResumeDir;
  uint32_t SaveEvery = 0;
  /// Evaluation (--val-data): its token file, every how many steps (0:
  /// after the last step only) and how many micro batches each rank
  /// evaluates (0: every full batch of the file).
  std::string ValDataPath;
  uint32_t EvalEvery = 0, EvalBatches = 0;
};

/// Measured device memory, from the driver (cudaMemGetInfo): what the
/// process holds after each stage of setup and at its peak.
struct MemoryReadings {
  uint64_t Total = 0;
  uint64_t BeforeContext = 0, Context = 0, Cublas = 0, Nccl = 0, Arena = 0,
           Peak = 0;
};

struct StepTiming {
  double StepMs = 0;
  /// Host time step() took to enqueue the step: near StepMs, the GPU
  /// waits for launches; well under it, the host waits for the GPU.
  double EnqueueMs = 0;
  /// Instruction by instruction (the split and the rates below are
  /// measured); a lean step has its whole time only.
  bool Timed = true;
  /// The step split: compute stream busy, and idle held by what.
  ExposedTime Split;
  /// Per collective kind ("all-reduce", ...).
  TotalsByKind Collectives;
  /// Copies alone (the host work around them is in HostMs).
  double CopyInBytes = 0, CopyInMs = 0, CopyOutBytes = 0, CopyOutMs = 0;
  double HostMs = 0;
  /// The offloaded AdamW on the host stream: elements updated, and the
  /// time of the update alone (host clock, inside its host function).
  double HostAdamElems = 0, HostAdamMs = 0;
  /// Host conversions between 16-bit and fp32: elements, time.
  double ConvertElems = 0, ConvertMs = 0;
  double NvmeReadBytes = 0, NvmeReadMs = 0, NvmeWriteBytes = 0,
         NvmeWriteMs = 0;
};

/// A sub-group's fp32 master weights and moments on the host, indexed from
/// the sub-group's first element.
struct HostState {
  float *Master, *M, *V;
};

class Executor {
public:
  Executor(const dsc::plan::Plan &P, const ProcessInfo &Process,
           const RunOptions &Options);
  ~Executor();

  /// Sets up and runs; the exit status of the process.
  int run();

  /// Where the current instruction stands, for error messages.
  std::string where() const;

private:
  bool setUp();
  bool checkBeforeRunning();
  void initializeWeights();
  /// Writes the step's StepValues for its first copy to read.
  void setStepValues(uint32_t Step);
  /// After a step has finished: whether it was applied (fp16 skips a step
  /// whose gradients overflowed), the loss scaler updated; stops the run
  /// on a loss or gradient that is not finite where nothing skips it.
  void finishStep(uint32_t Step);
  /// Runs a lean step: the captured graph of one (captured on the first
  /// call), or issued instruction by instruction.
  void launchLeanStep(uint32_t Step);
  /// Runs the lean steps after the measured ones and reports their time.
  void runLeanSteps();
  void step(uint32_t Step);
  /// Every other stream waits for the compute stream's work so far; then,
  /// after the instructions, the compute stream waits for every other.
  void forkStreams();
  void joinStreams();
  bool waitForStep();
  /// The step's timings, once it has finished.
  StepTiming measureStep();
  /// Each collective's duration: on the rank that joined it last for
  /// symmetric ones, the longest for reduces.
  std::vector<float> collectiveTimes();
  void issue(uint32_t Index, uint32_t Step);

  // One function per instruction kind.
  void compute(const dsc::plan::Instruction &In, bool Backward, uint32_t Step);
  void gradients(uint32_t Op, uint32_t Micro, cudaStream_t S);
  void gradientOf(uint32_t Tensor, uint32_t Micro, cudaStream_t S);
  /// Issues the current instruction's NCCL calls as one group.
  void collectives(cudaStream_t S);
  /// Stage 3: gathers a unit (the current instruction) and unpacks a
  /// rank-major gather into the unit's tensor order.
  void gatherUnit(uint32_t Unit, cudaStream_t S);
  void reduce(uint32_t Bucket, uint32_t Micro, cudaStream_t S);
  void optimizerStep(uint32_t SubGroup, cudaStream_t S, bool OnHost);
  /// gradient_clipping: the global norm of the reduced gradients this rank
  /// owns, summed over ranks, into the step's Clip factor (on the device,
  /// and in HostStep for the host optimizer and the report).
  void clipGradients(cudaStream_t S, bool OnHost);
  void transfer(uint32_t Index, uint32_t Micro, cudaStream_t S);
  /// NVMe reads and writes (Swap.cpp); run as host work on stream S.
  bool setUpSwap();
  void initializeSwap();
  void swapIn(const dsc::plan::Transfer &X, cudaStream_t S);
  void swapOut(const dsc::plan::Transfer &X, cudaStream_t S);
  HostState hostState(uint32_t SubGroup) const;
  /// Reads or writes a sub-group's three state regions in the swap file.
  bool stateIo(uint32_t SubGroup, const HostState &Regions, bool Write,
               std::string &Error);
  /// The NVMe parameter buffer a BeforeGather read or copy uses.
  char *paramSwapBuffer() const;
  /// Runs Io (inside a host callback) and records its bytes and time as
  /// the instruction's.
  void timedIo(uint32_t Instruction, uint64_t Bytes,
               const std::function<void()> &Io);
  /// Converts Elems elements with convertOnHost's arguments (inside a host
  /// callback) and adds them and their time to the instruction's.
  void timedConvert(uint32_t Instruction, void *Dst, ElementType DstType,
                    const void *Src, ElementType SrcType, uint64_t Elems,
                    bool Accumulate);

  // Verification (Verify.cpp).
  bool verify(uint32_t Steps);
  /// The first step's clip factor against the norm of the synthetic
  /// gradients computed on the host (skipped for models too large to sum
  /// quickly).
  bool checkFirstClip();

  // Reporting (Report.cpp).
  void report(uint32_t Step, const StepTiming &T);
  /// The lean steps' times (Ms) beside the measured ones'.
  void reportLean(const std::vector<float> &Ms, uint64_t GraphBytes);
  /// False when --calibration-out could not be written.
  bool reportSummary();
  /// The steady steps' time and its split beside the plan's estimate.
  void reportTime();
  /// The index in Timings of the first step past warm-up.
  size_t firstSteadyStep() const;
  /// --calibration-out: the planner's kernel rates and the gap between
  /// kernels, fitted to the profiled step (dsc/KernelTime.h).
  void fitKernelRates(dsc::plan::Hardware &Rates) const;
  /// --calibration-out on several ranks: each collective kind's bus
  /// bandwidth in the steady timed steps.
  void fitCollectiveRates(dsc::plan::Hardware &Rates) const;

  /// Device or host address of Bytes at Offset inside a buffer.
  char *at(const BufferView &V, uint64_t ByteOffset = 0) const;
  /// Where each compute value lives on the device: its buffer in the
  /// arena, or for a parameter where the ZeRO layout keeps it (params16,
  /// its gathered unit, persistent_params). Resolved once at set-up.
  void resolveValues();
  /// The device address of a kernel operand.
  char *address(const dsc::plan::TensorRef &R) const {
    return ValueAddress[R.Value] +
           R.Offset * dsc::plan::dtypeBytes(P.Values[R.Value].Type);
  }
  char *device(const std::string &Name) const;
  char *host(const std::string &Name) const;
  cudaStream_t stream(dsc::plan::Stream S) const {
    return Streams[unsigned(S)];
  }
  /// An asynchronous copy of a transfer, counted in its bytes.
  void copy(void *Dst, const void *Src, uint64_t Bytes, cudaMemcpyKind Kind,
            cudaStream_t S);
  /// Many copies in one batch: one submission instead of one per piece,
  /// which is what small per-tensor pieces cost most.
  struct CopyPiece {
    char *Dst;
    const char *Src;
    size_t Bytes;
  };
  /// Copies the pieces in one batch, those that continue each other as one.
  void copyBatch(std::vector<CopyPiece> Pieces, cudaStream_t S);
  /// Brackets the measured part of the current instruction (see
  /// MeasuredStart).
  void measureBegin(cudaStream_t S);
  void measureEnd(cudaStream_t S);
  /// Records a timing event, in a lean step only the step's own two;
  /// while the step is being captured as an external event, so that every
  /// launch of the graph records it.
  void mark(cudaEvent_t E, cudaStream_t S);
  /// Runs Work on stream S as a host callback, after what S has queued.
  void onHost(cudaStream_t S, uint32_t Slot, std::function<void()> Work);
  /// Synthetic compute: the op's GEMM kernels on their real operands.
  void gemms(const dsc::plan::Op &Op, bool Backward);

  // Real training (Training.cpp).
  /// Rank 0 prints Why (every rank sees the same problem); false.
  bool failOnRankZero(const std::string &Why) const;
  /// Opens the data and the weights and checks them against the plan
  /// (host only, before any GPU work).
  bool openTraining();
  /// Uploads the constants and resolves the kernels' operands.
  bool setUpTraining();
  bool real() const { return Options.Compute == RunOptions::ComputeMode::Real; }
  /// What the reduced gradients are multiplied by before the optimizer:
  /// the compute program's loss gradient already divides by the world
  /// size (each rank's share, as DeepSpeed pre-divides); synthetic
  /// gradients are averaged here.
  float rankGradScale() const { return real() ? 1.0f : 1.0f / float(L.World); }
  /// The op's kernels; the first op's forward copies the micro step's
  /// tokens in, the loss kernel's copies the loss out.
  void runKernels(const dsc::plan::Instruction &In, bool Backward,
                  uint32_t Step);
  /// A tensor's starting weight: --init's, or the synthetic one.
  float startWeight(uint32_t Tensor, uint64_t Elem) const {
    return Weights ? Weights->Values[Tensor][Elem]
                   : initialWeight(Tensor, Elem);
  }
  /// launchInitWeights with --init's weights where they were given.
  void initWeights(void *Params, ElementType T, float *Master, uint32_t Tensor,
                   uint64_t ElemBase, uint64_t N, uint64_t RealN,
                   cudaStream_t S);
  /// Writes the step's tokens into its half of input_staging.
  void fillInputs(uint32_t Step);
  /// One micro batch into Out: row R is the window starting at Starts[R].
  void writeMicroInputs(char *Out, const TokenFile &From,
                        const std::vector<uint64_t> &Starts) const;
  /// Evaluation (Evaluate.cpp): opens --val-data and checks it against the
  /// model (host only); then, at a step, the validation loss.
  bool openValidation(uint64_t Vocab);
  void evaluate(uint32_t Step);
  /// Rank 0 prints the validation loss and logs it as JSON (val_loss).
  void reportValidation(uint32_t Step, double Loss, uint64_t Tokens);
  /// After the step's last op: the micro steps' losses summed over ranks
  /// and read back.
  void readLosses(cudaStream_t S);
  /// The mean loss of the step just finished.
  double stepLoss() const;
  /// Writes the 16-bit weights as safetensors to Path from rank 0 (every
  /// rank takes part: stage 3 gathers them).
  bool writeWeights(const std::string &Path);

  // Checkpoints (Checkpointing.cpp).
  /// The plan's buffers that carry training state from step to step.
  std::vector<BufferView> stateViews() const;
  /// --resume: finds this rank's shard and checks it against the plan
  /// (host only, before any GPU work); adopts its seed.
  bool openResume();
  /// --resume: the shard's buffers into the arenas, its step and scaler.
  void restoreCheckpoint();
  /// --save: this rank's shard, the consolidated weights, then latest.
  void saveCheckpoint(uint32_t Step);
  /// Whether Ok holds on every rank and every rank gives the same Value.
  bool allRanksAgree(bool Ok, uint32_t Value = 0);

  const dsc::plan::Plan &P;
  ProcessInfo Process;
  RunOptions Options;
  Layout L;
  uint32_t CurrentInstruction = dsc::plan::NoIndex;

  cudaStream_t Streams[dsc::plan::NumStreams] = {};
  std::vector<cudaEvent_t> Done; ///< Waited on, in lean steps (else Finish).
  std::vector<cudaEvent_t> Start, Finish; ///< Timing, per instruction.
  /// Around the part of an instruction whose rate is reported: a
  /// transfer's copies without its host work, a collective's NCCL group
  /// without the copies into partitions after it.
  std::vector<cudaEvent_t> MeasuredStart, MeasuredFinish;
  /// Bytes each transfer copied this step.
  std::vector<uint64_t> CopiesIssued;
  /// Each instruction's NCCL calls (Collectives.h).
  std::vector<std::vector<CollectiveCall>> Calls;
  /// Whether collective timings are agreed among ranks (collectiveTimes).
  bool TimesTravel = false;
  cudaEvent_t StepBegin = nullptr, StepEnd = nullptr;
  /// The other streams start after this (StepBegin is for timing).
  cudaEvent_t StepFork = nullptr;
  cudaEvent_t Joins[dsc::plan::NumStreams] = {};
  /// The step number and bias corrections, in pinned host memory and just
  /// past the device arena: every step copies them over first, so the
  /// kernels of a captured step read the current step's.
  StepValues *HostStep = nullptr, *DeviceStep = nullptr;
  /// Why the step cannot be captured ("" if it can).
  std::string NoGraphReason;
  cudaGraphExec_t StepGraph = nullptr;
  bool Capturing = false, Lean = false;
  cublasHandle_t Cublas = nullptr;
  Matmuls Products;
  ncclComm_t Comm = nullptr;
  char *DeviceArena = nullptr, *HostArena = nullptr;
  char *GradStaging = nullptr, *ParamStaging = nullptr;
  uint64_t GradStagingBytes = 0, ParamStagingBytes = 0;
  uint64_t ArenaBytes = 0;
  std::vector<char *> ValueAddress;
  /// The bucket and segment carrying each tensor's gradient.
  std::vector<uint32_t> BucketOfTensor, SegmentOfTensor;
  std::unique_ptr<SwapLayout> Swap;
  std::unique_ptr<SwapFile> OptimizerSwap, ParamSwap;
  /// Per instruction: the NVMe parameter buffer its read or copy uses.
  std::vector<uint32_t> SwapSlot;
  /// Per NVMe instruction this step: bytes moved and nanoseconds of I/O.
  std::vector<uint64_t> IoBytes, IoNanos;
  /// Per host optimizer step this step: nanoseconds of AdamW alone (not
  /// the 16-bit copy of the update that follows it with CPU parameters).
  std::vector<uint64_t> HostAdamNanos;
  /// Per instruction this step: elements converted on the host between
  /// 16-bit and fp32, and the nanoseconds it took.
  std::vector<uint64_t> ConvertElems, ConvertNanos;
  // Real training.
  std::optional<TokenFile> Tokens;
  std::unique_ptr<TokenSampler> Sampler;
  /// --val-data, the micro batches each rank evaluates, and whether the
  /// kernels now run for evaluation (no dropout).
  std::optional<TokenFile> ValTokens;
  uint64_t EvalBatches = 0;
  bool Evaluating = false;
  std::optional<InitialWeights> Weights;
  ModelProgram Model;
  /// The real training's lean steps, mean (0: none ran).
  double LeanMeanMs = 0;
  /// Per micro step, per input value: where its bytes go in a step's half
  /// of input_staging.
  uint64_t MicroInputBytes = 0, Seq = 0;
  char *Staging = nullptr;
  float *HostLosses = nullptr, *DeviceLosses = nullptr;
  /// FLOPs of one step's kernels on this rank (each micro step runs the
  /// forward and backward kernels once), and the GPU's dense 16-bit peak
  /// (0: not known for this GPU, no MFU reported).
  double StepFlops = 0, PeakFlops = 0;
  uint32_t LossValue = dsc::plan::NoIndex;
  /// Per step run: the gradient_clipping factor it applied.
  std::vector<float> Clips;
  /// The optimizer's and the scheduler's step number for the next step:
  /// the steps applied so far, plus one (DeepSpeed advances neither on a
  /// skipped fp16 step).
  uint32_t OptimizerStep = 1;
  /// fp16 with --data: the loss scale (scale 1 otherwise).
  LossScaler Scaler;
  /// --resume: this rank's shard, checked against the plan, open until the
  /// restore has read it (null when not resuming).
  std::unique_ptr<ShardReader> ResumeShard;
  MemoryReadings Memory;
  std::vector<StepTiming> Timings;
  bool Failed = false;
  std::string FailureMessage;
};

} // namespace dsrun

#endif
