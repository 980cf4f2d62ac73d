//===- Graph.h - The compute IR: values and the nodes between them -*- C++ -*-===//
//
// The training program before it becomes kernels: an SSA graph whose every
// value has a concrete shape (the model's dims are bound when it is
// imported). Nodes are ONNX operators as the exporters wrote them, and
// dsc's own operators (dsc.Attention, dsc.CrossEntropy, the backward
// operators autodiff emits, ...); the registry (Ops.h) defines each once.
//
// Nodes are kept in program order. A pass that replaces nodes gives the
// new ones the Order of what they replace and calls sortNodes(), which
// restores a topological order that keeps every untouched node where it
// was.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_GRAPH_H
#define DSC_COMPUTE_GRAPH_H

#include "dsc/Compute/Tensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace dsc::compute {

struct OpDef;

using ValueId = uint32_t;
constexpr ValueId NoValue = UINT32_MAX;

enum class ValueKind : uint8_t {
  Input,    ///< A model input (token ids, pixels), new every micro step.
  Target,   ///< What the loss compares with (labels), new every micro step.
  Param,    ///< A parameter of the model, trainable or frozen.
  Constant, ///< Fixed for the whole run: Data holds it when known.
  Computed, ///< Written by a node.
};

struct Value {
  std::string Name;
  Shape Dims;
  DType Type = DType::F32;
  ValueKind Kind = ValueKind::Computed;
  int32_t Producer = -1;   ///< Index of the node writing it.
  int32_t Param = -1;      ///< Index into Graph::Params.
  /// A constant's elements. Null for a Constant means the model names a
  /// buffer whose data its file does not carry (a graph-only export).
  std::shared_ptr<const HostTensor> Data;

  bool isFloat() const { return plan::isFloatType(Type); }
  bool known() const { return Kind == ValueKind::Constant && Data; }
};

/// A node's attributes by name: integer lists, float lists, strings.
struct Attributes {
  std::map<std::string, std::vector<int64_t>> Ints;
  std::map<std::string, std::vector<double>> Floats;
  std::map<std::string, std::string> Strings;

  bool has(llvm::StringRef Name) const;
  int64_t i(llvm::StringRef Name, int64_t Default) const;
  std::optional<std::vector<int64_t>> ints(llvm::StringRef Name) const;
  double f(llvm::StringRef Name, double Default) const;
  std::string s(llvm::StringRef Name, std::string Default = "") const;
  Attributes &set(llvm::StringRef Name, int64_t V);
  Attributes &set(llvm::StringRef Name, std::vector<int64_t> V);
  Attributes &setFloat(llvm::StringRef Name, double V);
  Attributes &setString(llvm::StringRef Name, std::string V);
};

/// Where a node comes from in the training step.
enum class Phase : uint8_t { Forward, Backward };

struct Node {
  std::string Op;
  const OpDef *Def = nullptr;
  std::vector<ValueId> Inputs; ///< NoValue for an omitted optional input.
  std::vector<ValueId> Outputs;
  Attributes A;
  std::string Name;  ///< The ONNX node's name, or made up.
  std::string Scope; ///< The module that made it ("transformer.h.3.attn").
  Phase Ph = Phase::Forward;
  /// A backward node: the forward node whose gradient it computes.
  int32_t Origin = -1;
  /// Sort key: program position (see sortNodes).
  double Order = 0;
  bool Dead = false;
};

struct ParamInfo {
  std::string Name;
  ValueId Value = NoValue;
  bool Trainable = true;
  /// Its gradient, once autodiff has run (NoValue: frozen or unused).
  ValueId Grad = NoValue;
};

class Graph {
public:
  std::vector<Value> Values;
  std::vector<Node> Nodes;
  std::vector<ValueId> Inputs, Targets, Outputs;
  std::vector<ParamInfo> Params;
  /// The scalar the step minimizes (set by appendLoss).
  ValueId Loss = NoValue;
  /// What bound the model's dims: ("batch", 16), ("sequence", 1024).
  std::vector<std::pair<std::string, int64_t>> Bindings;

  ValueId addValue(Value V);
  ValueId addConstant(HostTensor T, llvm::StringRef Name = "");
  /// A scalar constant of type T.
  ValueId addScalar(double V, DType T = DType::F32);

  /// Appends a node of a registered operator with NumOutputs outputs and
  /// infers their shapes; the error names the node and what is wrong.
  llvm::Expected<std::vector<ValueId>>
  addNode(llvm::StringRef Op, std::vector<ValueId> Inputs, Attributes A,
          unsigned NumOutputs = 1, llvm::StringRef Name = "",
          llvm::StringRef Scope = "", double Order = -1);

  /// Per value, the live nodes that read it.
  std::vector<std::vector<uint32_t>> uses() const;
  /// Points every live reader (and the graph's outputs, targets, loss and
  /// parameter gradients) of From at To.
  void replaceAllUses(ValueId From, ValueId To);
  /// Drops dead nodes, and nodes whose outputs nothing needs.
  void removeDeadNodes();
  /// Restores topological order, keeping each node's Order where the
  /// dependencies allow. Fails on a cycle.
  llvm::Error sortNodes();
  /// After nodes moved (NewIndex: old index -> new, -1 gone): backward
  /// nodes' Origin follows its forward node.
  void renumberOrigins(const std::vector<int32_t> &NewIndex);

  /// "node 'n' (MatMul in transformer.h.0.attn)": how messages name a
  /// node.
  std::string describe(const Node &N) const;
  llvm::Error nodeError(const Node &N, const llvm::Twine &Message) const;

  /// The IR as text, one node per line (docs/compute.md shows the form).
  void print(llvm::raw_ostream &OS) const;
  std::string valueRef(ValueId V) const;
};

} // namespace dsc::compute

#endif
