//===- Calibration.cpp - What dsrun measured, for dsc plan --calibration --===//

#include "Calibration.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

namespace dsrun {

namespace {

/// A plan struct's scalar fields as a YAML flow mapping, in visit() order:
/// what dsc's YAML reader (MeasuredRatesYAML.h) reads back.
template <class T> std::string flowMapping(T &V) {
  std::string Out = "{ ";
  V.visit([&](const char *Name, auto &Field) {
    using Ty = std::decay_t<decltype(Field)>;
    Out += (Out.size() > 2 ? ", " : "") + std::string(Name) + ": ";
    if constexpr (std::is_same_v<Ty, bool>) {
      Out += Field ? "true" : "false";
    } else if constexpr (std::is_enum_v<Ty>) {
      Out += dsc::plan::enumName(Field);
    } else if constexpr (std::is_floating_point_v<Ty>) {
      char Buf[32];
      snprintf(Buf, sizeof(Buf), "%.17g", double(Field));
      Out += Buf;
    } else {
      Out += std::to_string(Field);
    }
  });
  return Out + " }";
}

} // namespace

bool writeCalibration(const std::string &Path, const Calibration &C,
                      std::string &Error) {
  FILE *F = fopen(Path.c_str(), "w");
  if (!F) {
    Error = "cannot write " + Path + ": " + strerror(errno);
    return false;
  }
  fprintf(F,
          "# Measured by dsrun on %d rank(s). dsc plan --calibration FILE.\n"
          "# NCCL's CTA policy of the run (plan with the same):\n"
          "comm_cta_policy: %s\n"
          "# Device memory outside the plan's arena:\n"
          "cuda_context_bytes: %llu\ncublas_workspace_bytes: %llu\n"
          "nccl_bytes: %llu\n",
          C.Ranks, dsc::plan::enumName(C.CtaPolicy),
          (unsigned long long)C.CudaContextBytes,
          (unsigned long long)C.CublasWorkspaceBytes,
          (unsigned long long)C.NcclBytes);
  bool Any = false;
  dsc::plan::Hardware Rates = C.Rates;
  Rates.visit([&](const char *Name, const auto &Value) {
    if constexpr (std::is_integral_v<std::decay_t<decltype(Value)>>) {
      if (!Value)
        return;
      if (!Any)
        fprintf(F, "# Rates measured in the steady steps, per rank:\n");
      Any = true;
      fprintf(F, "%s: %llu\n", Name, (unsigned long long)Value);
    }
  });
  if (!C.Rates.KernelRates.empty()) {
    fprintf(F, "# Per kernel kind, from the profiled step:\nkernel_rates:\n");
    for (const dsc::plan::KernelRate &R : C.Rates.KernelRates)
      fprintf(F,
              "  - { kind: %s, backward: %s, flops_per_sec: %llu, "
              "bytes_per_sec: %llu }\n",
              R.Kind.c_str(), R.Backward ? "true" : "false",
              (unsigned long long)R.FlopsPerSec,
              (unsigned long long)R.BytesPerSec);
  }
  for (const auto &[Rates, Name] :
       {std::pair{&C.Rates.CollectiveRates, "collective_rates"},
        std::pair{&C.Rates.InterNodeRates, "inter_node_rates"}}) {
    if (Rates->empty())
      continue;
    fprintf(F, "# Per collective kind, bus bandwidth in the steady steps%s:\n"
               "%s:\n",
            Rates == &C.Rates.InterNodeRates ? ", between nodes" : "", Name);
    for (const dsc::plan::CollectiveRate &R : *Rates)
      fprintf(F, "  - { kind: %s, bus_bytes_per_sec: %llu }\n", R.Kind.c_str(),
              (unsigned long long)R.BusBytesPerSec);
  }
  if (!C.Rates.GemmAlgorithms.empty()) {
    fprintf(F, "# Products whose fastest cuBLASLt algorithm is not the "
               "heuristic's first\n# (its place in the heuristic's order; "
               "this GPU and library):\ngemm_algorithms:\n");
    for (dsc::plan::GemmAlgorithm G : C.Rates.GemmAlgorithms)
      fprintf(F, "  - { product: %s, type: %s, candidate: %u }\n",
              flowMapping(G.Product).c_str(), dsc::plan::enumName(G.Type),
              G.Candidate);
  }
  bool Failed = ferror(F) != 0;
  Failed |= fclose(F) != 0;
  if (Failed)
    Error = "writing " + Path + " failed";
  return !Failed;
}

} // namespace dsrun
