//===- GemmTuning.h - Each product of a plan under each algorithm -*- C++ -*-===//
//
// Times the algorithms cuBLASLt's heuristic offers for each distinct
// product of a plan's compute program, on operands of random values sized
// for the product alone (not the plan's arena, which may hold a step's
// results). A product small enough to sit in L2 takes a fresh copy of its
// operands at each launch, as it finds them in a training step.
// dsrun-gemm-bench prints the times; dsrun --calibration-out writes the
// products whose fastest beats the first, which dsc plan --calibration
// carries into the plan (Matmuls.h runs them).
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_GEMMTUNING_H
#define DSRUN_GEMMTUNING_H

#include "Matmuls.h"

#include <string>
#include <vector>

namespace dsrun {

/// What dsrun --calibration-out times: the heuristic's first 16
/// algorithms, 20 launches each, and it keeps a faster one only where it
/// takes 2 % less than the first (timing noise must not pick).
constexpr int CalibrationCandidates = 16, CalibrationReps = 20;
constexpr double CalibrationMargin = 0.02;

/// One distinct product and the milliseconds a launch took under each
/// algorithm, in the heuristic's order (as many as it offered, up to the
/// count asked for).
struct ProductTiming {
  const dsc::plan::Kernel *Kernel = nullptr;
  ElementType Type = ElementType::BF16;
  unsigned Calls = 0; ///< Kernels of the program that are this product.
  std::vector<float> Ms;
};

/// Times the first Candidates algorithms of each distinct product of P,
/// Reps launches each after two to warm up, on stream S. Returns "" or
/// why not (no device memory for the operands: nothing is timed).
std::string timeProducts(const dsc::plan::Plan &P, Matmuls &Products,
                         int Candidates, int Reps, cudaStream_t S,
                         std::vector<ProductTiming> &Out);

/// The products whose fastest algorithm takes less than the first by more
/// than Margin (a fraction: timing noise must not pick), as the plan
/// carries them.
std::vector<dsc::plan::GemmAlgorithm>
fasterAlgorithms(const std::vector<ProductTiming> &Timed, double Margin);

} // namespace dsrun

#endif
