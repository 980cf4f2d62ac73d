//===- HfConfig.h - A Hugging Face config.json as a graph --------*- C++ -*-===//
//
// dsc plans from a model folder as it plans from an ONNX export: the
// config.json of a causal LM is read the way transformers' config classes
// read it (their defaults for missing keys), and the graph is written as
// ONNX with the operators and module scopes PyTorch's dynamo exporter
// writes for the same model, weights as external data never read. The
// importer and the compute passes then treat both alike, so a config plans
// to the same kernels and memory as its export, in the time of a
// dsc-modelgen graph of the same size.
//
// Families: llama, mistral, qwen2, gemma, gemma2, phi3, gpt2, gpt_neox.
// Any other model_type, or a setting of these the builder does not write
// (an unknown activation or rope type, say), is refused naming the key and
// its value at its line and column.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_HFCONFIG_H
#define DSC_GRAPH_HFCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsc {

class Model;

enum class HfFamily { Llama, Mistral, Qwen2, Gemma, Gemma2, Phi3, GPT2, GPTNeoX };

enum class HfActivation { SiLU, GeluTanh, GeluErf };

/// Rotary position embeddings as transformers' rope initializers compute
/// them.
struct HfRope {
  std::string Type = "default"; ///< default, linear, dynamic, llama3, yarn.
  double Theta = 10000;
  double Factor = 1;
  double LowFreqFactor = 1, HighFreqFactor = 4; ///< llama3.
  double BetaFast = 32, BetaSlow = 1;           ///< yarn.
  double AttentionFactor = 0;                   ///< yarn; 0: derived.
  int64_t OriginalMaxPositions = 0;             ///< llama3, yarn, dynamic.
  /// Rotated dims of each head (partial rotary: GPT-NeoX, Phi-3).
  int64_t Dims = 0;
};

struct HfModelSpec {
  HfFamily Family = HfFamily::Llama;
  std::string ModelType;
  int64_t Layers = 0, Hidden = 0, Heads = 0, KVHeads = 0, HeadDim = 0;
  int64_t FFN = 0, Vocab = 0, MaxPositions = 0;
  bool Tied = false;
  bool QKVBias = false, OutBias = false, MLPBias = false;
  double NormEps = 1e-6;
  HfActivation Act = HfActivation::SiLU;
  HfRope Rope;
  /// Attention's scale (head_dim^-0.5, or Gemma 2's query_pre_attn_scalar).
  double AttnScale = 0;
  /// A sliding window (0: none) and the layers it applies to.
  int64_t SlidingWindow = 0;
  std::vector<bool> SlidingLayers;
  double AttnSoftcap = 0, FinalSoftcap = 0; ///< Gemma 2.
  bool ParallelResidual = false;            ///< GPT-NeoX.
  bool ScaleAttnByLayer = false;            ///< GPT-2's inverse layer index.
  /// Dropout probabilities: on the embeddings, on attention's
  /// probabilities, and on each block's attention and MLP outputs.
  double EmbedDropout = 0, AttnDropout = 0, ResidDropout = 0;
  /// torch_dtype: the weights' type, as ONNX numbers it (1 float32,
  /// 10 float16, 16 bfloat16).
  int WeightType = 1;
};

/// Reads config.json, or the config.json of a folder. Errors name the file,
/// the line and column, the key and its value.
llvm::Expected<HfModelSpec> readHfConfig(llvm::StringRef Path);
llvm::Expected<HfModelSpec> parseHfConfig(llvm::StringRef Text,
                                          llvm::StringRef Path);

/// Whether Path names a model folder or a config.json (and not an ONNX
/// file): a directory, or a file whose name ends in .json.
bool isHfConfigPath(llvm::StringRef Path);

/// The file that holds the model at Path: a folder's config.json, or Path.
std::string modelFile(llvm::StringRef Path);

/// The serialized ONNX model; WeightsFile names its external data.
llvm::Expected<std::string> buildHfGraph(const HfModelSpec &S,
                                         llvm::StringRef WeightsFile);

/// The model at Path: an ONNX file, or a model folder or its config.json
/// built as above.
llvm::Expected<Model> importModel(llvm::StringRef Path);

} // namespace dsc

#endif
