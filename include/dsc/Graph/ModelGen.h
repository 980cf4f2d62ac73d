//===- ModelGen.h - Transformer graphs of any size, without weights -*- C++ -*-===//
//
// Writes GPT- and Llama-structured ONNX graphs for tests and benchmarks:
// real op structure, real parameter names and shapes, value_info with
// symbolic batch and sequence for every intermediate, and every weight as
// external data. The weight file is never written (dsc never reads it), so
// a 70B-class graph is a few megabytes.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_MODELGEN_H
#define DSC_GRAPH_MODELGEN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace dsc {

enum class Architecture { GPT, Llama };

struct TransformerSpec {
  Architecture Arch = Architecture::GPT;
  int64_t Layers = 2;
  int64_t Hidden = 64;
  int64_t Heads = 4;
  /// Llama's grouped-query attention: key/value heads (Heads = none).
  int64_t KVHeads = 0;
  /// Feed-forward width (0: 4 x Hidden for GPT, 8/3 x Hidden rounded up to
  /// 256 for Llama).
  int64_t FFN = 0;
  int64_t Vocab = 1000;
  int64_t MaxPositions = 1024; ///< GPT's learned positions.
  bool TiedEmbeddings = true;
  /// bf16 or fp32 weights.
  bool BF16 = false;
  std::string WeightsFile = "weights.bin";
};

/// Parameters the spec describes, counted the way PyTorch counts them.
uint64_t expectedParameters(const TransformerSpec &S);

/// The serialized ModelProto.
llvm::Expected<std::string> generateTransformer(const TransformerSpec &S);

/// Named presets: gpt2-small, gpt2-xl, llama-1b, llama-7b, llama-70b,
/// llama-405b.
llvm::Expected<TransformerSpec> transformerPreset(llvm::StringRef Name);

} // namespace dsc

#endif
