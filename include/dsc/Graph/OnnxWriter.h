//===- OnnxWriter.h - Build an ONNX graph node by node -----------*- C++ -*-===//
//
// What dsc-modelgen and the Hugging Face config builder share: weights as
// external data that is never written (dsc never reads it), int64
// constants, nodes named the way the TorchScript exporter names them
// (/scope/Op_N, from which the importer reads the module scope), and
// value_info with symbolic batch and sequence.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GRAPH_ONNXWRITER_H
#define DSC_GRAPH_ONNXWRITER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class GraphProto;
class NodeProto;
} // namespace onnx

namespace dsc {

class OnnxWriter {
public:
  /// Weights of WeightType (Float32, Float16 or BFloat16) as external data
  /// in WeightsFile; the default ONNX domain at Opset; produced by
  /// Producer at dsc's version.
  OnnxWriter(llvm::StringRef GraphName, llvm::StringRef Producer,
             int WeightType, llvm::StringRef WeightsFile, int Opset = 17);
  ~OnnxWriter();

  /// A weight of the writer's type at the next offset of the weights file.
  std::string weight(const std::string &Name, const std::vector<int64_t> &Dims);
  /// An int64 vector constant (shapes, axes) and a scalar one.
  std::string ints(const std::vector<int64_t> &V);
  std::string scalar(int64_t V);
  /// An fp32 constant of the given dims (empty: a scalar).
  std::string floats(const std::vector<float> &V,
                     const std::vector<int64_t> &Dims);
  /// A boolean scalar constant.
  std::string boolean(bool V);

  /// A node with one output; Shape (dims that are not numbers, such as
  /// "batch" and "sequence", symbolic) becomes the output's value_info.
  /// Scope is the module path with '/' separators.
  std::string node(llvm::StringRef Op, const std::string &Scope,
                   const std::vector<std::string> &Inputs,
                   const std::vector<std::string> &Shape,
                   int Type = FloatOutput);
  /// Further outputs of the last node.
  std::string extraOutput(const std::vector<std::string> &Shape);

  void intAttr(const char *Name, int64_t V);
  void intsAttr(const char *Name, const std::vector<int64_t> &V);
  void floatAttr(const char *Name, float V);
  void stringAttr(const char *Name, llvm::StringRef V);

  void input(const std::string &Name, const std::vector<std::string> &Shape);
  void output(const std::string &Name, const std::vector<std::string> &Shape);

  /// The serialized ModelProto.
  llvm::Expected<std::string> serialize() const;

  /// ONNX element types for node().
  static constexpr int FloatOutput = -1; ///< The weights' type.
  static constexpr int Undeclared = -2;  ///< No value_info (a sequence).
  static constexpr int Float32 = 1, Int64 = 7, Bool = 9, Float16 = 10,
                       BFloat16 = 16;

private:
  void declare(const std::string &Name, const std::vector<std::string> &Shape,
               int Type, bool AsInput, bool AsOutput);

  std::unique_ptr<onnx::ModelProto> M;
  onnx::GraphProto *G;
  onnx::NodeProto *Last = nullptr;

protected:
  int WeightType;

private:
  std::string WeightsFile;
  int64_t Offset = 0;
  unsigned Counter = 0;
};

} // namespace dsc

#endif
