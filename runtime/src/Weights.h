//===- Weights.h - Initial weights from safetensors, and saving -*- C++ -*-===//
//
// --init gives every parameter of the plan its starting value: a Hugging
// Face model folder (model.safetensors, or the shards its
// model.safetensors.index.json names), one safetensors file, or the file
// dsc plan --weights-out writes. Tensors match by name and shape. A model whose
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

/// The index of a sharded model folder, as save_pretrained names it.
constexpr const char *ModelIndexName = "model.safetensors.index.json";
/// The model's own files that go along with its weights.
constexpr const char *ModelConfigFiles[] = {"config.json",
                                            "generation_config.json"};

struct InitialWeights {
  /// Per plan tensor, its elements in fp32.
  std::vector<std::vector<float>> Values;
  /// Per plan tensor, its name in the file.
  std::vector<std::string> FileName;
  /// The folder the weights came from (its config.json goes along with
  /// the weights dsrun saves).
  std::string Folder;
};

/// Path is a safetensors file, a model.safetensors.index.json, or a
/// model folder holding either (from_pretrained's layout): the index's
/// shards are read, each tensor from the file the index names.
std::optional<InitialWeights> loadWeights(const dsc::plan::Plan &P,
                                          const std::string &Path,
                                          std::string &Error);

/// Checks every tensor of the weights dsrun wrote (a file, an index or a
/// folder, as loadWeights takes them) against the checksum its file
/// carries for it (loadWeights checks those it reads).
bool checkWeightsFile(const std::string &Path, std::string &Error);

/// Writes a safetensors file of the plan's tensors, each Data[T] holding
/// Elems elements of type T (its Names: the file's, or the plan's), and
/// in its metadata each tensor's CRC-32C (`dsrun.crc32c.NAME`). Written
/// to a temporary file, synced and renamed, so a crash never leaves half a
/// file under Path.
bool saveWeights(const dsc::plan::Plan &P, const std::vector<std::string> &Names,
                 const std::vector<std::vector<char>> &Data, ElementType Type,
                 const std::string &Path, std::string &Error);

/// save_pretrained's layout in Dir: model.safetensors where the weights
/// fit MaxShardBytes, else shards model-0000K-of-0000N.safetensors of at
/// most that (a larger tensor alone in its own) and the index, written
/// last; weights files of an earlier save that this one does not name are
/// removed; config.json and generation_config.json are copied from
/// ConfigFolder when it has them. Every file is written atomically.
bool saveModelFolder(const dsc::plan::Plan &P,
                     const std::vector<std::string> &Names,
                     const std::vector<std::vector<char>> &Data,
                     ElementType Type, const std::string &Dir,
                     uint64_t MaxShardBytes, const std::string &ConfigFolder,
                     std::string &Error);

/// What --save-weights and --fp32-weights write at Path: one file where
/// it ends in .safetensors, else saveModelFolder's layout.
bool saveWeightsAt(const dsc::plan::Plan &P,
                   const std::vector<std::string> &Names,
                   const std::vector<std::vector<char>> &Data,
                   ElementType Type, const std::string &Path,
                   uint64_t MaxShardBytes, const std::string &ConfigFolder,
                   std::string &Error);

/// The weights files save_pretrained's layout has in Dir, sorted.
std::vector<std::string> modelWeightsFiles(const std::string &Dir);

/// The vocab_size of the config.json in Folder; none without the file or
/// the key (Error says why when the file is there but unreadable).
std::optional<uint64_t> configVocabSize(const std::string &Folder,
                                        std::string &Error);

/// A shard size as transformers takes --max_shard_size: "5GB" (10^9),
/// "500MB", "2GiB", or bytes.
std::optional<uint64_t> parseShardSize(const std::string &Text);

} // namespace dsrun

#endif
