//===- Parameters.cpp -----------------------------------------------------===//

#include "dsc/Graph/Parameters.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <map>
#include <set>

using namespace llvm;

namespace dsc {

StringRef roleName(TensorRole R) {
  switch (R) {
  case TensorRole::Parameter:
    return "parameter";
  case TensorRole::Buffer:
    return "buffer";
  case TensorRole::Constant:
    return "constant";
  }
  return "?";
}

/// What follows a name's last dot (the whole name without one).
static StringRef lastComponent(StringRef Name) {
  StringRef After = Name.rsplit('.').second;
  return After.empty() ? Name : After;
}

bool isExporterName(StringRef Name) {
  // torch.export lifts tensors a forward makes into "lifted_tensor_N".
  return lastComponent(Name).startswith("lifted_tensor_") ||
         Name.startswith("onnx::") || Name.startswith("val_") ||
         Name.startswith("_val") || Name.startswith("const_") ||
         Name.startswith("/") || Name.startswith("_onnx_") ||
         Name.startswith("ortshared_") || Name.empty();
}

/// Buffers PyTorch modules register (not parameters, whatever their dtype):
/// rotary frequencies, BatchNorm statistics, cached ids and masks, Gemma's
/// embedding scale.
static bool isKnownBufferName(StringRef Name) {
  static const StringRef Buffers[] = {
      "inv_freq",  "original_inv_freq",   "running_mean", "running_var",
      "num_batches_tracked", "position_ids", "token_type_ids", "masked_bias",
      "_float_tensor", "causal_mask", "attention_mask", "embed_scale"};
  return is_contained(Buffers, lastComponent(Name));
}

/// Ops that pass a tensor through (layout, dtype), so that a weight's real
/// use is what consumes their output.
static bool isPassThrough(StringRef Op) {
  static const StringRef Ops[] = {"Identity", "Cast",    "CastLike",
                                  "Transpose", "Reshape", "Unsqueeze",
                                  "Squeeze",  "Flatten", "Expand"};
  return is_contained(Ops, Op);
}

namespace {

struct Use {
  unsigned Node;
  unsigned Slot;
  bool Transposed; ///< Reached through a Transpose.
};

/// Where each initializer is really used, looking through pass-through ops.
class UseFinder {
public:
  explicit UseFinder(const Model &M) : M(M) {
    for (unsigned I = 0; I < M.Nodes.size(); ++I)
      for (unsigned S = 0; S < M.Nodes[I].Inputs.size(); ++S)
        if (!M.Nodes[I].Inputs[S].empty())
          Consumers[M.Nodes[I].Inputs[S]].push_back({I, S, false});
  }

  std::vector<Use> usesOf(StringRef Tensor) const {
    std::vector<Use> Out;
    collect(Tensor, false, Out, 0);
    return Out;
  }

private:
  void collect(StringRef Tensor, bool Transposed, std::vector<Use> &Out,
               unsigned Depth) const {
    auto It = Consumers.find(Tensor);
    if (It == Consumers.end() || Depth > 8)
      return;
    for (Use U : It->second) {
      const Node &N = M.Nodes[U.Node];
      if (U.Slot == 0 && isPassThrough(N.OpType) && !N.Outputs.empty()) {
        collect(N.Outputs[0], Transposed ^ (N.OpType == "Transpose"), Out,
                Depth + 1);
        continue;
      }
      U.Transposed = Transposed;
      Out.push_back(U);
    }
  }

  const Model &M;
  StringMap<std::vector<Use>> Consumers;
};

/// The role a use gives a floating-point initializer, or nullopt when the
/// use says nothing either way.
std::optional<std::pair<TensorRole, std::string>> roleOfUse(const Node &N,
                                                            unsigned Slot) {
  StringRef Op = N.OpType;
  if (Op == "BatchNormalization") {
    if (Slot == 1 || Slot == 2)
      return std::make_pair(TensorRole::Parameter, "BatchNormalization " +
                                                       std::string(Slot == 1
                                                                       ? "scale"
                                                                       : "bias"));
    if (Slot >= 3)
      return std::make_pair(TensorRole::Buffer,
                            std::string("BatchNormalization running ") +
                                (Slot == 3 ? "mean" : "variance"));
  }
  static const StringRef WeightOps[] = {
      "MatMul", "Gemm",  "Conv",  "ConvTranspose", "Gather", "Mul", "Add",
      "Sub",    "Div",   "Where", "LayerNormalization", "GroupNormalization",
      "InstanceNormalization", "SimplifiedLayerNormalization",
      "RMSNormalization", "SkipLayerNormalization", "Einsum", "PRelu",
      "Attention", "MultiHeadAttention", "GatherElements", "Concat"};
  if (is_contained(WeightOps, Op))
    return std::make_pair(TensorRole::Parameter, (Op + " operand").str());
  return std::nullopt;
}

} // namespace

Expected<ModelFacts> analyzeModel(const Model &M,
                                  const AnalysisOptions &Options) {
  std::optional<Regex> Freeze;
  if (!Options.FreezeRegex.empty()) {
    Freeze.emplace(Options.FreezeRegex);
    std::string Why;
    if (!Freeze->isValid(Why))
      return createStringError(inconvertibleErrorCode(),
                               "--freeze '%s': %s",
                               Options.FreezeRegex.c_str(), Why.c_str());
  }
  ModelFacts F;
  UseFinder Finder(M);
  F.Tensors.resize(M.Initializers.size());
  unsigned AnonymousWeights = 0;
  uint64_t AnonymousElems = 0;

  for (unsigned I = 0; I < M.Initializers.size(); ++I) {
    const Initializer &Init = M.Initializers[I];
    TensorFacts &T = F.Tensors[I];
    T.Initializer = I;
    T.Anonymous = isExporterName(Init.Name);
    std::vector<Use> Uses = Finder.usesOf(Init.Name);
    T.Uses = Uses.size();
    for (const Use &U : Uses) {
      if (T.FirstUse < 0 || int(U.Node) < T.FirstUse)
        T.FirstUse = int(U.Node);
      if (!is_contained(T.UseNodes, U.Node))
        T.UseNodes.push_back(U.Node);
    }
    llvm::sort(T.UseNodes);

    if (!isFloating(Init.Type)) {
      T.Role = TensorRole::Constant;
      T.Why = dtypeName(Init.Type).str();
    } else if (isKnownBufferName(Init.Name)) {
      T.Role = TensorRole::Buffer;
      T.Why = "named like a module buffer";
    } else if (Uses.empty()) {
      T.Role = TensorRole::Constant;
      T.Why = "unused";
    } else {
      std::optional<std::pair<TensorRole, std::string>> Found;
      for (const Use &U : Uses) {
        auto R = roleOfUse(M.Nodes[U.Node], U.Slot);
        if (R && (!Found || R->first == TensorRole::Buffer))
          Found = R;
      }
      if (!Found) {
        T.Role = TensorRole::Constant;
        T.Why = "used only by " + M.Nodes[Uses.front().Node].OpType;
      } else if (T.Anonymous && Init.numel() <= 1) {
        T.Role = TensorRole::Constant;
        T.Why = "a scalar the exporter made";
      } else {
        T.Role = Found->first;
        T.Why = Found->second;
      }
    }
    if (T.Role == TensorRole::Parameter && T.Anonymous) {
      ++AnonymousWeights;
      AnonymousElems += Init.numel();
    }

    // The owning module: the name's path, else its first user's scope.
    StringRef Name = Init.Name;
    if (!T.Anonymous && Name.contains('.'))
      T.Module = Name.rsplit('.').first.str();
    else if (T.FirstUse >= 0)
      T.Module = M.Nodes[T.FirstUse].Scope;

    // Tied: the same tensor is the weight of two modules.
    SmallSet<std::string, 4> Scopes;
    for (const Use &U : Uses)
      Scopes.insert(M.Nodes[U.Node].Scope);
    SmallSet<std::string, 4> Ops;
    for (const Use &U : Uses)
      Ops.insert(M.Nodes[U.Node].OpType);
    T.Tied = T.Role == TensorRole::Parameter && Ops.count("Gather") &&
             (Ops.count("MatMul") || Ops.count("Gemm"));

    uint64_t N = Init.numel();
    switch (T.Role) {
    case TensorRole::Parameter:
      T.Frozen = Freeze && Freeze->match(Init.Name);
      F.TotalParams += N;
      (T.Frozen ? F.FrozenParams : F.TrainableParams) += N;
      F.ParameterBytes += Init.bytes();
      break;
    case TensorRole::Buffer:
      F.BufferElems += N;
      break;
    case TensorRole::Constant:
      F.ConstantElems += N;
      break;
    }
  }

  // Modules in first-use order.
  std::map<std::string, unsigned> ModuleIndex;
  for (unsigned I = 0; I < F.Tensors.size(); ++I) {
    const TensorFacts &T = F.Tensors[I];
    if (T.Role != TensorRole::Parameter)
      continue;
    auto [It, New] = ModuleIndex.try_emplace(T.Module, F.Modules.size());
    if (New) {
      F.Modules.emplace_back();
      F.Modules.back().Name = T.Module;
    }
    ModuleFacts &Mod = F.Modules[It->second];
    Mod.ParameterElems += M.Initializers[I].numel();
    Mod.ParameterBytes += M.Initializers[I].bytes();
    Mod.Tensors.push_back(I);
    if (T.FirstUse >= 0 && (Mod.FirstUse < 0 || T.FirstUse < Mod.FirstUse))
      Mod.FirstUse = T.FirstUse;
  }
  std::stable_sort(F.Modules.begin(), F.Modules.end(),
                   [](const ModuleFacts &A, const ModuleFacts &B) {
                     auto Key = [](int U) { return U < 0 ? INT32_MAX : U; };
                     return Key(A.FirstUse) < Key(B.FirstUse);
                   });

  // The repeated block: the prefix before the first all-digit segment
  // (model.layers.3.mlp -> model.layers, 3) with the most indices.
  std::map<std::string, std::set<int64_t>> Blocks;
  for (const ModuleFacts &Mod : F.Modules) {
    SmallVector<StringRef, 8> Parts;
    StringRef(Mod.Name).split(Parts, '.');
    for (size_t P = 1; P < Parts.size(); ++P) {
      int64_t N;
      if (Parts[P].getAsInteger(10, N))
        continue;
      Blocks[join(Parts.begin(), Parts.begin() + P, ".")].insert(N);
      break;
    }
  }
  for (auto &[Prefix, Indices] : Blocks)
    if (int64_t(Indices.size()) > F.Layers) {
      F.Layers = int64_t(Indices.size());
      F.LayerPrefix = Prefix;
    }

  // Hidden size: the embedding's width, else the most common input width of
  // linear layers, else the widest convolution.
  if (Options.HiddenSize) {
    F.HiddenSize = Options.HiddenSize;
    F.HiddenSizeEvidence = "given with --hidden-size";
  } else {
    // The token embedding is looked up with the graph's own input (the
    // token ids, perhaps cast or reshaped on the way); position, token-type
    // and relative-position-bias tables are indexed with computed ids.
    // Among equals the table with the most rows (the vocabulary) wins.
    StringMap<unsigned> Producer;
    for (unsigned N = 0; N < M.Nodes.size(); ++N)
      for (const std::string &Out : M.Nodes[N].Outputs)
        Producer[Out] = N;
    auto FromGraphInput = [&](std::string Name) {
      for (unsigned Hops = 0; Hops < 8; ++Hops) {
        if (any_of(M.Inputs, [&](const ValueInfo &V) { return V.Name == Name; }))
          return true;
        auto P = Producer.find(Name);
        if (P == Producer.end())
          return false;
        const Node &N = M.Nodes[P->second];
        static const StringRef PassThrough[] = {
            "Cast", "Reshape", "Flatten", "Unsqueeze", "Squeeze", "Identity"};
        if (N.Inputs.empty() || !is_contained(PassThrough, N.OpType))
          return false;
        Name = N.Inputs[0];
      }
      return false;
    };
    const Initializer *Embedding = nullptr;
    std::pair<bool, int64_t> BestScore{false, 0};
    for (unsigned I = 0; I < F.Tensors.size(); ++I) {
      const Initializer &Init = M.Initializers[I];
      if (F.Tensors[I].Role != TensorRole::Parameter || Init.Dims.size() != 2)
        continue;
      for (const Use &U : Finder.usesOf(Init.Name)) {
        const Node &N = M.Nodes[U.Node];
        if (N.OpType != "Gather" || U.Slot != 0 || N.Inputs.size() < 2)
          continue;
        std::pair<bool, int64_t> Score{FromGraphInput(N.Inputs[1]),
                                       Init.Dims[0]};
        if (!Embedding || Score > BestScore) {
          Embedding = &Init;
          BestScore = Score;
        }
      }
    }
    if (Embedding) {
      F.HiddenSize = Embedding->Dims[1];
      F.HiddenSizeEvidence =
          formatv("width of the embedding {0} [{1} x {2}]", Embedding->Name,
                  Embedding->Dims[0], Embedding->Dims[1]);
    }
    std::map<int64_t, unsigned> Widths;
    int64_t WidestConv = 0;
    for (unsigned I = 0; I < F.Tensors.size(); ++I) {
      const Initializer &Init = M.Initializers[I];
      if (F.Tensors[I].Role != TensorRole::Parameter || Init.Dims.size() < 2)
        continue;
      for (const Use &U : Finder.usesOf(Init.Name)) {
        const Node &N = M.Nodes[U.Node];
        if (N.OpType == "MatMul" && U.Slot == 1 && Init.Dims.size() == 2)
          ++Widths[U.Transposed ? Init.Dims[1] : Init.Dims[0]];
        else if (N.OpType == "Gemm" && U.Slot == 1 && Init.Dims.size() == 2)
          ++Widths[intAttribute(N, "transB").value_or(0) ? Init.Dims[1]
                                                  : Init.Dims[0]];
        else if (N.OpType == "Conv" && U.Slot == 1)
          WidestConv = std::max(WidestConv, Init.Dims[0]);
      }
    }
    unsigned Linears = 0;
    for (auto &W : Widths)
      Linears += W.second;
    // A CNN's classifier head is one linear layer; two or more mean a
    // transformer-like body whose width is the hidden size.
    if (!F.HiddenSize && (Linears >= 2 || (Linears && !WidestConv))) {
      auto Best = std::max_element(
          Widths.begin(), Widths.end(),
          [](auto &A, auto &B) { return A.second < B.second; });
      F.HiddenSize = Best->first;
      F.HiddenSizeEvidence = formatv("the input width of {0} of {1} linear "
                                     "layers",
                                     Best->second, Linears);
    }
    if (!F.HiddenSize && WidestConv) {
      F.HiddenSize = WidestConv;
      F.HiddenSizeEvidence = "the widest convolution (output channels); a "
                             "network without embedding or attention";
    }
  }

  // Signs of an inference export.
  if (AnonymousWeights)
    F.InferenceSigns.push_back(formatv(
        "{0} weights ({1} elements) have names the exporter made "
        "(onnx::*, val_*): folded or transposed copies of parameters",
        AnonymousWeights, AnonymousElems));
  // Optimizers name what they fold after the tensor they fold into
  // (conv1.weight_bias): a name made of another parameter's name.
  unsigned Derived = 0;
  std::string Example;
  for (unsigned I = 0; I < F.Tensors.size(); ++I) {
    if (F.Tensors[I].Role != TensorRole::Parameter)
      continue;
    StringRef Name = M.Initializers[I].Name;
    size_t Underscore = Name.rfind('_');
    if (Underscore == StringRef::npos || Underscore == 0)
      continue;
    if (const Initializer *Base = M.initializer(Name.take_front(Underscore));
        Base && isFloating(Base->Type)) {
      ++Derived;
      if (Example.empty())
        Example = Name.str();
    }
  }
  if (Derived)
    F.InferenceSigns.push_back(formatv(
        "{0} weights are named after other weights ({1}): tensors an "
        "optimizer folded together (BatchNorm into Conv)",
        Derived, Example));
  for (unsigned I = 0; I < F.Tensors.size(); ++I) {
    const TensorFacts &T = F.Tensors[I];
    if (T.Role != TensorRole::Parameter)
      continue;
    SmallSet<std::string, 8> Scopes;
    for (const Use &U : Finder.usesOf(M.Initializers[I].Name))
      if (!M.Nodes[U.Node].Scope.empty())
        Scopes.insert(M.Nodes[U.Node].Scope);
    if (Scopes.size() > 2 && !T.Tied)
      F.InferenceSigns.push_back(
          formatv("{0} is shared by {1} modules: identical weights merged "
                  "into one",
                  M.Initializers[I].Name, Scopes.size()));
  }
  bool HasBatchNorm = llvm::any_of(M.Nodes, [](const Node &N) {
    return N.OpType == "BatchNormalization";
  });
  bool BatchNormNames = llvm::any_of(M.Initializers, [](const Initializer &I) {
    return StringRef(I.Name).contains("bn") || StringRef(I.Name).contains("norm");
  });
  bool HasConv = llvm::any_of(
      M.Nodes, [](const Node &N) { return N.OpType == "Conv"; });
  if (HasConv && !HasBatchNorm && AnonymousWeights && !BatchNormNames)
    F.InferenceSigns.push_back(
        "convolutions without BatchNormalization and with exporter-named "
        "weights: BatchNorm was folded into Conv");
  return F;
}

} // namespace dsc
