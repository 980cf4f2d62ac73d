//===- Resolve.cpp - The HF Trainer's and accelerate's "auto" rules -------===//
//
// One function per integration says what each "auto" becomes: transformers
// v5's Trainer, which also runs accelerate's plugin and _prepare_deepspeed,
// and accelerate alone (docs/resolve.md lists every rule and its source).
// The rules name the argument, default or formula each value comes from,
// for --explain.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Resolve.h"

#include "Edits.h"

#include "dsc/Config/ConfigView.h"
#include "dsc/Support/YAMLInput.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/YAMLTraits.h"

#include <cmath>
#include <cstdio>

using namespace llvm;

namespace dsc {

namespace {

/// Python's repr of a float: the shortest text that reads back the same.
std::string floatText(double D) {
  if (D == std::trunc(D) && std::fabs(D) < 1e16)
    return formatv("{0}.0", int64_t(D)).str();
  char Buffer[32];
  for (int Precision = 1; Precision <= 17; ++Precision) {
    std::snprintf(Buffer, sizeof Buffer, "%.*g", Precision, D);
    if (std::strtod(Buffer, nullptr) == D)
      break;
  }
  return Buffer;
}

struct Value {
  std::string Json;   ///< Text written into the config.
  std::string Source; ///< Where it came from.
  /// For the Trainer's comparison of values written instead of "auto".
  std::vector<double> Numbers;
  std::optional<bool> Bool;
};

Value intValue(int64_t N, std::string Source) {
  return {std::to_string(N), std::move(Source), {double(N)}, std::nullopt};
}
Value floatValue(double D, std::string Source) {
  return {floatText(D), std::move(Source), {D}, std::nullopt};
}
Value boolValue(bool B, std::string Source) {
  return {B ? "true" : "false", std::move(Source), {double(B)}, B};
}
Value stringValue(StringRef S, std::string Source) {
  return {quoteJson(S), std::move(Source), {}, std::nullopt};
}

/// "--flag" when given, else "DEFAULT_TEXT".
template <typename T>
std::pair<T, std::string> arg(const std::optional<T> &V, T Default,
                              StringRef Flag, StringRef DefaultWhy) {
  if (V)
    return {*V, ("--" + Flag).str()};
  return {Default, DefaultWhy.str()};
}

class Resolver {
public:
  Resolver(DiagnosticEngine &Engine, unsigned BufferID, LintTarget Target,
           const TrainingArgs &A)
      : Engine(Engine), BufferID(BufferID), Target(Target), A(A),
        Text(Engine.sourceMgr().getMemoryBuffer(BufferID)->getBuffer()) {}

  ResolveResult run();

private:
  /// The value Path's "auto" becomes, or nullopt after reporting why none.
  std::optional<Value> valueFor(const std::string &Path, SMRange Where);
  std::optional<Value> trainerValue(const std::string &Path, SMRange Where,
                                    bool &Handled);
  std::optional<Value> accelerateValue(const std::string &Path, SMRange Where,
                                       bool &Handled);
  std::optional<Value> hiddenSizeValue(const std::string &Path, SMRange Where);
  std::optional<int64_t> trainingSteps(const std::string &Path, SMRange Where);
  std::optional<int64_t> worldSize(const std::string &Path, SMRange Where);
  void walk(const JsonValue &Object, const std::string &Prefix);
  void addPrecisionSection();
  void addAccumulation();
  void checkTrainerMatches();

  Diagnostic &error(SMRange R, const Twine &Message, Rule Code = Rule::AutoValue) {
    Failed = true;
    return Engine.report(Severity::Error, ruleCode(Code), BufferID, R, Message);
  }
  SMRange range(uint32_t B, uint32_t E) const {
    return {SMLoc::getFromPointer(Text.data() + B),
            SMLoc::getFromPointer(Text.data() + E)};
  }

  DiagnosticEngine &Engine;
  unsigned BufferID;
  LintTarget Target;
  const TrainingArgs &A;
  StringRef Text;
  const JsonValue *Root = nullptr;
  std::optional<ConfigView> View;
  std::vector<TextEdit> Edits;
  std::vector<FilledValue> Filled;
  bool Failed = false;
};

std::optional<int64_t> Resolver::worldSize(const std::string &Path,
                                           SMRange Where) {
  if (A.WorldSize)
    return *A.WorldSize;
  // The integrations read it from the launcher's environment; guessing 1
  // would silently resolve a different batch than the run trains with.
  error(Where, "`" + Path + "` is \"auto\": its value depends on the number "
                            "of processes; pass --world-size");
  return std::nullopt;
}

std::optional<int64_t> Resolver::trainingSteps(const std::string &Path,
                                               SMRange Where) {
  if (A.MaxSteps && *A.MaxSteps > 0)
    return *A.MaxSteps;
  if (A.Epochs && A.StepsPerEpoch)
    return int64_t(std::ceil(*A.Epochs * double(*A.StepsPerEpoch)));
  error(Where, "`" + Path + "` is \"auto\": its value is the number of "
                            "training steps; pass --max-steps, or --epochs "
                            "with --steps-per-epoch");
  return std::nullopt;
}

std::optional<Value> Resolver::hiddenSizeValue(const std::string &Path,
                                               SMRange Where) {
  if (!A.HiddenSize) {
    error(Where, "`" + Path + "` is \"auto\", which needs the model's hidden "
                              "size: pass the model (model.onnx) or "
                              "--hidden-size");
    return std::nullopt;
  }
  int64_t H = *A.HiddenSize;
  std::string Why = formatv("hidden size {0} ({1})", H, A.HiddenSizeSource);
  StringRef Name = StringRef(Path).rsplit('.').second;
  if (Name == "reduce_bucket_size")
    return intValue(H * H, "hidden_size^2, " + Why);
  if (Name == "stage3_prefetch_bucket_size") {
    // int(0.9 * hidden_size * hidden_size), in Python's float order.
    return intValue(int64_t(0.9 * double(H) * double(H)),
                    "int(0.9 x hidden_size^2), " + Why);
  }
  return intValue(10 * H, "10 x hidden_size, " + Why);
}

/// transformers v5 Trainer (trainer_config_process and _finalize), with
/// accelerate's plugin and _prepare_deepspeed behind it.
std::optional<Value> Resolver::trainerValue(const std::string &Path,
                                            SMRange Where, bool &Handled) {
  Handled = true;
  auto [Micro, MicroWhy] = arg(A.MicroBatch, int64_t(8), "micro-batch",
                               "TrainingArguments default "
                               "per_device_train_batch_size=8");
  auto [Accum, AccumWhy] = arg(A.GradAccum, int64_t(1), "grad-accum",
                               "TrainingArguments default "
                               "gradient_accumulation_steps=1");
  auto [LR, LRWhy] = arg(A.LearningRate, 5e-5, "lr",
                         "TrainingArguments default learning_rate=5e-05");
  if (Path == "train_micro_batch_size_per_gpu")
    return intValue(Micro, MicroWhy);
  if (Path == "gradient_accumulation_steps")
    return intValue(Accum, AccumWhy);
  if (Path == "train_batch_size") {
    std::optional<int64_t> P = worldSize(Path, Where);
    if (!P)
      return std::nullopt;
    return intValue(*P * Micro * Accum,
                    formatv("world size {0} x micro batch {1} x accumulation "
                            "{2}",
                            *P, Micro, Accum));
  }
  if (Path == "gradient_clipping") {
    auto [V, Why] = arg(A.MaxGradNorm, 1.0, "max-grad-norm",
                        "TrainingArguments default max_grad_norm=1.0");
    return floatValue(V, Why);
  }
  if (Path == "optimizer.params.lr" || Path == "scheduler.params.warmup_max_lr")
    return floatValue(LR, LRWhy);
  if (Path == "optimizer.params.betas") {
    auto [B1, W1] = arg(A.AdamBeta1, 0.9, "adam-beta1", "default 0.9");
    auto [B2, W2] = arg(A.AdamBeta2, 0.999, "adam-beta2", "default 0.999");
    Value V{"[" + floatText(B1) + ", " + floatText(B2) + "]",
            "adam_beta1 (" + W1 + "), adam_beta2 (" + W2 + ")",
            {B1, B2},
            std::nullopt};
    return V;
  }
  if (Path == "optimizer.params.eps") {
    auto [V, Why] = arg(A.AdamEpsilon, 1e-8, "adam-eps",
                        "TrainingArguments default adam_epsilon=1e-08");
    return floatValue(V, Why);
  }
  if (Path == "optimizer.params.weight_decay") {
    auto [V, Why] = arg(A.WeightDecay, 0.0, "weight-decay",
                        "TrainingArguments default weight_decay=0.0");
    return floatValue(V, Why);
  }
  if (Path == "scheduler.params.warmup_min_lr")
    return intValue(0, "the Trainer's fixed value");
  if (Path == "scheduler.params.total_num_steps") {
    std::optional<int64_t> N = trainingSteps(Path, Where);
    if (!N)
      return std::nullopt;
    return intValue(*N, A.MaxSteps ? "--max-steps"
                                   : "ceil(--epochs x --steps-per-epoch)");
  }
  if (Path == "scheduler.params.warmup_num_steps") {
    double W = A.warmup().value_or(0);
    if (W >= 1)
      return intValue(int64_t(W), "--warmup-steps");
    if (W == 0)
      return intValue(0, A.warmup() ? "--warmup-steps"
                                       : "TrainingArguments default "
                                         "warmup_steps=0");
    std::optional<int64_t> N = trainingSteps(Path, Where);
    if (!N)
      return std::nullopt;
    return intValue(int64_t(std::ceil(double(*N) * W)),
                    formatv("ceil(training steps {0} x warmup ratio {1})", *N,
                            W));
  }
  if (Path == "fp16.enabled")
    return boolValue(A.FP16.value_or(false),
                     A.FP16 || A.BF16 ? "--fp16 given or not"
                                      : "TrainingArguments default fp16=False");
  if (Path == "bf16.enabled")
    return boolValue(A.BF16.value_or(false),
                     A.FP16 || A.BF16 ? "--bf16 given or not"
                                      : "TrainingArguments default bf16=False");
  Handled = false;
  return std::nullopt;
}

/// accelerate: the DeepSpeedPlugin's launch settings, set_mixed_precision,
/// and _prepare_deepspeed (DataLoader, DummyOptim, DummyScheduler).
std::optional<Value> Resolver::accelerateValue(const std::string &Path,
                                               SMRange Where, bool &Handled) {
  Handled = true;
  auto [Accum, AccumWhy] = arg(A.GradAccum, int64_t(1), "grad-accum",
                               "Accelerator default gradient_accumulation_"
                               "steps=1");
  if (Path == "train_micro_batch_size_per_gpu" || Path == "train_batch_size") {
    if (!A.MicroBatch) {
      error(Where, "`" + Path + "` is \"auto\": accelerate takes the micro "
                                "batch from the DataLoader's batch_size; pass "
                                "--micro-batch");
      return std::nullopt;
    }
    if (Path == "train_micro_batch_size_per_gpu")
      return intValue(*A.MicroBatch, "--micro-batch (the DataLoader's "
                                     "batch_size)");
    std::optional<int64_t> P = worldSize(Path, Where);
    if (!P)
      return std::nullopt;
    return intValue(*A.MicroBatch * Accum * *P,
                    formatv("micro batch {0} x accumulation {1} x processes "
                            "{2}",
                            *A.MicroBatch, Accum, *P));
  }
  if (Path == "gradient_accumulation_steps")
    return intValue(Accum, AccumWhy);
  if (Path == "gradient_clipping") {
    auto [V, Why] = arg(A.MaxGradNorm, 1.0, "max-grad-norm",
                        "accelerate's default 1.0");
    return floatValue(V, Why);
  }
  auto [LR, LRWhy] = arg(A.LearningRate, 0.001, "lr",
                         "DummyOptim default lr=0.001");
  if (Path == "optimizer.params.lr" || Path == "scheduler.params.warmup_max_lr")
    return floatValue(LR, LRWhy);
  if (Path == "optimizer.params.weight_decay") {
    auto [V, Why] = arg(A.WeightDecay, 0.0, "weight-decay",
                        "DummyOptim default weight_decay=0");
    return floatValue(V, Why);
  }
  if (Path == "scheduler.params.warmup_min_lr")
    return intValue(0, "accelerate's fixed value");
  if (Path == "scheduler.params.warmup_num_steps") {
    double W = A.warmup().value_or(0);
    if (W > 0 && W < 1) {
      error(Where, "accelerate's DummyScheduler takes warmup_num_steps as a "
                   "step count, not a ratio; pass --warmup-steps N");
      return std::nullopt;
    }
    return intValue(int64_t(W), A.warmup() ? "--warmup-steps"
                                              : "DummyScheduler default "
                                                "warmup_num_steps=0");
  }
  if (Path == "scheduler.params.total_num_steps") {
    std::optional<int64_t> N = trainingSteps(Path, Where);
    if (!N)
      return std::nullopt;
    std::optional<int64_t> World = worldSize(Path, Where);
    if (!World)
      return std::nullopt;
    int64_t P = *World;
    return intValue((*N + P - 1) / P,
                    formatv("ceil(total steps {0} / processes {1}), as "
                            "accelerate divides DummyScheduler's count",
                            *N, P));
  }
  if (Path == "fp16.enabled" || Path == "bf16.enabled") {
    std::string MP = A.MixedPrecision.value_or("no");
    bool On = Path == "fp16.enabled" ? MP == "fp16" : MP == "bf16" || MP == "fp8";
    return boolValue(On, A.MixedPrecision ? "--mixed-precision " + MP
                                          : "accelerate default "
                                            "mixed_precision=no");
  }
  Handled = false;
  return std::nullopt;
}

std::optional<Value> Resolver::valueFor(const std::string &Path,
                                        SMRange Where) {
  // Keys both integrations fill: the model's width and the plugin.
  if (Path == "zero_optimization.reduce_bucket_size" ||
      Path == "zero_optimization.stage3_prefetch_bucket_size" ||
      Path == "zero_optimization.stage3_param_persistence_threshold")
    return hiddenSizeValue(Path, Where);
  if (Path == "zero_optimization.stage") {
    auto [S, Why] = arg(A.ZeroStage, int64_t(2), "zero-stage",
                        "accelerate plugin default zero_stage=2");
    return intValue(S, Why);
  }
  if (Path == "zero_optimization.offload_optimizer.device") {
    auto [D, Why] = arg(A.OffloadOptimizerDevice, std::string("none"),
                        "offload-optimizer-device",
                        "accelerate plugin default \"none\"");
    return stringValue(D, Why);
  }
  if (Path == "zero_optimization.offload_param.device") {
    auto [D, Why] = arg(A.OffloadParamDevice, std::string("none"),
                        "offload-param-device",
                        "accelerate plugin default \"none\"");
    return stringValue(D, Why);
  }
  if (Path == "zero_optimization.offload_optimizer.nvme_path") {
    auto [D, Why] = arg(A.OffloadOptimizerNvmePath, std::string("none"),
                        "offload-optimizer-nvme-path",
                        "accelerate plugin default \"none\"");
    return stringValue(D, Why);
  }
  if (Path == "zero_optimization.offload_param.nvme_path") {
    auto [D, Why] = arg(A.OffloadParamNvmePath, std::string("none"),
                        "offload-param-nvme-path",
                        "accelerate plugin default \"none\"");
    return stringValue(D, Why);
  }
  if (Path == "zero_optimization.stage3_gather_16bit_weights_on_model_save") {
    auto [B, Why] = arg(A.Zero3Save16BitModel, false, "zero3-save-16bit-model",
                        "accelerate plugin default false");
    return boolValue(B, Why);
  }
  bool Handled = false;
  std::optional<Value> V = Target == LintTarget::HfTrainer
                               ? trainerValue(Path, Where, Handled)
                               : accelerateValue(Path, Where, Handled);
  if (Handled)
    return V;
  error(Where, targetName(Target) + " does not fill \"auto\" at `" + Path +
                   "`: accelerate stops with ValueError (`" + Path +
                   "` not found in kwargs); write a value");
  return std::nullopt;
}

/// Every "auto" in objects (accelerate does not look into lists).
void Resolver::walk(const JsonValue &Object, const std::string &Prefix) {
  for (const JsonMember &M : Object.Members) {
    std::string Path = Prefix.empty() ? M.Key : Prefix + "." + M.Key;
    if (M.Value.Kind == JsonKind::Object) {
      walk(M.Value, Path);
      continue;
    }
    if (!M.Value.isString("auto"))
      continue;
    // "auto" is a real value in a few places (pipeline.stages, ZenFlow).
    if (const KeySpec *K = findKey(Path))
      if (K->Default && StringRef(K->Default) == "\"auto\"")
        continue;
    SMRange Where = range(M.Value.Begin, M.Value.End);
    std::optional<Value> V = valueFor(Path, Where);
    if (!V)
      continue;
    if (Path == "scheduler.params.warmup_num_steps" && V->Json == "0") {
      error(Where, "`" + Path + "` becomes 0 (" + V->Source +
                       "), which DeepSpeed 0.19.3 and later refuse "
                       "(warmup_num_steps must be a positive integer); pass "
                       "--warmup-steps with at least 1");
      continue;
    }
    Edits.push_back({M.Value.Begin, M.Value.End, V->Json});
    Filled.push_back({Path, V->Json, V->Source});
  }
}

/// accelerate's set_mixed_precision (run under the Trainer too) adds the
/// section of the requested precision when the config has none, and refuses
/// a config that enables the other one.
void Resolver::addPrecisionSection() {
  std::string MP;
  if (Target == LintTarget::Accelerate)
    MP = A.MixedPrecision.value_or("no");
  else
    MP = A.BF16.value_or(false) ? "bf16" : A.FP16.value_or(false) ? "fp16" : "no";
  if (MP == "no")
    return;
  bool Half = MP == "fp16";
  StringRef Own = Half ? "fp16" : "bf16", Other = Half ? "bf16" : "fp16";
  if (const JsonMember *O = View->findMember((Other + ".enabled").str());
      O && (O->Value.Kind == JsonKind::Bool ? O->Value.Bool
                                             : O->Value.isString("true")))
    error(range(O->Value.Begin, O->Value.End),
          "the run asks for " + MP + " but the config enables " + Other +
              ": accelerate refuses that (`--mixed_precision` arg cannot be "
              "set to `" + MP + "` when `" + Other +
              "` is set in the DeepSpeed config file)",
          Rule::Accelerate);
  if (View->has(Own))
    return;
  std::string Section = Half ? "{\"enabled\": true, \"auto_cast\": true}"
                             : "{\"enabled\": true}";
  Edits.push_back(appendMember(Text, *Root, Own, Section));
  Filled.push_back({Own.str(), Section,
                    "added by accelerate's set_mixed_precision for " + MP});
}

/// accelerate's DeepSpeedPlugin (run under the Trainer too) writes
/// gradient_accumulation_steps 1 into a config without the key, and the
/// run then takes DeepSpeed's value over --gradient_accumulation_steps:
/// write what it writes, and say so where the run asks for more.
void Resolver::addAccumulation() {
  if (View->has("gradient_accumulation_steps"))
    return;
  Edits.push_back(appendMember(Text, *Root, "gradient_accumulation_steps", "1"));
  Filled.push_back({"gradient_accumulation_steps", "1",
                    "added by accelerate's DeepSpeedPlugin to a config "
                    "without the key"});
  if (A.GradAccum.value_or(1) > 1)
    Engine.report(Severity::Warning, ruleCode(Rule::Accelerate), BufferID,
                  range(Root->Begin, Root->Begin + 1),
                  formatv("the config has no gradient_accumulation_steps: "
                          "accelerate writes 1 and the run takes it over "
                          "gradient_accumulation_steps {0}, so each step "
                          "accumulates 1 micro batch (or DeepSpeed's batch "
                          "check fails); write \"gradient_accumulation_steps"
                          "\": \"auto\" to take {0}",
                          *A.GradAccum)
                      .str());
}

/// The Trainer compares what the config says instead of "auto" with its
/// arguments and refuses the config when they differ (fill_match).
void Resolver::checkTrainerMatches() {
  struct Check {
    const char *Path;
    const char *HfName;
    bool Given;
  };
  const Check Checks[] = {
      {"train_micro_batch_size_per_gpu", "per_device_train_batch_size",
       bool(A.MicroBatch)},
      {"gradient_accumulation_steps", "gradient_accumulation_steps",
       bool(A.GradAccum)},
      {"train_batch_size", "train_batch_size (calculated)",
       A.MicroBatch && A.WorldSize},
      {"gradient_clipping", "max_grad_norm", bool(A.MaxGradNorm)},
      {"optimizer.params.lr", "learning_rate", bool(A.LearningRate)},
      {"optimizer.params.betas", "adam_beta1+adam_beta2",
       A.AdamBeta1 || A.AdamBeta2},
      {"optimizer.params.eps", "adam_epsilon", bool(A.AdamEpsilon)},
      {"optimizer.params.weight_decay", "weight_decay", bool(A.WeightDecay)},
      {"scheduler.params.warmup_max_lr", "learning_rate", bool(A.LearningRate)},
      {"scheduler.params.total_num_steps", "num_training_steps (calculated)",
       A.MaxSteps || (A.Epochs && A.StepsPerEpoch)},
      {"scheduler.params.warmup_num_steps", "warmup_steps",
       bool(A.warmup())},
      {"fp16.enabled", "fp16|fp16_full_eval", A.FP16 || A.BF16},
      {"bf16.enabled", "bf16|bf16_full_eval", A.FP16 || A.BF16},
  };
  for (const Check &C : Checks) {
    // Only arguments given to dsc are compared: a default dsc assumed is
    // no evidence of what the run passes.
    const JsonMember *M = View->findMember(C.Path);
    if (!C.Given || !M || M->Value.Kind == JsonKind::Null ||
        M->Value.isString("auto"))
      continue;
    bool Handled = false;
    std::optional<Value> Want =
        trainerValue(C.Path, range(M->Value.Begin, M->Value.End), Handled);
    if (!Want)
      continue;
    // Python equality: 1 == 1.0 == True, lists element by element.
    std::vector<double> Have;
    if (M->Value.isNumber())
      Have = {M->Value.number()};
    else if (M->Value.Kind == JsonKind::Bool)
      Have = {double(M->Value.Bool)};
    else if (M->Value.Kind == JsonKind::Array)
      for (const JsonValue &E : M->Value.Elements)
        Have.push_back(E.isNumber() ? E.number()
                                    : E.Kind == JsonKind::Bool ? E.Bool : NAN);
    if (Have == Want->Numbers)
      continue;
    error(range(M->Value.Begin, M->Value.End),
          formatv("ds {0}={1} vs hf {2}={3}: the HF Trainer refuses a config "
                  "that disagrees with its arguments; write \"auto\" or {3}",
                  C.Path,
                  Text.slice(M->Value.Begin, M->Value.End), C.HfName,
                  Want->Json)
              .str(),
          Rule::Accelerate);
  }
}

ResolveResult Resolver::run() {
  ResolveResult Result;
  JsonParseResult Parsed = parseJson(Text);
  if (Parsed.Error || !Parsed.Root || Parsed.Root->Kind != JsonKind::Object) {
    // Let lint say what is wrong with the file.
    lintConfig(Engine, BufferID, LintOptions());
    return Result;
  }
  Root = &*Parsed.Root;
  View.emplace(*Root);
  if (!View->has("zero_optimization"))
    error(range(Root->Begin, Root->Begin + 1),
          "accelerate (and so the HF Trainer) refuses a DeepSpeed config "
          "without zero_optimization (Please specify the ZeRO optimization "
          "config)",
          Rule::MissingKey);
  walk(*Root, "");
  if (Target == LintTarget::HfTrainer)
    checkTrainerMatches();
  addPrecisionSection();
  addAccumulation();
  if (Target == LintTarget::HfTrainer && A.SaveOnEachNode.value_or(false)) {
    // The Trainer sets this (creating the section) with save_on_each_node.
    const JsonValue *Checkpoint = View->find("checkpoint");
    if (!Checkpoint)
      Edits.push_back(appendMember(Text, *Root, "checkpoint",
                                   "{\"use_node_local_storage\": true}"));
    else if (const JsonMember *M =
                 View->findMember("checkpoint.use_node_local_storage"))
      Edits.push_back(replaceValue(*M, "true"));
    else if (Checkpoint->Kind == JsonKind::Object)
      Edits.push_back(appendMember(Text, *Checkpoint,
                                   "use_node_local_storage", "true"));
    Filled.push_back({"checkpoint.use_node_local_storage", "true",
                      "--save-on-each-node"});
  }
  Result.Text = applyEdits(Text, std::move(Edits));
  Result.Filled = std::move(Filled);
  Result.OK = !Failed;
  return Result;
}

} // namespace

ResolveResult resolveConfig(DiagnosticEngine &Engine, unsigned BufferID,
                            LintTarget Target, const TrainingArgs &Args) {
  return Resolver(Engine, BufferID, Target, Args).run();
}

} // namespace dsc

//===----------------------------------------------------------------------===//
// Training arguments from YAML (LLVM YAML I/O)
//===----------------------------------------------------------------------===//

namespace llvm::yaml {
template <> struct MappingTraits<dsc::TrainingArgs> {
  static void mapping(IO &IO, dsc::TrainingArgs &A) {
    dsc::visitTrainingArgs(A, [&](auto &Field, const dsc::TrainingArgSpec &S) {
      using T = typename std::remove_reference_t<decltype(Field)>::value_type;
      llvm::Optional<T> V;
      if (Field)
        V = *Field;
      IO.mapOptional(S.Yaml, V);
      if (V)
        Field = *V;
    });
  }
};
} // namespace llvm::yaml

namespace dsc {

Expected<TrainingArgs> readTrainingArgsYAML(StringRef Text, StringRef Path) {
  TrainingArgs A;
  if (Error E = readYAMLInto(A, Text, Path,
                             "a YAML mapping of training arguments"))
    return E;
  if (A.HiddenSize)
    A.HiddenSizeSource = ("hidden_size in " + Path).str();
  return A;
}

std::optional<TrainingArgSpec> firstNotPositive(const TrainingArgs &A) {
  std::optional<TrainingArgSpec> Found;
  visitTrainingArgs(A, [&](const auto &Field, const TrainingArgSpec &S) {
    using T = typename std::remove_reference_t<decltype(Field)>::value_type;
    if constexpr (std::is_same_v<T, int64_t>)
      if (S.Positive && Field && *Field <= 0 && !Found)
        Found = S;
  });
  return Found;
}

} // namespace dsc
