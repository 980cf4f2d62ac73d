//===- Checks.h - CUDA, NCCL and cuBLAS calls that say what failed -*- C++ -*-===//
//
// A failed call ends the process (a rank that fails must not leave its
// peers waiting on a collective it will never join) with the call, its
// error, and where the run stands: the rank and the plan instruction.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_CHECKS_H
#define DSRUN_CHECKS_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

namespace dsrun {

/// Prints "dsrun: Message" and ends the process.
[[noreturn]] void fatalError(const std::string &Message);

/// " (rank R, instruction I (...))" while an executor runs, else "".
std::string whereNow();

} // namespace dsrun

#define CHECK_CUDA(Call)                                                       \
  do {                                                                         \
    cudaError_t E_ = (Call);                                                   \
    if (E_ != cudaSuccess)                                                     \
      dsrun::fatalError(std::string(#Call) + " failed: " +                     \
                        cudaGetErrorString(E_) + dsrun::whereNow());           \
  } while (0)
#define CHECK_NCCL(Call)                                                       \
  do {                                                                         \
    ncclResult_t E_ = (Call);                                                  \
    if (E_ != ncclSuccess)                                                     \
      dsrun::fatalError(std::string(#Call) + " failed: " +                     \
                        ncclGetErrorString(E_) + dsrun::whereNow());           \
  } while (0)
/// After a kernel launch: a launch that failed (bad configuration, no
/// kernel image for this GPU) says so here, not at some later call.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())
#define CHECK_CUBLAS(Call)                                                     \
  do {                                                                         \
    cublasStatus_t E_ = (Call);                                                \
    if (E_ != CUBLAS_STATUS_SUCCESS)                                           \
      dsrun::fatalError(std::string(#Call) + " failed with status " +          \
                        std::to_string(int(E_)) + dsrun::whereNow());          \
  } while (0)

#endif
