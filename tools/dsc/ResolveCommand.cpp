//===- ResolveCommand.cpp - dsc resolve -----------------------------------===//

#include "Commands.h"

#include "dsc/Config/Resolve.h"
#include "dsc/Graph/HfConfig.h"
#include "dsc/Graph/Parameters.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace dsc::tool {

cl::SubCommand ResolveCommand("resolve",
                              "Replace every \"auto\" the way the HF Trainer "
                              "or accelerate would");

static cl::opt<std::string> ConfigPath(cl::Positional,
                                       cl::desc("<ds_config.json>"),
                                       cl::Required, cl::sub(ResolveCommand));
static cl::opt<std::string> ModelPath(cl::Positional, cl::desc("[model.onnx]"),
                                      cl::sub(ResolveCommand));
static cl::opt<std::string> Output("o", cl::desc("Write the resolved config "
                                                 "here (default: stdout)"),
                                   cl::value_desc("file"),
                                   cl::sub(ResolveCommand));
static cl::opt<std::string> Target("target",
                                   cl::desc("hf-trainer (default) or "
                                            "accelerate"),
                                   cl::init("hf-trainer"),
                                   cl::sub(ResolveCommand));
static cl::opt<bool> Explain("explain",
                             cl::desc("Print each filled key, its value and "
                                      "where the value came from"),
                             cl::sub(ResolveCommand));
static cl::opt<std::string> ArgsFile("args",
                                     cl::desc("YAML of TrainingArguments "
                                              "(per_device_train_batch_size: "
                                              "8, learning_rate: 2e-5, ...)"),
                                     cl::value_desc("file"),
                                     cl::sub(ResolveCommand));

// Training arguments, one flag each from visitTrainingArgs; each
// overrides the YAML file.
namespace {
class TrainingArgFlags {
public:
  TrainingArgFlags() {
    TrainingArgs Shape;
    visitTrainingArgs(Shape, [&](auto &Field, const TrainingArgSpec &S) {
      using T = typename std::remove_reference_t<decltype(Field)>::value_type;
      Options.push_back(std::make_unique<cl::opt<T>>(
          StringRef(S.Flag), cl::desc(S.Help), cl::sub(ResolveCommand)));
    });
  }
  /// Sets the fields whose flags were given; returns their YAML names.
  StringSet<> applyTo(TrainingArgs &A) const {
    StringSet<> Given;
    size_t I = 0;
    visitTrainingArgs(A, [&](auto &Field, const TrainingArgSpec &S) {
      using T = typename std::remove_reference_t<decltype(Field)>::value_type;
      const auto &O = static_cast<const cl::opt<T> &>(*Options[I++]);
      if (!O.getNumOccurrences())
        return;
      Field = T(O.getValue());
      Given.insert(S.Yaml);
    });
    return Given;
  }

private:
  std::vector<std::unique_ptr<cl::Option>> Options;
};
} // namespace

static const TrainingArgFlags ArgFlags;

static int usage(const Twine &Message) {
  WithColor::error(errs(), "dsc resolve") << Message << "\n";
  return ExitUsage;
}

int runResolve() {
  std::optional<LintTarget> T = parseLintTarget(Target);
  if (!T || *T == LintTarget::DeepSpeed)
    return usage("--target must be hf-trainer or accelerate: DeepSpeed "
                 "itself fills no \"auto\"");
  TrainingArgs A;
  if (!ArgsFile.empty()) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> B = MemoryBuffer::getFile(ArgsFile);
    if (!B)
      return usage(ArgsFile + ": " + B.getError().message());
    Expected<TrainingArgs> Y = readTrainingArgsYAML((*B)->getBuffer(), ArgsFile);
    if (!Y)
      return usage(toString(Y.takeError()));
    A = *Y;
  }
  StringSet<> Given = ArgFlags.applyTo(A);
  // One precision flag on the command line replaces the file's pair.
  if (Given.count("fp16") || Given.count("bf16")) {
    if (!Given.count("fp16"))
      A.FP16 = false;
    if (!Given.count("bf16"))
      A.BF16 = false;
  }
  if (std::optional<TrainingArgSpec> Bad = firstNotPositive(A))
    return usage(Twine("--") + Bad->Flag + " must be a positive integer");
  if (Given.count("hidden_size")) {
    A.HiddenSizeSource = "--hidden-size";
  } else if (!ModelPath.empty()) {
    Expected<Model> M = importModel(ModelPath);
    if (!M) {
      WithColor::error(errs(), "dsc resolve") << toString(M.takeError()) << "\n";
      return ExitFindings;
    }
    Expected<ModelFacts> F = analyzeModel(*M, {});
    if (!F)
      return usage(toString(F.takeError()));
    if (F->HiddenSize) {
      A.HiddenSize = F->HiddenSize;
      A.HiddenSizeSource = "model: " + F->HiddenSizeEvidence;
    }
  }

  DiagnosticEngine Engine;
  ErrorOr<std::unique_ptr<MemoryBuffer>> Config =
      MemoryBuffer::getFileOrSTDIN(ConfigPath, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!Config)
    return usage(ConfigPath + ": " + Config.getError().message());
  unsigned ID = Engine.addFile(std::move(*Config));
  ResolveResult R = resolveConfig(Engine, ID, *T, A);

  // The result must be a config DeepSpeed itself accepts.
  if (R.OK) {
    unsigned Out = Engine.addFile(MemoryBuffer::getMemBufferCopy(
        R.Text, Output.empty() ? "<resolved>" : Output.getValue()));
    LintOptions L;
    L.Target = LintTarget::DeepSpeed;
    L.WorldSize = A.WorldSize;
    lintConfig(Engine, Out, L);
  }
  bool Colors = sys::Process::StandardErrHasColors();
  emitText(Engine, errs(), Colors);
  if (Explain)
    for (const FilledValue &F : R.Filled)
      errs() << "  " << F.Path << " = " << F.Value << "   (" << F.Source
             << ")\n";
  unsigned Errors = Engine.count(Severity::Error);
  if (!R.OK || Errors) {
    errs() << "dsc resolve: " << Errors << (Errors == 1 ? " error" : " errors")
           << "; nothing written\n";
    return ExitFindings;
  }
  if (Output.empty()) {
    outs() << R.Text;
  } else {
    std::error_code EC;
    raw_fd_ostream OS(Output, EC, sys::fs::OF_None);
    if (EC)
      return usage(Output + ": " + EC.message());
    OS << R.Text;
  }
  errs() << "dsc resolve: filled " << R.Filled.size() << " \"auto\" value"
         << (R.Filled.size() == 1 ? "" : "s") << " for "
         << targetName(*T) << "\n";
  return ExitClean;
}

} // namespace dsc::tool
