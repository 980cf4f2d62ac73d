//===- Model.h - An ONNX model, as dsc needs it -----------------*- C++ -*-===//
//
// What dsc keeps of an ONNX file: the graph's nodes in topological order,
// its inputs and outputs, declared value types, and for every initializer
// its name, dtype, dims and where its data lives -- never the data itself.
// The protobuf the importer read (with initializer payloads stripped) stays
// available for node attributes.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_MODEL_H
#define DSC_GRAPH_MODEL_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class AttributeProto;
class ModelProto;
class NodeProto;
} // namespace onnx

namespace dsc {

/// ONNX TensorProto.DataType values, including those newer than the ONNX
/// library dsc builds with.
enum class DType : uint8_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
};

/// Bits per element (0 for strings and unknown types).
unsigned dtypeBits(DType T);
llvm::StringRef dtypeName(DType T);
/// Whether values of T can be trained (floating point of any width).
bool isFloating(DType T);
/// T from an ONNX data_type integer; Undefined when out of range.
DType dtypeFromOnnx(int64_t V);

/// One dimension: a known size, or a symbol (dim_param), or unknown. Shape
/// arithmetic reuses it for the values of small integer tensors, which can
/// be negative (a Reshape's -1), so "unknown" is a value of its own.
struct Dim {
  static constexpr int64_t Unknown = INT64_MIN;
  int64_t Value = Unknown;
  std::string Symbol;

  bool known() const { return Value != Unknown; }
  static Dim of(int64_t V) { return {V, {}}; }
  static Dim symbol(llvm::StringRef S) { return {Unknown, S.str()}; }
};

struct TensorType {
  DType Type = DType::Undefined;
  bool Ranked = false;
  std::vector<Dim> Shape;
};

struct ValueInfo {
  std::string Name;
  TensorType Type;
};

struct Initializer {
  std::string Name;
  DType Type = DType::Undefined;
  std::vector<int64_t> Dims;
  /// The data is in another file (data_location EXTERNAL).
  bool External = false;
  std::string Location;
  int64_t Offset = 0;
  int64_t Length = -1;
  /// Inline data (raw_data, or packed float_data, which is the same bytes
  /// for fp32): its byte range in the ONNX file; -1 when there is none.
  int64_t PayloadOffset = -1;
  int64_t PayloadLength = -1;

  /// Elements (1 for a scalar).
  uint64_t numel() const;
  uint64_t bytes() const { return numel() * dtypeBits(Type) / 8; }
};

struct Node {
  std::string Name;
  std::string OpType;
  std::string Domain;
  std::vector<std::string> Inputs;
  std::vector<std::string> Outputs;
  /// Module path of the code that made the node (dynamo's name scopes, or
  /// the TorchScript exporter's /a/b/c node names), "" when unknown.
  std::string Scope;
  const onnx::NodeProto *Proto = nullptr;
};

/// A node's attribute of that name (null when it has none), and the
/// integer forms read from it (nullopt when absent or of another type):
/// the one reader of ONNX attributes for shapes, parameter analysis and
/// the compute import.
const onnx::AttributeProto *attribute(const Node &N, llvm::StringRef Name);
std::optional<int64_t> intAttribute(const Node &N, llvm::StringRef Name);
std::optional<std::vector<int64_t>> intsAttribute(const Node &N,
                                                  llvm::StringRef Name);

class Model {
public:
  std::string Path;
  int64_t IrVersion = 0;
  /// Opset per domain ("" is the default ONNX domain).
  std::map<std::string, int64_t> Opsets;
  std::string Producer;
  std::vector<ValueInfo> Inputs;
  std::vector<ValueInfo> Outputs;
  std::vector<Initializer> Initializers;
  /// In topological order (the importer checks it and sorts if needed).
  std::vector<Node> Nodes;
  /// Declared types (graph value_info, inputs and outputs) by tensor name.
  llvm::StringMap<TensorType> DeclaredTypes;
  /// Local functions the graph may call (dynamo's module functions).
  size_t FunctionCount = 0;
  /// The protobuf, initializer payloads stripped.
  std::shared_ptr<onnx::ModelProto> Proto;

  int64_t opset(llvm::StringRef Domain = "") const;
  const Initializer *initializer(llvm::StringRef Name) const;
  /// Index of the node producing Tensor, or -1 (a graph input, an
  /// initializer, or nothing).
  int producer(llvm::StringRef Tensor) const;

private:
  friend class ModelBuilder;
  llvm::StringMap<unsigned> InitializerIndex;
  llvm::StringMap<unsigned> ProducerIndex;
};

/// Reads an ONNX file. Initializer data (raw or in fields) is skipped
/// without being kept; external data files are never opened. Malformed
/// files give an error that names the file, and the node or tensor at
/// fault, and says what to do.
llvm::Expected<Model> importOnnx(llvm::StringRef Path);

/// The same, from bytes already in memory; Path is used in messages and to
/// judge external data locations.
llvm::Expected<Model> importOnnxBuffer(llvm::StringRef Bytes,
                                       llvm::StringRef Path);

/// The raw little-endian bytes of an initializer's data, from the ONNX
/// file (inline) or its external data file: what the graph was exported
/// with. Fails, naming the tensor and the file, when the data is not
/// there (a graph-only export) or is stored in a form dsc does not read.
llvm::Expected<std::vector<char>> readInitializer(const Model &M,
                                                  const Initializer &I);

/// Files above this cannot be one protobuf message (ONNX's 2 GiB limit).
constexpr uint64_t MaxSingleFileModelBytes = (uint64_t(1) << 31) - 1;

} // namespace dsc

#endif
