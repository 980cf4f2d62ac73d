//===- GpuPeaks.h - Vendors' dense 16-bit peaks, by GPU name ----*- C++ -*-===//
//
// The dense (no sparsity) bf16/fp16 tensor-core rate each GPU's datasheet
// gives: dsrun reports model FLOP utilisation against it, and dsc's GPU
// presets derive the rate they plan with from it where none was measured.
// Dependency-free: dsc and dsrun share it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_GPUPEAKS_H
#define DSC_GPUPEAKS_H

#include <string>

namespace dsc {

/// The peak of the GPU a name (CUDA's device name, "NVIDIA H100 80GB
/// HBM3", or a dsc preset, "H100-80GB") names, in FLOP/s; 0 when unknown.
/// The first entry the name contains wins, so PCIe parts come first.
inline double denseBf16PeakFlops(const std::string &Name) {
  struct Entry {
    const char *Part;
    double Flops;
  };
  static const Entry Peaks[] = {
      {"H100 PCIe", 756e12}, {"H100", 989e12}, {"H200", 989e12},
      {"A100", 312e12},      {"L40S", 362e12}, {"RTX4090", 165e12},
      {"RTX 4090", 165e12},  {"V100", 125e12},
  };
  for (const Entry &E : Peaks)
    if (Name.find(E.Part) != std::string::npos)
      return E.Flops;
  return 0;
}

} // namespace dsc

#endif
