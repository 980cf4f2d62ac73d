//===- KindSupport.h - What the registry's entries share --------*- C++ -*-===//
//
// Each family file defines its kinds' check, cost and reference on the
// kind's own attribute struct; kindEntry() wraps them into the registry's
// untyped entry, reading the attributes once.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANFORMAT_KERNELS_KINDSUPPORT_H
#define DSC_PLANFORMAT_KERNELS_KINDSUPPORT_H

#include "dsc/KernelRegistry.h"
#include "dsc/ReferenceExecutor.h"
#include "dsc/ReferenceKernels.h"

#include <string>
#include <vector>

namespace dsc::plan::kinds {

using reference::HostOperands;

template <class A>
using CheckFn = std::string (*)(const Kernel &, const A &,
                                const std::vector<Value> &);
template <class A>
using CostFn = void (*)(Kernel &, const A &, const std::vector<Value> &);
template <class A>
using ReferenceFn = std::string (*)(const Kernel &, const A &,
                                    HostOperands &);

/// The registry entry of the kind whose attributes are Held, from its
/// functions on View (Held, or the base it derives from: a backward kind
/// sharing its forward's functions).
template <class Held, class View, CheckFn<View> Check, CostFn<View> Cost,
          ReferenceFn<View> Ref>
constexpr KernelKindInfo kindEntry(const char *Family,
                                   bool AnyViews = false) {
  return {[](const Kernel &K, const std::vector<Value> &V) {
            return Check(K, std::get<Held>(K.Attrs), V);
          },
          [](Kernel &K, const std::vector<Value> &V) {
            Cost(K, std::get<Held>(K.Attrs), V);
          },
          [](const Kernel &K, HostOperands &Ops) {
            return Ref(K, std::get<Held>(K.Attrs), Ops);
          },
          Family,
          AnyViews};
}

/// "" when K has MinIn..MaxIn inputs and MinOut..MaxOut outputs, else what
/// is wrong.
inline std::string operandCounts(const Kernel &K, size_t MinIn, size_t MaxIn,
                                 size_t MinOut, size_t MaxOut) {
  if (K.Inputs.size() < MinIn || K.Inputs.size() > MaxIn ||
      K.Outputs.size() < MinOut || K.Outputs.size() > MaxOut)
    return "has " + std::to_string(K.Inputs.size()) + " inputs and " +
           std::to_string(K.Outputs.size()) + " outputs where its kind " +
           "takes " + std::to_string(MinIn) +
           (MaxIn != MinIn ? "-" + std::to_string(MaxIn) : "") + " and " +
           std::to_string(MinOut) +
           (MaxOut != MinOut ? "-" + std::to_string(MaxOut) : "");
  return "";
}
inline std::string operandCounts(const Kernel &K, size_t In, size_t Out) {
  return operandCounts(K, In, In, Out, Out);
}

/// Whether every operand of Refs holds Rows x Cols elements.
inline bool holdRows(std::initializer_list<const TensorRef *> Refs,
                     int64_t Rows, int64_t Cols) {
  if (Rows < 0 || Cols < 0)
    return false;
  for (const TensorRef *R : Refs)
    if (elements(*R) != Rows * Cols)
      return false;
  return true;
}

/// The usual cost of a kind without products: a few FLOPs an output
/// element, no workspace.
inline void elementCost(Kernel &K) {
  K.Flops = K.Outputs.empty() ? 0 : 4 * uint64_t(elements(K.Outputs[0]));
}
template <class A>
void noWorkspace(Kernel &K, const A &, const std::vector<Value> &) {
  elementCost(K);
}

} // namespace dsc::plan::kinds

#endif
