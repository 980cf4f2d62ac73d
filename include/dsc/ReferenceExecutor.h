//===- ReferenceExecutor.h - A plan's kernels, run on the host --*- C++ -*-===//
//
// Executes the kernels of a plan's compute program on the CPU in fp32,
// reading and writing each operand through its TensorRef exactly as dsrun
// must: offsets, strides, Gemm layouts, pointwise programs. Every value's
// storage is a float array (integers are exact below 2^24, which token
// ids, targets and indices are). Used by dsc's tests to run whole plans
// against PyTorch, and by dsrun's kernel tests as the GPU's oracle.
// Dependency-free.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_REFERENCEEXECUTOR_H
#define DSC_REFERENCEEXECUTOR_H

#include "dsc/PlanFormat.h"

namespace dsc::reference {

class Executor {
public:
  /// Storage for every value (zeros), constants filled from their data.
  Executor(const std::vector<plan::Value> &Values,
           const std::vector<plan::Constant> &Constants);

  std::vector<float> &storage(uint32_t Value) { return Storage[Value]; }
  const std::vector<float> &storage(uint32_t Value) const {
    return Storage[Value];
  }

  /// Runs one kernel; "" on success, else what is wrong (an index out of
  /// range, a target outside the classes).
  std::string run(const plan::Kernel &K, uint64_t Seed = 0);

private:
  const std::vector<plan::Value> &Values;
  std::vector<std::vector<float>> Storage;
};

} // namespace dsc::reference

#endif
