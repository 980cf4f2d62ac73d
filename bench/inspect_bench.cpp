//===- inspect_bench.cpp - Import + inspect time against graph size -------===//
//
// Generates Llama-70B-shaped graphs (hidden 8192, 64 heads, 8 KV heads) of
// 10 to 160 layers in memory and times importing and inspecting each (the
// model's facts, the forward specialized at 4,096 tokens, its loss and
// backward lowered): the 80-layer one is the 70B-class graph. Prints
// nodes, milliseconds and microseconds per node, so that linear growth
// shows as a flat last column.
//
//   dsc-bench-inspect [--repeat N]
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Inspect.h"
#include "dsc/Graph/ModelGen.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>

using namespace dsc;

int main(int argc, char **argv) {
  unsigned Repeat = 5;
  for (int I = 1; I + 1 < argc; ++I)
    if (std::string(argv[I]) == "--repeat")
      Repeat = std::stoul(argv[++I]);
  llvm::outs() << "layers   nodes  params(B)   graph(KiB)  import+inspect(ms)  "
                  "us/node\n";
  for (int64_t Layers : {10, 20, 40, 80, 160}) {
    TransformerSpec S = *transformerPreset("llama-70b");
    S.Layers = Layers;
    std::string Bytes = *generateTransformer(S);
    double Best = 1e9;
    size_t Nodes = 0;
    uint64_t Params = 0;
    for (unsigned R = 0; R < Repeat; ++R) {
      auto Start = std::chrono::steady_clock::now();
      llvm::Expected<Model> M = importOnnxBuffer(Bytes, "bench.onnx");
      if (!M) {
        llvm::errs() << llvm::toString(M.takeError()) << "\n";
        return 1;
      }
      InspectOptions Options;
      Options.SeqLen = 4096;
      llvm::Expected<InspectReport> Report = inspectModel(*M, Options);
      if (!Report) {
        llvm::errs() << llvm::toString(Report.takeError()) << "\n";
        return 1;
      }
      double Ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - Start)
                      .count();
      Best = std::min(Best, Ms);
      Nodes = M->Nodes.size();
      Params = Report->Facts.TotalParams;
      if (!Report->TrainingProblem.empty()) {
        llvm::errs() << Report->TrainingProblem << "\n";
        return 1;
      }
    }
    llvm::outs() << llvm::format("%6lld %7zu %10.2f %12zu %19.1f %8.2f\n",
                                 (long long)Layers, Nodes, Params / 1e9,
                                 Bytes.size() / 1024, Best,
                                 Best * 1000 / Nodes);
  }
  return 0;
}
