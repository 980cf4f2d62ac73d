//===- Model.cpp - DType facts and Model lookups --------------------------===//

#include "dsc/Graph/Model.h"

#include "onnx/onnx_pb.h"

using namespace llvm;

namespace dsc {

unsigned dtypeBits(DType T) {
  switch (T) {
  case DType::Bool:
  case DType::UInt8:
  case DType::Int8:
  case DType::Float8E4M3FN:
  case DType::Float8E4M3FNUZ:
  case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
    return 8;
  case DType::UInt4:
  case DType::Int4:
  case DType::Float4E2M1:
    return 4;
  case DType::UInt16:
  case DType::Int16:
  case DType::Float16:
  case DType::BFloat16:
    return 16;
  case DType::Float:
  case DType::Int32:
  case DType::UInt32:
    return 32;
  case DType::Double:
  case DType::Int64:
  case DType::UInt64:
  case DType::Complex64:
    return 64;
  case DType::Complex128:
    return 128;
  case DType::String:
  case DType::Undefined:
    return 0;
  }
  return 0;
}

StringRef dtypeName(DType T) {
  static const char *const Names[] = {
      "undefined", "float32",  "uint8",     "int8",       "uint16",
      "int16",     "int32",    "int64",     "string",     "bool",
      "float16",   "float64",  "uint32",    "uint64",     "complex64",
      "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
      "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1"};
  unsigned I = unsigned(T);
  return I < std::size(Names) ? Names[I] : "undefined";
}

bool isFloating(DType T) {
  switch (T) {
  case DType::Float:
  case DType::Float16:
  case DType::BFloat16:
  case DType::Double:
  case DType::Float8E4M3FN:
  case DType::Float8E4M3FNUZ:
  case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
  case DType::Float4E2M1:
    return true;
  default:
    return false;
  }
}

DType dtypeFromOnnx(int64_t V) {
  return V >= 0 && V <= int64_t(DType::Float4E2M1) ? DType(V)
                                                     : DType::Undefined;
}

uint64_t Initializer::numel() const {
  uint64_t N = 1;
  for (int64_t D : Dims)
    N *= uint64_t(D);
  return N;
}

int64_t Model::opset(StringRef Domain) const {
  auto It = Opsets.find(Domain.str());
  return It == Opsets.end() ? 0 : It->second;
}

const Initializer *Model::initializer(StringRef Name) const {
  auto It = InitializerIndex.find(Name);
  return It == InitializerIndex.end() ? nullptr : &Initializers[It->second];
}

int Model::producer(StringRef Tensor) const {
  auto It = ProducerIndex.find(Tensor);
  return It == ProducerIndex.end() ? -1 : int(It->second);
}

const onnx::AttributeProto *attribute(const Node &N, StringRef Name) {
  if (N.Proto)
    for (const onnx::AttributeProto &A : N.Proto->attribute())
      if (A.name() == Name)
        return &A;
  return nullptr;
}

std::optional<int64_t> intAttribute(const Node &N, StringRef Name) {
  const onnx::AttributeProto *A = attribute(N, Name);
  if (A && A->type() == onnx::AttributeProto_AttributeType_INT)
    return A->i();
  return std::nullopt;
}

std::optional<std::vector<int64_t>> intsAttribute(const Node &N,
                                                  StringRef Name) {
  const onnx::AttributeProto *A = attribute(N, Name);
  if (!A || A->type() != onnx::AttributeProto_AttributeType_INTS)
    return std::nullopt;
  return std::vector<int64_t>(A->ints().begin(), A->ints().end());
}

} // namespace dsc
