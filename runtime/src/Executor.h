//===- Executor.h - Run one rank's program ----------------------*- C++ -*-===//
//
// dsrun interprets the plan: it allocates the planned arenas (Arena.h),
// resolves every view to an address once, and issues the program's
// instructions in order on the plan's streams (Timeline.h); it decides
// nothing the plan decided. Nothing is allocated inside the step loop (a
// CUDA graph of the lean steps, with --graph on, is instantiated before
// the first of them).
//
// The executor's parts, one file each:
//   Executor.cpp      set-up, the step loop, issuing an instruction
//   Steps.cpp         compute, gradients and their reduction, clipping,
//                     the optimizer step
//   Collectives.cpp   the NCCL calls an instruction makes (host-only)
//   Transfers.cpp     offload copies through the planned staging
//   Swap.cpp          NVMe swap files (Nvme.h)
//   Training.cpp      data, weights, the model's kernels, losses
//   Checkpointing.cpp --save and --resume
//   Evaluate.cpp      the validation loss
//   Measure.cpp       a step's timings, agreed among ranks
//   Report.cpp        what a step measured beside what the plan said
//   Verify.cpp        --verify against the host reference
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_EXECUTOR_H
#define DSRUN_EXECUTOR_H

#include "Arena.h"
#include "Checkpoint.h"
#include "Checks.h"
#include "Collectives.h"
#include "NcclGroup.h"
#include "Exposed.h"
#include "Launch.h"
#include "LossScaler.h"
#include "ModelProgram.h"
#include "Nvme.h"
#include "Timeline.h"
#include "Watch.h"
#include "TokenData.h"
#include "Weights.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dsrun {

struct RunOptions {
  /// When the process started: dsrun says how long it took to be ready.
  std::chrono::steady_clock::time_point Started =
      std::chrono::steady_clock::now();
  uint32_t Steps = 3;
  bool Verify = false;
  std::string JsonLog;
  /// --trace: the last timed step as a Chrome trace, measured and planned
  /// (%r: per rank; without it rank 0 alone).
  std::string TracePath;
  std::string CalibrationOut;
  /// Threads of the host's optimizer work; 0: this node's cores shared
  /// among its processes.
  unsigned HostThreads = 0;
  int TimeoutSeconds = 300;
  /// From a SIGTERM to the exit, at most (Preemption.h).
  unsigned TermTimeoutSeconds = 25;
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
  /// NCCL's CTA policy (ncclConfig_t::CTAPolicy). Beside NCCL's default,
  /// Efficiency takes the fewest CTAs that keep a collective's rate and
  /// Zero none where NCCL can: the arena then comes from ncclMemAlloc and
  /// is registered as a symmetric window, so that all-gathers run on the
  /// copy engines and leave every SM to compute.
  /// The plan's policy (dsc plan --comm-cta-policy) unless the flag
  /// gives one.
  using CtaPolicy = dsc::plan::CommCtaPolicy; ///< NCCL_CTA_POLICY_*'s order
  CtaPolicy CommCtaPolicy = CtaPolicy::Default;
  bool CommCtaPolicyGiven = false;
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
  /// it (no offload: host work and its copies are issued from the host;
  /// no dropout: its seed is the host's). Off by default: training steps
  /// 0.1-1 % shorter (GPT-2 small, 2 H200s; GPT-2 XL's none), synthetic
  /// ones 3-8 % at stage 1 and none at stage 3, for 2-76 MiB the plan does
  /// not hold.
  bool Graph = false;
  /// Every kernel in a fixed order of summation, so that a run repeats
  /// bit for bit (a resumed run equals the one it resumes): attention's
  /// backward on dsrun's flash kernels where the plan asks for cuDNN's.
  bool Deterministic = false;
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
  /// --save-dtype fp32: --save-weights writes the fp32 master weights
  /// instead of the 16-bit ones the model computes with.
  bool SaveMasters = false;
  /// The largest shard --save-weights and --save write (transformers'
  /// default, 5 GB).
  uint64_t MaxShardBytes = 5000000000ull;
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

/// What each instruction did in the current step that its events do not
/// show: bytes copied, NVMe I/O, the host optimizer's and the host
/// conversions' work. Cleared at every step's start.
struct StepCounters {
  std::vector<uint64_t> CopiedBytes, IoBytes, IoNanos, HostAdamNanos,
      ConvertElems, ConvertNanos;
  void reset(size_t Instructions) {
    for (std::vector<uint64_t> *V : {&CopiedBytes, &IoBytes, &IoNanos,
                                     &HostAdamNanos, &ConvertElems,
                                     &ConvertNanos})
      V->assign(Instructions, 0);
  }
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
  /// The AdamW on the device below stage 3: bytes it moved, time taken.
  double DeviceAdamBytes = 0, DeviceAdamMs = 0;
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

/// A piece of a rank's training state as a checkpoint shard holds it.
struct StatePart {
  std::string Name;
  uint64_t Bytes = 0;
  char *Memory = nullptr;   ///< an arena buffer (host or device) ...
  SwapFile *File = nullptr; ///< ... or a swap file, once set up
};

class Executor {
public:
  Executor(const dsc::plan::Plan &P, const ProcessInfo &Process,
           const RunOptions &Options);
  ~Executor();

  /// Sets up and runs; the exit status of the process.
  int run();

  /// Where the run stands (the rank and the instruction being issued), for
  /// error messages.
  std::string where() const;

private:
  // Set-up and the step loop (Executor.cpp).
  bool checkBeforeRunning();
  bool setUp();
  /// Rank 0 hands every rank the NCCL id and where its watch listens; the
  /// others join the watch.
  bool joinJob(ncclUniqueId &Id);
  void initializeWeights();
  /// Writes the step's values (StepValues) for its first copy to read.
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
  void issue(const Instr &C);
  bool waitForStep();
  /// Polls Status (cudaSuccess: done) until it is done, an error, an NCCL
  /// error or the timeout; the last three end the process.
  /// Agreeing names what the ranks agree on between steps (a save, a
  /// stop), which may wait ten timeouts for the slowest rank's files.
  bool waitUntil(const std::function<cudaError_t()> &Status,
                 const char *Agreeing = nullptr);
  /// After the timeout: says where the GPU waits and whom the watch
  /// misses, aborts the communicator and ends the process.
  [[noreturn]] void abortStuck(const char *Agreeing, int Seconds);

  // What each instruction does (Steps.cpp).
  void compute(const Instr &C, bool Backward);
  /// The gradients an op's backward completed, into where they are reduced.
  void gradients(const Instr &C);
  void gradientOf(uint32_t Tensor, uint32_t Micro, cudaStream_t S);
  void reduce(const Instr &C);
  /// ZeRO++ qgZ across nodes: a bucket's quantized sums exchanged between
  /// nodes and added up into this rank's partitions (after its reduce).
  void reduceAcrossNodes(const Instr &C);
  /// Stage 3: this rank's share of a reduced bucket into its gradient
  /// partition, added from the second micro step on.
  void accumulateShards(uint32_t Bucket, uint32_t Micro, cudaStream_t S);
  /// gradient_clipping: the global norm of the reduced gradients this rank
  /// owns, summed over ranks, into the step's Clip factor (on the device,
  /// and in the host's step values for the host optimizer and the report).
  void clipGradients(const Instr &C);
  void optimizerStep(const Instr &C);
  /// Issues the instruction's NCCL calls as one group.
  void collectives(const Instr &C);
  /// Stage 3: gathers a unit and unpacks a rank-major gather into the
  /// unit's tensor order.
  void gatherUnit(const Instr &C);
  /// Where tensor Tn's shard sits in a rank's chunk of unit U's gather, in
  /// elements: 0 for a unit of one tensor, which is gathered in place.
  uint64_t chunkOffset(uint32_t U, uint32_t Tn) const;
  /// Synthetic compute: the op's GEMM kernels on their real operands.
  void gemms(const dsc::plan::Op &Op, bool Backward);

  // Offload (Transfers.cpp, Swap.cpp).
  void transfer(const Instr &C);
  /// An asynchronous copy of a transfer, counted in its bytes.
  void copy(const Instr &C, void *Dst, const void *Src, uint64_t Bytes,
            cudaMemcpyKind Kind);
  struct CopyPiece {
    char *Dst;
    const char *Src;
    size_t Bytes;
  };
  /// Copies the pieces in one batch, those that continue each other as
  /// one: one submission instead of one per piece, which is what small
  /// per-tensor pieces cost most.
  void copyBatch(const Instr &C, std::vector<CopyPiece> Pieces);
  /// Offloaded gradients after their reduction.
  void gradientsOut(const Instr &C, const dsc::plan::Transfer &X);
  /// Converts Elems elements with convertOnHost's arguments (inside a host
  /// callback) and adds them and their time to the instruction's.
  void timedConvert(uint32_t Instruction, void *Dst, ElementType DstType,
                    const void *Src, ElementType SrcType, uint64_t Elems,
                    bool Accumulate);
  bool setUpSwap();
  void initializeSwap();
  void swapIn(const Instr &C, const dsc::plan::Transfer &X);
  void swapOut(const Instr &C, const dsc::plan::Transfer &X);
  HostState hostState(uint32_t SubGroup) const;
  /// Reads or writes a sub-group's three state regions in the swap file.
  bool stateIo(uint32_t SubGroup, const HostState &Regions, bool Write,
               std::string &Error);
  /// Runs Io (inside a host callback) and records its bytes and time as
  /// the instruction's.
  void timedIo(uint32_t Instruction, uint64_t Bytes,
               const std::function<void()> &Io);

  // Measuring and reporting (Measure.cpp, Report.cpp).
  /// The step's timings, once it has finished.
  StepTiming measureStep();
  /// Writes --trace's file from the spans measureStep kept.
  void writeTrace(uint32_t Step);
  /// Each collective's duration: on the rank that joined it last for
  /// symmetric ones, the longest for reduces.
  std::vector<float> collectiveTimes();
  void report(uint32_t Step, const StepTiming &T);
  /// The lean steps' times (Ms) beside the measured ones'.
  void reportLean(const std::vector<float> &Ms);
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

  // Verification (Verify.cpp).
  bool verify(uint32_t Steps);
  /// The first step's clip factor against the norm of the synthetic
  /// gradients computed on the host (skipped for models too large to sum
  /// quickly); Reduced: the quantized gradients' (qgzReferences).
  bool checkFirstClip(const std::vector<std::vector<float>> &Reduced);

  // Real training (Training.cpp, Evaluate.cpp).
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
  /// size (each rank's share, as DeepSpeed pre-divides), which a sum
  /// (gradient_allreduce_op "sum") multiplies back; synthetic gradients
  /// are averaged here, or summed.
  float rankGradScale() const {
    float World = float(P.Settings.WorldSize);
    if (P.Settings.AverageGradients)
      return real() ? 1.0f : 1.0f / World;
    return real() ? World : 1.0f;
  }
  /// The op's kernels; the first op's forward copies the micro step's
  /// tokens in, the loss kernel's copies the loss out.
  void runKernels(const Instr &C, bool Backward);
  /// A tensor's starting weight: --init's, or the synthetic one.
  float startWeight(uint32_t Tensor, uint64_t Elem) const {
    return Weights ? Weights->Values[Tensor][Elem]
                   : initialWeight(Tensor, Elem);
  }
  /// launchInitWeights with --init's weights where they were given.
  void initWeights(void *Params, ElementType T, float *Master, uint32_t Tensor,
                   uint64_t ElemBase, uint64_t N, uint64_t RealN,
                   cudaStream_t S);
  /// Writes the step's tokens into its half of the input staging.
  void fillInputs(uint32_t Step);
  /// The step's half of the input staging (pinned host memory).
  char *stagedInputs(uint32_t Step);
  /// One micro batch into Out: row R is the window starting at Starts[R].
  void writeMicroInputs(char *Out, const TokenFile &From,
                        const std::vector<uint64_t> &Starts) const;
  /// Opens --val-data and checks it against the model (host only); then,
  /// at a step, the validation loss.
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
  /// --save-dtype fp32: the fp32 master weights to Path, through a
  /// checkpoint at Path.masters that rank 0 reads whole and removes.
  bool writeMasterWeights(const std::string &Path, uint32_t Step);

  // Checkpoints (Checkpointing.cpp).
  /// What carries this rank's training state from step to step, in the
  /// order its shard holds it: the plan's state buffers, then the NVMe
  /// swap files the plan offloads to.
  std::vector<StatePart> stateParts() const;
  /// --resume: finds this rank's shard and checks it against the plan
  /// (host only, before any GPU work); adopts its seed.
  bool openResume();
  /// --resume: the shard's buffers into the arenas, its step and scaler.
  void restoreCheckpoint();
  /// --save: this rank's shard, the consolidated weights, then latest.
  void saveCheckpoint(uint32_t Step);
  /// A checkpoint of Step in Dir: this rank's shard, the consolidated
  /// weights and (rank 0) the plan. Every rank takes part.
  bool writeCheckpointAt(const std::string &Dir, uint32_t Step,
                         std::string &Error);
  /// Whether Ok holds on every rank and every rank gives the same Value.
  bool allRanksAgree(bool Ok, uint32_t Value = 0);
  /// Mine reduced over the ranks by Op (an all-reduce of one word);
  /// What names the agreement for a message should it time out.
  uint32_t reduceOverRanks(uint32_t Mine, ncclRedOp_t Op,
                           const char *What = "a checkpoint");
  /// The stop signal any rank has caught, 0 for none (Preemption.h): the
  /// ranks' agreement to stop after the step just finished.
  int stopAgreed();

  const dsc::plan::Plan &P;
  ProcessInfo Process;
  RunOptions Options;
  /// The planned memory, view by view.
  Arena Buffers;
  /// Streams, events and host work.
  Timeline Timing;
  StepCounters Counts;
  /// The instruction being issued, for error messages only.
  const Instr *Issuing = nullptr;
  ElementType ParamType, CommType, GradAccumType;
  /// The ranks, the ranks a partition is split over (plan::partitionRanks)
  /// and which of those partitions this rank holds.
  uint32_t Stage, World, Shards, ShardRank;

  /// The step's values: written by the host in host scratch, copied by the
  /// step's first operation to the device's scratch, where kernels read
  /// them (so that a captured step serves every step).
  StepValues *HostStep = nullptr, *DeviceStep = nullptr;
  /// The micro steps' losses on the device (summed over ranks) and read
  /// back, each followed by the gradient norm clip-gradients left.
  float *HostLosses = nullptr, *DeviceLosses = nullptr;

  // Communication.
  ncclComm_t Comm = nullptr;
  /// The communicator of this rank's group of consecutive ranks (ZeRO++
  /// hpZ's group, MiCS's shard group) and MiCS's replicas', split from
  /// Comm where those are more than one rank and fewer than the world.
  ncclComm_t GroupComm = nullptr, ReplicaComm = nullptr;
  /// ZeRO++ qgZ's: its node's (none of its own where hpZ's group is the
  /// node: GroupComm serves) and its ranks' of the same place on every
  /// node.
  ncclComm_t NodeComm = nullptr, AcrossNodesComm = nullptr;
  /// Every communicator this rank owns, the world's last (the others are
  /// split from it, so they go first); each null where not made.
  std::array<ncclComm_t *, 5> ownedComms() {
    return {&AcrossNodesComm, &NodeComm, &ReplicaComm, &GroupComm, &Comm};
  }
  Communicators communicators() const {
    return {Comm, GroupComm, ReplicaComm, NodeComm ? NodeComm : GroupComm,
            AcrossNodesComm};
  }
  /// The communicator among the ranks a partition is split over (the
  /// world's, or MiCS's shard group's; none for a group of one).
  ncclComm_t shardComm() const { return Shards < World ? GroupComm : Comm; }
  /// --comm-cta-policy zero: the arena, made by ncclMemAlloc, and its
  /// symmetric windows on Comm and GroupComm (the gathers').
  ncclWindow_t ArenaWindow = nullptr, GroupArenaWindow = nullptr;
  void *NcclArena = nullptr;
  /// The arena from ncclMemAlloc, registered on both communicators.
  bool allocateWindowedArena(uint64_t Bytes);
  /// Both communicators aborted, after a failure.
  void abortCommunicators();
  /// Beats to rank 0 beside NCCL, to name a rank that stops (Watch.h).
  Watch Watcher;
  /// The step being issued or waited for, for messages.
  uint32_t CurrentStep = 0;
  /// Each instruction's NCCL calls (Collectives.h).
  std::vector<std::vector<CollectiveCall>> Calls;
  /// Whether collective timings are agreed among ranks (collectiveTimes).
  bool TimesTravel = false;
  /// Each bucket's ZeRO++ qgZ layout across nodes (empty where the bucket
  /// quantizes nothing), worked out once at set-up.
  std::vector<dsc::plan::QgzLayout> QgzLayouts;
  /// The bucket carrying each tensor's gradient.
  std::vector<uint32_t> BucketOfTensor;
  /// The value holding each tensor's gradient as the backward leaves it
  /// (NoIndex: frozen, or read by nothing).
  std::vector<uint32_t> GradValue;

  // Compute.
  cublasHandle_t Cublas = nullptr;
  Matmuls Products;
  /// Why the step cannot be captured ("" if it can).
  std::string NoGraphReason;
  cudaGraphExec_t StepGraph = nullptr;
  /// What the graph took (its launch resources), apart from the plan.
  uint64_t GraphBytes = 0;
  /// Device memory NCCL's symmetric window took beyond the arena
  /// (--comm-cta-policy zero).
  uint64_t WindowBytes = 0;

  // NVMe offload.
  std::unique_ptr<SwapLayout> Swap;
  std::unique_ptr<SwapFile> OptimizerSwap, ParamSwap;

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
  /// With the optimizer on the host: the host's triad bandwidth on the
  /// optimizer's threads, measured before the first step (0: not).
  double HostTriadBytesPerSec = 0;
  /// The host optimizer's rate over the steady steps (0: none ran) and,
  /// in the rank's summary, beside the triad.
  double hostAdamElemsPerSec() const;
  /// Amount over Ms a second, summed over the steady steps (0: no time).
  double steadyRate(double StepTiming::*Amount, double StepTiming::*Ms) const;
  void reportHostOptimizer();
  /// The device AdamW's bandwidth over the steady steps, at the bytes
  /// dsc plan counts (0: it did not run, or only at stage 3, whose
  /// instruction also copies the shards out).
  double deviceAdamBytesPerSec() const;
  /// One micro step's inputs and targets, in bytes; the sequence length.
  uint64_t MicroInputBytes = 0, Seq = 0;
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
  /// The last measured step's instructions (--trace).
  std::vector<Span> LastSpans;
};

} // namespace dsrun

#endif
