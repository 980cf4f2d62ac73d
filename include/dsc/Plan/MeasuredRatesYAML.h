//===- MeasuredRatesYAML.h - Measured rates in YAML -------------*- C++ -*-===//
//
// The one YAML mapping of plan::KernelRate, plan::CollectiveRate and
// plan::GemmAlgorithm (and of the element types they name), shared by the
// plan's YAML form and calibration files (dsrun --calibration-out writes
// the same keys):
//   kernel_rates:
//     - { kind: gemm, backward: false, flops_per_sec: 610000000000000,
//         bytes_per_sec: 0 }
//   collective_rates:
//     - { kind: reduce-scatter, bus_bytes_per_sec: 234000000000 }
//   gemm_algorithms:
//     - { product: { m: 4096, n: 2048, k: 2048, batch: 1, trans_a: false,
//                    trans_b: true, ld_a: 2048, ld_b: 2048, ld_c: 2048,
//                    stride_a: 0, stride_b: 0, stride_c: 0, epilogue: none,
//                    alpha: 1, beta: 0 },
//         type: bf16, candidate: 3 }
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLAN_MEASUREDRATESYAML_H
#define DSC_PLAN_MEASUREDRATESYAML_H

#include "dsc/PlanFormat.h"

#include "llvm/Support/YAMLTraits.h"

LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(dsc::plan::KernelRate)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(dsc::plan::CollectiveRate)
LLVM_YAML_IS_SEQUENCE_VECTOR(dsc::plan::GemmAlgorithm)

namespace llvm::yaml {
template <> struct ScalarEnumerationTraits<dsc::plan::DType> {
  static void enumeration(IO &IO, dsc::plan::DType &V) {
    using Info = dsc::plan::EnumInfo<dsc::plan::DType>;
    for (unsigned I = 0; I < Info::Count; ++I)
      IO.enumCase(V, Info::Names[I], dsc::plan::DType(I));
  }
};

template <> struct ScalarEnumerationTraits<dsc::plan::CommCtaPolicy> {
  static void enumeration(IO &IO, dsc::plan::CommCtaPolicy &V) {
    using Info = dsc::plan::EnumInfo<dsc::plan::CommCtaPolicy>;
    for (unsigned I = 0; I < Info::Count; ++I)
      IO.enumCase(V, Info::Names[I], dsc::plan::CommCtaPolicy(I));
  }
};

template <> struct ScalarEnumerationTraits<dsc::plan::GemmEpilogue> {
  static void enumeration(IO &IO, dsc::plan::GemmEpilogue &V) {
    using Info = dsc::plan::EnumInfo<dsc::plan::GemmEpilogue>;
    for (unsigned I = 0; I < Info::Count; ++I)
      IO.enumCase(V, Info::Names[I], dsc::plan::GemmEpilogue(I));
  }
};

/// A product's attributes, also a gemm kernel's (PlanYAML.cpp).
template <> struct MappingTraits<dsc::plan::GemmAttrs> {
  static void mapping(IO &IO, dsc::plan::GemmAttrs &A) {
    A.visit([&](const char *Name, auto &Field) { IO.mapRequired(Name, Field); });
  }
  static const bool flow = true;
};

template <> struct MappingTraits<dsc::plan::KernelRate> {
  static void mapping(IO &IO, dsc::plan::KernelRate &R) {
    R.visit([&](const char *Name, auto &Field) { IO.mapRequired(Name, Field); });
  }
  static std::string validate(IO &, dsc::plan::KernelRate &R) {
    using Info = dsc::plan::EnumInfo<dsc::plan::KernelKind>;
    for (unsigned I = 0; I < Info::Count; ++I)
      if (R.Kind == Info::Names[I])
        return "";
    return "'" + R.Kind + "' is not a kernel kind (gemm, attention, ...)";
  }
  static const bool flow = true;
};

template <> struct MappingTraits<dsc::plan::CollectiveRate> {
  static void mapping(IO &IO, dsc::plan::CollectiveRate &R) {
    R.visit([&](const char *Name, auto &Field) { IO.mapRequired(Name, Field); });
  }
  static std::string validate(IO &, dsc::plan::CollectiveRate &R) {
    using Info = dsc::plan::EnumInfo<dsc::plan::Collective>;
    for (unsigned I = 0; I < Info::Count; ++I)
      if (R.Kind == Info::Names[I])
        return "";
    return "'" + R.Kind +
           "' is not a collective (all-reduce, reduce-scatter, all-gather)";
  }
  static const bool flow = true;
};
template <> struct MappingTraits<dsc::plan::GemmAlgorithm> {
  static void mapping(IO &IO, dsc::plan::GemmAlgorithm &A) {
    A.visit([&](const char *Name, auto &Field) { IO.mapRequired(Name, Field); });
  }
  static std::string validate(IO &, dsc::plan::GemmAlgorithm &A) {
    return A.misfit();
  }
  static const bool flow = true;
};
} // namespace llvm::yaml

#endif
