//===- PlanCommands.cpp - dsc plan, estimate, show and dot ----------------===//

#include "Commands.h"

#include "dsc/Compute/Graph.h"
#include "dsc/Config/Lint.h"
#include "dsc/Graph/HfConfig.h"
#include "dsc/Graph/Weights.h"
#include "dsc/Plan/Hardware.h"
#include "dsc/Plan/PlanYAML.h"
#include "dsc/Plan/Planner.h"
#include "dsc/Plan/Report.h"
#include "dsc/Plan/TimeTables.h"
#include "dsc/Plan/Tune.h"
#include "dsc/Config/ConfigEdit.h"
#include "dsc/PlanCodec.h"
#include "dsc/Support/DiagnosticEmitter.h"
#include "dsc/Viz/Draw.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

#include <atomic>
#include <numeric>
#include <thread>

using namespace llvm;

namespace dsc::tool {

cl::SubCommand PlanCommand("plan", "Lower a config and a model to a plan "
                                   "(plan.bin) and print its estimate");
cl::SubCommand EstimateCommand("estimate",
                               "The memory and time estimate of a plan, "
                               "without writing it");
cl::SubCommand TuneCommand("tune",
                           "Plan the ZeRO stages, offloads, micro batches and "
                           "checkpointing around a config and rank those "
                           "that fit by planned speed");
cl::SubCommand ShowCommand("show", "Print a plan (plan.bin or YAML) as YAML, "
                                   "or convert it");

// The four plan subcommands share options, and an option registers with
// its subcommands during static initialization, which is ordered only
// within one file: so they live together here.
cl::SubCommand DotCommand("dot", "Draw a plan with Graphviz: partitions, "
                                 "schedule, memory or model");

static cl::opt<std::string> PlanPath(cl::Positional,
                                     cl::desc("<plan.bin|plan.yaml>"),
                                     cl::Required, cl::sub(DotCommand));
static cl::opt<PlanView> View(
    "view", cl::desc("What to draw"),
    cl::values(clEnumValN(PlanView::Partitions, "partitions",
                          "which rank owns which elements"),
               clEnumValN(PlanView::Schedule, "schedule",
                          "the step, one lane per stream"),
               clEnumValN(PlanView::Memory, "memory",
                          "device bytes over the step by category"),
               clEnumValN(PlanView::Model, "model",
                          "modules and stage-3 fetch units"),
               clEnumValN(PlanView::Compute, "compute",
                          "the training program's kernels and values")),
    cl::init(PlanView::Schedule), cl::sub(DotCommand), cl::sub(PlanCommand));
static cl::opt<int64_t> Rank("rank",
                             cl::desc("Draw this rank (partitions, memory)"),
                             cl::init(-1), cl::sub(DotCommand));
static cl::opt<bool> Expand("expand",
                            cl::desc("Draw every layer instead of folding "
                                     "the repeated ones"),
                            cl::sub(DotCommand), cl::sub(PlanCommand));
static cl::opt<std::string> DotOutputFile("o",
                                   cl::desc("Output file; the extension says "
                                            "the format (.svg .png .pdf .dot); "
                                            "DOT on stdout without it"),
                                   cl::value_desc("file"),
                                   cl::sub(DotCommand));


static cl::OptionCategory PlanOptionsCategory("Planning options");
#define PLAN_SUBS                                                              \
  cl::sub(PlanCommand), cl::sub(EstimateCommand), cl::sub(TuneCommand)

static cl::opt<std::string> ConfigPath(cl::Positional, cl::desc("<ds_config>"),
                                       cl::Required, PLAN_SUBS);
static cl::list<std::string>
    PlanWarnings("W", cl::Prefix,
                 cl::desc("-Werror: the config's warnings stop the plan; "
                          "-Wno-CODE: drop the warnings of rule CODE"),
                 cl::value_desc("error|no-CODE"), PLAN_SUBS,
                 cl::cat(PlanOptionsCategory));
static cl::opt<std::string> ModelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, PLAN_SUBS);
static cl::opt<uint32_t> WorldSize("world-size",
                                   cl::desc("Data-parallel ranks (default: "
                                            "nodes x GPUs per node, or 1)"),
                                   cl::init(0), PLAN_SUBS,
                                   cl::cat(PlanOptionsCategory));
static cl::opt<uint32_t> Nodes("nodes", cl::desc("Nodes"), cl::init(0),
                               PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<uint32_t> GpusPerNode("gpus-per-node",
                                     cl::desc("GPUs (ranks) per node"),
                                     cl::init(0), PLAN_SUBS,
                                     cl::cat(PlanOptionsCategory));
static cl::opt<std::string> FabricName(
    "fabric",
    cl::desc("The link between nodes: ib-ndr (default with --nodes), "
             "ib-hdr, efa-p5, efa-p4d, roce-400, eth-100, eth-25"),
    cl::value_desc("name"), PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<uint64_t> InterNodeGbps(
    "inter-node-gbps",
    cl::desc("The link between nodes as the Gbit/s of a node's NICs "
             "together, instead of --fabric"),
    cl::init(0), PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<unsigned> HostThreads(
    "host-threads",
    cl::desc("Threads (cores) each rank's host optimizer gets (default 16, "
             "the measured figures; the node's ranks share its memory "
             "bandwidth; a calibration file's rates win)"),
    cl::init(0), PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<int64_t> SeqLen("seq-len",
                               cl::desc("Bind the sequence-length symbols"),
                               cl::init(0), PLAN_SUBS,
                               cl::cat(PlanOptionsCategory));
static cl::list<std::string> Dims("dim",
                                  cl::desc("Bind a symbolic dimension: "
                                           "--dim sequence=2048"),
                                  cl::value_desc("NAME=VALUE"), PLAN_SUBS,
                                  cl::cat(PlanOptionsCategory));
static cl::opt<std::string> Freeze("freeze",
                                   cl::desc("Freeze parameters whose name "
                                            "matches"),
                                   cl::value_desc("regex"), PLAN_SUBS,
                                   cl::cat(PlanOptionsCategory));
static cl::opt<bool> CheckpointLayers(
    "checkpoint-layers",
    cl::desc("The model checkpoints activations per layer (HF "
             "gradient_checkpointing)"),
    PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<std::string> Attention(
    "attention",
    cl::desc("The attention algorithm to use where it fits: cudnn (cuDNN's "
             "fused attention), flash (dsrun's kernels), math (scores stored, "
             "products by cuBLAS; runs any attention), or auto (the "
             "machine's fastest; the default)"),
    cl::value_desc("auto|cudnn|flash|math"), cl::init("auto"), PLAN_SUBS,
    cl::cat(PlanOptionsCategory));
static cl::opt<std::string> CommCtaPolicy(
    "comm-cta-policy",
    cl::desc("NCCL's CTA policy dsrun runs with: default, efficiency "
             "(timed as the default), or zero (all-gathers within a node on "
             "the copy engines, timed so)"),
    cl::value_desc("default|efficiency|zero"), cl::init("default"), PLAN_SUBS,
    cl::cat(PlanOptionsCategory));
static cl::opt<bool> KeepCopies(
    "keep-copies",
    cl::desc("Keep every layout copy instead of letting kernels write into "
             "the copy's destination (for comparing the two)"),
    PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::list<std::string> SkipFusion(
    "skip-fusion",
    cl::desc("Leave out a compute fusion pass (fuse-rotary, fuse-gelu, ...; "
             "for comparing its kernels with the ops it replaces)"),
    cl::CommaSeparated, PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<bool> NoPointwiseFusion(
    "no-pointwise-fusion",
    cl::desc("Keep one kernel per elementwise op instead of fusing chains "
             "of them (for comparing the two)"),
    PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<bool> NoProductSums(
    "no-product-sums",
    cl::desc("Sum several products' outputs in a pointwise kernel instead of "
             "letting the products add into one value (for comparing the "
             "two)"),
    PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<std::string> Gpu("gpu",
                                cl::desc("GPU figures and memory: H100, H200, "
                                         "A100-40GB, A100-80GB, L40S, ..."),
                                PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<std::string> GpuMemory("gpu-memory",
                                      cl::desc("Device memory to fit in "
                                               "(80GiB, 81920MiB, ...)"),
                                      PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<std::string> Calibration(
    "calibration",
    cl::desc("YAML file of measured hardware figures and fixed costs"),
    cl::value_desc("file"), PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<std::string> Loss(
    "loss",
    cl::desc("What the step minimizes: causal-lm (the next token; default), "
             "masked-lm (labels, -100 where ignored) or "
             "sequence-classification"),
    cl::init("causal-lm"), PLAN_SUBS, cl::cat(PlanOptionsCategory));
enum class ReportFormat { Text, JSON };
static cl::opt<ReportFormat> Format(
    "format", cl::desc("Report format"),
    cl::values(clEnumValN(ReportFormat::Text, "text", "a table"),
               clEnumValN(ReportFormat::JSON, "json", "one JSON document")),
    cl::init(ReportFormat::Text), PLAN_SUBS, cl::cat(PlanOptionsCategory));
static cl::opt<std::string> PlanOutput("o", cl::desc("Write plan.bin here"),
                                       cl::value_desc("plan.bin"),
                                       cl::sub(PlanCommand));
static cl::opt<std::string> DotOutput(
    "dot", cl::desc("Also draw the plan (--view) to this file"),
    cl::value_desc("file.svg"), cl::sub(PlanCommand));
static cl::opt<std::string> WeightsOutput(
    "weights-out",
    cl::desc("Also write the model's starting weights (the parameters the "
             "ONNX file carries, under the graph's names) as safetensors, "
             "for dsrun --init"),
    cl::value_desc("init.safetensors"), cl::sub(PlanCommand));
static cl::list<std::string> PrintAfter(
    "print-after",
    cl::desc("Print the plan (YAML) after this planner pass, or the compute "
             "IR after this compute pass (dsc lower --list-passes)"),
    cl::value_desc("pass"), cl::CommaSeparated, PLAN_SUBS);
static cl::opt<bool> PrintAfterAll("print-after-all",
                                   cl::desc("Print the plan after every pass"),
                                   PLAN_SUBS);

static cl::opt<uint64_t> GlobalBatch(
    "global-batch",
    cl::desc("Samples a step over every rank (default: the config's "
             "train_batch_size, or micro batch x accumulation x world)"),
    cl::init(0), cl::sub(TuneCommand));
static cl::opt<unsigned> Top("top", cl::desc("Configs to list"), cl::init(10),
                             cl::sub(TuneCommand));
static cl::opt<std::string> TuneOutput(
    "o", cl::desc("Write the fastest config that fits here"),
    cl::value_desc("ds_config.json"), cl::sub(TuneCommand));

static cl::opt<std::string> ShowInput(cl::Positional,
                                      cl::desc("<plan.bin|plan.yaml>"),
                                      cl::Required, cl::sub(ShowCommand));
static cl::opt<std::string> ShowOutput("o",
                                       cl::desc("Write the plan here instead: "
                                                "binary unless the name ends "
                                                "in .yaml"),
                                       cl::value_desc("file"),
                                       cl::sub(ShowCommand));

bool parseDimBindings(ArrayRef<std::string> Args, DimBindings &Out,
                      StringRef Tool);
DrawOptions drawOptions();

DrawOptions drawOptions() {
  DrawOptions O;
  O.View = View;
  O.Expand = Expand;
  return O;
}

/// Exit code for a plan that does not fit (so CI can gate on it).
constexpr int ExitDoesNotFit = 3;

static int usage(StringRef Tool, const Twine &Message) {
  WithColor::error(errs(), Tool) << Message << "\n";
  return ExitUsage;
}

static Expected<PlanOptions> planOptions(StringRef Tool) {
  PlanOptions O;
  // 0 means "not given"; written out, it is a mistake, not a default.
  for (cl::opt<uint32_t> *Count : {&WorldSize, &Nodes, &GpusPerNode})
    if (Count->getNumOccurrences() && *Count == 0)
      return createStringError(inconvertibleErrorCode(),
                               "--%s must be a positive integer",
                               Count->ArgStr.str().c_str());
  // Any two of world size, nodes and GPUs per node give the third.
  uint32_t W = WorldSize, N = Nodes, G = GpusPerNode;
  if (!W)
    W = (N ? N : 1) * (G ? G : 1);
  if (!N && G) {
    if (W % G)
      return createStringError(inconvertibleErrorCode(),
                               "--world-size %u is not a multiple of "
                               "--gpus-per-node %u",
                               W, G);
    N = W / G;
  }
  if (!N)
    N = 1;
  if (!G) {
    if (W % N)
      return createStringError(inconvertibleErrorCode(),
                               "--world-size %u is not a multiple of --nodes "
                               "%u",
                               W, N);
    G = W / N;
  }
  O.WorldSize = W;
  O.Nodes = N;
  O.GpusPerNode = G;
  if (!parseDimBindings(Dims, O.Dims, Tool))
    return createStringError(inconvertibleErrorCode(), "bad --dim");
  if (SeqLen.getNumOccurrences()) {
    if (SeqLen <= 0)
      return createStringError(inconvertibleErrorCode(),
                               "--seq-len must be a positive integer");
    O.SeqLen = SeqLen;
  }
  O.CheckpointLayers = CheckpointLayers;
  if (Attention != "auto") {
    O.Attention = plan::enumNamed<plan::AttentionAlgorithm>(Attention);
    if (!O.Attention)
      return createStringError(inconvertibleErrorCode(),
                               "--attention=%s: not auto, cudnn, flash or math",
                               Attention.c_str());
  }
  std::optional<plan::CommCtaPolicy> Policy =
      plan::enumNamed<plan::CommCtaPolicy>(CommCtaPolicy);
  if (!Policy)
    return createStringError(
        inconvertibleErrorCode(),
        "--comm-cta-policy=%s: not default, efficiency or zero",
        CommCtaPolicy.c_str());
  O.CtaPolicy = *Policy;
  O.ElideCopies = !KeepCopies;
  O.FusePointwise = !NoPointwiseFusion;
  O.AccumulateProducts = !NoProductSums;
  for (const std::string &Pass : SkipFusion) {
    bool Fusion = false;
    for (const compute::ComputePass &P : compute::computePasses())
      Fusion |= P.Fusion && Pass == P.Name;
    if (!Fusion) {
      std::string Names;
      for (const compute::ComputePass &P : compute::computePasses())
        if (P.Fusion)
          Names += std::string(Names.empty() ? "" : ", ") + P.Name;
      return createStringError(inconvertibleErrorCode(),
                               "--skip-fusion=%s: no such fusion pass; the "
                               "fusion passes are %s",
                               Pass.c_str(), Names.c_str());
    }
    O.SkipFusions.push_back(Pass);
  }
  std::optional<compute::LossKind> K = compute::lossNamed(Loss);
  if (!K)
    return createStringError(inconvertibleErrorCode(),
                             "--loss %s: expected causal-lm, masked-lm or "
                             "sequence-classification",
                             Loss.c_str());
  O.Loss = *K;
  if (!Gpu.empty()) {
    std::optional<HardwareProfile> H = hardwarePreset(Gpu);
    if (!H)
      return createStringError(inconvertibleErrorCode(),
                               "--gpu %s: unknown GPU; known: %s",
                               Gpu.c_str(),
                               join(hardwarePresetNames(), ", ").c_str());
    O.Machine = *H;
  }
  if (!GpuMemory.empty()) {
    Expected<uint64_t> Bytes = parseByteSize(GpuMemory);
    if (!Bytes)
      return Bytes.takeError();
    O.Machine.Figures.GpuMemoryBytes = *Bytes;
    if (Gpu.empty())
      O.Machine.Figures.GpuName =
          "a " + GpuMemory + " GPU (H100-80GB speeds)";
  }
  if (HostThreads.getNumOccurrences() && (!HostThreads || HostThreads > 4096))
    return createStringError(inconvertibleErrorCode(),
                             "--host-threads needs a count from 1 to 4096");
  setHostShare(O.Machine, HostThreads, G);
  bool LinkGiven = FabricName.getNumOccurrences() ||
                   InterNodeGbps.getNumOccurrences();
  if (LinkGiven && N == 1)
    return createStringError(inconvertibleErrorCode(),
                             "--fabric and --inter-node-gbps describe the "
                             "link between nodes; the plan has one node "
                             "(--nodes)");
  if (FabricName.getNumOccurrences() && InterNodeGbps.getNumOccurrences())
    return createStringError(inconvertibleErrorCode(),
                             "--fabric and --inter-node-gbps say the same "
                             "thing; give one");
  if (InterNodeGbps.getNumOccurrences() && !InterNodeGbps)
    return createStringError(inconvertibleErrorCode(),
                             "--inter-node-gbps must be a positive integer");
  if (N > 1) {
    if (Error E = setInterNodeLink(O.Machine.Figures,
                                   LinkGiven ? StringRef(FabricName) : "ib-ndr",
                                   InterNodeGbps, G))
      return E;
    if (!LinkGiven)
      O.Machine.Figures.InterNodeLink += " (the default; --fabric)";
  }
  if (!Calibration.empty()) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> B =
        MemoryBuffer::getFile(Calibration);
    if (!B)
      return createStringError(B.getError(), "%s: %s", Calibration.c_str(),
                               B.getError().message().c_str());
    if (Error E = applyCalibration(O.Machine, (*B)->getBuffer(), Calibration))
      return E;
    // Its products ran beside NCCL's kernels or beside the copy engines,
    // and its all-gathers on the one or the other.
    if (O.Machine.CalibrationCtaPolicy != O.CtaPolicy)
      return createStringError(
          inconvertibleErrorCode(),
          "%s: measured with --comm-cta-policy %s; its rates hold for that "
          "policy alone: plan with the same",
          Calibration.c_str(), plan::enumName(O.Machine.CalibrationCtaPolicy));
    plan::Hardware &F = O.Machine.Figures;
    if (N == 1 && (F.InterNodeBytesPerSec || !F.InterNodeRates.empty())) {
      WithColor::note(errs(), Tool)
          << Calibration << ": the link between nodes is left out: the plan "
          << "has one node\n";
      F.InterNodeBytesPerSec = 0;
      F.InterNodeRates.clear();
      F.InterNodeLink.clear();
    }
  }
  return O;
}

/// What plan, estimate and tune read besides the options: the config,
/// linted as DeepSpeed reads it (its diagnostics printed), and the model.
struct LoadedInputs {
  std::unique_ptr<MemoryBuffer> ConfigBuffer;
  StringRef ConfigText;
  JsonParseResult Parsed;
  std::optional<Model> M;
  std::optional<ModelFacts> Facts;
  uint64_t ModelHash = 0;
};

/// Lints Text as DeepSpeed reads it for a plan of World ranks into
/// Engine; -W decides which warnings stop it.
static Error lintForPlan(DiagnosticEngine &Engine, unsigned ID,
                         uint32_t World) {
  LintOptions L;
  L.Target = LintTarget::DeepSpeed;
  L.WorldSize = World;
  L.ForPlan = true;
  lintConfig(Engine, ID, L);
  Engine.discard("json-extension");
  bool WarningsAreErrors = false;
  for (const std::string &W : PlanWarnings) {
    StringRef Flag(W);
    if (Flag == "error")
      WarningsAreErrors = true;
    else if (Flag.consume_front("no-") && !Flag.empty())
      Engine.discard(Flag);
    else
      return createStringError(inconvertibleErrorCode(),
                               "-W%s: use -Werror or -Wno-CODE", W.c_str());
  }
  if (WarningsAreErrors)
    Engine.promoteWarningsToErrors();
  return Error::success();
}

/// Reads the config and the model; an exit code where they cannot be
/// planned (the reason printed), ExitClean otherwise.
static int loadInputs(StringRef Tool, const PlanOptions &Options,
                      LoadedInputs &In) {
  // The config: lint it as DeepSpeed reads it; any error stops here.
  DiagnosticEngine Engine;
  ErrorOr<std::unique_ptr<MemoryBuffer>> Config =
      MemoryBuffer::getFileOrSTDIN(ConfigPath, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!Config)
    return usage(Tool, ConfigPath + ": " + Config.getError().message());
  // The engine keeps the file's buffer; the inputs keep their own copy.
  In.ConfigBuffer =
      MemoryBuffer::getMemBufferCopy((*Config)->getBuffer(), ConfigPath);
  In.ConfigText = In.ConfigBuffer->getBuffer();
  unsigned ID = Engine.addFile(std::move(*Config));
  In.Parsed = parseJson(In.ConfigText);
  if (In.Parsed.Root && In.Parsed.Root->Kind == JsonKind::Object &&
      hasAutoPlaceholder(*In.Parsed.Root))
    return usage(Tool, ConfigPath +
                           " still holds \"auto\" values: fill them first "
                           "with dsc resolve " +
                           ConfigPath + " " + ModelPath +
                           " --world-size N ... -o resolved.json");
  // What lint says, the plan's user sees: warnings too, as dsc lint
  // prints them; -Werror makes them stop the plan.
  if (Error E = lintForPlan(Engine, ID, Options.WorldSize))
    return usage(Tool, toString(std::move(E)));
  emitText(Engine, errs(), sys::Process::StandardErrHasColors());
  if (Engine.count(Severity::Error)) {
    errs() << Tool << ": the config has errors; nothing planned\n";
    return ExitFindings;
  }
  if (!In.Parsed.Root)
    return usage(Tool, ConfigPath + ": not a JSON object");

  // The model.
  if (!sys::fs::exists(ModelPath))
    return usage(Tool, ModelPath + ": no such file");
  Expected<Model> M = importModel(ModelPath);
  if (!M) {
    WithColor::error(errs(), Tool) << toString(M.takeError()) << "\n";
    return ExitFindings;
  }
  In.M = std::move(*M);
  AnalysisOptions Analysis;
  Analysis.FreezeRegex = Freeze;
  Expected<ModelFacts> Facts = analyzeModel(*In.M, Analysis);
  if (!Facts)
    return usage(Tool, toString(Facts.takeError()));
  In.Facts = std::move(*Facts);
  // A checkpoint names its model by this hash: the ONNX file's bytes, or a
  // model folder's config.json.
  if (ErrorOr<std::unique_ptr<MemoryBuffer>> B =
          MemoryBuffer::getFile(modelFile(ModelPath), false, false)) {
    StringRef Bytes = (*B)->getBuffer();
    In.ModelHash = plan::fnv1a(
        reinterpret_cast<const uint8_t *>(Bytes.data()), Bytes.size());
  }
  return ExitClean;
}

static int runPlanOrEstimate(StringRef Tool, bool WritePlan) {
  Expected<PlanOptions> Options = planOptions(Tool);
  if (!Options)
    return usage(Tool, toString(Options.takeError()));
  LoadedInputs Loaded;
  if (int Code = loadInputs(Tool, *Options, Loaded))
    return Code;
  ConfigView View(*Loaded.Parsed.Root);
  Model *M = &*Loaded.M;
  PlanInputs In{View, Loaded.ConfigText, *M, *Loaded.Facts, Loaded.ModelHash};
  auto After = [&](StringRef Pass, const plan::Plan &P) {
    if (PrintAfterAll || is_contained(PrintAfter, Pass.str())) {
      errs() << "# *** plan after " << Pass << " ***\n";
      writePlanYAML(errs(), P);
    }
  };
  auto IsComputePass = [](StringRef Pass) {
    return any_of(compute::computePasses(),
                  [&](const compute::ComputePass &P) { return Pass == P.Name; });
  };
  for (const std::string &Pass : PrintAfter)
    if (Pass != "lower" && !IsComputePass(Pass) &&
        none_of(planPasses(),
                [&](const PlanPass &P) { return Pass == P.Name; })) {
      std::string Names;
      for (const compute::ComputePass &P : compute::computePasses())
        Names += std::string(P.Name) + ", ";
      Names += "lower";
      for (const PlanPass &P : planPasses())
        Names += std::string(", ") + P.Name;
      return usage(Tool, "--print-after=" + Pass + ": no such pass; the "
                         "passes are " + Names);
    }
  Options->AfterComputePass = [&](StringRef Pass, const compute::Graph &G) {
    if (PrintAfterAll || is_contained(PrintAfter, Pass.str())) {
      errs() << "# *** compute IR after " << Pass << " ***\n";
      G.print(errs());
    }
  };
  Expected<plan::Plan> P = buildPlan(In, *Options, After);
  if (!P) {
    WithColor::error(errs(), Tool) << toString(P.takeError()) << "\n";
    return ExitFindings;
  }
  if (WritePlan && !PlanOutput.empty())
    if (Error E = writePlanFile(PlanOutput, *P))
      return usage(Tool, toString(std::move(E)));
  if (WritePlan && !DotOutput.empty())
    if (Error E = renderPlan(*P, drawOptions(), DotOutput))
      return usage(Tool, toString(std::move(E)));
  if (WritePlan && !WeightsOutput.empty()) {
    std::vector<std::string> Names;
    for (const plan::Tensor &T : P->Tensors)
      Names.push_back(T.Name);
    if (Error E = writeInitializers(*M, Names, WeightsOutput)) {
      WithColor::error(errs(), Tool) << toString(std::move(E)) << "\n";
      return ExitFindings;
    }
  }
  if (Format == ReportFormat::JSON)
    outs() << formatv("{0:2}", estimateJSON(*P)) << "\n";
  else
    printEstimateText(outs(), *P);
  return planFits(*P) ? ExitClean : ExitDoesNotFit;
}

int runPlan() { return runPlanOrEstimate("dsc plan", true); }
int runEstimate() { return runPlanOrEstimate("dsc estimate", false); }

namespace {
/// A choice dsc tune planned: its config, and what the plan says of it.
struct TuneResult {
  TuneChoice Choice;
  std::string ConfigText;
  bool Fits = false;
  uint64_t StepNanos = 0, PeakBytes = 0, ExposedCommNanos = 0;
  StepLimit Limit = StepLimit::Compute;
  /// The user's keys it changes.
  size_t Changed = 0;
  /// The model's parameters, trainable and frozen, in elements.
  uint64_t ModelElems = 0;
};

} // namespace

/// The value DeepSpeed takes for one of the keys tune sets, as JSON text
/// (its default where the config leaves it out).
static std::string effectiveText(const ConfigView &V, StringRef Path) {
  if (Path == "zero_optimization.stage")
    return std::to_string(V.zeroStage().value_or(0));
  if (Path == "zero_optimization.offload_optimizer.device")
    return "\"" + V.offloadOptimizerDevice() + "\"";
  if (Path == "zero_optimization.offload_param.device")
    return "\"" + V.offloadParamDevice() + "\"";
  if (Path == "zero_optimization.overlap_comm")
    return V.overlapComm().value_or(false) ? "true" : "false";
  if (std::optional<bool> B = V.getBool(Path))
    return *B ? "true" : "false";
  std::optional<double> N = V.getNumber(Path);
  return N ? std::to_string(int64_t(*N)) : "(unset)";
}

/// Where tune writes the key at canonical Path in the user's config: under
/// the spelling the config already uses (DeepSpeed reads
/// max_live_parameters and stage3_max_live_parameters alike and refuses
/// both together), else under DeepSpeed's documented alias where the key
/// has one (stage3_...).
static std::string writtenPath(const ConfigView &V, StringRef Path) {
  StringRef Parent = Path.rsplit('.').first;
  std::string Prefix = Parent == Path ? "" : (Parent + ".").str();
  if (const JsonMember *M = V.findMember(Path))
    return Prefix + M->Key;
  if (const KeySpec *K = findKey(Path); K && K->Alias)
    return Prefix + K->Alias;
  return Path.str();
}

/// 16.8 M, 512.0 k, 12.
static std::string perSecond(double N) {
  return N >= 1e6 ? formatv("{0:F1} M", N / 1e6).str()
         : N >= 1e3 ? formatv("{0:F1} k", N / 1e3).str()
                    : formatv("{0:F0}", N).str();
}

int runTune() {
  StringRef Tool = "dsc tune";
  Expected<PlanOptions> Options = planOptions(Tool);
  if (!Options)
    return usage(Tool, toString(Options.takeError()));
  if (!Options->Machine.Figures.GpuMemoryBytes)
    return usage(Tool, "tune needs the memory to fit in: --gpu NAME or "
                       "--gpu-memory SIZE");
  LoadedInputs Loaded;
  if (int Code = loadInputs(Tool, *Options, Loaded))
    return Code;
  const JsonValue &Root = *Loaded.Parsed.Root;
  ConfigView User(Root);
  uint32_t World = Options->WorldSize;
  uint64_t Batch = GlobalBatch;
  if (!Batch)
    Batch = User.getInt("train_batch_size")
                .value_or(User.getInt("train_micro_batch_size_per_gpu")
                              .value_or(1) *
                          User.getInt("gradient_accumulation_steps")
                              .value_or(1) *
                          World);
  if (!Batch || Batch % World)
    return usage(Tool, formatv("a global batch of {0} samples does not "
                               "divide among {1} ranks; give "
                               "--global-batch",
                               Batch, World)
                           .str());

  // The keys a choice sets where DeepSpeed would take another value.
  auto Changes = [&](const TuneChoice &C) {
    std::vector<std::pair<std::string, std::string>> Out;
    for (auto &[Path, Value] : C.settings())
      if (effectiveText(User, Path) != Value)
        Out.push_back({Path, Value});
    return Out;
  };
  // One choice planned: its result, or why it was not planned.
  auto Evaluate = [&](const TuneChoice &C, TuneResult &R) -> std::string {
    R = TuneResult{C, Loaded.ConfigText.str()};
    std::vector<std::pair<std::string, std::string>> Settings = Changes(C);
    R.Changed = Settings.size();
    if (Root.get("train_batch_size"))
      Settings.push_back({"train_batch_size", std::to_string(Batch)});
    for (const auto &[Path, Value] : Settings) {
      Expected<std::string> Edited =
          setConfigValue(R.ConfigText, writtenPath(User, Path), Value);
      if (!Edited)
        return C.describe() + ": " + toString(Edited.takeError());
      R.ConfigText = std::move(*Edited);
    }
    // A choice DeepSpeed would refuse, or dsc does not plan, is left out.
    DiagnosticEngine Engine;
    unsigned ID = Engine.addFile(
        MemoryBuffer::getMemBufferCopy(R.ConfigText, ConfigPath));
    if (Error E = lintForPlan(Engine, ID, World))
      return toString(std::move(E));
    JsonParseResult Parsed = parseJson(R.ConfigText);
    if (Engine.count(Severity::Error) || !Parsed.Root)
      return C.describe() + ": the config it makes has errors";
    ConfigView View(*Parsed.Root);
    PlanOptions O = *Options;
    O.CheckpointLayers = C.Checkpoint;
    if (C.Policy != plan::CommCtaPolicy::Default)
      O.CtaPolicy = C.Policy; // Else the user's --comm-cta-policy.
    PlanInputs In{View, R.ConfigText, *Loaded.M, *Loaded.Facts,
                  Loaded.ModelHash};
    Expected<plan::Plan> P = buildPlan(In, O, nullptr);
    if (!P)
      return C.describe() + ": " + toString(P.takeError());
    R.Fits = planFits(*P);
    R.StepNanos = P->Estimates.StepNanos;
    R.ExposedCommNanos = P->Estimates.ExposedCommNanos;
    for (const plan::RankEstimate &E : P->Estimates.Ranks)
      R.PeakBytes = std::max(R.PeakBytes, E.DevicePeakBytes);
    R.Limit = stepLimit(*P);
    for (const plan::Tensor &T : P->Tensors)
      R.ModelElems += T.Elems;
    return "";
  };
  std::vector<TuneResult> Results;
  unsigned Refused = 0, Skipped = 0;
  std::string FirstRefusal;
  // Plans Choices in groups (Start: where each begins), side by side, a
  // thread each (planning reads the model and the options only). Within
  // a group, past a choice that does not fit, the rest are not planned.
  auto PlanAll = [&](const std::vector<TuneChoice> &Choices,
                     std::vector<size_t> Start) {
    Start.push_back(Choices.size());
    enum class Outcome { Planned, Skipped, Refused };
    std::vector<TuneResult> Planned(Choices.size());
    std::vector<Outcome> Outcomes(Choices.size(), Outcome::Skipped);
    std::vector<std::string> Why(Choices.size());
    std::atomic<size_t> NextGroup{0};
    auto Worker = [&] {
      for (size_t G; (G = NextGroup++) + 1 < Start.size();)
        for (size_t I = Start[G]; I < Start[G + 1]; ++I) {
          Why[I] = Evaluate(Choices[I], Planned[I]);
          Outcomes[I] = Why[I].empty() ? Outcome::Planned : Outcome::Refused;
          if (Outcomes[I] == Outcome::Planned && !Planned[I].Fits)
            break;
        }
    };
    std::vector<std::thread> Threads;
    unsigned Count = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    for (unsigned T = 1; T < Count; ++T)
      Threads.emplace_back(Worker);
    Worker();
    for (std::thread &T : Threads)
      T.join();
    for (size_t I = 0; I < Choices.size(); ++I)
      if (Outcomes[I] == Outcome::Planned)
        Results.push_back(std::move(Planned[I]));
      else if (Outcomes[I] == Outcome::Skipped)
        ++Skipped;
      else if (!Refused++)
        FirstRefusal = Why[I];
    // Fastest first among those that fit, and of steps that tie, the one
    // that changes fewer of the user's keys; the rest by memory.
    std::stable_sort(Results.begin(), Results.end(),
                     [](const TuneResult &A, const TuneResult &B) {
                       if (A.Fits != B.Fits)
                         return A.Fits;
                       if (!A.Fits)
                         return A.PeakBytes < B.PeakBytes;
                       return tunedBefore(A.StepNanos, A.Changed,
                                          B.StepNanos, B.Changed);
                     });
  };
  // NVMe where the user's config says where: tune cannot pick a path.
  NvmeChoices Nvme;
  auto PathSet = [&](StringRef Key) {
    return !User.getString(Key).value_or("").empty();
  };
  Nvme.Optimizer = PathSet("zero_optimization.offload_optimizer.nvme_path");
  Nvme.Params =
      Nvme.Optimizer && PathSet("zero_optimization.offload_param.nvme_path");
  uint32_t NodeRanks =
      Options->Nodes > 1
          ? (Options->GpusPerNode ? Options->GpusPerNode : World / Options->Nodes)
          : 0;
  std::vector<TuneChoice> Choices, Grouped;
  for (const TuneChoice &C : tuneChoices(Batch / World, Nvme, NodeRanks))
    (C.HpzGroup || C.MicsShard ? Grouped : Choices).push_back(C);
  PlanAll(Choices, microBatchGroups(Choices));
  // hpZ's and MiCS's groups only add memory and take communication off
  // the link between nodes: a grouped choice can fit only where the same
  // choice without groups fits, and be faster only where that choice's
  // step less its exposed communication beats the fastest so far.
  auto Worthwhile = [&](const TuneChoice &G) {
    return std::any_of(Results.begin(), Results.end(), [&](const TuneResult &R) {
      const TuneChoice &C = R.Choice;
      return R.Fits && C.Stage == G.Stage && C.Optimizer == G.Optimizer &&
             C.Params == G.Params && C.Checkpoint == G.Checkpoint &&
             C.MicroBatch == G.MicroBatch && Results[0].Fits &&
             R.StepNanos - R.ExposedCommNanos < Results[0].StepNanos;
    });
  };
  size_t Grouping = Grouped.size();
  Grouped.erase(std::remove_if(Grouped.begin(), Grouped.end(),
                               [&](const TuneChoice &G) {
                                 return !Worthwhile(G);
                               }),
                Grouped.end());
  Grouping -= Grouped.size();
  PlanAll(Grouped, microBatchGroups(Grouped));
  // Stage 3 with its parameters on the device can keep every one the
  // forward gathers until its backward, where memory allows: the backward
  // then gathers nothing, and fewer collectives slow the compute.
  // (Not where the user's reuse distance and live parameters keep them
  // already, as DeepSpeed's defaults do for models under 5e8 elements.)
  auto Effective = [&](StringRef Path) {
    return std::strtod(effectiveText(User, Path).c_str(), nullptr);
  };
  double UserKeeps =
      std::min(Effective("zero_optimization.max_reuse_distance"),
               Effective("zero_optimization.max_live_parameters"));
  std::vector<TuneChoice> Keeping;
  for (const TuneResult &R : Results) {
    if (!R.Fits || R.Choice.Stage != 3 || R.Choice.Keep ||
        R.Choice.Params != plan::OffloadDevice::None)
      continue;
    uint64_t Keep = tuneKeepElements(R.ModelElems, R.Choice.Checkpoint);
    if (double(Keep) > UserKeeps) {
      Keeping.push_back(R.Choice);
      Keeping.back().Keep = Keep;
    }
  }
  // Each planned alone: the list runs fastest first, not by micro batch.
  std::vector<size_t> Alone(Keeping.size());
  std::iota(Alone.begin(), Alone.end(), size_t(0));
  PlanAll(Keeping, Alone);
  // Where exposed communication holds the fastest up, its buckets and
  // overlap_comm are what change that (each variant a group of its own).
  size_t Refinements = 0;
  if (!Results.empty() && Results[0].Fits &&
      Results[0].Limit == StepLimit::Communication) {
    std::vector<TuneChoice> Variants = tuneRefinements(Results[0].Choice);
    Refinements = Variants.size();
    PlanAll(Variants, microBatchGroups(Variants));
  }
  // The fastest at stage 3 again with its all-gathers on the copy engines
  // (NCCL's zero-CTA policy), where the GPU's table has their rate and the
  // user's options leave the policy to tune.
  bool CopyEngines = false;
  if (!Results.empty() && Results[0].Fits && Results[0].Choice.Stage == 3 &&
      World > 1 && Options->CtaPolicy == plan::CommCtaPolicy::Default &&
      copyEngineGatherRate(Options->Machine.Figures)) {
    TuneChoice Zero = Results[0].Choice;
    Zero.Policy = plan::CommCtaPolicy::Zero;
    PlanAll({Zero}, {0});
    CopyEngines = true;
  }
  size_t Fitting = std::count_if(Results.begin(), Results.end(),
                                 [](const TuneResult &R) { return R.Fits; });
  const plan::Hardware &H = Options->Machine.Figures;
  outs() << formatv("{0} configs planned for {1} rank{2} of {3} ({4}), a "
                    "global batch of {5}: {6} fit",
                    Results.size(), World, World == 1 ? "" : "s", H.GpuName,
                    formatBytes(H.GpuMemoryBytes), Batch, Fitting);
  if (Skipped)
    outs() << formatv("; {0} with a larger micro batch than one that does "
                      "not fit, not planned",
                      Skipped);
  if (Grouping)
    outs() << formatv("; {0} with hpZ's or MiCS's groups not planned: the "
                      "same choice without groups was not planned, does not "
                      "fit, or is slower than the fastest even less its "
                      "exposed communication",
                      Grouping);
  if (!Keeping.empty())
    outs() << formatv("; {0} of them stage 3 keeping the parameters from "
                      "forward to backward",
                      Keeping.size());
  if (Refinements)
    outs() << formatv("; {0} of them the fastest's bucket sizes{1} and "
                      "overlap_comm (exposed communication held it up)",
                      Refinements,
                      Results[0].Choice.Stage == 3 && !Results[0].Choice.Keep
                          ? ", live parameters"
                          : "");
  if (CopyEngines)
    outs() << "; the fastest again with its all-gathers on the copy engines";
  if (Refused)
    outs() << formatv("; {0} refused (first: {1})", Refused, FirstRefusal);
  outs() << "\n";
  if (!Nvme.Optimizer)
    outs() << "NVMe offload not searched: the config names no "
              "offload_optimizer.nvme_path\n";
  else if (!Nvme.Params)
    outs() << "NVMe offload of the parameters not searched: the config "
              "names no offload_param.nvme_path\n";
  int64_t Seq = Options->SeqLen.value_or(0);
  StringRef Unit = Seq ? "tokens/s" : "samples/s";
  if (Fitting)
    outs() << formatv("{0,4}  {1,12}  {2,11}  {3,10}  {4,-21}  {5}\n", "rank",
                      Unit, "step", "peak", "limit", "config");
  for (size_t I = 0; I < Results.size() && I < Top; ++I) {
    const TuneResult &R = Results[I];
    if (!R.Fits)
      break;
    double PerSec = double(Batch) * double(Seq ? Seq : 1) /
                    (double(R.StepNanos) / 1e9);
    outs() << formatv("{0,4}  {1,12}  {2,8:F2} ms  {3,10}  {4,-21}  {5}\n",
                      I + 1, perSecond(PerSec), R.StepNanos / 1e6,
                      formatBytes(R.PeakBytes), stepLimitName(R.Limit),
                      R.Choice.describe());
  }
  if (!Fitting) {
    if (!Results.empty())
      outs() << formatv("nothing fits: the smallest, {0}, needs {1}\n",
                        Results[0].Choice.describe(),
                        formatBytes(Results[0].PeakBytes));
    return ExitDoesNotFit;
  }
  // The fastest, as the keys it changes in the user's config.
  const TuneResult &Best = Results[0];
  outs() << "fastest: " << Best.Choice.describe() << "\n";
  for (const auto &[Path, Value] : Changes(Best.Choice))
    outs() << "  " << writtenPath(User, Path) << ": "
           << effectiveText(User, Path) << " -> "
           << Value << "\n";
  if (Best.Choice.Checkpoint)
    outs() << "  every layer checkpointed (HF gradient_checkpointing; dsc "
              "plan --checkpoint-layers)\n";
  if (Best.Choice.Policy == plan::CommCtaPolicy::Zero)
    outs() << "  all-gathers on the copy engines (dsc plan --comm-cta-policy "
              "zero; dsrun takes it from the plan)\n";
  if (!TuneOutput.empty()) {
    std::error_code EC;
    raw_fd_ostream OS(TuneOutput, EC);
    if (EC)
      return usage(Tool, TuneOutput + ": " + EC.message());
    OS << Best.ConfigText;
  }
  return ExitClean;
}

int runShow() {
  Expected<plan::Plan> P = readPlanFile(ShowInput);
  if (!P) {
    WithColor::error(errs(), "dsc show") << toString(P.takeError()) << "\n";
    return ExitFindings;
  }
  if (ShowOutput.empty()) {
    writePlanYAML(outs(), *P);
    return ExitClean;
  }
  if (StringRef(ShowOutput).endswith(".yaml") ||
      StringRef(ShowOutput).endswith(".yml")) {
    std::error_code EC;
    raw_fd_ostream OS(ShowOutput, EC, sys::fs::OF_None);
    if (EC)
      return usage("dsc show", ShowOutput + ": " + EC.message());
    writePlanYAML(OS, *P);
    return ExitClean;
  }
  if (Error E = writePlanFile(ShowOutput, *P))
    return usage("dsc show", toString(std::move(E)));
  return ExitClean;
}

int runDot() {
  Expected<plan::Plan> P = readPlanFile(PlanPath);
  if (!P) {
    WithColor::error(errs(), "dsc dot") << toString(P.takeError()) << "\n";
    return ExitFindings;
  }
  DrawOptions O = drawOptions();
  if (Rank.getNumOccurrences()) {
    if (Rank < 0 || Rank >= int64_t(P->Settings.WorldSize)) {
      WithColor::error(errs(), "dsc dot")
          << "--rank " << Rank << ": the plan has ranks 0-"
          << P->Settings.WorldSize - 1 << "\n";
      return ExitUsage;
    }
    O.Rank = uint32_t(Rank);
  }
  if (DotOutputFile.empty()) {
    Expected<std::string> Dot = planToDot(*P, O);
    if (!Dot) {
      WithColor::error(errs(), "dsc dot") << toString(Dot.takeError()) << "\n";
      return ExitUsage;
    }
    outs() << *Dot;
    return ExitClean;
  }
  if (Error E = renderPlan(*P, O, DotOutputFile)) {
    WithColor::error(errs(), "dsc dot") << toString(std::move(E)) << "\n";
    return ExitUsage;
  }
  return ExitClean;
}

} // namespace dsc::tool
