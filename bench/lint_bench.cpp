//===- lint_bench.cpp - How long does dsc lint take for 1,000 configs? ----===//
//
// Lints 1,000 configs in one process and prints the total and per-config
// time. The configs are real ones from a folder (the shared corpus, cycled
// until 1,000) or, without a folder, 1,000 variations of a built-in
// ZeRO-3 config. Reading the files is not timed; parsing is.
//
//   dsc-bench-lint [--count N] [FOLDER]
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Lint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace dsc;

static std::string variation(unsigned I) {
  unsigned Stage = I % 4;
  return "{\n"
         "  \"train_micro_batch_size_per_gpu\": " + std::to_string(1 + I % 8) +
         ",\n  \"gradient_accumulation_steps\": " + std::to_string(1 + I % 4) +
         ",\n  \"gradient_clipping\": 1.0,\n"
         "  \"bf16\": {\"enabled\": true},\n"
         "  \"zero_optimization\": {\n"
         "    \"stage\": " + std::to_string(Stage) + ",\n"
         "    \"overlap_comm\": true,\n"
         "    \"reduce_bucket_size\": 5e8,\n"
         "    \"stage3_prefetch_bucket_size\": 5e7,\n"
         "    \"stage3_param_persistence_threshold\": 1e5,\n"
         "    \"offload_optimizer\": {\"device\": \"" +
         std::string(I % 3 == 0 && Stage > 0 ? "cpu" : "none") + "\", \"pin_memory\": true}\n"
         "  },\n"
         "  \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 3e-4, "
         "\"betas\": [0.9, 0.95], \"eps\": 1e-8, \"weight_decay\": 0.1}},\n"
         "  \"scheduler\": {\"type\": \"WarmupLR\", \"params\": "
         "{\"warmup_num_steps\": 100}},\n"
         "  \"steps_per_print\": 10\n}\n";
}

int main(int argc, char **argv) {
  unsigned Count = 1000;
  std::string Folder;
  for (int I = 1; I < argc; ++I) {
    std::string A = argv[I];
    if (A == "--count" && I + 1 < argc)
      Count = std::stoul(argv[++I]);
    else
      Folder = A;
  }
  std::vector<std::pair<std::string, std::string>> Inputs;
  if (!Folder.empty()) {
    std::error_code EC;
    std::vector<std::string> Paths;
    for (llvm::sys::fs::directory_iterator It(Folder, EC), End;
         It != End && !EC; It.increment(EC))
      Paths.push_back(It->path());
    std::sort(Paths.begin(), Paths.end());
    for (const std::string &P : Paths)
      if (auto B = llvm::MemoryBuffer::getFile(P))
        Inputs.emplace_back(P, (*B)->getBuffer().str());
  }
  if (Inputs.empty())
    for (unsigned I = 0; I < Count; ++I)
      Inputs.emplace_back("generated-" + std::to_string(I) + ".json",
                          variation(I));

  auto Start = std::chrono::steady_clock::now();
  unsigned Errors = 0, Warnings = 0, Bytes = 0;
  for (unsigned I = 0; I < Count; ++I) {
    const auto &[Name, Text] = Inputs[I % Inputs.size()];
    DiagnosticEngine Engine;
    unsigned ID =
        Engine.addFile(llvm::MemoryBuffer::getMemBufferCopy(Text, Name));
    LintOptions Options;
    Options.WorldSize = 8;
    lintConfig(Engine, ID, Options);
    Errors += Engine.count(Severity::Error);
    Warnings += Engine.count(Severity::Warning);
    Bytes += Text.size();
  }
  double Seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - Start)
                       .count();
  llvm::outs() << "linted " << Count << " configs ("
               << (Folder.empty() ? "generated" : Folder) << ", "
               << Inputs.size() << " distinct, " << Bytes / 1024
               << " KiB) in " << llvm::format("%.3f", Seconds) << " s: "
               << llvm::format("%.1f", Seconds * 1e6 / Count)
               << " us per config, " << Errors << " errors, " << Warnings
               << " warnings\n";
  return 0;
}
