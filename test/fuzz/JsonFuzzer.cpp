//===- JsonFuzzer.cpp - libFuzzer target: the JSON reader -----------------===//
//
// Any byte string must parse or give a located error: never crash, never
// read out of bounds, and every range it reports lies inside the input.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Json.h"

#include <cstdint>
#include <cstdlib>

using namespace dsc;

static void checkRanges(const JsonValue &V, size_t Size) {
  if (V.Begin > V.End || V.End > Size)
    std::abort();
  for (const JsonMember &M : V.Members) {
    if (M.KeyBegin > M.KeyEnd || M.KeyEnd > M.Value.Begin)
      std::abort();
    checkRanges(M.Value, Size);
  }
  for (const JsonValue &E : V.Elements)
    checkRanges(E, Size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  JsonParseResult R = parseJson(Text);
  if (R.Error && R.Error->Offset > Size)
    std::abort();
  if (R.Root)
    checkRanges(*R.Root, Size);
  for (const JsonExtensionUse &U : R.Extensions)
    if (U.Begin > U.End || U.End > Size)
      std::abort();
  return 0;
}
