//===- Training.cpp - Real training: data, weights, kernels, losses -------===//
//
// With --data, forward and backward run the compute program's kernels
// (ModelProgram) on token windows from the data file (TokenData.h), from
// the weights --init gives (Weights.h). Everything else of the step (the
// ZeRO schedule, reductions, offload, the optimizer) is the same code the
// synthetic modes run; only where gradients come from changes
// (gradientOf in Steps.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudnnAttention.h"
#include "Executor.h"

#include "HostMath.h"
#include "Kernels.h"
#include "NcclGroup.h"

#include "dsc/GpuPeaks.h"

#include <cstring>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

/// What an input named Name holds at row position T of a sample whose
/// tokens start at Tokens: the token ids, a mask of ones, token types of
/// zero, or positions. False for an input token data cannot provide.
bool inputKind(const std::string &Name, char &Kind) {
  if (Name == "input_ids")
    Kind = 'i';
  else if (Name == "attention_mask")
    Kind = 'm';
  else if (Name == "token_type_ids")
    Kind = 't';
  else if (Name == "position_ids")
    Kind = 'p';
  else
    return false;
  return true;
}

} // namespace

bool Executor::failOnRankZero(const std::string &Why) const {
  if (Process.Rank == 0)
    fprintf(stderr, "dsrun: %s\n", Why.c_str());
  return false;
}

bool Executor::openTraining() {
  const plan::Compute &C = P.Training;
  auto Fail = [&](const std::string &Why) { return failOnRankZero(Why); };
  if (!C.Missing.empty())
    return Fail("the plan cannot train: " + C.Missing.front());
  if (C.Loss != plan::LossKind::CausalLM)
    return Fail(std::string("dsrun --data trains causal-lm plans (the next "
                            "token of a token file); this plan's loss is ") +
                plan::enumName(C.Loss) +
                ", whose labels a token file does not carry");
  if (LossValue = C.LossValue; LossValue >= P.Values.size())
    return Fail("the plan names no loss value");
  if (!openResume())
    return false;

  // The sample shape, and the largest id the model can read.
  uint64_t Rows = 0, Vocab = UINT64_MAX;
  for (uint32_t V : C.Inputs) {
    char Kind;
    if (!inputKind(P.Values[V].Name, Kind))
      return Fail("the model takes input '" + P.Values[V].Name +
                  "', which a token file cannot provide (dsrun fills "
                  "input_ids, attention_mask, token_type_ids, position_ids)");
  }
  if (C.Targets.size() != 1)
    return Fail("a causal-lm plan has one target value");
  for (const plan::Kernel &K : P.Kernels) {
    if (const auto *L = std::get_if<plan::CrossEntropyAttrs>(&K.Attrs)) {
      Rows = uint64_t(L->Rows);
      Vocab = std::min(Vocab, uint64_t(L->Classes));
    }
    if (const auto *G = std::get_if<plan::GatherAttrs>(&K.Attrs);
        G && P.Values[K.Inputs[1].Value].Kind == plan::ValueKind::Input)
      Vocab = std::min(Vocab, uint64_t(G->Dim));
  }
  uint32_t B = P.Settings.MicroBatch;
  if (!Rows || Rows % B)
    return Fail("the loss's rows do not divide into the micro batch");
  Seq = Rows / B;

  std::string Error;
  Tokens = TokenFile::open(Options.DataPath, Error);
  if (!Tokens)
    return Fail(Error);
  if (std::string Beyond = Tokens->idBeyond(Vocab); !Beyond.empty())
    return Fail(Options.DataPath + ": " + Beyond);
  Sampler = std::make_unique<TokenSampler>(Tokens->tokens(), Seq, Options.Seed);
  uint64_t PerStep = uint64_t(P.Settings.GradAccum) * Process.WorldSize * B;
  if (Sampler->windows() < PerStep)
    return Fail(Options.DataPath + ": " + std::to_string(Tokens->tokens()) +
                " tokens make " + std::to_string(Sampler->windows()) +
                " samples of " + std::to_string(Seq + 1) +
                " tokens; one step needs " + std::to_string(PerStep));
  if (!Options.ValDataPath.empty() && !openValidation(Vocab))
    return false;

  Weights = loadWeights(P, Options.InitPath, Error);
  if (!Weights)
    return Fail(Error);
  // The model folder's own vocabulary, where it is smaller than the plan's
  // tables (an embedding padded past the tokenizer's ids).
  if (std::optional<uint64_t> Config = configVocabSize(Weights->Folder, Error);
      Config && *Config < Vocab) {
    for (const auto &[Path, File] :
         {std::pair{Options.DataPath, &Tokens}, {Options.ValDataPath, &ValTokens}})
      if (*File)
        if (std::string Beyond = (*File)->idBeyond(*Config); !Beyond.empty())
          return Fail(Path + ": " + Beyond + " (vocab_size of " +
                      Weights->Folder + "/config.json)");
  } else if (!Error.empty()) {
    return Fail(Error);
  }
  // Every trainable tensor gets its gradient from a kernel.
  for (uint32_t T = 0; T < P.Tensors.size(); ++T)
    if (P.Tensors[T].Role == plan::TensorRole::Trainable &&
        GradValue[T] == plan::NoIndex)
      return Fail("tensor " + P.Tensors[T].Name + " is trainable but no "
                  "kernel computes its gradient (no op reads it); freeze it "
                  "with dsc plan --freeze");
  return true;
}

/// The dense bf16 tensor-core peak of the GPUs dsrun has run on (their
/// data sheets, without sparsity); 0 for others. MFU is counted against it.
static double densePeakFlops() {
  int Device = 0;
  cudaDeviceProp Prop;
  if (cudaGetDevice(&Device) != cudaSuccess ||
      cudaGetDeviceProperties(&Prop, Device) != cudaSuccess)
    return 0;
  return dsc::denseBf16PeakFlops(Prop.name);
}

/// Whether a kernel of the plan drops values at random in training.
static bool drawsDropout(const plan::Plan &P) {
  for (const plan::Kernel &K : P.Kernels) {
    if (K.kind() != plan::KernelKind::Pointwise)
      continue;
    const plan::PointwiseAttrs &A = K.attrs<plan::KernelKind::Pointwise>();
    for (const plan::PointwiseInstr &X : A.Program)
      if (X.Op == plan::PointwiseOp::Dropout && X.B < A.Constants.size() &&
          A.Constants[X.B] != 0)
        return true;
  }
  return false;
}

bool Executor::setUpTraining() {
  const plan::Compute &C = P.Training;
  auto Fail = [&](const std::string &Why) { return failOnRankZero(Why); };
  MicroInputBytes = 0;
  for (const std::vector<uint32_t> *Vs : {&C.Inputs, &C.Targets})
    for (uint32_t V : *Vs)
      MicroInputBytes += P.Values[V].Elems * plan::dtypeBytes(P.Values[V].Type);
  const plan::RuntimeViews &RV = P.Places.Runtime;
  if (Buffers.elems(RV.Inputs) < 2 * uint64_t(P.Settings.GradAccum) * MicroInputBytes)
    return Fail("the plan places no room for the step's token ids and "
                "targets (input_staging)");
  if (NoGraphReason.empty() && drawsDropout(P))
    NoGraphReason = "the model draws dropout, whose seed the host passes "
                    "each step";

  // Every value's address, resolved once.
  std::vector<char *> Values(P.Values.size(), nullptr);
  for (uint32_t V = 0; V < P.Values.size(); ++V)
    Values[V] = Buffers.at(P.Places.Values[V]);
  // Constants (position ids, masks, the loss gradient's seed) hold their
  // bytes the whole run: their buffers live across every step.
  for (const plan::Constant &K : P.Constants)
    CHECK_CUDA(cudaMemcpy(Values[K.Value], K.Bytes.data(), K.Bytes.size(),
                          cudaMemcpyHostToDevice));

  std::string Problem =
      Model.resolve(P, Values, Buffers.at(RV.KernelWorkspace),
                    Buffers.elems(RV.KernelWorkspace), Cublas, &Products);
  if (!Problem.empty())
    return Fail(Problem);
  Model.setDeterministic(Options.Deterministic);
  if (Process.Rank == 0)
    for (const plan::Kernel &K : P.Kernels)
      if (const plan::AttentionAttrs *At = K.as<plan::AttentionAttrs>();
          At && At->Algorithm == plan::AttentionAlgorithm::Cudnn) {
        // Which attention runs: cuDNN's, where it loads.
        fprintf(stderr, "dsrun: attention: %s%s\n",
                cudnnAttentionLibrary().c_str(),
                Options.Deterministic ? "; the backward on dsrun's flash "
                                        "kernels (--deterministic)"
                                      : "");
        break;
      }
  if (P.Settings.ParamDType == plan::DType::F16) {
    Scaler = LossScaler(P.Settings);
    Model.setLossScale(&DeviceStep->LossScale);
  }
  for (const plan::Kernel &K : P.Kernels)
    StepFlops += double(K.Flops) * P.Settings.GradAccum;
  PeakFlops = densePeakFlops();
  if (Process.Rank == 0)
    fprintf(stderr,
            "dsrun: training on %s (%s, %llu tokens: %llu samples of %llu), "
            "weights from %s\n",
            Options.DataPath.c_str(), Tokens->format(),
            (unsigned long long)Tokens->tokens(),
            (unsigned long long)Sampler->windows(),
            (unsigned long long)Seq + 1, Options.InitPath.c_str());
  return true;
}

void Executor::initWeights(void *Params, ElementType T, float *Master,
                           uint32_t Tensor, uint64_t ElemBase, uint64_t N,
                           uint64_t RealN, cudaStream_t S) {
  if (!Weights) {
    launchInitWeights(Params, T, Master, Tensor, ElemBase, N, RealN, S);
    return;
  }
  const std::vector<float> &W = Weights->Values[Tensor];
  std::vector<char> Stored(N * elementBytes(T));
  std::vector<float> Rounded(Master ? N : 0);
  // Element by element, 8 G of them a rank at the 8B shape: split over
  // the host's threads.
  parallelFor(N, Options.HostThreads, [&](uint64_t Begin, uint64_t End) {
    for (uint64_t I = Begin; I < End; ++I) {
      float V = ElemBase + I < RealN ? W[ElemBase + I] : 0.0f;
      storeAs(Stored.data(), I, T, V);
      if (Master)
        Rounded[I] = loadAs(Stored.data(), I, T);
    }
  });
  if (Params)
    CHECK_CUDA(cudaMemcpyAsync(Params, Stored.data(), Stored.size(),
                               cudaMemcpyHostToDevice, S));
  if (Master)
    CHECK_CUDA(cudaMemcpyAsync(Master, Rounded.data(), N * sizeof(float),
                               cudaMemcpyHostToDevice, S));
  // The host vectors go away now.
  CHECK_CUDA(cudaStreamSynchronize(S));
}

char *Executor::stagedInputs(uint32_t Step) {
  // The plan stages two steps, so that the host could fill one while the
  // device reads the other. A captured step reads the half it was
  // captured with; the host fills it after the step before has finished.
  uint64_t Half = Options.Graph ? 0 : Step % 2;
  return Buffers.at(P.Places.Runtime.Inputs,
                    Half * P.Settings.GradAccum * MicroInputBytes);
}

void Executor::fillInputs(uint32_t Step) {
  uint32_t B = P.Settings.MicroBatch, GAS = P.Settings.GradAccum;
  char *Half = stagedInputs(Step);
  for (uint32_t M = 0; M < GAS; ++M) {
    uint64_t First = ((uint64_t(Step - 1) * GAS + M) * Process.WorldSize +
                      Process.Rank) * B;
    std::vector<uint64_t> Starts(B);
    for (uint32_t Row = 0; Row < B; ++Row)
      Starts[Row] = Sampler->start(First + Row);
    writeMicroInputs(Half + M * MicroInputBytes, *Tokens, Starts);
  }
}

void Executor::writeMicroInputs(char *Out, const TokenFile &From,
                                const std::vector<uint64_t> &Starts) const {
  const plan::Compute &C = P.Training;
  for (int Target = 0; Target < 2; ++Target)
    for (uint32_t V : Target ? C.Targets : C.Inputs) {
      ElementType T = ElementType(P.Values[V].Type);
      char Kind = 'i';
      if (!Target)
        inputKind(P.Values[V].Name, Kind);
      for (uint32_t Row = 0; Row < Starts.size(); ++Row)
        for (uint64_t I = 0; I < Seq; ++I) {
          uint64_t At = Starts[Row] + I;
          float X = Target          ? float(From[At + 1])
                    : Kind == 'i'   ? float(From[At])
                    : Kind == 'm'   ? 1.0f
                    : Kind == 'p'   ? float(I)
                                    : 0.0f;
          storeAs(Out, Row * Seq + I, T, X);
        }
      Out += P.Values[V].Elems * elementBytes(T);
    }
}

void Executor::runKernels(const Instr &C, bool Backward) {
  const plan::Compute &Training = P.Training;
  const plan::Instruction &In = C.In;
  if (!Backward && In.Arg == 0) {
    // The micro step's tokens, from this step's half of the staging.
    const char *From =
        stagedInputs(C.Step) + uint64_t(In.Micro) * MicroInputBytes;
    for (int Target = 0; Target < 2; ++Target)
      for (uint32_t V : Target ? Training.Targets : Training.Inputs) {
        uint64_t Bytes = P.Values[V].Elems * plan::dtypeBytes(P.Values[V].Type);
        CHECK_CUDA(cudaMemcpyAsync(Buffers.at(P.Places.Values[V]), From, Bytes,
                                   cudaMemcpyHostToDevice, C.S));
        From += Bytes;
      }
  }
  const plan::Op &Op = P.Ops[In.Arg];
  const plan::Interval &R = Backward ? Op.Backward : Op.Forward;
  // Dropout draws from (seed, step, micro step, rank): a checkpointed
  // layer's recomputation draws the same.
  uint64_t Seed = mix(mix(Options.Seed ^ (uint64_t(C.Step) << 32)) ^
                      ((uint64_t(In.Micro) << 32) | Process.Rank));
  std::string Problem = Model.run(R.Begin, R.End, Seed, C.S, Evaluating);
  if (!Problem.empty())
    fatalError(Problem + whereNow());
  if (!Backward)
    for (uint32_t K = R.Begin; K < R.End; ++K)
      if (P.Kernels[K].kind() == plan::KernelKind::CrossEntropy)
        CHECK_CUDA(cudaMemcpyAsync(DeviceLosses + In.Micro,
                                   Buffers.at(P.Places.Values[LossValue]),
                                   sizeof(float), cudaMemcpyDeviceToDevice,
                                   C.S));
}

void Executor::readLosses(cudaStream_t S) {
  uint32_t GAS = P.Settings.GradAccum;
  if (P.Settings.WorldSize > 1)
    CHECK_NCCL(ncclAllReduce(DeviceLosses, DeviceLosses, GAS, ncclFloat32,
                             ncclSum, Comm, S));
  // The losses, and after them the gradient norm clip-gradients left.
  CHECK_CUDA(cudaMemcpyAsync(HostLosses, DeviceLosses,
                             (GAS + 1) * sizeof(float),
                             cudaMemcpyDeviceToHost, S));
}

double Executor::stepLoss() const {
  double Sum = 0;
  for (uint32_t M = 0; M < P.Settings.GradAccum; ++M)
    Sum += HostLosses[M];
  return Sum / (double(P.Settings.GradAccum) * P.Settings.WorldSize);
}

} // namespace dsrun

namespace dsrun {

bool Executor::writeWeights(const std::string &Path) {
  // The 16-bit weights the model computes with, as DeepSpeed's
  // save_16bit_model writes them, under the names --init's file used.
  unsigned PB = elementBytes(ParamType);
  size_t NT = P.Tensors.size();
  std::vector<std::vector<char>> Data(NT);
  bool Zero = Process.Rank == 0;
  cudaStream_t S = Timing.stream(plan::Stream::Compute);
  auto Download = [&](uint32_t Ti, const char *From) {
    Data[Ti].resize(P.Tensors[Ti].Elems * PB);
    CHECK_CUDA(cudaMemcpyAsync(Data[Ti].data(), From, Data[Ti].size(),
                               cudaMemcpyDefault, S));
    CHECK_CUDA(cudaStreamSynchronize(S));
  };
  if (Stage < 3) {
    if (Zero)
      for (uint32_t Ti = 0; Ti < NT; ++Ti)
        Download(Ti, Buffers.at(P.Places.Tensors[Ti].Param));
  } else {
    // Each tensor's shards, gathered between steps into the plan's save
    // staging, which holds the largest tensor. Shards offloaded to NVMe
    // pass through host memory on their way there.
    uint32_t Staging = P.Places.Runtime.SaveStaging;
    std::vector<char> FromSwap;
    for (uint32_t Ti = 0; Ti < NT; ++Ti) {
      const plan::Tensor &X = P.Tensors[Ti];
      const plan::TensorViews &V = P.Places.Tensors[Ti];
      if (X.Persistent) {
        if (Zero)
          Download(Ti, Buffers.at(V.Param));
        continue;
      }
      uint64_t ShardBytes = X.ShardElems * PB;
      char *Whole = Buffers.at(Staging), *Mine = Whole + ShardRank * ShardBytes;
      const char *Shard = ParamSwap ? nullptr : Buffers.at(V.Shard);
      if (ParamSwap) {
        std::string Error;
        FromSwap.resize(ShardBytes);
        if (!ParamSwap->read(FromSwap.data(),
                             Swap->shardOffset(Ti),
                             ShardBytes, Error))
          fatalError("rank " + std::to_string(Process.Rank) +
                     ": saving the weights: " + Error);
        Shard = FromSwap.data();
      }
      CHECK_CUDA(cudaMemcpyAsync(Mine, Shard, ShardBytes, cudaMemcpyDefault,
                                 S));
      if (Shards > 1)
        CHECK_NCCL(ncclAllGather(Mine, Whole, ShardBytes, ncclUint8,
                                 shardComm(), S));
      if (Zero)
        Download(Ti, Whole);
      CHECK_CUDA(cudaStreamSynchronize(S));
    }
  }
  if (!Zero)
    return true;
  std::string Error;
  std::vector<std::string> Names =
      Weights ? Weights->FileName : std::vector<std::string>(NT);
  if (!saveWeightsAt(P, Names, Data, ParamType, Path, Options.MaxShardBytes,
                     Weights ? Weights->Folder : "", Error)) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return false;
  }
  fprintf(stderr, "dsrun: wrote the weights to %s\n", Path.c_str());
  return true;
}

} // namespace dsrun
