//===- Evaluate.cpp - The validation loss (--val-data) --------------------===//
//
// The validation file is cut into consecutive windows of the plan's
// sequence plus one token (inputs and their next tokens), as HF's
// run_clm groups text into blocks; micro batch K of rank R holds windows
// ((K * ranks + R) * B ...), so the ranks evaluate disjoint windows and
// every evaluation sees the same ones. Each micro batch runs the
// instructions of the step's first micro step up to its first backward --
// the forward kernels, and at stage 3 the gathers they need -- with
// dropout off, as model.eval() does. The loss is the mean over every
// rank's micro batches.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "NcclGroup.h"

#include <cmath>

namespace plan = dsc::plan;

namespace dsrun {

bool Executor::openValidation(uint64_t Vocab) {
  auto Fail = [&](const std::string &Why) { return failOnRankZero(Why); };
  const std::string &Path = Options.ValDataPath;
  std::string Error;
  ValTokens = TokenFile::open(Path, Error);
  if (!ValTokens)
    return Fail(Error);
  if (std::string Beyond = ValTokens->idBeyond(Vocab); !Beyond.empty())
    return Fail(Path + ": " + Beyond);
  uint64_t Windows = ValTokens->tokens() > Seq
                         ? (ValTokens->tokens() - 1) / Seq
                         : 0;
  uint64_t PerBatch = uint64_t(P.Settings.MicroBatch) * Process.WorldSize;
  uint64_t Full = Windows / PerBatch;
  std::string Has = Path + ": " + std::to_string(ValTokens->tokens()) +
                    " tokens make " + std::to_string(Windows) +
                    " windows of " + std::to_string(Seq) + " (+1) tokens, ";
  if (!Full)
    return Fail(Has + "and one evaluation batch needs " +
                std::to_string(PerBatch) + " (micro batch x ranks)");
  if (Options.EvalBatches > Full)
    return Fail(Has + std::to_string(Full) + " micro batches per rank; "
                "--eval-batches asks for " +
                std::to_string(Options.EvalBatches));
  EvalBatches = Options.EvalBatches ? Options.EvalBatches : Full;
  return true;
}

void Executor::evaluate(uint32_t Step) {
  cudaStream_t Compute = Timing.stream(plan::Stream::Compute);
  uint32_t B = P.Settings.MicroBatch;
  // The first micro step's forward: what runs before its first backward.
  uint32_t End = 0;
  while (End < P.Program.size() &&
         !(P.Program[End].Kind == plan::InstrKind::Backward))
    ++End;
  Model.setProfiling(false);
  Evaluating = true;
  double Sum = 0;
  char *Half = stagedInputs(Step);
  for (uint64_t K = 0; K < EvalBatches; ++K) {
    // The step is over, so its half of the staging is free.
    std::vector<uint64_t> Starts(B);
    for (uint32_t Row = 0; Row < B; ++Row)
      Starts[Row] = ((K * Process.WorldSize + Process.Rank) * B + Row) * Seq;
    writeMicroInputs(Half, *ValTokens, Starts);
    Timing.fork();
    for (uint32_t I = 0; I < End; ++I) {
      const plan::Instruction &In = P.Program[I];
      bool Fetch = In.Kind == plan::InstrKind::Transfer &&
                   P.Transfers[In.Arg].Point ==
                       plan::TransferPoint::BeforeGather;
      if (In.Micro == 0 &&
          (In.Kind == plan::InstrKind::Forward ||
           In.Kind == plan::InstrKind::Gather ||
           In.Kind == plan::InstrKind::GatherSecondary ||
           In.Kind == plan::InstrKind::Release || Fetch))
        issue(Timing.instr(I, Step));
    }
    Timing.join();
    CHECK_CUDA(cudaMemcpyAsync(HostLosses, DeviceLosses, sizeof(float),
                               cudaMemcpyDeviceToHost, Compute));
    Timing.markStepEnd(Compute);
    waitForStep();
    Sum += HostLosses[0];
  }
  Evaluating = false;
  // The mean over every rank's batches: the sums, summed over ranks.
  if (Process.WorldSize > 1) {
    HostLosses[0] = float(Sum);
    CHECK_CUDA(cudaMemcpyAsync(DeviceLosses, HostLosses, sizeof(float),
                               cudaMemcpyHostToDevice, Compute));
    CHECK_NCCL(ncclAllReduce(DeviceLosses, DeviceLosses, 1, ncclFloat32,
                             ncclSum, Comm, Compute));
    CHECK_CUDA(cudaMemcpyAsync(HostLosses, DeviceLosses, sizeof(float),
                               cudaMemcpyDeviceToHost, Compute));
    Timing.markStepEnd(Compute);
    waitForStep();
    Sum = HostLosses[0];
  }
  double Loss = Sum / (double(EvalBatches) * Process.WorldSize);
  if (!std::isfinite(Loss))
    fatalError("step " + std::to_string(Step) + ": the validation loss is " +
               std::to_string(Loss));
  reportValidation(Step, Loss,
                   EvalBatches * Process.WorldSize * B * Seq);
}

} // namespace dsrun
