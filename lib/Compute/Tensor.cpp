//===- Tensor.cpp ---------------------------------------------------------===//

#include "dsc/Compute/Tensor.h"

#include <cassert>
#include <cstring>
#include <cmath>
#include <numeric>

namespace dsc::compute {

int64_t numel(llvm::ArrayRef<int64_t> S) {
  // Saturating: a product past int64 (a broken model's shape) stays the
  // largest value, which every size check then refuses.
  int64_t N = 1;
  for (int64_t D : S)
    if (__builtin_mul_overflow(N, D, &N))
      return INT64_MAX;
  return N;
}

Shape contiguousStrides(llvm::ArrayRef<int64_t> S) {
  Shape Out(S.size(), 1);
  for (size_t I = S.size(); I-- > 1;)
    Out[I - 1] = Out[I] * std::max<int64_t>(S[I], 1);
  return Out;
}

bool isContiguous(llvm::ArrayRef<int64_t> S, llvm::ArrayRef<int64_t> Strides) {
  Shape Want = contiguousStrides(S);
  for (size_t K = 0; K < S.size(); ++K)
    if (S[K] != 1 && Strides[K] != Want[K])
      return false;
  return true;
}

std::string shapeText(llvm::ArrayRef<int64_t> S) {
  std::string Out = "[";
  for (size_t I = 0; I < S.size(); ++I)
    Out += (I ? ", " : "") + std::to_string(S[I]);
  return Out + "]";
}

std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> A,
                                     llvm::ArrayRef<int64_t> B) {
  size_t Rank = std::max(A.size(), B.size());
  Shape Out(Rank, 1);
  for (size_t I = 0; I < Rank; ++I) {
    int64_t X = I < Rank - A.size() ? 1 : A[I - (Rank - A.size())];
    int64_t Y = I < Rank - B.size() ? 1 : B[I - (Rank - B.size())];
    if (X != Y && X != 1 && Y != 1)
      return std::nullopt;
    Out[I] = X == 1 ? Y : X;
  }
  return Out;
}

HostTensor::HostTensor(DType T, Shape S)
    : Type(T), Dims(std::move(S)), Strides(contiguousStrides(Dims)) {
  size_t N = size_t(compute::numel(Dims));
  if (isFloat())
    F = std::make_shared<std::vector<float>>(N, 0.0f);
  else
    I = std::make_shared<std::vector<int64_t>>(N, 0);
}

HostTensor HostTensor::scalar(DType T, double V) {
  HostTensor Out(T, {});
  Out.set(0, V);
  return Out;
}

HostTensor HostTensor::fromFloats(Shape S, std::vector<float> V) {
  assert(int64_t(V.size()) == compute::numel(S));
  HostTensor Out;
  Out.Type = DType::F32;
  Out.Dims = std::move(S);
  Out.Strides = contiguousStrides(Out.Dims);
  Out.F = std::make_shared<std::vector<float>>(std::move(V));
  return Out;
}

HostTensor HostTensor::fromInts(DType T, Shape S, std::vector<int64_t> V) {
  assert(int64_t(V.size()) == compute::numel(S));
  HostTensor Out;
  Out.Type = T;
  Out.Dims = std::move(S);
  Out.Strides = contiguousStrides(Out.Dims);
  Out.I = std::make_shared<std::vector<int64_t>>(std::move(V));
  return Out;
}

bool HostTensor::contiguous() const {
  if (Offset != 0)
    return false;
  Shape Want = contiguousStrides(Dims);
  for (size_t K = 0; K < Dims.size(); ++K)
    if (Dims[K] != 1 && Strides[K] != Want[K])
      return false;
  size_t Size = F ? F->size() : I ? I->size() : 0;
  return int64_t(Size) == numel();
}

double HostTensor::at(int64_t Flat) const {
  int64_t Off = Offset;
  for (size_t K = Dims.size(); K-- > 0;) {
    int64_t D = std::max<int64_t>(Dims[K], 1);
    Off += (Flat % D) * Strides[K];
    Flat /= D;
  }
  return F ? double((*F)[size_t(Off)]) : double((*I)[size_t(Off)]);
}

double HostTensor::at(llvm::ArrayRef<int64_t> Index) const {
  int64_t Off = Offset;
  for (size_t K = 0; K < Index.size(); ++K)
    Off += Index[K] * Strides[K];
  return F ? double((*F)[size_t(Off)]) : double((*I)[size_t(Off)]);
}

std::vector<double> HostTensor::values() const {
  std::vector<double> Out(static_cast<size_t>(numel()));
  forEach(Dims, {this}, [&](int64_t Flat, const int64_t *Off) {
    Out[size_t(Flat)] = F ? double((*F)[size_t(Off[0])])
                          : double((*I)[size_t(Off[0])]);
  });
  return Out;
}

std::vector<int64_t> HostTensor::ints() const {
  std::vector<int64_t> Out(static_cast<size_t>(numel()));
  forEach(Dims, {this}, [&](int64_t Flat, const int64_t *Off) {
    Out[size_t(Flat)] =
        F ? int64_t((*F)[size_t(Off[0])]) : (*I)[size_t(Off[0])];
  });
  return Out;
}

std::vector<float> HostTensor::floats() const {
  std::vector<float> Out(static_cast<size_t>(numel()));
  forEach(Dims, {this}, [&](int64_t Flat, const int64_t *Off) {
    Out[size_t(Flat)] =
        F ? (*F)[size_t(Off[0])] : float((*I)[size_t(Off[0])]);
  });
  return Out;
}

HostTensor HostTensor::contiguousCopy() const {
  if (contiguous())
    return *this;
  if (F)
    return cast(Type);
  HostTensor Out = fromInts(Type, Dims, ints());
  return Out;
}

HostTensor HostTensor::cast(DType To) const {
  if (plan::isFloatType(To)) {
    HostTensor Out = fromFloats(Dims, floats());
    Out.Type = To;
    return Out;
  }
  std::vector<int64_t> V(static_cast<size_t>(numel()));
  forEach(Dims, {this}, [&](int64_t Flat, const int64_t *Off) {
    double X = F ? double((*F)[size_t(Off[0])]) : double((*I)[size_t(Off[0])]);
    V[size_t(Flat)] = To == DType::U8 ? int64_t(X != 0)
                      : F             ? int64_t(std::trunc(X))
                                      : (*I)[size_t(Off[0])];
  });
  return fromInts(To, Dims, std::move(V));
}

HostTensor HostTensor::reshaped(Shape S) const {
  assert(compute::numel(S) == numel());
  HostTensor Out = contiguousCopy();
  Out.Dims = std::move(S);
  Out.Strides = contiguousStrides(Out.Dims);
  return Out;
}

HostTensor HostTensor::permuted(llvm::ArrayRef<int64_t> Perm) const {
  HostTensor Out = *this;
  for (size_t K = 0; K < Perm.size(); ++K) {
    Out.Dims[K] = Dims[size_t(Perm[K])];
    Out.Strides[K] = Strides[size_t(Perm[K])];
  }
  return Out;
}

HostTensor HostTensor::expanded(const Shape &S) const {
  HostTensor Out = *this;
  Out.Dims = S;
  Out.Strides.assign(S.size(), 0);
  size_t Lead = S.size() - Dims.size();
  for (size_t K = 0; K < Dims.size(); ++K)
    if (Dims[K] == S[Lead + K])
      Out.Strides[Lead + K] = Strides[K];
  return Out;
}

HostTensor HostTensor::sliced(int64_t Axis, int64_t Start, int64_t Step,
                              int64_t Count) const {
  HostTensor Out = *this;
  Out.Offset += Start * Strides[size_t(Axis)];
  Out.Strides[size_t(Axis)] *= Step;
  Out.Dims[size_t(Axis)] = Count;
  return Out;
}

void HostTensor::set(int64_t Flat, double V) {
  assert(Offset == 0);
  if (F)
    (*F)[size_t(Flat)] = float(V);
  else
    (*I)[size_t(Flat)] = Type == DType::U8 ? int64_t(V != 0) : int64_t(V);
}

float *HostTensor::floatData() { return F->data() + Offset; }
int64_t *HostTensor::intData() { return I->data() + Offset; }
const float *HostTensor::floatData() const { return F->data() + Offset; }
const int64_t *HostTensor::intData() const { return I->data() + Offset; }

llvm::ArrayRef<uint8_t> HostTensor::storageBytes() const {
  if (!contiguous())
    return {};
  size_t N = size_t(numel());
  if (F)
    return {reinterpret_cast<const uint8_t *>(F->data()), N * sizeof(float)};
  return {reinterpret_cast<const uint8_t *>(I->data()), N * sizeof(int64_t)};
}

void HostTensor::forEach(
    const Shape &Out, llvm::ArrayRef<const HostTensor *> Inputs,
    const std::function<void(int64_t, const int64_t *)> &Fn) {
  size_t Rank = Out.size(), N = Inputs.size();
  // Per input, its stride in each output dim (0 where broadcast).
  std::vector<int64_t> Stride(Rank * N, 0), Off(N), Index(Rank, 0);
  for (size_t J = 0; J < N; ++J) {
    const HostTensor &T = *Inputs[J];
    size_t Lead = Rank - T.Dims.size();
    for (size_t K = 0; K < T.Dims.size(); ++K)
      if (T.Dims[K] != 1)
        Stride[(Lead + K) * N + J] = T.Strides[K];
    Off[J] = T.Offset;
  }
  int64_t Total = compute::numel(Out);
  for (int64_t Flat = 0; Flat < Total; ++Flat) {
    Fn(Flat, Off.data());
    // Advance the multi-index and every input's offset.
    for (size_t K = Rank; K-- > 0;) {
      ++Index[K];
      for (size_t J = 0; J < N; ++J)
        Off[J] += Stride[K * N + J];
      if (Index[K] < Out[K])
        break;
      for (size_t J = 0; J < N; ++J)
        Off[J] -= Stride[K * N + J] * Out[K];
      Index[K] = 0;
    }
  }
}

} // namespace dsc::compute

namespace dsc::compute {

float bf16ToFloat(uint16_t Bits) {
  uint32_t W = uint32_t(Bits) << 16;
  float F;
  std::memcpy(&F, &W, 4);
  return F;
}

uint16_t floatToBf16(float V) {
  uint32_t W;
  std::memcpy(&W, &V, 4);
  if ((W & 0x7fffffffu) > 0x7f800000u) // NaN stays NaN.
    return uint16_t((W >> 16) | 0x40);
  W += 0x7fffu + ((W >> 16) & 1);
  return uint16_t(W >> 16);
}

float halfToFloat(uint16_t H) {
  uint32_t Sign = uint32_t(H & 0x8000) << 16, Exp = (H >> 10) & 0x1f,
           Man = H & 0x3ff, W;
  if (Exp == 0) {
    if (Man == 0) {
      W = Sign;
    } else { // Subnormal: normalize.
      Exp = 127 - 15 + 1;
      while (!(Man & 0x400)) {
        Man <<= 1;
        --Exp;
      }
      W = Sign | (Exp << 23) | ((Man & 0x3ff) << 13);
    }
  } else if (Exp == 31) {
    W = Sign | 0x7f800000u | (Man << 13);
  } else {
    W = Sign | ((Exp - 15 + 127) << 23) | (Man << 13);
  }
  float F;
  std::memcpy(&F, &W, 4);
  return F;
}

uint16_t floatToHalf(float V) {
  uint32_t W;
  std::memcpy(&W, &V, 4);
  uint32_t Sign = (W >> 16) & 0x8000;
  int32_t Exp = int32_t((W >> 23) & 0xff) - 127 + 15;
  uint32_t Man = W & 0x7fffff;
  if (((W >> 23) & 0xff) == 0xff)
    return uint16_t(Sign | 0x7c00 | (Man ? 0x200 : 0));
  if (Exp >= 31)
    return uint16_t(Sign | 0x7c00);
  if (Exp <= 0) {
    if (Exp < -10)
      return uint16_t(Sign);
    Man |= 0x800000;
    uint32_t Shift = uint32_t(14 - Exp);
    uint32_t Half = Man >> Shift;
    uint32_t Rest = Man & ((1u << Shift) - 1), Mid = 1u << (Shift - 1);
    if (Rest > Mid || (Rest == Mid && (Half & 1)))
      ++Half;
    return uint16_t(Sign | Half);
  }
  uint32_t Half = Sign | (uint32_t(Exp) << 10) | (Man >> 13);
  uint32_t Rest = Man & 0x1fff;
  if (Rest > 0x1000 || (Rest == 0x1000 && (Half & 1)))
    ++Half;
  return uint16_t(Half);
}

unsigned storageBytes(StorageType T) {
  switch (T) {
  case StorageType::F64:
  case StorageType::I64:
  case StorageType::U64:
    return 8;
  case StorageType::F32:
  case StorageType::I32:
  case StorageType::U32:
    return 4;
  case StorageType::F16:
  case StorageType::BF16:
  case StorageType::I16:
  case StorageType::U16:
    return 2;
  default:
    return 1;
  }
}

/// One stored element as double (int64 as itself, exactly, through I).
static double loadElement(const char *P, StorageType T, int64_t &I) {
  auto Get = [&](auto V) {
    std::memcpy(&V, P, sizeof(V));
    return V;
  };
  switch (T) {
  case StorageType::F64:
    return Get(double());
  case StorageType::F32:
    return Get(float());
  case StorageType::F16:
    return halfToFloat(Get(uint16_t()));
  case StorageType::BF16:
    return bf16ToFloat(Get(uint16_t()));
  case StorageType::I64:
    I = Get(int64_t());
    return double(I);
  case StorageType::U64:
    I = int64_t(Get(uint64_t()));
    return double(I);
  case StorageType::I32:
    return Get(int32_t());
  case StorageType::U32:
    return Get(uint32_t());
  case StorageType::I16:
    return Get(int16_t());
  case StorageType::U16:
    return Get(uint16_t());
  case StorageType::I8:
    return Get(int8_t());
  case StorageType::U8:
  case StorageType::Bool:
    return Get(uint8_t());
  }
  return 0;
}

HostTensor decodeTensor(DType Type, Shape S, const char *Bytes,
                        StorageType Stored) {
  int64_t N = compute::numel(S);
  unsigned Width = storageBytes(Stored);
  bool Float = plan::isFloatType(Type);
  HostTensor Out(Float ? DType::F32 : Type, S);
  for (int64_t K = 0; K < N; ++K) {
    int64_t Exact = 0;
    double V = loadElement(Bytes + K * Width, Stored, Exact);
    if (Float)
      Out.floatData()[K] = float(V);
    else if (Stored == StorageType::I64 || Stored == StorageType::U64)
      Out.intData()[K] = Exact;
    else
      Out.intData()[K] = Type == DType::U8 ? int64_t(V != 0) : int64_t(V);
  }
  return Float && Type != DType::F32 ? Out.cast(Type) : Out;
}

} // namespace dsc::compute
