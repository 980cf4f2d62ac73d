//===- Estimate.h - Memory figures: ours, DeepSpeed's, the paper's -*- C++ -*-===//
//
// The planner's estimate comes from the memory plan (Estimate.cpp). Beside
// it stand the closed forms others use, reproduced exactly so that a user
// can see where they come from: DeepSpeed's model-state estimators
// (estimate_zero2/zero3_model_states_mem_needs) and the ZeRO paper's
// table.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLAN_ESTIMATE_H
#define DSC_PLAN_ESTIMATE_H

#include "dsc/PlanFormat.h"

namespace dsc {

/// DeepSpeed's additional_buffer_factor default (applied to CPU memory).
constexpr double DeepSpeedBufferFactor = 1.5;

struct ModelStateBytes {
  uint64_t CpuBytes = 0; ///< Per node.
  uint64_t GpuBytes = 0; ///< Per GPU.
};

/// estimate_zero2_model_states_mem_needs (stage_1_and_2.py).
ModelStateBytes deepspeedZero2ModelStates(uint64_t Params,
                                          uint32_t GpusPerNode,
                                          uint32_t Nodes, bool CpuOffload,
                                          double Factor = DeepSpeedBufferFactor);

/// estimate_zero3_model_states_mem_needs (stage3.py); LargestLayer is the
/// most parameters one module owns directly.
ModelStateBytes deepspeedZero3ModelStates(uint64_t Params,
                                          uint64_t LargestLayer,
                                          uint32_t GpusPerNode, uint32_t Nodes,
                                          bool CpuOffload,
                                          bool CpuOffloadParams, bool ZeroInit,
                                          double Factor = DeepSpeedBufferFactor);

/// The ZeRO paper's model states per GPU (mixed-precision Adam: K = 12
/// bytes of optimizer state per parameter): stage 0 16Ψ, stage 1
/// 4Ψ + 12Ψ/Nd, stage 2 2Ψ + 14Ψ/Nd, stage 3 16Ψ/Nd.
uint64_t zeroPaperModelStates(unsigned Stage, uint64_t Params,
                              uint32_t DataParallel,
                              unsigned OptimizerBytesPerParam = 12);

/// What DeepSpeed's estimator plus its rules of thumb would say for the
/// plan's config: the model-state formulas above, the 4.5x bucket rule of
/// overlap_comm (stage 1/2) and the stage-3 live and prefetch windows.
plan::DeepSpeedEstimate deepspeedEstimate(const plan::Plan &P);

} // namespace dsc

#endif
