//===- Inspect.h - What dsc inspect reports about a model -------*- C++ -*-===//

#ifndef DSC_GRAPH_INSPECT_H
#define DSC_GRAPH_INSPECT_H

#include "dsc/Graph/Parameters.h"
#include "dsc/Graph/Shapes.h"

#include "llvm/Support/raw_ostream.h"

namespace dsc {

/// Whether dsrun has a kernel for an ONNX op (RuntimeOps.def).
bool runtimeSupports(llvm::StringRef OpType);

struct InspectOptions {
  AnalysisOptions Analysis;
  /// Values for symbolic dims; batch-like symbols default to 1 (per sample).
  DimBindings Dims;
  std::optional<int64_t> SeqLen;
};

struct OpCount {
  std::string OpType;
  unsigned Count = 0;
};

struct InspectReport {
  const Model *M = nullptr;
  ModelFacts Facts;
  ShapeInfo Shapes;
  DimBindings Bindings;
  std::vector<OpCount> Ops; ///< By count, then name.
  std::vector<std::string> UnsupportedOps;
  /// Forward tensors (node outputs, floating point or bool) at the bound
  /// dims with batch 1.
  uint64_t ActivationBytesPerSample = 0;
  unsigned ActivationsKnown = 0;
  unsigned ActivationsUnknown = 0;
  /// Symbols that would make the unknown activation sizes known.
  std::vector<std::string> UnboundSymbols;
};

llvm::Expected<InspectReport> inspectModel(const Model &M,
                                           const InspectOptions &Options);

void printInspectText(llvm::raw_ostream &OS, const InspectReport &R,
                      unsigned MaxModules);
void printInspectJSON(llvm::raw_ostream &OS, const InspectReport &R);
void printInspectYAML(llvm::raw_ostream &OS, const InspectReport &R);

} // namespace dsc

#endif
