//===- Weights.h - Initial weights from safetensors, and saving -*- C++ -*-===//
//
// --init FILE.safetensors gives every parameter of the plan its starting
// value: a Hugging Face model.safetensors or the file dsc plan
// --weights-out writes. Tensors match by name and shape. A model whose
// export kept one name for tied weights (GPT-2's dynamo export names the
// shared embedding lm_head.weight, HF's file transformer.wte.weight) is
// matched through the one tensor of the file that no name claimed and
// that has the same shape; anything else missing, or a shape that
// differs, is an error naming the tensor. The file's names are kept, so
// that the weights dsrun saves load back where they came from.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_WEIGHTS_H
#define DSRUN_WEIGHTS_H

#include "Synthetic.h"

#include "dsc/PlanFormat.h"

#include <optional>
#include <string>
#include <vector>

namespace dsrun {

struct InitialWeights {
  /// Per plan tensor, its elements in fp32.
  std::vector<std::vector<float>> Values;
  /// Per plan tensor, its name in the file.
  std::vector<std::string> FileName;
};

std::optional<InitialWeights> loadWeights(const dsc::plan::Plan &P,
                                          const std::string &Path,
                                          std::string &Error);

/// Checks every tensor of a safetensors file dsrun wrote against the
/// checksum the file carries for it (loadWeights checks those it reads).
bool checkWeightsFile(const std::string &Path, std::string &Error);

/// Writes a safetensors file of the plan's tensors, each Data[T] holding
/// Elems elements of type T (its Names: the file's, or the plan's), and
/// in its metadata each tensor's CRC-32C (`dsrun.crc32c.NAME`). Written
/// to a temporary file, synced and renamed, so a crash never leaves half a
/// file under Path.
bool saveWeights(const dsc::plan::Plan &P, const std::vector<std::string> &Names,
                 const std::vector<std::vector<char>> &Data, ElementType Type,
                 const std::string &Path, std::string &Error);

} // namespace dsrun

#endif
