//===- SafetensorsFuzzer.cpp - libFuzzer target: safetensors files -------===//
//
// Arbitrary bytes as the weights dsrun --init reads and dsrun-reshard
// --check verifies: a header whose offsets run past the end, overlap,
// claim 2^63 bytes, disagree with the dtype and shape, or repeat a name
// must be an error naming the tensor, never a crash or a read outside
// the file. The plan asks for two tensors, so that matching by name, the
// tied-weight fallback and the checksums are all reached. The bytes are
// also read as a model.safetensors.index.json.
//
//===----------------------------------------------------------------------===//

#include "MemFile.h"
#include "Weights.h"

#include "dsc/SafeTensors.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  dsc::safetensors::Header H;
  std::string Error;
  (void)dsc::safetensors::readHeader(reinterpret_cast<const char *>(Data),
                                     Size, Size, H, Error);
  // The same bytes as a sharded model's index: what it accepts names only
  // files inside its folder.
  dsc::safetensors::Index I;
  if (dsc::safetensors::readIndex(reinterpret_cast<const char *>(Data), Size,
                                  I, Error))
    for (const auto &Entry : I.WeightMap)
      if (Entry.second.empty() || Entry.second == ".." ||
          Entry.second.find('/') != std::string::npos)
        __builtin_trap();
  std::string Path = memFileOf(Data, Size);
  if (Path.empty())
    return 0;
  static const dsc::plan::Plan P = [] {
    dsc::plan::Plan P;
    P.Tensors.resize(2);
    P.Tensors[0].Name = "w";
    P.Tensors[0].Shape = {2, 3};
    P.Tensors[0].Elems = 6;
    P.Tensors[1].Name = "b";
    P.Tensors[1].Shape = {3};
    P.Tensors[1].Elems = 3;
    return P;
  }();
  if (auto W = dsrun::loadWeights(P, Path, Error))
    if (W->Values[0].size() != 6 || W->Values[1].size() != 3)
      __builtin_trap();
  (void)dsrun::checkWeightsFile(Path, Error);
  return 0;
}
