//===- Inspect.cpp - dsc inspect's report ---------------------------------===//

#include "dsc/Compute/Inspect.h"

#include "dsc/Compute/Import.h"
#include "dsc/Compute/Tensor.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/YAMLTraits.h"

#include <algorithm>
#include <map>

using namespace llvm;

namespace dsc {

Expected<InspectReport> inspectModel(const Model &M,
                                     const InspectOptions &Options) {
  InspectReport R;
  R.M = &M;
  R.Loss = Options.Loss;
  Expected<ModelFacts> Facts = analyzeModel(M, Options.Analysis);
  if (!Facts)
    return Facts.takeError();
  R.Facts = std::move(*Facts);

  std::map<std::string, unsigned> Counts;
  for (const Node &N : M.Nodes)
    ++Counts[N.Domain.empty() ? N.OpType : N.Domain + "." + N.OpType];
  for (auto &[Op, N] : Counts)
    R.Ops.push_back({Op, N});
  std::stable_sort(R.Ops.begin(), R.Ops.end(),
                   [](const OpCount &A, const OpCount &B) {
                     return A.Count > B.Count;
                   });

  // The forward as dsc plan specializes it, for one sample: every shape is
  // then known, or the import says why not.
  compute::ImportOptions Import;
  Import.MicroBatch = 1;
  Import.SeqLen = Options.SeqLen;
  Import.Dims = Options.Dims;
  Expected<compute::Graph> G = compute::importGraph(M, R.Facts, Import);
  if (!G) {
    R.ForwardProblem = toString(G.takeError());
    R.TrainingProblem = R.ForwardProblem;
    return R;
  }
  for (auto &[Symbol, Value] : G->Bindings)
    R.Bindings[Symbol] = Value;
  uint64_t Bytes = 0;
  for (const compute::Node &N : G->Nodes)
    for (compute::ValueId V : N.Outputs) {
      const compute::Value &X = G->Values[V];
      if (!X.isFloat() && X.Type != plan::DType::U8)
        continue; // Integer index arithmetic, not activations.
      Bytes += uint64_t(compute::numel(X.Dims)) * plan::dtypeBytes(X.Type);
      ++R.ActivationTensors;
    }
  R.ActivationBytesPerSample = Bytes;

  // The step: fusions, the loss and the backward, as dsc plan lowers them.
  compute::PipelineOptions Pipeline;
  Pipeline.Loss = Options.Loss;
  if (Error E = compute::runPipeline(*G, Pipeline)) {
    R.TrainingProblem = toString(std::move(E));
    return R;
  }
  for (const compute::Node &N : G->Nodes)
    ++(N.Ph == compute::Phase::Forward ? R.ForwardOps : R.BackwardOps);
  return R;
}

static std::string bytesText(uint64_t B) {
  const char *Units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double V = double(B);
  unsigned U = 0;
  while (V >= 1024 && U + 1 < std::size(Units)) {
    V /= 1024;
    ++U;
  }
  return U ? formatv("{0:f1} {1}", V, Units[U]).str()
           : formatv("{0} B", B).str();
}

static std::string groupThousands(uint64_t N) {
  std::string S = std::to_string(N), Out;
  for (size_t I = 0; I < S.size(); ++I) {
    if (I && (S.size() - I) % 3 == 0)
      Out += ',';
    Out += S[I];
  }
  return Out;
}

void printInspectText(raw_ostream &OS, const InspectReport &R,
                      unsigned MaxModules) {
  const Model &M = *R.M;
  const ModelFacts &F = R.Facts;
  OS << M.Path << ": " << StringRef(M.Producer).trim() << ", IR " << M.IrVersion
     << ", opset " << M.opset() << ", " << M.Nodes.size() << " nodes, "
     << M.Initializers.size() << " initializers\n";
  OS << "parameters: " << groupThousands(F.TotalParams) << " ("
     << bytesText(F.ParameterBytes) << ") in " << F.Modules.size()
     << " modules: " << groupThousands(F.TrainableParams) << " trainable, "
     << groupThousands(F.FrozenParams) << " frozen\n";
  OS << "not parameters: " << groupThousands(F.BufferElems)
     << " buffer elements, " << groupThousands(F.ConstantElems)
     << " constant elements\n";
  if (!F.Modules.empty()) {
    const ModuleFacts *Largest = &F.Modules.front();
    for (const ModuleFacts &Mod : F.Modules)
      if (Mod.ParameterElems > Largest->ParameterElems)
        Largest = &Mod;
    OS << "largest module: "
       << (Largest->Name.empty() ? "(top level)" : Largest->Name) << " ("
       << groupThousands(Largest->ParameterElems) << ")\n";
  }
  if (F.HiddenSize)
    OS << "hidden size: " << *F.HiddenSize << " (" << F.HiddenSizeEvidence
       << ")\n";
  else
    OS << "hidden size: unknown (no embedding, linear or convolution "
          "weights); give it with --hidden-size\n";
  if (F.Layers)
    OS << "layers: " << F.Layers << " (" << F.LayerPrefix << ".N)\n";
  std::string Bound;
  for (auto &[S, V] : R.Bindings)
    Bound += (Bound.empty() ? "" : ", ") + S + "=" + std::to_string(V);
  if (R.ActivationBytesPerSample)
    OS << "activations: " << bytesText(*R.ActivationBytesPerSample)
       << " per sample over " << R.ActivationTensors << " forward tensors"
       << (Bound.empty() ? "" : " (" + Bound + ")") << "\n";
  else
    OS << "activations: unknown: " << R.ForwardProblem << "\n";
  OS << "ops: " << R.Ops.size() << " kinds:";
  for (const OpCount &O : R.Ops)
    OS << " " << O.OpType << " " << O.Count;
  OS << "\n";
  StringRef Loss = compute::lossName(R.Loss);
  if (!R.ForwardProblem.empty())
    OS << "training: the forward does not specialize (see activations)\n";
  else if (!R.TrainingProblem.empty())
    OS << "training: does not lower with the " << Loss
       << " loss: " << R.TrainingProblem << "\n";
  else
    OS << "training: lowers with the " << Loss << " loss: " << R.ForwardOps
       << " forward and " << R.BackwardOps
       << " backward ops after fusion (dsc plan makes them kernels)\n";
  if (!F.InferenceSigns.empty()) {
    OS << "warning: this looks like an export for inference; the parameter "
          "count is not exact:\n";
    for (const std::string &S : F.InferenceSigns)
      OS << "  - " << S << "\n";
    OS << "  export for training instead (docs/graph.md): "
          "torch.onnx.export(..., dynamo=True, optimize=False), or "
          "dynamo=False with training=TrainingMode.TRAINING and "
          "do_constant_folding=False\n";
  }
  OS << "modules (first use):\n";
  unsigned Shown = 0;
  for (const ModuleFacts &Mod : F.Modules) {
    if (Shown++ == MaxModules) {
      OS << "  ... " << F.Modules.size() - MaxModules
         << " more (--modules=0 lists all)\n";
      break;
    }
    OS << "  " << (Mod.Name.empty() ? "(top level)" : Mod.Name) << " "
       << groupThousands(Mod.ParameterElems) << "\n";
  }
}

static json::Array strings(const std::vector<std::string> &V) {
  json::Array A;
  for (const std::string &S : V)
    A.push_back(S);
  return A;
}

static json::Value reportJSON(const InspectReport &R) {
  const Model &M = *R.M;
  const ModelFacts &F = R.Facts;
  json::Array Modules;
  for (const ModuleFacts &Mod : F.Modules)
    Modules.push_back(json::Object{{"name", Mod.Name},
                                   {"parameters", int64_t(Mod.ParameterElems)},
                                   {"bytes", int64_t(Mod.ParameterBytes)}});
  json::Array Ops;
  for (const OpCount &O : R.Ops)
    Ops.push_back(json::Object{{"op", O.OpType}, {"count", O.Count}});
  json::Array Tensors;
  for (const TensorFacts &T : F.Tensors) {
    const Initializer &I = M.Initializers[T.Initializer];
    json::Array Dims;
    for (int64_t D : I.Dims)
      Dims.push_back(D);
    Tensors.push_back(json::Object{{"name", I.Name},
                                   {"role", roleName(T.Role)},
                                   {"why", T.Why},
                                   {"dtype", dtypeName(I.Type)},
                                   {"dims", std::move(Dims)},
                                   {"module", T.Module},
                                   {"frozen", T.Frozen},
                                   {"tied", T.Tied}});
  }
  json::Object Bindings;
  for (auto &[S, V] : R.Bindings)
    Bindings[S] = V;
  return json::Object{
      {"path", M.Path},
      {"producer", StringRef(M.Producer).trim()},
      {"ir_version", M.IrVersion},
      {"opset", M.opset()},
      {"nodes", int64_t(M.Nodes.size())},
      {"parameters",
       json::Object{{"total", int64_t(F.TotalParams)},
                    {"trainable", int64_t(F.TrainableParams)},
                    {"frozen", int64_t(F.FrozenParams)},
                    {"bytes", int64_t(F.ParameterBytes)},
                    {"exact", F.InferenceSigns.empty()}}},
      {"buffer_elements", int64_t(F.BufferElems)},
      {"constant_elements", int64_t(F.ConstantElems)},
      {"hidden_size", F.HiddenSize ? json::Value(*F.HiddenSize)
                                   : json::Value(nullptr)},
      {"hidden_size_evidence", F.HiddenSizeEvidence},
      {"layers", F.Layers},
      {"layer_prefix", F.LayerPrefix},
      {"modules", std::move(Modules)},
      {"activations",
       json::Object{{"bytes_per_sample",
                     R.ActivationBytesPerSample
                         ? json::Value(int64_t(*R.ActivationBytesPerSample))
                         : json::Value(nullptr)},
                    {"tensors", R.ActivationTensors},
                    {"problem", R.ForwardProblem},
                    {"dims", std::move(Bindings)}}},
      {"ops", std::move(Ops)},
      {"training",
       json::Object{{"loss", compute::lossName(R.Loss)},
                    {"lowers", R.TrainingProblem.empty()},
                    {"forward_ops", R.ForwardOps},
                    {"backward_ops", R.BackwardOps},
                    {"problem", R.TrainingProblem}}},
      {"inference_signs", strings(F.InferenceSigns)},
      {"initializers", std::move(Tensors)}};
}

void printInspectJSON(raw_ostream &OS, const InspectReport &R) {
  OS << formatv("{0:2}", reportJSON(R)) << "\n";
}

} // namespace dsc

// YAML: the same report through LLVM's YAML I/O.
namespace {
struct YamlModule {
  std::string Name;
  uint64_t Parameters;
};
struct YamlReport {
  std::string Path;
  uint64_t Total, Trainable, Frozen;
  bool Exact;
  llvm::Optional<int64_t> HiddenSize;
  int64_t Layers;
  llvm::Optional<uint64_t> ActivationBytes;
  std::vector<YamlModule> Modules;
  bool Lowers;
  std::string TrainingProblem;
  std::vector<std::string> Signs;
};
} // namespace

LLVM_YAML_IS_SEQUENCE_VECTOR(YamlModule)

namespace llvm::yaml {
template <> struct MappingTraits<YamlModule> {
  static void mapping(IO &IO, YamlModule &M) {
    IO.mapRequired("name", M.Name);
    IO.mapRequired("parameters", M.Parameters);
  }
};
template <> struct MappingTraits<YamlReport> {
  static void mapping(IO &IO, YamlReport &R) {
    IO.mapRequired("path", R.Path);
    IO.mapRequired("parameters_total", R.Total);
    IO.mapRequired("parameters_trainable", R.Trainable);
    IO.mapRequired("parameters_frozen", R.Frozen);
    IO.mapRequired("parameters_exact", R.Exact);
    IO.mapOptional("hidden_size", R.HiddenSize);
    IO.mapRequired("layers", R.Layers);
    IO.mapOptional("activation_bytes_per_sample", R.ActivationBytes);
    IO.mapRequired("modules", R.Modules);
    IO.mapRequired("training_lowers", R.Lowers);
    IO.mapOptional("training_problem", R.TrainingProblem, std::string());
    IO.mapOptional("inference_signs", R.Signs);
  }
};
} // namespace llvm::yaml

namespace dsc {

void printInspectYAML(raw_ostream &OS, const InspectReport &R) {
  YamlReport Y{R.M->Path,
               R.Facts.TotalParams,
               R.Facts.TrainableParams,
               R.Facts.FrozenParams,
               R.Facts.InferenceSigns.empty(),
               R.Facts.HiddenSize ? llvm::Optional<int64_t>(*R.Facts.HiddenSize)
                                  : llvm::None,
               R.Facts.Layers,
               R.ActivationBytesPerSample
                   ? llvm::Optional<uint64_t>(*R.ActivationBytesPerSample)
                   : llvm::None,
               {},
               R.TrainingProblem.empty(),
               R.TrainingProblem,
               R.Facts.InferenceSigns};
  for (const ModuleFacts &Mod : R.Facts.Modules)
    Y.Modules.push_back({Mod.Name, Mod.ParameterElems});
  yaml::Output Out(OS);
  Out << Y;
}

} // namespace dsc
