//===- KernelRegistry.h - What each kernel kind is, in one entry -*- C++ -*-===//
//
// Every kernel kind (plan::KernelKind) is one entry of this registry: how
// its operands must agree with its attributes (the verifier's check), what
// it costs (FLOPs, bytes moved, device workspace), and its arithmetic on
// the host (the reference every GPU kernel is tested against). The two
// layers with dependencies of their own keep their part of the entry in a
// table indexed the same way: an op's lowering to kernels
// (dsc/Compute/Lowering.h) and dsrun's launch (runtime/src/KernelLaunch.h).
// A new kind is one attribute struct (KernelAttrs.h), one entry here, its
// lowering and its launch; nothing else switches over kinds.
//
// The entries live in lib/PlanFormat/Kernels/, one file per family.
// Dependency-free: built into dsc and dsrun alike.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELREGISTRY_H
#define DSC_KERNELREGISTRY_H

#include "dsc/PlanFormat.h"

#include <string>
#include <vector>

namespace dsc::reference {
class HostOperands;
} // namespace dsc::reference

namespace dsc::plan {

struct KernelKindInfo {
  /// Why the kernel's operands (their counts, shapes and element types)
  /// disagree with its attributes, or "". Called after the verifier has
  /// checked that each operand names a value and has one stride a dim.
  std::string (*Check)(const Kernel &K, const std::vector<Value> &Values);
  /// The kernel's FLOPs and device workspace, and its traffic beyond what
  /// its operands' sizes say (kernelBytes).
  void (*Cost)(Kernel &K, const std::vector<Value> &Values);
  /// Computes the kernel on the host in fp32 (double where it
  /// accumulates); "" or what is wrong with its data (an index outside a
  /// table, a target outside the classes).
  std::string (*Reference)(const Kernel &K, reference::HostOperands &Ops);
  /// What the kind is, for drawings and reports: "product", "attention",
  /// "norm", "loss", "embedding", "elementwise".
  const char *Family;
  /// Whether the kind's kernels walk every operand through its strides,
  /// whatever they are (so a view can stand for a copy).
  bool AnyViews;
};

const KernelKindInfo &kernelKindInfo(KernelKind K);

/// Sets K's FLOPs, bytes and workspace.
void costKernel(Kernel &K, const std::vector<Value> &Values);

/// Elements of an operand.
inline int64_t elements(const TensorRef &R) {
  int64_t N = 1;
  for (int64_t D : R.Shape)
    N *= D;
  return N;
}

} // namespace dsc::plan

#endif
