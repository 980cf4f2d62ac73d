//===- ConfigView.cpp -----------------------------------------------------===//

#include "dsc/Config/ConfigView.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dsc {

// runtime/config.py DEEPSPEED_OPTIMIZERS.
static const StringRef DeepSpeedOptimizers[] = {
    "adagrad",    "adam",        "adamw",      "lamb",
    "onebitadam", "zerooneadam", "onebitlamb", "muadam",
    "muadamw",    "musgd",       "lion",       "muon"};

// torch.optim classes of PyTorch 2.x.
static const StringRef TorchOptimizers[] = {
    "Adadelta", "Adafactor", "Adagrad", "Adam",  "Adamax",  "AdamW",
    "ASGD",     "LBFGS",     "Muon",    "NAdam", "RAdam",   "RMSprop",
    "Rprop",    "SGD",       "SparseAdam"};

// runtime/lr_schedules.py VALID_LR_SCHEDULES.
static const StringRef DeepSpeedSchedulers[] = {
    "LRRangeTest", "OneCycle", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};

// torch.optim.lr_scheduler classes of PyTorch 2.x.
static const StringRef TorchSchedulers[] = {
    "LambdaLR",        "MultiplicativeLR",   "StepLR",
    "MultiStepLR",     "ConstantLR",         "LinearLR",
    "ExponentialLR",   "SequentialLR",       "CosineAnnealingLR",
    "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
    "CosineAnnealingWarmRestarts",           "OneCycleLR",
    "PolynomialLR",    "LRScheduler"};

bool isDeepSpeedOptimizer(StringRef LowerName) {
  return is_contained(DeepSpeedOptimizers, LowerName);
}
bool isTorchOptimizer(StringRef Name) {
  return is_contained(TorchOptimizers, Name);
}
bool isDeepSpeedScheduler(StringRef Name) {
  return is_contained(DeepSpeedSchedulers, Name);
}
bool isTorchScheduler(StringRef Name) {
  return is_contained(TorchSchedulers, Name);
}

SectionKind ConfigView::sectionKindOf(StringRef Path) {
  size_t Dot = Path.rfind('.');
  if (Dot == StringRef::npos)
    return SectionKind::Dict; // The top level is read with dict.get().
  const KeySpec *Parent = findKey(Path.take_front(Dot));
  return Parent && Parent->isSection() ? Parent->Section : SectionKind::Dict;
}

const JsonMember *ConfigView::findMember(StringRef Path) const {
  const JsonValue *Object = &Root;
  const JsonMember *Found = nullptr;
  StringRef Prefix;
  size_t Start = 0;
  while (true) {
    size_t Dot = Path.find('.', Start);
    StringRef Here = Path.take_front(Dot);
    StringRef Name = Here.drop_front(Start);
    if (!Object || Object->Kind != JsonKind::Object)
      return nullptr;
    Found = Object->member(Name);
    if (!Found)
      if (const KeySpec *K = findKey(Here); K && K->Alias)
        Found = Object->member(K->Alias);
    if (!Found)
      return nullptr;
    if (Dot == StringRef::npos)
      return Found;
    Object = &Found->Value;
    Start = Dot + 1;
  }
}

bool ConfigView::isAuto(StringRef Path) const {
  const JsonValue *V = find(Path);
  return V && V->isString("auto");
}

std::string ConfigView::variantFor(StringRef SectionPath) const {
  if (SectionPath == "optimizer.params")
    return optimizerClass();
  if (SectionPath == "scheduler.params")
    return schedulerClass();
  return "";
}

std::optional<Scalar> ConfigView::get(StringRef Path) const {
  size_t Dot = Path.rfind('.');
  std::string Variant =
      Dot == StringRef::npos ? "" : variantFor(Path.take_front(Dot));
  const KeySpec *K = findKey(Path, Variant);
  if (!K)
    return std::nullopt;
  const JsonValue *V = find(Path);
  if (!V) {
    if (!K->Default)
      return std::nullopt;
    JsonParseResult D = parseJson(K->Default);
    if (!D.Root)
      return std::nullopt;
    return coerce(*D.Root, *K, SectionKind::Model).Value;
  }
  if (V->isString("auto") && K->Type != ValueType::String)
    return std::nullopt;
  Coercion C = coerce(*V, *K, sectionKindOf(Path));
  if (C.Problem == CoercionProblem::WrongType ||
      C.Problem == CoercionProblem::FractionalInt ||
      C.Problem == CoercionProblem::NotFinite || !C.Value)
    return std::nullopt;
  // A value outside its allowed set or range was reported by the schema
  // pass; rules must not reason from it (stage 4 is not "stage 3 and up").
  if (!isAllowedChoice(*K, *C.Value))
    return std::nullopt;
  if (C.Value->K == Scalar::Int || C.Value->K == Scalar::Float) {
    double N = C.Value->number();
    if ((K->MinExclusive ? N <= K->Min : N < K->Min) || N > K->Max)
      return std::nullopt;
  }
  return C.Value;
}

std::optional<bool> ConfigView::getBool(StringRef Path) const {
  std::optional<Scalar> S = get(Path);
  if (!S || (S->K != Scalar::Bool && S->K != Scalar::Null))
    return std::nullopt;
  return S->K == Scalar::Bool ? std::optional<bool>(S->B) : std::nullopt;
}

std::optional<int64_t> ConfigView::getInt(StringRef Path) const {
  std::optional<Scalar> S = get(Path);
  if (!S || S->K != Scalar::Int)
    return std::nullopt;
  return S->I;
}

std::optional<double> ConfigView::getNumber(StringRef Path) const {
  std::optional<Scalar> S = get(Path);
  if (!S || (S->K != Scalar::Int && S->K != Scalar::Float))
    return std::nullopt;
  return S->number();
}

std::optional<std::string> ConfigView::getString(StringRef Path) const {
  std::optional<Scalar> S = get(Path);
  if (!S || S->K != Scalar::String)
    return std::nullopt;
  return S->S;
}

std::optional<int64_t> ConfigView::zeroStage() const {
  if (const JsonValue *Z = find("zero_optimization");
      Z && Z->Kind == JsonKind::Bool)
    return Z->Bool ? 1 : 0; // Legacy form (zero/config.py).
  return getInt("zero_optimization.stage");
}

static std::string offloadDevice(const ConfigView &View, StringRef Block,
                                 StringRef LegacyFlag) {
  if (View.getBool(("zero_optimization." + LegacyFlag).str()).value_or(false))
    return "cpu";
  std::string Path = ("zero_optimization." + Block).str();
  const JsonValue *V = View.find(Path);
  if (!V || V->Kind != JsonKind::Object)
    return "none";
  return View.getString(Path + ".device").value_or("none");
}

std::string ConfigView::offloadOptimizerDevice() const {
  return offloadDevice(*this, "offload_optimizer", "cpu_offload");
}

std::string ConfigView::offloadParamDevice() const {
  return offloadDevice(*this, "offload_param", "cpu_offload_param");
}

std::optional<bool> ConfigView::overlapComm() const {
  if (const JsonValue *V = find("zero_optimization.overlap_comm");
      V && V->Kind != JsonKind::Null)
    return getBool("zero_optimization.overlap_comm");
  std::optional<int64_t> Stage = zeroStage();
  if (!Stage)
    return std::nullopt;
  return *Stage == 3;
}

std::string ConfigView::optimizerClass() const {
  const JsonValue *T = find("optimizer.type");
  if (!T || T->Kind != JsonKind::String)
    return "";
  std::string Lower = StringRef(T->Str).lower();
  // engine.py: the CPU classes are used when optimizer states are offloaded,
  // to the CPU or to NVMe, whatever the stage.
  bool Offload = offloadOptimizerDevice() != "none";
  if (Lower == "adam" || Lower == "adamw") {
    const JsonValue *Torch = find("optimizer.params.torch_adam");
    if (Torch && Torch->Kind == JsonKind::Bool && Torch->Bool) {
      const JsonValue *WMode = find("optimizer.params.adam_w_mode");
      bool AdamW = Lower == "adamw" || !WMode ||
                   WMode->Kind != JsonKind::Bool || WMode->Bool;
      return AdamW ? "torch.AdamW" : "torch.Adam";
    }
    return Offload ? "DeepSpeedCPUAdam" : "FusedAdam";
  }
  if (Lower == "adagrad")
    return Offload ? "DeepSpeedCPUAdagrad" : "torch.Adagrad";
  if (Lower == "lion")
    return Offload ? "DeepSpeedCPULion" : "FusedLion";
  if (Lower == "lamb")
    return "FusedLamb";
  if (Lower == "onebitadam")
    return "OnebitAdam";
  if (Lower == "zerooneadam")
    return "ZeroOneAdam";
  if (Lower == "onebitlamb")
    return "OnebitLamb";
  if (Lower == "muon")
    return "Muon";
  if (Lower == "muadam" || Lower == "muadamw")
    return "mup";
  return "";
}

std::string ConfigView::schedulerClass() const {
  const JsonValue *T = find("scheduler.type");
  if (!T || T->Kind != JsonKind::String || !isDeepSpeedScheduler(T->Str))
    return "";
  return T->Str;
}

} // namespace dsc
