//===- ReferenceExecutor.h - A plan's kernels, run on the host --*- C++ -*-===//
//
// Executes the kernels of a plan's compute program on the CPU in fp32,
// reading and writing each operand through its TensorRef exactly as dsrun
// must: offsets, strides, Gemm layouts, pointwise programs. Every value's
// storage is a float array (integers are exact below 2^24, which token
// ids, targets and indices are). Values may live where the plan's memory
// plan puts them, in one shared arena, so that a whole step run in program
// order proves the lifetimes and offsets too. Used by dsc's tests to run
// whole plans against PyTorch, and by dsrun's kernel tests as the GPU's
// oracle. Dependency-free.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_REFERENCEEXECUTOR_H
#define DSC_REFERENCEEXECUTOR_H

#include "dsc/PlanFormat.h"

namespace dsc::reference {

/// A value's elements: an array of its own, or its window of the arena.
class Span {
public:
  Span() = default;
  Span(float *Data, size_t Size) : Data(Data), Size(Size) {}
  float *data() { return Data; }
  const float *data() const { return Data; }
  size_t size() const { return Size; }
  float *begin() { return Data; }
  float *end() { return Data + Size; }
  const float *begin() const { return Data; }
  const float *end() const { return Data + Size; }
  float &operator[](size_t I) { return Data[I]; }
  float operator[](size_t I) const { return Data[I]; }
  std::vector<float> copy() const { return {Data, Data + Size}; }
  /// Copies V in; V must have size() elements.
  void assign(const std::vector<float> &V);

private:
  float *Data = nullptr;
  size_t Size = 0;
};

/// One kernel's operands on the host, for its reference
/// (plan::KernelKindInfo::Reference): each operand read or written through
/// its TensorRef, element by element in row-major order of its shape.
class HostOperands {
public:
  HostOperands(const plan::Kernel &K, std::vector<Span> &Storage,
               const std::vector<plan::Value> &Values, uint64_t Seed)
      : K(K), Storage(Storage), Values(Values), Seed(Seed) {}

  /// Input I's elements, and as integers (indices, targets).
  std::vector<float> load(size_t I) const;
  std::vector<int64_t> loadInts(size_t I) const;
  /// Element E of input I, and of output O.
  float input(size_t I, int64_t E) const;
  float &output(size_t O, int64_t E);
  /// Writes output O's elements, each as its type stores it.
  void store(size_t O, const std::vector<float> &V);
  /// The storage of input I or output O from its first element on, for
  /// kernels that walk their own strides (products).
  const float *inputData(size_t I) const;
  float *outputData(size_t O);
  plan::DType outputType(size_t O) const;
  /// Dropout's seed for this micro step.
  uint64_t seed() const { return Seed; }

private:
  const plan::Kernel &K;
  std::vector<Span> &Storage;
  const std::vector<plan::Value> &Values;
  uint64_t Seed;
};

/// The storage offset of element Flat (row-major over R.Shape).
int64_t offsetOf(const plan::TensorRef &R, int64_t Flat);

/// What storing V into a value of type T does to it: integers truncate,
/// masks become 0 or 1.
float storedAs(double V, plan::DType T);

/// Where a value lives: its own zeroed array (NoPlace), or the arena from
/// this element on.
constexpr uint64_t NoPlace = ~uint64_t(0);

class Executor {
public:
  /// Storage for every value (zeros), constants filled from their data.
  Executor(const std::vector<plan::Value> &Values,
           const std::vector<plan::Constant> &Constants);
  /// Values with a place other than NoPlace share one arena of ArenaFloats
  /// elements, filled with NaN: a read of memory no live value wrote shows.
  Executor(const std::vector<plan::Value> &Values,
           const std::vector<plan::Constant> &Constants,
           const std::vector<uint64_t> &Place, uint64_t ArenaFloats);

  Span &storage(uint32_t Value) { return Storage[Value]; }
  const Span &storage(uint32_t Value) const { return Storage[Value]; }

  /// Runs one kernel; "" on success, else what is wrong (an index out of
  /// range, a target outside the classes).
  std::string run(const plan::Kernel &K, uint64_t Seed = 0);

private:
  void fillConstants(const std::vector<plan::Constant> &Constants);

  const std::vector<plan::Value> &Values;
  std::vector<std::vector<float>> Own;
  std::vector<float> Arena;
  std::vector<Span> Storage;
};

} // namespace dsc::reference

#endif
