//===- Tensor.h - Tensors on the host, for folding and reference -*- C++ -*-===//
//
// A HostTensor is what the compiler computes with on the CPU: folded
// constants (shapes, masks, rotary tables) and every value the reference
// interpreter produces. Floating-point elements are held as float, whatever
// the declared type (fp32 is the reference precision); integers and
// booleans as int64. A tensor is a view over shared storage with strides,
// so Expand, Transpose and Slice cost nothing, and a stride of 0 lets a
// broadcast mask of [16, 1, 1024, 1024] stay one row of storage.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_TENSOR_H
#define DSC_COMPUTE_TENSOR_H

#include "dsc/PlanFormat.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dsc::compute {

using plan::DType;
using Shape = std::vector<int64_t>;

/// Elements of a shape (1 for a scalar); INT64_MAX when the product
/// overflows.
int64_t numel(llvm::ArrayRef<int64_t> S);
/// The most elements a value may have (2^48): beyond any device.
constexpr int64_t MaxElements = int64_t(1) << 48;
/// Row-major strides of a shape.
Shape contiguousStrides(llvm::ArrayRef<int64_t> S);
/// Whether elements of shape S at Strides lie densely in row-major order
/// (extent-1 dims may have any stride).
bool isContiguous(llvm::ArrayRef<int64_t> S, llvm::ArrayRef<int64_t> Strides);
std::string shapeText(llvm::ArrayRef<int64_t> S);
/// The broadcast of two shapes (numpy rules), or nullopt.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> A,
                                     llvm::ArrayRef<int64_t> B);

class HostTensor {
public:
  HostTensor() = default;
  /// A new contiguous tensor of zeros.
  HostTensor(DType Type, Shape S);

  static HostTensor scalar(DType Type, double V);
  static HostTensor fromFloats(Shape S, std::vector<float> V);
  static HostTensor fromInts(DType Type, Shape S, std::vector<int64_t> V);

  DType type() const { return Type; }
  bool isFloat() const { return plan::isFloatType(Type); }
  const Shape &shape() const { return Dims; }
  const Shape &strides() const { return Strides; }
  int64_t rank() const { return int64_t(Dims.size()); }
  int64_t numel() const { return compute::numel(Dims); }
  bool contiguous() const;

  /// The element at a flat (row-major) index of the logical shape.
  double at(int64_t Flat) const;
  /// The element at a multi-index.
  double at(llvm::ArrayRef<int64_t> Index) const;
  /// Every element in row-major order, as double.
  std::vector<double> values() const;
  /// Every element as int64 (index arithmetic); floats are truncated.
  std::vector<int64_t> ints() const;
  std::vector<float> floats() const;

  /// A contiguous copy (or this, when already contiguous and unshared
  /// storage is not needed).
  HostTensor contiguousCopy() const;
  /// The same elements under another type (float <-> int conversions,
  /// bool as 0/1), contiguous.
  HostTensor cast(DType To) const;

  // Views: share storage, never copy.
  HostTensor reshaped(Shape S) const; ///< Copies first when not contiguous.
  HostTensor permuted(llvm::ArrayRef<int64_t> Perm) const;
  HostTensor expanded(const Shape &S) const; ///< Broadcast to S.
  HostTensor sliced(int64_t Axis, int64_t Start, int64_t Step,
                    int64_t Count) const;

  /// Writes the element at a flat index of the logical shape; the tensor
  /// must own its storage contiguously (a fresh tensor).
  void set(int64_t Flat, double V);
  float *floatData();
  int64_t *intData();
  const float *floatData() const;
  const int64_t *intData() const;
  /// The stored elements as bytes when they are one contiguous run (empty
  /// otherwise): two tensors of one type and shape are equal when these
  /// are.
  llvm::ArrayRef<uint8_t> storageBytes() const;

  /// The element at an offset into the storage (what forEach passes).
  double storageAt(int64_t Off) const {
    return F ? double((*F)[size_t(Off)]) : double((*I)[size_t(Off)]);
  }
  /// The same for an integer tensor, exactly.
  int64_t storageAtInt(int64_t Off) const {
    return F ? int64_t((*F)[size_t(Off)]) : (*I)[size_t(Off)];
  }

  /// Calls F(OutFlat, InOffsets...) over every index of Out's shape; the
  /// offsets index each input's storage (see storageAt).
  static void forEach(const Shape &Out,
                      llvm::ArrayRef<const HostTensor *> Inputs,
                      const std::function<void(int64_t, const int64_t *)> &F);

private:
  DType Type = DType::F32;
  Shape Dims, Strides;
  int64_t Offset = 0;
  std::shared_ptr<std::vector<float>> F;
  std::shared_ptr<std::vector<int64_t>> I;
};

/// Conversions of 16-bit floats (bf16 rounds to nearest even, as PyTorch).
float bf16ToFloat(uint16_t Bits);
uint16_t floatToBf16(float V);
float halfToFloat(uint16_t Bits);
uint16_t floatToHalf(float V);

/// How elements are stored in a file (ONNX initializers, safetensors).
enum class StorageType { F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32,
                         U16, U8, Bool };
unsigned storageBytes(StorageType T);

/// A tensor of type Type from the little-endian elements of a file.
HostTensor decodeTensor(DType Type, Shape S, const char *Bytes,
                        StorageType Stored);

} // namespace dsc::compute

#endif
