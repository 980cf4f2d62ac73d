//===- Shapes.h - Every tensor's type and shape -----------------*- C++ -*-===//
//
// Shapes come, in order of trust, from the model's own declarations
// (value_info, which current exporters write for intermediates), from
// ONNX's shape inference where the model's opset is one the ONNX library
// knows (17 and below), and from dsc's inference for the common ops.
// Symbolic dimensions (batch, sequence, and expressions of them such as
// "sequence + 1") are kept as symbols and evaluated once bound.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_SHAPES_H
#define DSC_GRAPH_SHAPES_H

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

struct ShapeInfo {
  /// Every tensor the graph names: inputs, initializers, node outputs.
  llvm::StringMap<TensorType> Types;
  /// Node outputs whose shape stayed unknown.
  unsigned UnknownOutputs = 0;
  /// Where the shapes came from: "value_info", "ONNX shape inference",
  /// "dsc inference", joined by " + ".
  std::string Sources;

  const TensorType *find(llvm::StringRef Name) const {
    auto It = Types.find(Name);
    return It == Types.end() ? nullptr : &It->second;
  }
};

/// Infers the type and shape of every tensor. Never fails: what cannot be
/// inferred stays unranked or has unknown dims.
ShapeInfo inferShapes(const Model &M);

/// Elements of T under Bindings, or nullopt when a dim is unknown or an
/// unbound symbol. Unbound symbols are added to Missing when given.
std::optional<uint64_t> elementCount(const TensorType &T,
                                     const DimBindings &Bindings,
                                     std::vector<std::string> *Missing = nullptr);

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
