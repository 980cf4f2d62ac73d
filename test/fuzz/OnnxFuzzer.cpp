//===- OnnxFuzzer.cpp - libFuzzer target: the ONNX importer ---------------===//
//
// Arbitrary bytes through import, parameter analysis and the inspect
// report, then the compute program's import (shapes bound, constants
// folded), its passes and kernel selection: an error or a model, never a
// crash or a hang.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Import.h"
#include "dsc/Compute/Kernels.h"
#include "dsc/Compute/Passes.h"
#include "dsc/Compute/Inspect.h"

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

  llvm::Expected<ModelFacts> Facts = analyzeModel(*M, AnalysisOptions());
  if (!Facts) {
    llvm::consumeError(Facts.takeError());
    return 0;
  }
  compute::ImportOptions Import;
  Import.MicroBatch = 2;
  Import.SeqLen = 7;
  llvm::Expected<compute::Graph> G = compute::importGraph(*M, *Facts, Import);
  if (!G) {
    llvm::consumeError(G.takeError());
    return 0;
  }
  if (llvm::Error E = compute::runPipeline(*G, compute::PipelineOptions())) {
    llvm::consumeError(std::move(E));
    return 0;
  }
  G->print(OS);
  llvm::Expected<compute::KernelProgram> K =
      compute::selectKernels(*G, compute::KernelOptions());
  if (!K)
    llvm::consumeError(K.takeError());
  return 0;
}
