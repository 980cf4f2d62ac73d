//===- Import.cpp - ONNX to the compute IR, specialized and folded --------===//

#include "dsc/Compute/Import.h"
#include "dsc/Compute/Ops.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include "onnx/onnx_pb.h"

using namespace llvm;

namespace dsc::compute {

namespace {

/// The IR type of an ONNX element type: every float is computed as a
/// float of its width; integers narrower than 64 bits as int32.
std::optional<DType> irType(int OnnxType) {
  switch (OnnxType) {
  case onnx::TensorProto_DataType_FLOAT:
  case onnx::TensorProto_DataType_DOUBLE:
    return DType::F32;
  case onnx::TensorProto_DataType_FLOAT16:
    return DType::F16;
  case onnx::TensorProto_DataType_BFLOAT16:
    return DType::BF16;
  case onnx::TensorProto_DataType_INT64:
  case onnx::TensorProto_DataType_UINT64:
    return DType::I64;
  case onnx::TensorProto_DataType_INT32:
  case onnx::TensorProto_DataType_UINT32:
  case onnx::TensorProto_DataType_INT16:
  case onnx::TensorProto_DataType_UINT16:
  case onnx::TensorProto_DataType_INT8:
  case onnx::TensorProto_DataType_UINT8:
    return DType::I32;
  case onnx::TensorProto_DataType_BOOL:
    return DType::U8;
  }
  return std::nullopt;
}

std::optional<StorageType> storageOf(int OnnxType) {
  switch (OnnxType) {
  case onnx::TensorProto_DataType_FLOAT:
    return StorageType::F32;
  case onnx::TensorProto_DataType_DOUBLE:
    return StorageType::F64;
  case onnx::TensorProto_DataType_FLOAT16:
    return StorageType::F16;
  case onnx::TensorProto_DataType_BFLOAT16:
    return StorageType::BF16;
  case onnx::TensorProto_DataType_INT64:
    return StorageType::I64;
  case onnx::TensorProto_DataType_UINT64:
    return StorageType::U64;
  case onnx::TensorProto_DataType_INT32:
    return StorageType::I32;
  case onnx::TensorProto_DataType_UINT32:
    return StorageType::U32;
  case onnx::TensorProto_DataType_INT16:
    return StorageType::I16;
  case onnx::TensorProto_DataType_UINT16:
    return StorageType::U16;
  case onnx::TensorProto_DataType_INT8:
    return StorageType::I8;
  case onnx::TensorProto_DataType_UINT8:
    return StorageType::U8;
  case onnx::TensorProto_DataType_BOOL:
    return StorageType::Bool;
  }
  return std::nullopt;
}

/// A TensorProto whose data is in the message (Constant attributes, small
/// integer initializers), as a host tensor.
Expected<HostTensor> tensorFromProto(const onnx::TensorProto &T) {
  std::optional<DType> Type = irType(T.data_type());
  std::optional<StorageType> Stored = storageOf(T.data_type());
  if (!Type || !Stored)
    return createStringError(inconvertibleErrorCode(),
                             "a tensor of ONNX element type %d",
                             int(T.data_type()));
  Shape S(T.dims().begin(), T.dims().end());
  if (llvm::any_of(S, [](int64_t D) { return D < 0; }))
    return createStringError(inconvertibleErrorCode(),
                             "a tensor with a negative dim");
  int64_t N = numel(S);
  // The data must match the shape before anything is allocated for it.
  int64_t Given = T.float_data_size()    ? T.float_data_size()
                  : T.double_data_size() ? T.double_data_size()
                  : T.int64_data_size()  ? T.int64_data_size()
                                         : T.int32_data_size();
  if (T.raw_data().empty() && Given && Given != N)
    return createStringError(inconvertibleErrorCode(),
                             "a tensor whose data does not match its shape");
  if (T.raw_data().empty() && !Given && N != 0)
    return createStringError(inconvertibleErrorCode(), "a tensor with no data");
  if (!T.raw_data().empty()) {
    if (uint64_t(T.raw_data().size()) != uint64_t(N) * storageBytes(*Stored))
      return createStringError(inconvertibleErrorCode(),
                               "a tensor whose data does not match its shape");
    return decodeTensor(*Type, S, T.raw_data().data(), *Stored);
  }
  HostTensor Out(plan::isFloatType(*Type) ? DType::F32 : *Type, S);
  auto Fill = [&](auto &Field) -> Error {
    if (Field.size() != N)
      return createStringError(inconvertibleErrorCode(),
                               "a tensor whose data does not match its shape");
    for (int64_t I = 0; I < N; ++I)
      Out.set(I, double(Field.Get(int(I))));
    return Error::success();
  };
  Error E = Error::success();
  if (T.float_data_size() || (*Stored == StorageType::F32 && N == 0))
    E = Fill(T.float_data());
  else if (T.double_data_size())
    E = Fill(T.double_data());
  else if (T.int64_data_size()) {
    if (T.int64_data_size() != N)
      return createStringError(inconvertibleErrorCode(),
                               "a tensor whose data does not match its shape");
    for (int64_t I = 0; I < N; ++I)
      Out.intData()[I] = T.int64_data(int(I));
  } else if (T.int32_data_size()) {
    // int32_data also carries fp16/bf16 bits, one per element.
    if (T.int32_data_size() != N)
      return createStringError(inconvertibleErrorCode(),
                               "a tensor whose data does not match its shape");
    for (int64_t I = 0; I < N; ++I) {
      int32_t V = T.int32_data(int(I));
      double X = *Stored == StorageType::F16    ? halfToFloat(uint16_t(V))
                 : *Stored == StorageType::BF16 ? bf16ToFloat(uint16_t(V))
                                                : double(V);
      Out.set(I, X);
    }
  } else if (N != 0) {
    return createStringError(inconvertibleErrorCode(),
                             "a tensor with no data");
  }
  if (E)
    return E;
  return plan::isFloatType(*Type) && *Type != DType::F32 ? Out.cast(*Type)
                                                         : Out;
}

class Importer {
public:
  Importer(const Model &M, const ModelFacts &F, const ImportOptions &O)
      : M(M), F(F), O(O) {}

  Expected<Graph> run();

private:
  Error importInputs();
  /// Records what a symbolic dim was bound to (G.Bindings), once.
  void bindDim(const std::string &Symbol, int64_t Value);
  Error importInitializers();
  Error importNode(const dsc::Node &N);
  Expected<Attributes> attributesOf(const dsc::Node &N);
  /// Adds a node and folds it when every input is known.
  Expected<std::vector<ValueId>> emit(StringRef Op, std::vector<ValueId> Ins,
                                      Attributes A, unsigned Outputs,
                                      const dsc::Node &From,
                                      StringRef Suffix = "");
  Expected<ValueId> emit1(StringRef Op, std::vector<ValueId> Ins,
                          Attributes A, const dsc::Node &From,
                          StringRef Suffix) {
    auto Out = emit(Op, std::move(Ins), std::move(A), 1, From, Suffix);
    if (!Out)
      return Out.takeError();
    return (*Out)[0];
  }
  ValueId ints(std::vector<int64_t> V) {
    int64_t N = int64_t(V.size());
    return G.addConstant(HostTensor::fromInts(DType::I64, {N}, std::move(V)));
  }
  Expected<ValueId> input(const dsc::Node &N, unsigned I);
  void bind(const std::string &Name, ValueId V) { ByName[Name] = V; }
  /// A failure after a static input was given the config's shape: say so.
  Error explain(Error E);

  Error importGemm(const dsc::Node &N, std::vector<ValueId> Ins,
                   const Attributes &A);
  Error importConv(const dsc::Node &N, std::vector<ValueId> Ins,
                   const Attributes &A);
  Error importSplitToSequence(const dsc::Node &N, std::vector<ValueId> Ins,
                              const Attributes &A);

  const Model &M;
  const ModelFacts &F;
  const ImportOptions &O;
  Graph G;
  StringMap<ValueId> ByName;
  StringMap<std::vector<ValueId>> Sequences;
  /// Static inputs re-specialized: "'input_ids' exported as [2, 128],
  /// trained as [16, 1024]".
  std::vector<std::string> Respecialized;
  unsigned Streams = 0;
};

Error Importer::explain(Error E) {
  if (Respecialized.empty())
    return E;
  std::string Inner = toString(std::move(E));
  return createStringError(
      inconvertibleErrorCode(),
      "the model was exported with fixed input shapes (" +
          join(Respecialized, "; ") +
          ") and its graph does not derive its shapes from its inputs, so "
          "dsc cannot specialize it to the config's shapes: " +
          Inner +
          ". Export it again with dynamic batch and sequence dims: "
          "torch.onnx.export(model, (ids,), dynamo=True, dynamic_shapes=({0: "
          "torch.export.Dim('batch'), 1: torch.export.Dim('sequence')},)), "
          "or with the TorchScript exporter dynamic_axes={'input_ids': {0: "
          "'batch', 1: 'sequence'}} (docs/compute.md)");
}

void Importer::bindDim(const std::string &Symbol, int64_t Value) {
  for (const auto &[Name, V] : G.Bindings)
    if (Name == Symbol)
      return;
  G.Bindings.push_back({Symbol, Value});
}

Error Importer::importInputs() {
  for (const ValueInfo &In : M.Inputs) {
    const TensorType &T = In.Type;
    if (!T.Ranked)
      return createStringError(inconvertibleErrorCode(),
                               "the model's input '%s' has no declared shape",
                               In.Name.c_str());
    bool Tokens = !isFloating(T.Type);
    Shape S;
    std::vector<int64_t> Exported;
    bool Static = false;
    for (size_t K = 0; K < T.Shape.size(); ++K) {
      const Dim &D = T.Shape[K];
      std::optional<int64_t> Want;
      if (K == 0)
        Want = O.MicroBatch;
      else if (K == 1 && Tokens && T.Shape.size() == 2)
        Want = O.SeqLen;
      if (D.known()) {
        Exported.push_back(D.Value);
        if (Want && *Want != D.Value)
          Static = true;
        S.push_back(Want ? *Want : D.Value);
        continue;
      }
      Exported.push_back(-1);
      std::optional<int64_t> V = D.Symbol.empty()
                                     ? std::nullopt
                                     : evaluateDim(D.Symbol, O.Dims);
      if (!V)
        V = Want;
      if (!V || *V <= 0)
        return createStringError(
            inconvertibleErrorCode(),
            "the model's input '%s' has dimension %zu ('%s') with no value: "
            "pass --dim %s=N%s",
            In.Name.c_str(), K, D.Symbol.c_str(),
            D.Symbol.empty() ? "NAME" : D.Symbol.c_str(),
            K == 1 && Tokens ? " or --seq-len N" : "");
      S.push_back(*V);
      if (!D.Symbol.empty())
        bindDim(D.Symbol, *V);
    }
    if (Static)
      Respecialized.push_back("'" + In.Name + "' exported as " +
                              shapeText(Exported) + ", trained as " +
                              shapeText(S));
    Value V;
    V.Name = In.Name;
    V.Dims = S;
    // Token ids and the like are int32 on the device.
    V.Type = isFloating(T.Type) ? DType::F32 : DType::I32;
    V.Kind = ValueKind::Input;
    ValueId Id = G.addValue(std::move(V));
    G.Inputs.push_back(Id);
    bind(In.Name, Id);
  }
  for (const auto &[Name, Value] : O.Dims)
    bindDim(Name, Value);
  return Error::success();
}

Error Importer::importInitializers() {
  for (size_t I = 0; I < M.Initializers.size(); ++I) {
    const Initializer &Init = M.Initializers[I];
    const TensorFacts &T = F.Tensors[I];
    Value V;
    V.Name = Init.Name;
    V.Dims = Init.Dims;
    std::optional<DType> Type = irType(int(Init.Type));
    if (!Type)
      return createStringError(inconvertibleErrorCode(),
                               "initializer '%s' has an element type dsc does "
                               "not compute with",
                               Init.Name.c_str());
    V.Type = *Type;
    if (T.Role == TensorRole::Parameter) {
      V.Kind = ValueKind::Param;
      V.Param = int32_t(G.Params.size());
      ValueId Id = G.addValue(std::move(V));
      G.Params.push_back({Init.Name, Id, !T.Frozen, NoValue});
      bind(Init.Name, Id);
      continue;
    }
    V.Kind = ValueKind::Constant;
    // Small integer constants are in the proto; others in the file.
    const onnx::TensorProto *Proto = nullptr;
    if (M.Proto)
      for (const onnx::TensorProto &P : M.Proto->graph().initializer())
        if (P.name() == Init.Name && (!P.raw_data().empty() ||
                                      P.int64_data_size() ||
                                      P.int32_data_size()))
          Proto = &P;
    if (Proto) {
      Expected<HostTensor> H = tensorFromProto(*Proto);
      if (!H)
        return H.takeError();
      V.Data = std::make_shared<const HostTensor>(std::move(*H));
    } else if (O.ReadConstants && (Init.External || Init.PayloadOffset >= 0)) {
      // Constants are masks, tables and shapes: a large one is a weight
      // the export did not mark, or a hostile file; dsc does not read it.
      constexpr uint64_t MaxConstantBytes = 256ull << 20;
      if (Init.bytes() > MaxConstantBytes)
        return createStringError(
            inconvertibleErrorCode(),
            "constant '%s' holds %llu MiB; dsc reads constants (masks, "
            "tables) up to %llu MiB: a larger one is a weight the export did "
            "not mark as a parameter",
            Init.Name.c_str(), (unsigned long long)(Init.bytes() >> 20),
            (unsigned long long)(MaxConstantBytes >> 20));
      Expected<std::vector<char>> Bytes = readInitializer(M, Init);
      std::optional<StorageType> Stored = storageOf(int(Init.Type));
      if (Bytes && Stored)
        V.Data = std::make_shared<const HostTensor>(
            decodeTensor(*Type, V.Dims, Bytes->data(), *Stored));
      else if (!Bytes)
        consumeError(Bytes.takeError()); // Not there: stays unknown.
    }
    bind(Init.Name, G.addValue(std::move(V)));
  }
  return Error::success();
}

Expected<Attributes> Importer::attributesOf(const dsc::Node &N) {
  Attributes A;
  if (!N.Proto)
    return A;
  for (const onnx::AttributeProto &P : N.Proto->attribute()) {
    const std::string &K = P.name();
    switch (P.type()) {
    case onnx::AttributeProto_AttributeType_INT:
      A.set(K, P.i());
      break;
    case onnx::AttributeProto_AttributeType_INTS:
      A.set(K, std::vector<int64_t>(P.ints().begin(), P.ints().end()));
      break;
    case onnx::AttributeProto_AttributeType_FLOAT:
      A.setFloat(K, P.f());
      break;
    case onnx::AttributeProto_AttributeType_FLOATS:
      A.Floats[K].assign(P.floats().begin(), P.floats().end());
      break;
    case onnx::AttributeProto_AttributeType_STRING:
      A.setString(K, P.s());
      break;
    case onnx::AttributeProto_AttributeType_TENSOR: {
      // ConstantOfShape's value: one element, and its type.
      Expected<HostTensor> T = tensorFromProto(P.t());
      if (!T)
        return createStringError(inconvertibleErrorCode(),
                                 "node '%s' (%s): attribute '%s': %s",
                                 N.Name.c_str(), N.OpType.c_str(), K.c_str(),
                                 toString(T.takeError()).c_str());
      if (T->numel() == 1) {
        A.setFloat(K, T->at(0));
        A.set(K + "_type", int64_t(T->type()));
      }
      break;
    }
    default:
      break; // Graphs and string lists: no op dsc trains has them.
    }
  }
  return A;
}

Expected<ValueId> Importer::input(const dsc::Node &N, unsigned I) {
  const std::string &Name = N.Inputs[I];
  if (Name.empty())
    return NoValue;
  auto It = ByName.find(Name);
  if (It == ByName.end())
    return createStringError(inconvertibleErrorCode(),
                             "node '%s' (%s) reads '%s', which nothing "
                             "defines",
                             N.Name.c_str(), N.OpType.c_str(), Name.c_str());
  return It->second;
}

Expected<std::vector<ValueId>>
Importer::emit(StringRef Op, std::vector<ValueId> Ins, Attributes A,
               unsigned Outputs, const dsc::Node &From, StringRef Suffix) {
  Expected<std::vector<ValueId>> Out =
      G.addNode(Op, std::move(Ins), std::move(A), Outputs,
                From.Name + Suffix.str(), From.Scope);
  if (!Out)
    return explain(Out.takeError());
  Node &N = G.Nodes.back();
  const OpDef &D = *N.Def;
  // Shape and Size read only their input's shape, CastLike only its
  // second input's type.
  bool ShapeOnly = N.Op == "Shape" || N.Op == "Size";
  bool Known = true;
  for (size_t K = 0; K < N.Inputs.size(); ++K) {
    ValueId V = N.Inputs[K];
    if (!(N.Op == "CastLike" && K == 1))
      Known &= V == NoValue || G.Values[V].known();
  }
  if (!D.Eval || (D.Flags & Random) || !(Known || ShapeOnly))
    return Out;
  // Fold: every input is known.
  std::vector<const HostTensor *> In;
  for (ValueId V : N.Inputs)
    In.push_back(V == NoValue || ShapeOnly || !G.Values[V].known()
                     ? nullptr
                     : G.Values[V].Data.get());
  std::vector<HostTensor> Results;
  if (Error E = evaluate(G, N, In, Results))
    return explain(std::move(E));
  N.Dead = true;
  for (size_t K = 0; K < Results.size(); ++K) {
    Value &V = G.Values[N.Outputs[K]];
    V.Kind = ValueKind::Constant;
    V.Producer = -1;
    V.Data = std::make_shared<const HostTensor>(std::move(Results[K]));
  }
  return Out;
}

Error Importer::importGemm(const dsc::Node &N, std::vector<ValueId> Ins,
                           const Attributes &A) {
  // Y = alpha * A' . B' + beta * C, with A' and B' optionally transposed.
  Attributes Swap;
  Swap.set("perm", std::vector<int64_t>{1, 0});
  ValueId X = Ins[0], W = Ins[1];
  if (A.i("transA", 0)) {
    auto T = emit1("Transpose", {X}, Swap, N, ".a");
    if (!T)
      return T.takeError();
    X = *T;
  }
  if (A.i("transB", 0)) {
    auto T = emit1("Transpose", {W}, Swap, N, ".b");
    if (!T)
      return T.takeError();
    W = *T;
  }
  auto Y = emit1("MatMul", {X, W}, {}, N, ".mm");
  if (!Y)
    return Y.takeError();
  ValueId Out = *Y;
  if (double Alpha = A.f("alpha", 1.0); Alpha != 1.0) {
    auto S = emit1("Mul", {Out, G.addScalar(Alpha)}, {}, N, ".alpha");
    if (!S)
      return S.takeError();
    Out = *S;
  }
  if (Ins.size() > 2 && Ins[2] != NoValue) {
    ValueId Bias = Ins[2];
    if (double Beta = A.f("beta", 1.0); Beta != 1.0) {
      auto S = emit1("Mul", {Bias, G.addScalar(Beta)}, {}, N, ".beta");
      if (!S)
        return S.takeError();
      Bias = *S;
    }
    auto S = emit1("Add", {Out, Bias}, {}, N, "");
    if (!S)
      return S.takeError();
    Out = *S;
  }
  bind(N.Outputs[0], Out);
  return Error::success();
}

Error Importer::importConv(const dsc::Node &N, std::vector<ValueId> Ins,
                           const Attributes &A) {
  // A patch projection (kernel == stride, no padding) is a matrix product
  // over the image's patches; any other convolution is not trained.
  const Shape X = G.Values[Ins[0]].Dims, W = G.Values[Ins[1]].Dims;
  auto Refuse = [&](StringRef Why) {
    return createStringError(
        inconvertibleErrorCode(),
        "node '%s' (Conv in %s): %s; dsc trains convolutions only as patch "
        "projections (kernel equal to stride, no padding, no dilation, one "
        "group), as ViT uses them",
        N.Name.c_str(), N.Scope.c_str(), Why.str().c_str());
  };
  if (X.size() != 4 || W.size() != 4)
    return Refuse("not a 2-D convolution");
  std::vector<int64_t> K = A.ints("kernel_shape").value_or(
      std::vector<int64_t>{W[2], W[3]});
  std::vector<int64_t> S = A.ints("strides").value_or(std::vector<int64_t>{1, 1});
  std::vector<int64_t> P = A.ints("pads").value_or(std::vector<int64_t>(4, 0));
  std::vector<int64_t> D =
      A.ints("dilations").value_or(std::vector<int64_t>{1, 1});
  if (K != std::vector<int64_t>{W[2], W[3]} || S != K ||
      P != std::vector<int64_t>(4, 0) || D != std::vector<int64_t>{1, 1} ||
      A.i("group", 1) != 1 || X[2] % K[0] || X[3] % K[1] || X[1] != W[1])
    return Refuse("its kernel, stride, padding, dilation or groups differ");
  int64_t B = X[0], C = X[1], Hp = X[2] / K[0], Wp = X[3] / K[1], Out = W[0];
  auto Step = [&](StringRef Op, std::vector<ValueId> In, Attributes At,
                  StringRef Suffix) { return emit1(Op, In, At, N, Suffix); };
  Attributes Perm;
  auto X1 = Step("Reshape", {Ins[0], ints({B, C, Hp, K[0], Wp, K[1]})}, {},
                 ".patches");
  if (!X1)
    return X1.takeError();
  Perm.set("perm", std::vector<int64_t>{0, 2, 4, 1, 3, 5});
  auto X2 = Step("Transpose", {*X1}, Perm, ".patches_t");
  if (!X2)
    return X2.takeError();
  auto X3 = Step("Reshape", {*X2, ints({B, Hp * Wp, C * K[0] * K[1]})}, {},
                 ".rows");
  if (!X3)
    return X3.takeError();
  auto W1 = Step("Reshape", {Ins[1], ints({Out, C * K[0] * K[1]})}, {},
                 ".w");
  if (!W1)
    return W1.takeError();
  Attributes Swap;
  Swap.set("perm", std::vector<int64_t>{1, 0});
  auto W2 = Step("Transpose", {*W1}, Swap, ".w_t");
  if (!W2)
    return W2.takeError();
  auto Y = Step("MatMul", {*X3, *W2}, {}, ".mm");
  if (!Y)
    return Y.takeError();
  ValueId R = *Y;
  if (Ins.size() > 2 && Ins[2] != NoValue) {
    auto S2 = Step("Add", {R, Ins[2]}, {}, ".bias");
    if (!S2)
      return S2.takeError();
    R = *S2;
  }
  Attributes Back;
  Back.set("perm", std::vector<int64_t>{0, 2, 1});
  auto Y2 = Step("Transpose", {R}, Back, ".channels");
  if (!Y2)
    return Y2.takeError();
  auto Y3 = Step("Reshape", {*Y2, ints({B, Out, Hp, Wp})}, {}, "");
  if (!Y3)
    return Y3.takeError();
  bind(N.Outputs[0], *Y3);
  return Error::success();
}

Error Importer::importSplitToSequence(const dsc::Node &N,
                                      std::vector<ValueId> Ins,
                                      const Attributes &A) {
  const Shape X = G.Values[Ins[0]].Dims;
  int64_t Axis = A.i("axis", 0);
  if (Axis < 0)
    Axis += int64_t(X.size());
  if (Axis < 0 || Axis >= int64_t(X.size()))
    return createStringError(inconvertibleErrorCode(),
                             "node '%s' (SplitToSequence): axis out of range",
                             N.Name.c_str());
  int64_t Dim = X[size_t(Axis)];
  std::vector<int64_t> Sizes;
  bool Squeeze = false;
  if (Ins.size() < 2 || Ins[1] == NoValue) {
    Sizes.assign(size_t(Dim), 1);
    Squeeze = !A.i("keepdims", 1);
  } else {
    const Value &S = G.Values[Ins[1]];
    if (!S.known())
      return createStringError(inconvertibleErrorCode(),
                               "node '%s' (SplitToSequence): its split sizes "
                               "are computed at run time",
                               N.Name.c_str());
    std::vector<int64_t> V = S.Data->ints();
    if (S.Dims.empty()) { // Chunks of one size, the last smaller.
      for (int64_t At = 0; At < Dim && V[0] > 0; At += V[0])
        Sizes.push_back(std::min(V[0], Dim - At));
    } else {
      Sizes = V;
    }
  }
  Attributes SA;
  SA.set("axis", Axis).set("split", Sizes);
  auto Parts = emit("Split", {Ins[0]}, SA, unsigned(Sizes.size()), N, "");
  if (!Parts)
    return Parts.takeError();
  std::vector<ValueId> Seq = *Parts;
  if (Squeeze)
    for (size_t K = 0; K < Seq.size(); ++K) {
      auto S = emit1("Squeeze", {Seq[K], ints({Axis})}, {}, N,
                     ".squeeze" + std::to_string(K));
      if (!S)
        return S.takeError();
      Seq[K] = *S;
    }
  Sequences[N.Outputs[0]] = Seq;
  return Error::success();
}

Error Importer::importNode(const dsc::Node &N) {
  if (!N.Domain.empty() && N.Domain != "ai.onnx")
    return createStringError(inconvertibleErrorCode(),
                             "node '%s' (%s.%s in %s): dsc has no rule for "
                             "operators of domain '%s'",
                             N.Name.c_str(), N.Domain.c_str(),
                             N.OpType.c_str(), N.Scope.c_str(),
                             N.Domain.c_str());
  Expected<Attributes> A = attributesOf(N);
  if (!A)
    return A.takeError();
  if (N.OpType == "Constant") {
    const onnx::AttributeProto *Value = attribute(N, "value");
    HostTensor T;
    if (Value && Value->type() == onnx::AttributeProto_AttributeType_TENSOR) {
      Expected<HostTensor> H = tensorFromProto(Value->t());
      if (!H)
        return createStringError(inconvertibleErrorCode(),
                                 "node '%s' (Constant): %s", N.Name.c_str(),
                                 toString(H.takeError()).c_str());
      T = std::move(*H);
    } else if (A->Floats.count("value_float")) {
      T = HostTensor::scalar(DType::F32, A->f("value_float", 0));
    } else if (A->Floats.count("value_floats")) {
      std::vector<double> V = A->Floats["value_floats"];
      T = HostTensor::fromFloats({int64_t(V.size())},
                                 std::vector<float>(V.begin(), V.end()));
    } else if (A->Ints.count("value_int")) {
      T = HostTensor::fromInts(DType::I64, {}, {A->i("value_int", 0)});
    } else if (A->Ints.count("value_ints")) {
      std::vector<int64_t> V = *A->ints("value_ints");
      T = HostTensor::fromInts(DType::I64, {int64_t(V.size())}, V);
    } else {
      return createStringError(inconvertibleErrorCode(),
                               "node '%s' (Constant): a kind of constant dsc "
                               "does not read",
                               N.Name.c_str());
    }
    bind(N.Outputs[0], G.addConstant(std::move(T), N.Outputs[0]));
    return Error::success();
  }
  if (N.OpType == "SequenceAt") {
    auto It = Sequences.find(N.Inputs[0]);
    Expected<ValueId> Pos = input(N, 1);
    if (!Pos)
      return Pos.takeError();
    if (It == Sequences.end() || !G.Values[*Pos].known())
      return createStringError(inconvertibleErrorCode(),
                               "node '%s' (SequenceAt): takes a sequence dsc "
                               "did not make, or a position known only at "
                               "run time",
                               N.Name.c_str());
    int64_t P = int64_t(G.Values[*Pos].Data->at(0));
    int64_t Size = int64_t(It->second.size());
    if (P < 0)
      P += Size;
    if (P < 0 || P >= Size)
      return createStringError(inconvertibleErrorCode(),
                               "node '%s' (SequenceAt): position out of range",
                               N.Name.c_str());
    bind(N.Outputs[0], It->second[size_t(P)]);
    return Error::success();
  }
  std::vector<ValueId> Ins;
  for (unsigned I = 0; I < N.Inputs.size(); ++I) {
    Expected<ValueId> V = input(N, I);
    if (!V)
      return V.takeError();
    Ins.push_back(*V);
  }
  if (N.OpType == "Gemm")
    return importGemm(N, std::move(Ins), *A);
  if (N.OpType == "Conv")
    return importConv(N, std::move(Ins), *A);
  if (N.OpType == "SplitToSequence")
    return importSplitToSequence(N, std::move(Ins), *A);
  unsigned Outputs = unsigned(N.Outputs.size());
  if (N.OpType == "LayerNormalization")
    Outputs = 3; // Mean and InvStdDev: what its gradient needs.
  if (N.OpType == "Dropout") {
    A->set("dsc_stream", int64_t(Streams++));
    // Ratio 0 or inference mode: the identity (canonicalize drops it).
  }
  auto Out = emit(N.OpType, std::move(Ins), std::move(*A), Outputs, N);
  if (!Out)
    return Out.takeError();
  for (size_t K = 0; K < N.Outputs.size(); ++K)
    if (!N.Outputs[K].empty()) {
      G.Values[(*Out)[K]].Name = N.Outputs[K];
      bind(N.Outputs[K], (*Out)[K]);
    }
  return Error::success();
}

Expected<Graph> Importer::run() {
  if (Error E = importInputs())
    return E;
  if (Error E = importInitializers())
    return E;
  for (const dsc::Node &N : M.Nodes)
    if (Error E = importNode(N))
      return E;
  for (const ValueInfo &Out : M.Outputs) {
    auto It = ByName.find(Out.Name);
    if (It == ByName.end())
      return createStringError(inconvertibleErrorCode(),
                               "the model's output '%s' is never computed",
                               Out.Name.c_str());
    G.Outputs.push_back(It->second);
  }
  G.removeDeadNodes();
  return std::move(G);
}

} // namespace

Expected<Graph> importGraph(const Model &M, const ModelFacts &Facts,
                            const ImportOptions &Options) {
  return Importer(M, Facts, Options).run();
}

} // namespace dsc::compute
