//===- HfConfigFuzzer.cpp - libFuzzer target: Hugging Face config.json ----===//
//
// Arbitrary text as a model folder's config.json: read or refused with a
// message that says where, never a crash. A config that reads and is
// small is built into its graph, which must import, analyze, go through
// the compute passes and select kernels (a refusal there is a finding:
// dsc wrote the graph itself).
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Import.h"
#include "dsc/Compute/Kernels.h"
#include "dsc/Compute/Passes.h"
#include "dsc/Graph/HfConfig.h"
#include "dsc/Graph/Model.h"
#include "dsc/Graph/Parameters.h"

#include <cstdint>
#include <cstdio>

using namespace dsc;

namespace {

[[noreturn]] void finding(const char *What, llvm::Error E) {
  fprintf(stderr, "%s: %s\n", What, llvm::toString(std::move(E)).c_str());
  __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<HfModelSpec> S = parseHfConfig(Text, "config.json");
  if (!S) {
    std::string Message = llvm::toString(S.takeError());
    if (Message.find("config.json") == std::string::npos)
      __builtin_trap(); // Every refusal names the file.
    return 0;
  }
  if (S->Layers > 3 || S->Hidden > 256 || S->Vocab > 1024 || S->FFN > 1024 ||
      S->Heads * S->HeadDim > 1024 || S->KVHeads * S->HeadDim > 1024 ||
      S->MaxPositions > 4096)
    return 0;
  llvm::Expected<std::string> Bytes = buildHfGraph(*S, "weights.bin");
  if (!Bytes)
    finding("build", Bytes.takeError());
  llvm::Expected<Model> M = importOnnxBuffer(*Bytes, "config.json");
  if (!M)
    finding("import", M.takeError());
  llvm::Expected<ModelFacts> Facts = analyzeModel(*M, AnalysisOptions());
  if (!Facts)
    finding("analysis", Facts.takeError());
  compute::ImportOptions Import;
  Import.MicroBatch = 2;
  Import.SeqLen = 7;
  llvm::Expected<compute::Graph> G = compute::importGraph(*M, *Facts, Import);
  if (!G)
    finding("compute import", G.takeError());
  if (llvm::Error E = compute::runPipeline(*G, compute::PipelineOptions()))
    finding("passes", std::move(E));
  llvm::Expected<compute::KernelProgram> K =
      compute::selectKernels(*G, compute::KernelOptions());
  if (!K)
    finding("kernels", K.takeError());
  return 0;
}
