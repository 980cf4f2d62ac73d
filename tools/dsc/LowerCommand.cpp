//===- LowerCommand.cpp - dsc lower: the compute IR, pass by pass ---------===//
//
// What mlir-opt is to MLIR: imports a model at the given shapes, runs the
// compute passes and prints the IR (after one pass, after each, or at the
// end), so every pass has lit tests on real exporter patterns.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dsc/Compute/Import.h"
#include "dsc/Compute/Ops.h"
#include "dsc/Compute/Passes.h"
#include "dsc/Graph/HfConfig.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace dsc::tool {

bool parseDimBindings(ArrayRef<std::string> Args, DimBindings &Out,
                      StringRef Tool);

cl::SubCommand LowerCommand("lower",
                            "Lower an ONNX model to the compute IR and "
                            "print it (forward, loss, backward)");

// Optional for --list-passes, which needs no model; runLower asks for it.
static cl::opt<std::string> ModelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::sub(LowerCommand));
static cl::opt<int64_t> Batch("batch", cl::desc("The micro batch"),
                              cl::init(1), cl::sub(LowerCommand));
static cl::opt<int64_t> SeqLen("seq-len",
                               cl::desc("The sequence length of token inputs"),
                               cl::init(0), cl::sub(LowerCommand));
static cl::list<std::string> Dims("dim",
                                  cl::desc("Bind a symbolic dimension"),
                                  cl::value_desc("NAME=VALUE"),
                                  cl::sub(LowerCommand));
static cl::opt<std::string> Loss("loss",
                                 cl::desc("causal-lm, masked-lm or "
                                          "sequence-classification"),
                                 cl::init("causal-lm"), cl::sub(LowerCommand));
static cl::opt<std::string> Freeze("freeze",
                                   cl::desc("Freeze parameters whose name "
                                            "matches"),
                                   cl::value_desc("regex"),
                                   cl::sub(LowerCommand));
static cl::opt<bool> NoFuse("no-fuse", cl::desc("Skip the fusion passes"),
                            cl::sub(LowerCommand));
static cl::list<std::string> PrintAfter("print-after",
                                        cl::desc("Print the IR after a pass "
                                                 "(import prints the "
                                                 "imported graph)"),
                                        cl::value_desc("pass"),
                                        cl::sub(LowerCommand));
static cl::opt<bool> PrintAfterAll("print-after-all",
                                   cl::desc("Print the IR after every pass"),
                                   cl::sub(LowerCommand));
static cl::opt<std::string> StopAfter("stop-after",
                                      cl::desc("Run the passes up to this one"),
                                      cl::value_desc("pass"),
                                      cl::sub(LowerCommand));
static cl::opt<bool> ListPasses("list-passes",
                                cl::desc("List the compute passes"),
                                cl::sub(LowerCommand));
static cl::opt<bool> ListOps("list-ops",
                             cl::desc("List the operators dsc lowers, with "
                                      "their gradients (a markdown table)"),
                             cl::sub(LowerCommand));

int runLower() {
  if (ListPasses) {
    outs() << "import\n";
    for (const compute::ComputePass &P : compute::computePasses())
      outs() << P.Name << (P.Fusion ? " (fusion)" : "") << "  " << P.Summary
             << "\n";
    return ExitClean;
  }
  if (ListOps) {
    // The registry is the one source of truth: docs/compute.md's table is
    // this output.
    outs() << "| operator | kind | gradient | computes |\n"
           << "| --- | --- | --- | --- |\n";
    for (const compute::OpDef *D : compute::allOps()) {
      const char *Kind = D->Flags & compute::Elementwise ? "elementwise"
                         : D->Flags & compute::ViewOp    ? "view"
                                                         : "other";
      bool Backward = StringRef(D->Name).endswith("Grad");
      const char *Grad =
          D->Grad                          ? "rule"
          : Backward                       ? "(a backward op)"
          : D->Flags & compute::NoGradient ? "none (not differentiable)"
                                           : "none: folded or an error";
      outs() << "| `" << D->Name << "` | " << Kind << " | " << Grad << " | "
             << D->Summary << " |\n";
    }
    return ExitClean;
  }
  if (ModelPath.empty()) {
    WithColor::error(errs(), "dsc lower")
        << "no model: dsc lower model.onnx [--batch N --seq-len N]\n";
    return ExitUsage;
  }
  compute::ImportOptions Import;
  if (!parseDimBindings(Dims, Import.Dims, "dsc lower"))
    return ExitUsage;
  if (Batch <= 0 || SeqLen < 0) {
    WithColor::error(errs(), "dsc lower")
        << "--batch and --seq-len must be positive\n";
    return ExitUsage;
  }
  Import.MicroBatch = Batch;
  if (SeqLen)
    Import.SeqLen = SeqLen;
  compute::PipelineOptions Options;
  std::optional<compute::LossKind> K = compute::lossNamed(Loss);
  if (!K) {
    WithColor::error(errs(), "dsc lower")
        << "--loss " << Loss
        << ": expected causal-lm, masked-lm or sequence-classification\n";
    return ExitUsage;
  }
  Options.Loss = *K;
  Options.Fuse = !NoFuse;
  if (!sys::fs::exists(ModelPath)) {
    WithColor::error(errs(), "dsc lower") << ModelPath << ": no such file\n";
    return ExitUsage;
  }
  Expected<Model> M = importModel(ModelPath);
  if (!M) {
    WithColor::error(errs(), "dsc lower") << toString(M.takeError()) << "\n";
    return ExitFindings;
  }
  AnalysisOptions Analysis;
  Analysis.FreezeRegex = Freeze;
  Expected<ModelFacts> Facts = analyzeModel(*M, Analysis);
  if (!Facts) {
    WithColor::error(errs(), "dsc lower")
        << toString(Facts.takeError()) << "\n";
    return ExitUsage;
  }
  auto Wanted = [&](StringRef Pass) {
    return PrintAfterAll || is_contained(PrintAfter, Pass.str());
  };
  Expected<compute::Graph> G = compute::importGraph(*M, *Facts, Import);
  if (!G) {
    WithColor::error(errs(), "dsc lower") << toString(G.takeError()) << "\n";
    return ExitFindings;
  }
  if (Wanted("import")) {
    outs() << "// -----// IR after import //----- //\n";
    G->print(outs());
  }
  if (StopAfter == "import")
    return ExitClean;
  bool Printed = Wanted("import");
  Error E = compute::runPipeline(
      *G, Options,
      [&](StringRef Pass, const compute::Graph &After) {
        if (!Wanted(Pass))
          return;
        outs() << "// -----// IR after " << Pass << " //----- //\n";
        After.print(outs());
        Printed = true;
      },
      StopAfter);
  if (E) {
    WithColor::error(errs(), "dsc lower") << toString(std::move(E)) << "\n";
    return ExitFindings;
  }
  if (!Printed)
    G->print(outs());
  return ExitClean;
}

} // namespace dsc::tool
