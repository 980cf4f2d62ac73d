//===- Weights.h - A model's parameters as safetensors ----------*- C++ -*-===//
//
// dsc plan --weights-out: the starting weights the ONNX file carries
// (inline, or in its external data file), under the graph's names -- for
// torch.onnx exports, Hugging Face's parameter names -- as safetensors,
// which dsrun --init reads and transformers loads. Each tensor keeps the
// type it was exported in.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_WEIGHTS_H
#define DSC_GRAPH_WEIGHTS_H

#include "dsc/Graph/Model.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace dsc {

/// Writes the initializers named in Names to Path as safetensors. An error
/// names the tensor when its data is not in the file (a graph-only export)
/// or is of a type safetensors has no name for.
llvm::Error writeInitializers(const Model &M, llvm::ArrayRef<std::string> Names,
                              llvm::StringRef Path);

} // namespace dsc

#endif
