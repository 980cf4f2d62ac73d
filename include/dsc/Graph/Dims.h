//===- Dims.h - Symbolic dimensions of a model ------------------*- C++ -*-===//
//
// Exports keep batch and sequence as symbols (and expressions of them such
// as "sequence + 1"); they are evaluated once bound. Every tensor's shape
// comes from the compute import (dsc/Compute/Import.h), which specializes
// the graph to the bound dims.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_DIMS_H
#define DSC_GRAPH_DIMS_H

#include "dsc/Graph/Model.h"

#include <map>

namespace dsc {

/// Values for symbolic dimensions, by name.
using DimBindings = std::map<std::string, int64_t>;

/// Evaluates a dim_param such as "sequence + 1" or "sequence*batch" under
/// Bindings; nullopt when a symbol is unbound or the text is not an
/// arithmetic expression of symbols and integers.
std::optional<int64_t> evaluateDim(llvm::StringRef Expression,
                                   const DimBindings &Bindings);

/// The symbols of the graph inputs that look like a batch or a sequence
/// length, by name and position (dim 0 of every input is a batch).
struct InputSymbols {
  std::vector<std::string> Batch;
  std::vector<std::string> Sequence;
  std::vector<std::string> Other;
};
InputSymbols classifyInputSymbols(const Model &M);

} // namespace dsc

#endif
