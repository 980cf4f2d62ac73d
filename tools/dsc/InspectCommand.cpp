//===- InspectCommand.cpp - dsc inspect -----------------------------------===//

#include "Commands.h"

#include "dsc/Compute/Inspect.h"
#include "dsc/Graph/HfConfig.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace dsc::tool {

cl::SubCommand InspectCommand("inspect",
                              "Describe an ONNX model: parameters, modules, "
                              "hidden size, activations, ops, and whether "
                              "its training step lowers");

static cl::opt<std::string> ModelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::sub(InspectCommand));
enum class InspectFormat { Text, JSON, YAML };
static cl::opt<InspectFormat> Format(
    "format", cl::desc("Output format"),
    cl::values(clEnumValN(InspectFormat::Text, "text", "for people"),
               clEnumValN(InspectFormat::JSON, "json", "one JSON document"),
               clEnumValN(InspectFormat::YAML, "yaml", "YAML")),
    cl::init(InspectFormat::Text), cl::sub(InspectCommand));
static cl::list<std::string> Dims("dim",
                                  cl::desc("Bind a symbolic dimension: "
                                           "--dim sequence=2048"),
                                  cl::value_desc("NAME=VALUE"),
                                  cl::sub(InspectCommand));
static cl::opt<int64_t> SeqLen("seq-len",
                               cl::desc("Bind the sequence-length symbols"),
                               cl::init(0), cl::sub(InspectCommand));
static cl::opt<std::string> Freeze("freeze",
                                   cl::desc("Freeze parameters whose name "
                                            "matches (no gradient, no "
                                            "optimizer state)"),
                                   cl::value_desc("regex"),
                                   cl::sub(InspectCommand));
static cl::opt<int64_t> HiddenSize("hidden-size",
                                   cl::desc("Use this hidden size instead of "
                                            "the one derived from the graph"),
                                   cl::init(0), cl::sub(InspectCommand));
static cl::opt<std::string> Loss(
    "loss",
    cl::desc("The loss the training program is lowered with: causal-lm "
             "(default), masked-lm or sequence-classification"),
    cl::init("causal-lm"), cl::sub(InspectCommand));
static cl::opt<unsigned> MaxModules("modules",
                                    cl::desc("Modules listed in text output "
                                             "(0 = all)"),
                                    cl::init(20), cl::sub(InspectCommand));

/// Parses NAME=VALUE dim bindings; reports and returns false on a bad one.
bool parseDimBindings(ArrayRef<std::string> Args, DimBindings &Out,
                      StringRef Tool) {
  for (StringRef A : Args) {
    auto [Name, Value] = A.split('=');
    int64_t V;
    if (Name.empty() || Value.getAsInteger(10, V) || V <= 0) {
      WithColor::error(errs(), Tool)
          << "--dim " << A << ": expected NAME=VALUE with a positive "
          << "integer value\n";
      return false;
    }
    Out[Name.str()] = V;
  }
  return true;
}

int runInspect() {
  InspectOptions Options;
  if (!parseDimBindings(Dims, Options.Dims, "dsc inspect"))
    return ExitUsage;
  if (SeqLen.getNumOccurrences()) {
    if (SeqLen <= 0) {
      WithColor::error(errs(), "dsc inspect")
          << "--seq-len must be a positive integer\n";
      return ExitUsage;
    }
    Options.SeqLen = SeqLen;
  }
  if (HiddenSize.getNumOccurrences()) {
    if (HiddenSize <= 0) {
      WithColor::error(errs(), "dsc inspect")
          << "--hidden-size must be a positive integer\n";
      return ExitUsage;
    }
    Options.Analysis.HiddenSize = HiddenSize;
  }
  Options.Analysis.FreezeRegex = Freeze;
  std::optional<compute::LossKind> K = compute::lossNamed(Loss);
  if (!K) {
    WithColor::error(errs(), "dsc inspect")
        << "--loss " << Loss
        << ": expected causal-lm, masked-lm or sequence-classification\n";
    return ExitUsage;
  }
  Options.Loss = *K;
  if (!sys::fs::exists(ModelPath)) {
    WithColor::error(errs(), "dsc inspect")
        << ModelPath << ": no such file\n";
    return ExitUsage;
  }
  Expected<Model> M = importModel(ModelPath);
  if (!M) {
    WithColor::error(errs(), "dsc inspect") << toString(M.takeError()) << "\n";
    return ExitFindings;
  }
  Expected<InspectReport> R = inspectModel(*M, Options);
  if (!R) {
    WithColor::error(errs(), "dsc inspect") << toString(R.takeError()) << "\n";
    return ExitUsage;
  }
  switch (Format) {
  case InspectFormat::Text:
    printInspectText(outs(), *R, MaxModules ? MaxModules : ~0u);
    break;
  case InspectFormat::JSON:
    printInspectJSON(outs(), *R);
    break;
  case InspectFormat::YAML:
    printInspectYAML(outs(), *R);
    break;
  }
  return ExitClean;
}

} // namespace dsc::tool
