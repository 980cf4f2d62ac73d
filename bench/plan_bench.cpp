//===- plan_bench.cpp - Planning time against model and world size --------===//
//
// Plans graphs generated in memory. First GPT-2 XL (1.5 B, sequence 1024)
// and the Llama-70B shape (hidden 8192, GQA, sequence 4096) at 8 ranks,
// ZeRO-3, each layer checkpointed: the time of lowering alone (the
// compute program: import into the IR, passes, autodiff, kernels) and of
// the whole plan. Then Llama-70B shapes of 10 to 160 layers at 1024
// ranks, and the 80-layer graph at 8 to 16384 ranks for stage 2 and 3.
// Each row is the best of --repeat runs of import + analysis + shapes +
// every planner pass + encoding plan.bin, and the plan's size.
//
//   dsc-bench-plan [--repeat N]
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Json.h"
#include "dsc/Graph/ModelGen.h"
#include "dsc/Plan/Planner.h"
#include "dsc/PlanCodec.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>

using namespace dsc;

namespace {

struct Result {
  double Ms = 1e9, LowerMs = 1e9;
  size_t Kernels = 0;
  size_t PlanBytes = 0, Nodes = 0, Instructions = 0;
  uint64_t Params = 0;
};

Result planOnce(const std::string &Graph, const std::string &Config,
                uint32_t World, unsigned Repeat, int64_t SeqLen = 4096) {
  Result R;
  JsonParseResult J = parseJson(Config);
  ConfigView View(*J.Root);
  for (unsigned I = 0; I < Repeat; ++I) {
    auto Start = std::chrono::steady_clock::now();
    llvm::Expected<Model> M = importOnnxBuffer(Graph, "bench.onnx");
    if (!M) {
      llvm::errs() << llvm::toString(M.takeError()) << "\n";
      exit(1);
    }
    llvm::Expected<ModelFacts> F = analyzeModel(*M, {});
    PlanInputs In{View, Config, *M, *F, 0};
    PlanOptions O;
    O.WorldSize = World;
    O.GpusPerNode = 8;
    O.Nodes = World / 8;
    O.SeqLen = SeqLen;
    O.CheckpointLayers = true;
    auto Lowered = std::chrono::steady_clock::now();
    llvm::Expected<plan::Plan> L = lowerToPlan(In, O);
    if (!L) {
      llvm::errs() << llvm::toString(L.takeError()) << "\n";
      exit(1);
    }
    // Lowering is timed on its own, then again inside the whole plan.
    double LowerMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - Lowered)
                         .count();
    R.LowerMs = std::min(R.LowerMs, LowerMs);
    R.Kernels = L->Kernels.size();
    llvm::Expected<plan::Plan> P = buildPlan(In, O);
    if (!P) {
      llvm::errs() << llvm::toString(P.takeError()) << "\n";
      exit(1);
    }
    std::vector<uint8_t> Bytes = plan::writePlan(*P);
    double Ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - Start)
                    .count() -
                LowerMs;
    R.Ms = std::min(R.Ms, Ms);
    R.PlanBytes = Bytes.size();
    R.Nodes = M->Nodes.size();
    R.Instructions = P->Program.size();
    R.Params = F->TotalParams;
  }
  return R;
}

std::string config(int Stage) {
  return "{\"train_micro_batch_size_per_gpu\": 1, \"bf16\": {\"enabled\": "
         "true}, \"zero_optimization\": {\"stage\": " +
         std::to_string(Stage) +
         ", \"overlap_comm\": true, \"reduce_bucket_size\": 5e8, "
         "\"stage3_prefetch_bucket_size\": 5e7, "
         "\"stage3_param_persistence_threshold\": 81920}}";
}

} // namespace

int main(int argc, char **argv) {
  unsigned Repeat = 3;
  for (int I = 1; I + 1 < argc; ++I)
    if (std::string(argv[I]) == "--repeat")
      Repeat = std::stoul(argv[++I]);

  llvm::outs() << "Lowering the training program, 8 ranks, ZeRO-3, layers "
                  "checkpointed\n"
               << "model        seq   nodes  kernels  lower(ms)  "
                  "plan(ms)\n";
  for (const char *Preset : {"gpt2-xl", "llama-70b"}) {
    TransformerSpec S = *transformerPreset(Preset);
    int64_t Seq = std::string(Preset) == "gpt2-xl" ? 1024 : 4096;
    Result R = planOnce(*generateTransformer(S), config(3), 8, Repeat, Seq);
    llvm::outs() << llvm::format("%-10s %5lld %7zu %8zu %10.1f %9.1f\n",
                                 Preset, (long long)Seq, R.Nodes, R.Kernels,
                                 R.LowerMs, R.Ms);
  }

  llvm::outs() << "\nZeRO-3 at 1024 ranks, by model size\n"
               << "layers   nodes  params(B)  instructions  plan(KiB)  "
                  "plan(ms)  us/node\n";
  for (int64_t Layers : {10, 20, 40, 80, 160}) {
    TransformerSpec S = *transformerPreset("llama-70b");
    S.Layers = Layers;
    Result R = planOnce(*generateTransformer(S), config(3), 1024, Repeat);
    llvm::outs() << llvm::format("%6lld %7zu %10.2f %13zu %10zu %9.1f %8.2f\n",
                                 (long long)Layers, R.Nodes, R.Params / 1e9,
                                 R.Instructions, R.PlanBytes / 1024, R.Ms,
                                 R.Ms * 1000 / R.Nodes);
  }

  TransformerSpec S = *transformerPreset("llama-70b");
  std::string Graph = *generateTransformer(S);
  llvm::outs() << "\n70B (80 layers), by world size\n"
               << "stage   ranks  plan(KiB)  plan(ms)\n";
  for (int Stage : {2, 3})
    for (uint32_t World : {8u, 64u, 512u, 1024u, 4096u, 16384u}) {
      Result R = planOnce(Graph, config(Stage), World, Repeat);
      llvm::outs() << llvm::format("%5d %7u %10zu %9.1f\n", Stage, World,
                                   R.PlanBytes / 1024, R.Ms);
    }
  return 0;
}
