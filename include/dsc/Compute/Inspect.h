//===- Inspect.h - What dsc inspect reports about a model -------*- C++ -*-===//
//
// The model's facts (parameters, modules, hidden size, layers) and what
// the training program makes of it: the forward specialized to one sample
// at the bound dims (every tensor's shape from the compute import, the
// same that dsc plan uses), its activation bytes, and whether the loss and
// the backward lower, or the error dsc plan would give.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_INSPECT_H
#define DSC_COMPUTE_INSPECT_H

#include "dsc/Compute/Passes.h"
#include "dsc/Graph/Dims.h"
#include "dsc/Graph/Parameters.h"

#include "llvm/Support/raw_ostream.h"

namespace dsc {

struct InspectOptions {
  AnalysisOptions Analysis;
  /// Values for symbolic dims; the batch is one sample.
  DimBindings Dims;
  std::optional<int64_t> SeqLen;
  /// The loss the training program is lowered with.
  compute::LossKind Loss = compute::LossKind::CausalLM;
};

struct OpCount {
  std::string OpType;
  unsigned Count = 0;
};

struct InspectReport {
  const Model *M = nullptr;
  ModelFacts Facts;
  /// The bound dims, as the input symbols name them.
  DimBindings Bindings;
  std::vector<OpCount> Ops; ///< By count, then name.
  /// The forward specialized to one sample: every node output, floating
  /// point or bool (what autograd could keep for the backward), or why the
  /// graph could not be specialized.
  std::optional<uint64_t> ActivationBytesPerSample;
  unsigned ActivationTensors = 0;
  std::string ForwardProblem;
  /// The training program: its ops after fusion, loss and autodiff, or
  /// what keeps it from lowering.
  compute::LossKind Loss = compute::LossKind::CausalLM;
  unsigned ForwardOps = 0, BackwardOps = 0;
  std::string TrainingProblem;
};

llvm::Expected<InspectReport> inspectModel(const Model &M,
                                           const InspectOptions &Options);

void printInspectText(llvm::raw_ostream &OS, const InspectReport &R,
                      unsigned MaxModules);
void printInspectJSON(llvm::raw_ostream &OS, const InspectReport &R);
void printInspectYAML(llvm::raw_ostream &OS, const InspectReport &R);

} // namespace dsc

#endif
