//===- Cli.h - What every dsrun tool's command line does alike --*- C++ -*-===//
//
// --help / -h prints the usage on stdout and exits 0, --version prints the
// version and the plan format it reads, as dsc's tools do; a machine
// without a GPU gets a sentence, not a CUDA error number.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_CLI_H
#define DSRUN_CLI_H

#include "dsc/PlanFormat.h"
#include "dsc/Version.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace dsrun {

using dsc::Version;

/// Handles --help, -h and --version anywhere on the command line: prints
/// and returns true (the tool then exits 0).
inline bool helpOrVersion(int argc, char **argv, const char *Tool,
                          const char *Usage) {
  for (int I = 1; I < argc; ++I) {
    if (!strcmp(argv[I], "--help") || !strcmp(argv[I], "-h")) {
      fputs(Usage, stdout);
      return true;
    }
    if (!strcmp(argv[I], "--version")) {
      printf("%s %s (dsc), plan format %u\n", Tool, Version,
             dsc::plan::FormatVersion);
      return true;
    }
  }
  return false;
}

/// The number of CUDA devices, or 0 with Error saying why there are none.
inline int cudaDevices(std::string &Error) {
  int Devices = 0;
  cudaError_t E = cudaGetDeviceCount(&Devices);
  if (E == cudaErrorNoDevice || E == cudaErrorInsufficientDriver ||
      (E == cudaSuccess && Devices == 0)) {
    Error = "no CUDA device or driver found on this machine (" +
            std::string(cudaGetErrorString(E)) +
            "); dsrun runs plans on GPUs, dsc makes them anywhere";
    return 0;
  }
  if (E != cudaSuccess) {
    Error = std::string("the CUDA runtime cannot count the GPUs: ") +
            cudaGetErrorString(E);
    return 0;
  }
  return Devices;
}

} // namespace dsrun

#endif
