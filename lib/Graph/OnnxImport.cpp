//===- OnnxImport.cpp - Read an ONNX file without its weights -------------===//
//
// The protobuf is walked at the wire level (protobuf's CodedInputStream) so
// that initializer payloads -- raw_data and the typed data fields -- are
// skipped, not copied: a model reads in the time its graph takes, whatever
// the size of its weights. Everything else goes through libonnx's generated
// messages. Fields that libonnx (ONNX 1.12, IR 8) does not know stay in the
// messages' unknown fields; the IR 10 node metadata that holds PyTorch's
// module scopes is read from there.
//
//===----------------------------------------------------------------------===//

#include "dsc/Graph/Model.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/wire_format_lite.h>

#include <climits>
#include <deque>

using namespace llvm;
using google::protobuf::io::CodedInputStream;
using WFL = google::protobuf::internal::WireFormatLite;

namespace dsc {

namespace {

/// Integer initializer payloads up to this size are kept: they are shape,
/// axis and index constants the compute import folds. Floating-point
/// payloads (weights) are never kept.
constexpr uint32_t MaxKeptPayloadBytes = 1024;

Error fail(StringRef Path, const Twine &Message) {
  return createStringError(inconvertibleErrorCode(), "%s: %s",
                           Path.str().c_str(), Message.str().c_str());
}

/// Appends to Rest every field of the message at In that Handle does not
/// consume. Returns false on malformed wire data.
template <typename HandleFn>
bool scanMessage(CodedInputStream &In, const uint8_t *Base, std::string &Rest,
                 HandleFn Handle) {
  while (true) {
    int Start = In.CurrentPosition();
    uint32_t Tag = In.ReadTag();
    if (Tag == 0)
      return In.BytesUntilLimit() <= 0 || In.ConsumedEntireMessage();
    int Field = WFL::GetTagFieldNumber(Tag);
    WFL::WireType Type = WFL::GetTagWireType(Tag);
    int Handled = Handle(Field, Type, In);
    if (Handled < 0)
      return false;
    if (Handled)
      continue;
    if (!WFL::SkipField(&In, Tag))
      return false;
    Rest.append(reinterpret_cast<const char *>(Base) + Start,
                In.CurrentPosition() - Start);
  }
}

/// Reads a length-delimited sub-message with Parse; 1 on success, -1 on
/// malformed data.
template <typename ParseFn>
int readNested(CodedInputStream &In, ParseFn Parse) {
  uint32_t Length;
  if (!In.ReadVarint32(&Length))
    return -1;
  CodedInputStream::Limit L = In.PushLimit(int(Length));
  bool OK = Parse();
  OK = OK && In.BytesUntilLimit() == 0;
  In.PopLimit(L);
  return OK ? 1 : -1;
}

/// Where an inline payload (raw_data, packed float_data) lies in the
/// file, kept as two private external_data entries of the stripped proto
/// (its data_location stays DEFAULT) for readInitializer.
constexpr const char *PayloadOffsetKey = "dsc.payload_offset";
constexpr const char *PayloadLengthKey = "dsc.payload_length";

void notePayload(onnx::TensorProto &T, int Offset, uint32_t Length) {
  auto Add = [&](const char *Key, uint64_t V) {
    onnx::StringStringEntryProto *E = T.add_external_data();
    E->set_key(Key);
    E->set_value(std::to_string(V));
  };
  Add(PayloadOffsetKey, uint64_t(Offset));
  Add(PayloadLengthKey, Length);
}

/// A TensorProto without its data: dims, type, name, where the data is.
bool parseStrippedTensor(CodedInputStream &In, onnx::TensorProto &T) {
  std::string Unused;
  return scanMessage(
      In, nullptr, Unused, [&](int Field, WFL::WireType Type, auto &S) -> int {
        switch (Field) {
        case 1: { // dims, packed or not.
          if (Type == WFL::WIRETYPE_VARINT) {
            uint64_t V;
            if (!S.ReadVarint64(&V))
              return -1;
            T.add_dims(int64_t(V));
            return 1;
          }
          return readNested(S, [&] {
            while (S.BytesUntilLimit() > 0) {
              uint64_t V;
              if (!S.ReadVarint64(&V))
                return false;
              T.add_dims(int64_t(V));
            }
            return true;
          });
        }
        case 2: {
          uint64_t V;
          if (!S.ReadVarint64(&V))
            return -1;
          T.set_data_type(int32_t(V));
          return 1;
        }
        case 8: {
          uint32_t Length;
          if (!S.ReadVarint32(&Length) ||
              !S.ReadString(T.mutable_name(), int(Length)))
            return -1;
          return 1;
        }
        case 13: {
          uint32_t Length;
          std::string Bytes;
          if (!S.ReadVarint32(&Length) || !S.ReadString(&Bytes, int(Length)) ||
              !T.add_external_data()->ParseFromString(Bytes))
            return -1;
          return 1;
        }
        case 14: {
          uint64_t V;
          if (!S.ReadVarint64(&V))
            return -1;
          T.set_data_location(onnx::TensorProto_DataLocation(V == 1));
          return 1;
        }
        case 9: { // raw_data: kept only when small (shape and axis
                  // constants); a weight is skipped without being read,
                  // and where it lies in the file is noted instead.
          uint32_t Length;
          if (!S.ReadVarint32(&Length))
            return -1;
          notePayload(T, S.CurrentPosition(), Length);
          // Fields arrive in number order, so data_type (2) is known here.
          if (Length > MaxKeptPayloadBytes ||
              isFloating(dtypeFromOnnx(T.data_type())))
            return S.Skip(int(Length)) ? 1 : -1;
          return S.ReadString(T.mutable_raw_data(), int(Length)) ? 1 : -1;
        }
        case 4: { // float_data: packed, it is raw little-endian floats.
          if (Type != WFL::WIRETYPE_LENGTH_DELIMITED)
            return WFL::SkipField(&S, WFL::MakeTag(Field, Type)) ? 1 : -1;
          uint32_t Length;
          if (!S.ReadVarint32(&Length))
            return -1;
          notePayload(T, S.CurrentPosition(), Length);
          return S.Skip(int(Length)) ? 1 : -1;
        }
        case 7: { // int64_data, packed or not: small ones kept likewise.
          if (Type == WFL::WIRETYPE_VARINT) {
            uint64_t V;
            if (!S.ReadVarint64(&V))
              return -1;
            if (T.int64_data_size() * 8 < int(MaxKeptPayloadBytes))
              T.add_int64_data(int64_t(V));
            return 1;
          }
          uint32_t Length;
          if (!S.ReadVarint32(&Length))
            return -1;
          if (Length > MaxKeptPayloadBytes)
            return S.Skip(int(Length)) ? 1 : -1;
          CodedInputStream::Limit L = S.PushLimit(int(Length));
          while (S.BytesUntilLimit() > 0) {
            uint64_t V;
            if (!S.ReadVarint64(&V)) {
              S.PopLimit(L);
              return -1;
            }
            T.add_int64_data(int64_t(V));
          }
          S.PopLimit(L);
          return 1;
        }
        default: { // Other payloads and the rest: skipped, never copied.
          uint32_t Tag = WFL::MakeTag(Field, Type);
          return WFL::SkipField(&S, Tag) ? 1 : -1;
        }
        }
      });
}

bool parseStrippedGraph(CodedInputStream &In, const uint8_t *Base,
                        onnx::GraphProto &G) {
  std::string Rest;
  std::vector<onnx::TensorProto> Tensors;
  bool OK = scanMessage(In, Base, Rest,
                        [&](int Field, WFL::WireType, auto &S) -> int {
                          if (Field != 5) // initializer
                            return 0;
                          Tensors.emplace_back();
                          return readNested(S, [&] {
                            return parseStrippedTensor(S, Tensors.back());
                          });
                        });
  if (!OK || !G.ParseFromString(Rest))
    return false;
  for (onnx::TensorProto &T : Tensors)
    *G.add_initializer() = std::move(T);
  return true;
}

bool parseStrippedModel(const uint8_t *Data, size_t Size,
                        onnx::ModelProto &M) {
  CodedInputStream In(Data, int(Size));
  In.SetTotalBytesLimit(INT_MAX);
  std::string Rest;
  onnx::GraphProto Graph;
  bool HasGraph = false;
  bool OK = scanMessage(In, Data, Rest,
                        [&](int Field, WFL::WireType Type, auto &S) -> int {
                          if (Field != 7 ||
                              Type != WFL::WIRETYPE_LENGTH_DELIMITED)
                            return 0;
                          HasGraph = true;
                          return readNested(S, [&] {
                            return parseStrippedGraph(S, Data, Graph);
                          });
                        });
  if (!OK || !In.ConsumedEntireMessage() || !M.ParseFromString(Rest))
    return false;
  if (HasGraph)
    *M.mutable_graph() = std::move(Graph);
  return true;
}

TensorType typeOf(const onnx::TypeProto &T) {
  TensorType Out;
  if (!T.has_tensor_type())
    return Out;
  const onnx::TypeProto_Tensor &TT = T.tensor_type();
  Out.Type = dtypeFromOnnx(TT.elem_type());
  if (!TT.has_shape())
    return Out;
  Out.Ranked = true;
  for (const onnx::TensorShapeProto_Dimension &D : TT.shape().dim()) {
    if (D.has_dim_value())
      Out.Shape.push_back(Dim::of(D.dim_value()));
    else if (D.has_dim_param())
      Out.Shape.push_back(Dim::symbol(D.dim_param()));
    else
      Out.Shape.push_back(Dim());
  }
  return Out;
}

/// IR 10 keeps PyTorch's module scopes in node metadata (field 9), which
/// libonnx 1.12 does not know: read it from the unknown fields.
std::vector<std::pair<std::string, std::string>>
nodeMetadata(const onnx::NodeProto &N) {
  std::vector<std::pair<std::string, std::string>> Out;
  const google::protobuf::UnknownFieldSet &U =
      N.GetReflection()->GetUnknownFields(N);
  for (int I = 0; I < U.field_count(); ++I) {
    const google::protobuf::UnknownField &F = U.field(I);
    if (F.number() != 9 ||
        F.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto Entry;
    if (Entry.ParseFromString(F.length_delimited()))
      Out.emplace_back(Entry.key(), Entry.value());
  }
  return Out;
}

/// The innermost module of a node: from dynamo's name scopes, or from the
/// TorchScript exporter's node names (/model/h.0/attn/c_attn/MatMul).
std::string scopeOf(const onnx::NodeProto &N) {
  for (auto &[Key, Value] : nodeMetadata(N)) {
    if (Key != "pkg.torch.onnx.name_scopes")
      continue;
    // A Python list of the enclosing modules' full names, outermost first,
    // then the node's own name: ['', 'model', 'model.layers.0',
    // 'model.layers.0.self_attn', 'linear']. The innermost module is the
    // second last entry.
    std::vector<std::string> Parts;
    StringRef V = Value;
    while (true) {
      size_t Open = V.find('\'');
      if (Open == StringRef::npos)
        break;
      size_t Close = V.find('\'', Open + 1);
      if (Close == StringRef::npos)
        break;
      Parts.push_back(V.slice(Open + 1, Close).str());
      V = V.drop_front(Close + 1);
    }
    std::string Scope = Parts.size() >= 2 ? Parts[Parts.size() - 2] : "";
    // Nodes outside any module (dynamo's shape arithmetic).
    if (StringRef(Scope).startswith("_empty_nn_module_stack"))
      Scope.clear();
    return Scope;
  }
  StringRef Name = N.name();
  if (!Name.startswith("/"))
    return "";
  Name = Name.drop_front();
  size_t Last = Name.rfind('/');
  if (Last == StringRef::npos)
    return "";
  // Segments are module names, some already qualified by their parent
  // (/layer1/layer1.0/conv1): keep the longest qualified form.
  SmallVector<StringRef, 8> Segments;
  Name.take_front(Last).split(Segments, '/');
  std::string Scope;
  for (StringRef S : Segments) {
    if (!Scope.empty() && S.startswith(Scope + "."))
      Scope = S.str();
    else
      Scope += (Scope.empty() ? "" : ".") + S.str();
  }
  return Scope;
}

/// Checks an external data location the way a loader should: relative and
/// inside the model's folder; readInitializer opens nothing else.
Error checkLocation(StringRef Path, const Initializer &I) {
  StringRef L = I.Location;
  if (L.empty())
    return fail(Path, "initializer '" + I.Name +
                          "' keeps its data externally but names no file");
  if (sys::path::is_absolute(L, sys::path::Style::posix) ||
      sys::path::is_absolute(L, sys::path::Style::windows))
    return fail(Path, "initializer '" + I.Name +
                          "' points at the absolute path '" + L +
                          "'; external data must be relative to the model's "
                          "folder");
  int Depth = 0;
  for (auto It = sys::path::begin(L, sys::path::Style::posix),
            End = sys::path::end(L);
       It != End; ++It) {
    if (*It == "..")
      --Depth;
    else if (*It != ".")
      ++Depth;
    if (Depth < 0)
      return fail(Path, "initializer '" + I.Name + "' points outside the "
                                                   "model's folder ('" +
                            L + "'); dsc opens nothing outside it");
  }
  return Error::success();
}

} // namespace

class ModelBuilder {
public:
  static Expected<Model> build(std::shared_ptr<onnx::ModelProto> P,
                               StringRef Path);
};

/// The first of the model's names and labels that is not UTF-8, described
/// for an error; "" when all are. They reach dsc's JSON, YAML and SVG
/// output, none of which can carry arbitrary bytes.
static std::string notUtf8(const onnx::ModelProto &P) {
  auto Bad = [](const std::string &S) { return !json::isUTF8(S); };
  if (Bad(P.producer_name()) || Bad(P.producer_version()))
    return "the producer's name";
  const onnx::GraphProto &G = P.graph();
  for (int I = 0; I < G.initializer_size(); ++I)
    if (Bad(G.initializer(I).name()))
      return formatv("initializer {0}'s name", I);
  for (const auto *List : {&G.input(), &G.output(), &G.value_info()})
    for (const onnx::ValueInfoProto &V : *List)
      if (Bad(V.name()))
        return "a graph value's name";
  for (int I = 0; I < G.node_size(); ++I) {
    const onnx::NodeProto &N = G.node(I);
    bool Any = Bad(N.name()) || Bad(N.op_type()) || Bad(N.domain());
    for (const std::string &S : N.input())
      Any = Any || Bad(S);
    for (const std::string &S : N.output())
      Any = Any || Bad(S);
    for (auto &[Key, Value] : nodeMetadata(N))
      Any = Any || Bad(Key) || Bad(Value);
    if (Any)
      return formatv("node {0}'s name, operator, inputs, outputs or metadata",
                     I);
  }
  return "";
}

Expected<Model> ModelBuilder::build(std::shared_ptr<onnx::ModelProto> P,
                                    StringRef Path) {
  if (P->has_graph())
    if (std::string Where = notUtf8(*P); !Where.empty())
      return fail(Path, Where + " is not UTF-8 text: the file is damaged or "
                                "not an ONNX model an exporter wrote");
  Model M;
  M.Path = Path.str();
  M.Proto = P;
  M.IrVersion = P->ir_version();
  M.Producer = (P->producer_name() + " " + P->producer_version());
  for (const onnx::OperatorSetIdProto &O : P->opset_import())
    M.Opsets[O.domain() == "ai.onnx" ? "" : O.domain()] = O.version();
  M.FunctionCount = size_t(P->functions_size());
  if (!P->has_graph())
    return fail(Path, "the model has no graph");
  const onnx::GraphProto &G = P->graph();

  for (const onnx::TensorProto &T : G.initializer()) {
    Initializer I;
    I.Name = T.name();
    I.Type = dtypeFromOnnx(T.data_type());
    uint64_t Numel = 1;
    for (int64_t D : T.dims()) {
      if (D < 0)
        return fail(Path, "initializer '" + I.Name + "' has dimension " +
                              Twine(D) + "; dimensions cannot be negative");
      if (D && Numel > UINT64_MAX / 2 / uint64_t(D))
        return fail(Path, "initializer '" + I.Name +
                              "' has more elements than fit in 64 bits");
      Numel *= uint64_t(D);
      I.Dims.push_back(D);
    }
    I.External = T.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
    for (const onnx::StringStringEntryProto &E : T.external_data()) {
      if (E.key() == PayloadOffsetKey)
        StringRef(E.value()).getAsInteger(10, I.PayloadOffset);
      else if (E.key() == PayloadLengthKey)
        StringRef(E.value()).getAsInteger(10, I.PayloadLength);
      else if (E.key() == "location")
        I.Location = E.value();
      else if (E.key() == "offset")
        StringRef(E.value()).getAsInteger(10, I.Offset);
      else if (E.key() == "length")
        StringRef(E.value()).getAsInteger(10, I.Length);
    }
    if (I.External)
      if (Error E = checkLocation(Path, I))
        return E;
    if (!M.InitializerIndex.try_emplace(I.Name, M.Initializers.size()).second)
      return fail(Path, "initializer '" + I.Name + "' is defined twice");
    M.Initializers.push_back(std::move(I));
  }

  auto Declare = [&](const onnx::ValueInfoProto &V) -> Error {
    TensorType T = typeOf(V.type());
    for (const Dim &D : T.Shape)
      if (D.known() && D.Value < 0)
        return fail(Path, "tensor '" + V.name() + "' has dimension " +
                              Twine(D.Value));
    M.DeclaredTypes[V.name()] = T;
    return Error::success();
  };
  for (const onnx::ValueInfoProto &V : G.input()) {
    if (Error E = Declare(V))
      return E;
    if (!M.InitializerIndex.count(V.name()))
      M.Inputs.push_back({V.name(), M.DeclaredTypes[V.name()]});
  }
  for (const onnx::ValueInfoProto &V : G.output()) {
    if (Error E = Declare(V))
      return E;
    M.Outputs.push_back({V.name(), M.DeclaredTypes[V.name()]});
  }
  for (const onnx::ValueInfoProto &V : G.value_info())
    if (Error E = Declare(V))
      return E;

  // Nodes, then a topological order (Kahn): ONNX requires sorted graphs,
  // but an exporter bug should not send dsc into a loop.
  std::vector<Node> Nodes;
  StringMap<unsigned> Producer;
  for (const onnx::NodeProto &NP : G.node()) {
    Node N;
    N.Name = NP.name();
    N.OpType = NP.op_type();
    N.Domain = NP.domain() == "ai.onnx" ? "" : NP.domain();
    N.Inputs.assign(NP.input().begin(), NP.input().end());
    N.Outputs.assign(NP.output().begin(), NP.output().end());
    N.Scope = scopeOf(NP);
    N.Proto = &NP;
    for (const std::string &Out : N.Outputs) {
      if (Out.empty())
        continue;
      if (M.InitializerIndex.count(Out) ||
          !Producer.try_emplace(Out, Nodes.size()).second)
        return fail(Path, formatv("node {0} ({1} '{2}') writes '{3}', which "
                                  "another node or an initializer already "
                                  "defines",
                                  Nodes.size(), N.OpType, N.Name, Out));
    }
    Nodes.push_back(std::move(N));
  }
  StringSet<> GraphInputs;
  for (const onnx::ValueInfoProto &V : G.input())
    GraphInputs.insert(V.name());
  std::vector<unsigned> Pending(Nodes.size(), 0);
  std::vector<std::vector<unsigned>> Users(Nodes.size());
  for (unsigned I = 0; I < Nodes.size(); ++I) {
    for (const std::string &In : Nodes[I].Inputs) {
      if (In.empty() || GraphInputs.count(In) || M.InitializerIndex.count(In))
        continue;
      auto It = Producer.find(In);
      if (It == Producer.end())
        return fail(Path,
                    formatv("node {0} ({1} '{2}') reads '{3}', which no node, "
                            "graph input or initializer defines",
                            I, Nodes[I].OpType, Nodes[I].Name, In));
      ++Pending[I];
      Users[It->second].push_back(I);
    }
  }
  std::deque<unsigned> Ready;
  for (unsigned I = 0; I < Nodes.size(); ++I)
    if (!Pending[I])
      Ready.push_back(I);
  std::vector<unsigned> Order;
  while (!Ready.empty()) {
    unsigned I = Ready.front();
    Ready.pop_front();
    Order.push_back(I);
    for (unsigned U : Users[I])
      if (--Pending[U] == 0)
        Ready.push_back(U);
  }
  if (Order.size() != Nodes.size()) {
    for (unsigned I = 0; I < Nodes.size(); ++I)
      if (Pending[I])
        return fail(Path, formatv("the graph has a cycle through node {0} "
                                  "({1} '{2}'); ONNX graphs must be acyclic",
                                  I, Nodes[I].OpType, Nodes[I].Name));
  }
  // Keep the file's order when it is already topological (it nearly always
  // is): first use of a parameter then follows the exporter's order.
  bool Sorted = true;
  for (unsigned I = 0; I < Nodes.size() && Sorted; ++I)
    for (const std::string &In : Nodes[I].Inputs)
      if (auto It = Producer.find(In); It != Producer.end() && It->second > I)
        Sorted = false;
  if (Sorted)
    M.Nodes = std::move(Nodes);
  else
    for (unsigned I : Order)
      M.Nodes.push_back(std::move(Nodes[I]));
  for (unsigned I = 0; I < M.Nodes.size(); ++I)
    for (const std::string &Out : M.Nodes[I].Outputs)
      if (!Out.empty())
        M.ProducerIndex[Out] = I;
  for (const ValueInfo &O : M.Outputs)
    if (!M.ProducerIndex.count(O.Name) && !GraphInputs.count(O.Name) &&
        !M.InitializerIndex.count(O.Name))
      return fail(Path, "graph output '" + O.Name + "' is produced by no node");
  return M;
}

Expected<Model> importOnnxBuffer(StringRef Bytes, StringRef Path) {
  if (Bytes.size() > MaxSingleFileModelBytes)
    return fail(Path, formatv("{0} bytes: a single ONNX file cannot exceed 2 "
                              "GiB (protobuf's limit); export with external "
                              "data (torch.onnx.export(..., dynamo=True) and "
                              "ONNXProgram.save(path, external_data=True), or "
                              "onnx.save_model(m, path, "
                              "save_as_external_data=True))",
                              Bytes.size()));
  if (Bytes.empty())
    return fail(Path, "the file is empty; expected an ONNX model");
  auto Proto = std::make_shared<onnx::ModelProto>();
  if (!parseStrippedModel(reinterpret_cast<const uint8_t *>(Bytes.data()),
                          Bytes.size(), *Proto))
    return fail(Path, "not an ONNX model: the protobuf is malformed or "
                      "truncated (is this the right file, and was it copied "
                      "completely?)");
  if (!Proto->has_graph() && !Proto->has_ir_version())
    return fail(Path, "not an ONNX model: no graph and no IR version");
  return ModelBuilder::build(std::move(Proto), Path);
}

Expected<std::vector<char>> readInitializer(const Model &M,
                                           const Initializer &I) {
  uint64_t Want = I.bytes();
  std::string File = M.Path;
  int64_t Offset = I.PayloadOffset, Length = I.PayloadLength;
  if (I.External) {
    SmallString<256> Dir(M.Path);
    sys::path::remove_filename(Dir);
    sys::path::append(Dir, I.Location);
    File = std::string(Dir);
    Offset = I.Offset;
    Length = I.Length >= 0 ? I.Length : int64_t(Want);
  }
  if (Offset < 0)
    return fail(M.Path, "initializer '" + I.Name +
                            "' has no data in the file (a graph-only export, "
                            "or data dsc does not read); export the model "
                            "with its weights");
  if (uint64_t(Length) != Want)
    return fail(M.Path, formatv("initializer '{0}' has {1} bytes of data "
                                "where its shape and type need {2}",
                                I.Name, Length, Want));
  if (I.External) {
    // checkLocation saw the name; the file it resolves to (through any
    // symlink) must be a regular file inside the model's folder too.
    SmallString<256> Real, Folder(M.Path);
    sys::path::remove_filename(Folder);
    if (Folder.empty())
      Folder = ".";
    SmallString<256> RealFolder;
    if (std::error_code EC = sys::fs::real_path(File, Real))
      return fail(File, "cannot read the data of initializer '" + I.Name +
                            "': " + EC.message());
    if (std::error_code EC = sys::fs::real_path(Folder, RealFolder))
      return fail(Folder, EC.message());
    if (!RealFolder.endswith("/"))
      RealFolder += "/";
    if (!StringRef(Real).startswith(RealFolder))
      return fail(M.Path, "initializer '" + I.Name + "' names '" +
                              I.Location + "', which resolves to '" + Real +
                              "' outside the model's folder; dsc opens "
                              "nothing outside it");
    if (!sys::fs::is_regular_file(Real))
      return fail(File, "the data of initializer '" + I.Name +
                            "' is not a regular file");
  }
  // The slice must lie inside the file: a mapping past its end faults on
  // first touch (SIGBUS), and a short read would be zero-filled.
  uint64_t FileBytes = 0;
  if (std::error_code EC = sys::fs::file_size(File, FileBytes))
    return fail(File, "cannot read the data of initializer '" + I.Name +
                          "': " + EC.message());
  if (uint64_t(Offset) > FileBytes || FileBytes - uint64_t(Offset) < Want)
    return fail(File, formatv("the data of initializer '{0}' is truncated: "
                              "it needs bytes {1} to {2}, and the file holds "
                              "{3}",
                              I.Name, Offset, uint64_t(Offset) + Want,
                              FileBytes));
  // Read, not mapped: a file truncated while dsc reads it then fails the
  // read instead of faulting.
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer = MemoryBuffer::getFileSlice(
      File, uint64_t(Length), uint64_t(Offset), /*IsVolatile=*/true);
  if (!Buffer)
    return fail(File, "cannot read the data of initializer '" + I.Name +
                          "': " + Buffer.getError().message());
  StringRef B = (*Buffer)->getBuffer();
  if (B.size() != Want)
    return fail(File, "the data of initializer '" + I.Name +
                          "' is truncated");
  return std::vector<char>(B.begin(), B.end());
}

Expected<Model> importOnnx(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFile(Path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!Buffer)
    return fail(Path, "cannot read: " + Buffer.getError().message());
  return importOnnxBuffer((*Buffer)->getBuffer(), Path);
}

} // namespace dsc
