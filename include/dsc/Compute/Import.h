//===- Import.h - From an ONNX model to the compute IR ----------*- C++ -*-===//
//
// Specializes the graph to the shapes it will train at, folds everything
// that is then known (Shape, Range, the causal mask's Equal/Where/CumSum,
// Concat of shapes, rotary tables from buffers the file carries, ...) and
// keeps the rest as the forward program. A few ONNX forms are rewritten on
// the way into the ones the gradient rules know: Gemm into MatMul and Add,
// a patch-projection Conv into Reshape, Transpose and MatMul, sequences
// (SplitToSequence/SequenceAt) into Split.
//
// Shapes come from the config: dim 0 of every input is the micro batch,
// dim 1 of a token input the sequence length. A static export whose dims
// differ is re-specialized when the graph derives its shapes from its
// inputs; when it does not, the error names the input, both shapes and how
// to re-export.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_IMPORT_H
#define DSC_COMPUTE_IMPORT_H

#include "dsc/Compute/Graph.h"
#include "dsc/Graph/Parameters.h"
#include "dsc/Graph/Dims.h"

namespace dsc::compute {

struct ImportOptions {
  int64_t MicroBatch = 1;
  /// The sequence length of token inputs; nullopt keeps the export's.
  std::optional<int64_t> SeqLen;
  /// Values of the model's symbolic dims.
  DimBindings Dims;
  /// Read the data of buffers and constant initializers from the file
  /// (rotary tables, position ids) so that what they feed is folded.
  bool ReadConstants = true;
};

llvm::Expected<Graph> importGraph(const Model &M, const ModelFacts &Facts,
                                  const ImportOptions &Options);

} // namespace dsc::compute

#endif
