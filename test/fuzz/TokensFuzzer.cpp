//===- TokensFuzzer.cpp - libFuzzer target: token files -----------------===//
//
// Arbitrary bytes as dsrun --data's token file (nanoGPT's bare uint16 ids,
// or llm.c's header and uint16 or uint32 ids): a header that promises
// more tokens than the file holds, an odd size or a wrong version must be
// an error, never a read past the mapping; every id the file says it has
// must be readable, and the sampler's windows must lie inside it.
//
//===----------------------------------------------------------------------===//

#include "MemFile.h"
#include "TokenData.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string Path = memFileOf(Data, Size);
  if (Path.empty())
    return 0;
  std::string Error;
  if (auto File = dsrun::TokenFile::open(Path, Error)) {
    uint64_t Sum = 0;
    for (uint64_t I = 0; I < File->tokens(); ++I)
      Sum += (*File)[I];
    (void)File->idBeyond(Sum % 70000);
    uint64_t Seq = 1 + Sum % 9;
    if (File->tokens() > Seq) {
      dsrun::TokenSampler Sampler(File->tokens(), Seq, Sum);
      for (uint64_t G = 0; G < 16; ++G)
        if (Sampler.start(G) + Seq + 1 > File->tokens())
          __builtin_trap();
    }
  }
  return 0;
}
