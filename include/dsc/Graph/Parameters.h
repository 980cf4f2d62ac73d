//===- Parameters.h - Trainable weights, buffers and constants --*- C++ -*-===//
//
// ONNX does not say which initializers are parameters. dsc tells them apart
// by what they are (floating point or not), where they are used (a
// BatchNormalization's running statistics are buffers), what the exporter
// named them (module paths for parameters; onnx::*, val_* for constants it
// made itself; inv_freq, running_mean for known buffers), and counts a
// weight used by several modules (tied embeddings) once. It groups
// parameters into modules in first-use order -- the units ZeRO-3 fetches --
// and finds the hidden size with its evidence.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_PARAMETERS_H
#define DSC_GRAPH_PARAMETERS_H

#include "dsc/Graph/Model.h"

namespace dsc {

enum class TensorRole : uint8_t { Parameter, Buffer, Constant };

llvm::StringRef roleName(TensorRole R);

struct TensorFacts {
  unsigned Initializer = 0; ///< Index into Model::Initializers.
  TensorRole Role = TensorRole::Constant;
  /// Why it has that role, in words ("MatMul weight", "int64").
  std::string Why;
  bool Frozen = false;
  /// Named by the exporter (onnx::MatMul_123, val_4): a folded copy or a
  /// literal, not a module's parameter.
  bool Anonymous = false;
  /// Owning module (the name up to its last dot, or the scope of its first
  /// user when the name says nothing).
  std::string Module;
  int FirstUse = -1;
  unsigned Uses = 0;
  /// The nodes that consume it, looking through layout and dtype ops
  /// (Transpose, Cast, ...), in graph order.
  std::vector<unsigned> UseNodes;
  /// Used as a weight by more than one module (a tied embedding).
  bool Tied = false;
};

struct ModuleFacts {
  std::string Name;
  uint64_t ParameterElems = 0;
  uint64_t ParameterBytes = 0;
  int FirstUse = -1;
  std::vector<unsigned> Tensors; ///< Indices into ModelFacts::Tensors.
};

struct ModelFacts {
  std::vector<TensorFacts> Tensors; ///< One per initializer.
  uint64_t TotalParams = 0;         ///< Elements, each tied weight once.
  uint64_t TrainableParams = 0;
  uint64_t FrozenParams = 0;
  uint64_t ParameterBytes = 0;
  uint64_t BufferElems = 0;
  uint64_t ConstantElems = 0;
  /// Modules owning parameters, in first-use order.
  std::vector<ModuleFacts> Modules;
  std::optional<int64_t> HiddenSize;
  std::string HiddenSizeEvidence;
  /// The repeated block (model.layers) and how many times it repeats.
  std::string LayerPrefix;
  int64_t Layers = 0;
  /// Signs that the export was made for inference (folded or merged
  /// weights): the counts are then not exact.
  std::vector<std::string> InferenceSigns;
};

struct AnalysisOptions {
  /// Parameters whose name matches are frozen (no gradient, no optimizer
  /// state).
  std::string FreezeRegex;
  /// Replaces the derived hidden size.
  std::optional<int64_t> HiddenSize;
};

/// Classifies every initializer of M. Fails only on a bad --freeze regex.
llvm::Expected<ModelFacts> analyzeModel(const Model &M,
                                        const AnalysisOptions &Options);

/// Whether Name looks like one an exporter invented for a constant or a
/// folded copy, rather than a module's parameter path.
bool isExporterName(llvm::StringRef Name);

} // namespace dsc

#endif
