//===- OnnxFuzzer.cpp - libFuzzer target: the ONNX importer ---------------===//
//
// Arbitrary bytes through import, parameter analysis and shape inference:
// an error or a model, never a crash or a hang.
//
//===----------------------------------------------------------------------===//

#include "dsc/Graph/Inspect.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace dsc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Bytes(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<Model> M = importOnnxBuffer(Bytes, "fuzz.onnx");
  if (!M) {
    llvm::consumeError(M.takeError());
    return 0;
  }
  InspectOptions Options;
  Options.SeqLen = 7;
  llvm::Expected<InspectReport> R = inspectModel(*M, Options);
  if (!R) {
    llvm::consumeError(R.takeError());
    return 0;
  }
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  printInspectText(OS, *R, 5);
  printInspectJSON(OS, *R);
  return 0;
}
