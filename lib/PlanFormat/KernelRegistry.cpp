//===- KernelRegistry.cpp - The table of kernel kinds ---------------------===//

#include "dsc/KernelRegistry.h"

namespace dsc::plan {

namespace kinds {
#define DSC_KIND_ENTRY(V, N) extern const KernelKindInfo V##Kind;
DSC_PLAN_KERNELKIND(DSC_KIND_ENTRY)
#undef DSC_KIND_ENTRY
} // namespace kinds

const KernelKindInfo &kernelKindInfo(KernelKind K) {
#define DSC_KIND_ENTRY(V, N) &kinds::V##Kind,
  static const KernelKindInfo *const Table[] = {
      DSC_PLAN_KERNELKIND(DSC_KIND_ENTRY)};
#undef DSC_KIND_ENTRY
  return *Table[size_t(K)];
}

void costKernel(Kernel &K, const std::vector<Value> &Values) {
  // Every operand is read or written once; an input broadcast along a dim
  // (stride 0) is read once per element it has, not once per element of
  // the output.
  K.Bytes = 0;
  for (const TensorRef &R : K.Inputs) {
    uint64_t N = 1;
    for (size_t D = 0; D < R.Shape.size(); ++D)
      if (R.Strides[D] != 0)
        N *= uint64_t(R.Shape[D]);
    K.Bytes += N * dtypeBytes(Values[R.Value].Type);
  }
  for (const TensorRef &R : K.Outputs)
    K.Bytes += uint64_t(elements(R)) * dtypeBytes(Values[R.Value].Type);
  K.Flops = 0;
  K.WorkspaceBytes = 0;
  kernelKindInfo(K.kind()).Cost(K, Values);
}

} // namespace dsc::plan
