//===- ResolveCommand.cpp - dsc resolve -----------------------------------===//

#include "Commands.h"

#include "dsc/Config/Resolve.h"
#include "dsc/Graph/Parameters.h"

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

// Training arguments; each overrides the YAML file.
static cl::opt<int64_t> WorldSize("world-size", cl::desc("Data-parallel ranks"),
                                  cl::sub(ResolveCommand));
static cl::opt<int64_t> MicroBatch("micro-batch",
                                   cl::desc("per_device_train_batch_size"),
                                   cl::sub(ResolveCommand));
static cl::opt<int64_t> GradAccum("grad-accum",
                                  cl::desc("gradient_accumulation_steps"),
                                  cl::sub(ResolveCommand));
static cl::opt<double> LearningRate("lr", cl::desc("learning_rate"),
                                    cl::sub(ResolveCommand));
static cl::opt<double> WeightDecay("weight-decay", cl::desc("weight_decay"),
                                   cl::sub(ResolveCommand));
static cl::opt<double> Beta1("adam-beta1", cl::sub(ResolveCommand));
static cl::opt<double> Beta2("adam-beta2", cl::sub(ResolveCommand));
static cl::opt<double> Eps("adam-eps", cl::desc("adam_epsilon"),
                           cl::sub(ResolveCommand));
static cl::opt<double> MaxGradNorm("max-grad-norm", cl::sub(ResolveCommand));
static cl::opt<double> WarmupSteps("warmup-steps",
                                   cl::desc("Warmup steps (a ratio below 1, "
                                            "as transformers v5 reads it)"),
                                   cl::sub(ResolveCommand));
static cl::opt<double> WarmupRatio("warmup-ratio", cl::sub(ResolveCommand));
static cl::opt<int64_t> MaxSteps("max-steps", cl::sub(ResolveCommand));
static cl::opt<double> Epochs("epochs", cl::desc("num_train_epochs"),
                              cl::sub(ResolveCommand));
static cl::opt<int64_t> StepsPerEpoch("steps-per-epoch",
                                      cl::desc("Optimizer steps per epoch"),
                                      cl::sub(ResolveCommand));
static cl::opt<bool> FP16("fp16", cl::sub(ResolveCommand));
static cl::opt<bool> BF16("bf16", cl::sub(ResolveCommand));
static cl::opt<bool> SaveOnEachNode("save-on-each-node",
                                    cl::sub(ResolveCommand));
static cl::opt<std::string> MixedPrecision("mixed-precision",
                                           cl::desc("accelerate: no, fp16, "
                                                    "bf16, fp8"),
                                           cl::sub(ResolveCommand));
static cl::opt<int64_t> ZeroStage("zero-stage",
                                  cl::desc("accelerate plugin zero_stage"),
                                  cl::sub(ResolveCommand));
static cl::opt<std::string>
    OffloadOptimizer("offload-optimizer-device",
                     cl::desc("accelerate plugin: none, cpu or nvme"),
                     cl::sub(ResolveCommand));
static cl::opt<std::string>
    OffloadParam("offload-param-device",
                 cl::desc("accelerate plugin: none, cpu or nvme"),
                 cl::sub(ResolveCommand));
static cl::opt<std::string>
    OffloadOptimizerNvme("offload-optimizer-nvme-path",
                         cl::desc("accelerate plugin: NVMe folder"),
                         cl::sub(ResolveCommand));
static cl::opt<std::string>
    OffloadParamNvme("offload-param-nvme-path",
                     cl::desc("accelerate plugin: NVMe folder"),
                     cl::sub(ResolveCommand));
static cl::opt<bool>
    Save16Bit("zero3-save-16bit-model",
              cl::desc("accelerate plugin: gather 16-bit weights to save"),
              cl::sub(ResolveCommand));
static cl::opt<int64_t> HiddenSize("hidden-size",
                                   cl::desc("The model's hidden size (instead "
                                            "of reading model.onnx)"),
                                   cl::sub(ResolveCommand));

template <typename T, typename O>
static void take(std::optional<T> &Field, const O &Option) {
  if (Option.getNumOccurrences())
    Field = T(Option);
}

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
  take(A.WorldSize, WorldSize);
  take(A.MicroBatch, MicroBatch);
  take(A.GradAccum, GradAccum);
  take(A.LearningRate, LearningRate);
  take(A.WeightDecay, WeightDecay);
  take(A.AdamBeta1, Beta1);
  take(A.AdamBeta2, Beta2);
  take(A.AdamEpsilon, Eps);
  take(A.MaxGradNorm, MaxGradNorm);
  take(A.WarmupSteps, WarmupRatio);
  take(A.WarmupSteps, WarmupSteps);
  take(A.MaxSteps, MaxSteps);
  take(A.Epochs, Epochs);
  take(A.StepsPerEpoch, StepsPerEpoch);
  if (FP16.getNumOccurrences() || BF16.getNumOccurrences()) {
    A.FP16 = bool(FP16);
    A.BF16 = bool(BF16);
  }
  take(A.SaveOnEachNode, SaveOnEachNode);
  take(A.MixedPrecision, MixedPrecision);
  take(A.ZeroStage, ZeroStage);
  take(A.OffloadOptimizerDevice, OffloadOptimizer);
  take(A.OffloadParamDevice, OffloadParam);
  take(A.OffloadOptimizerNvmePath, OffloadOptimizerNvme);
  take(A.OffloadParamNvmePath, OffloadParamNvme);
  take(A.Zero3Save16BitModel, Save16Bit);
  for (auto [Name, V] : {std::pair<const char *, std::optional<int64_t>>{
                             "--world-size", A.WorldSize},
                         {"--micro-batch", A.MicroBatch},
                         {"--grad-accum", A.GradAccum},
                         {"--max-steps", A.MaxSteps}})
    if (V && *V <= 0)
      return usage(Twine(Name) + " must be a positive integer");
  if (HiddenSize.getNumOccurrences()) {
    if (HiddenSize <= 0)
      return usage("--hidden-size must be a positive integer");
    A.HiddenSize = HiddenSize;
    A.HiddenSizeSource = "--hidden-size";
  } else if (!ModelPath.empty()) {
    Expected<Model> M = importOnnx(ModelPath);
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
