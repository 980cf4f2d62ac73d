//===- Matmuls.h - The plan's products through cuBLASLt ---------*- C++ -*-===//
//
// Every `gemm` kernel of the compute program runs through cuBLASLt: per
// distinct product (shapes, strides, types, epilogue) a matmul descriptor
// and its layouts, made once, and an algorithm for it and the plan's
// kernel workspace: the one the plan names (hardware.gemm_algorithms,
// which dsrun --calibration-out timed), else the heuristic's first. Never
// picked by timing inside a run: run-to-run noise would pick another
// algorithm, whose rounding differs, and runs must repeat bit for bit.
//
// The epilogues add a
// Linear's bias to the product's rows as it is stored, then apply GELU
// (tanh form) keeping the biased sum, or multiply by GELU's gradient at a
// kept sum (plan::GemmEpilogue).
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_MATMULS_H
#define DSRUN_MATMULS_H

#include "Synthetic.h"
#include "dsc/PlanFormat.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

namespace dsrun {

/// The library type of a float element type (products take no others).
inline cudaDataType_t cudaType(ElementType T) {
  return T == ElementType::F32   ? CUDA_R_32F
         : T == ElementType::F16 ? CUDA_R_16F
                                 : CUDA_R_16BF;
}

/// What tells products apart for cuBLASLt (plan::sameProduct), and their
/// element type: the key of a prepared product and of an algorithm.
std::vector<int64_t> productKey(const dsc::plan::GemmAttrs &G, ElementType T);

class Matmuls {
public:
  Matmuls() = default;
  Matmuls(const Matmuls &) = delete;
  Matmuls &operator=(const Matmuls &) = delete;
  ~Matmuls();

  /// Creates the cuBLASLt handle.
  std::string init();

  /// The algorithms a plan names for its products (by place in the
  /// heuristic's order), instead of the first.
  void setAlgorithms(const std::vector<dsc::plan::GemmAlgorithm> &Chosen);

  /// Runs gemm kernel K: C = alpha op(A) op(B) + beta C, with its
  /// epilogue: Bias per column, GELU keeping the biased sum in Aux, or
  /// GELU's gradient at Aux; operands of element type T, with the kernel
  /// workspace (the plan reserves plan::GemmWorkspaceBytes). Returns ""
  /// or why it could not run.
  /// With a bias-gradient epilogue, Bias is where the gradient goes; where
  /// cuBLASLt has no algorithm for that epilogue the product runs without
  /// it (said once on stderr) and SeparateBiasGrad is set: the caller sums
  /// the operand itself.
  /// Candidate, where given, picks that place in the heuristic's order
  /// (timing them: GemmTuning.h); it fails where the heuristic offers
  /// fewer. Without it the plan's choice runs, or the first where the
  /// heuristic offers fewer than the plan names (said once on stderr).
  std::string run(const dsc::plan::Kernel &K, const void *A, const void *B,
                  const void *Bias, void *Aux, void *C, ElementType T,
                  void *Workspace, uint64_t WorkspaceBytes, cudaStream_t S,
                  bool &SeparateBiasGrad, int Candidate = -1);

private:
  struct Product {
    cublasLtMatmulDesc_t Desc = nullptr;
    cublasLtMatrixLayout_t A = nullptr, B = nullptr, C = nullptr;
    cublasLtMatmulAlgo_t Algo{};
    /// The product runs without its bias-gradient epilogue.
    bool SeparateBiasGrad = false;
  };
  static void destroy(Product &P);
  std::string prepare(const dsc::plan::Kernel &K, ElementType T,
                      uint64_t WorkspaceBytes, int Candidate, Product &P);

  cublasLtHandle_t Handle = nullptr;
  std::map<std::vector<int64_t>, Product> Products;
  /// The plan's choices: gemm ints and element type -> candidate.
  std::map<std::vector<int64_t>, int> Chosen;
};

} // namespace dsrun

#endif
