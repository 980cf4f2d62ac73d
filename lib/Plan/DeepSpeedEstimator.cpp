//===- DeepSpeedEstimator.cpp - DeepSpeed's own memory arithmetic ---------===//
//
// Reproduces the estimators of deepspeed/runtime/zero (docs/planner.md) and the
// rules of thumb users apply with them, so a report can show DeepSpeed's
// number beside the plan's and say where the difference comes from.
//
//===----------------------------------------------------------------------===//

#include "dsc/Plan/Estimate.h"

#include <algorithm>
#include <string>

namespace dsc {

// The HF DeepSpeed guide: "overlap_comm uses 4.5x the allgather_bucket_size
// and reduce_bucket_size values" of 2-byte elements.
constexpr double OverlapCommBucketFactor = 4.5;
constexpr uint64_t HalfPrecisionBytes = 2;

ModelStateBytes deepspeedZero2ModelStates(uint64_t Params,
                                          uint32_t GpusPerNode,
                                          uint32_t Nodes, bool CpuOffload,
                                          double Factor) {
  double P = double(Params);
  uint64_t TotalGpus = uint64_t(GpusPerNode) * Nodes;
  ModelStateBytes B;
  if (CpuOffload) {
    B.GpuBytes = 2 * Params;
    B.CpuBytes =
        uint64_t(P * std::max<double>(4.0 * TotalGpus, 16.0) * Factor);
  } else {
    // 2 bytes of 16-bit parameters; 18 = 2 (16-bit gradients) + 4 (fp32
    // gradients) + 4 (fp32 parameters) + 8 (Adam moments), partitioned.
    B.GpuBytes = 2 * Params + uint64_t(18.0 * P / double(TotalGpus));
    B.CpuBytes = uint64_t(P * 4.0 * GpusPerNode * Factor);
  }
  return B;
}

ModelStateBytes deepspeedZero3ModelStates(uint64_t Params,
                                          uint64_t LargestLayer,
                                          uint32_t GpusPerNode, uint32_t Nodes,
                                          bool CpuOffload,
                                          bool CpuOffloadParams, bool ZeroInit,
                                          double Factor) {
  double P = double(Params), L = double(LargestLayer);
  uint64_t TotalGpus = uint64_t(GpusPerNode) * Nodes;
  double GpusFactor = 1.0 / Nodes;
  uint64_t LargestLayerMemory = 4 * LargestLayer;
  ModelStateBytes B;
  if (CpuOffload) {
    if (CpuOffloadParams) {
      B.GpuBytes = LargestLayerMemory;
      B.CpuBytes =
          ZeroInit ? uint64_t(P * 18 * GpusFactor * Factor)
                   : uint64_t(P * std::max(4.0 * GpusPerNode,
                                           18 * GpusFactor) * Factor);
    } else {
      B.GpuBytes = LargestLayerMemory + uint64_t(2 * P / double(TotalGpus));
      B.CpuBytes =
          ZeroInit ? uint64_t(P * 16 * GpusFactor * Factor)
                   : uint64_t(P * std::max(4.0 * GpusPerNode,
                                           16 * GpusFactor) * Factor);
    }
  } else {
    B.GpuBytes = LargestLayerMemory + uint64_t(18 * P / double(TotalGpus));
    B.CpuBytes = ZeroInit ? uint64_t(L * 4 * GpusPerNode * Factor)
                          : uint64_t(P * 4 * GpusPerNode * Factor);
  }
  return B;
}

uint64_t zeroPaperModelStates(unsigned Stage, uint64_t Params,
                              uint32_t DataParallel,
                              unsigned OptimizerBytesPerParam) {
  double P = double(Params), K = OptimizerBytesPerParam, N = DataParallel;
  switch (Stage) {
  case 0:
    return uint64_t((2 + 2 + K) * P);
  case 1:
    return uint64_t(2 * P + 2 * P + K * P / N);
  case 2:
    return uint64_t(2 * P + (2 + K) * P / N);
  default:
    return uint64_t((2 + 2 + K) * P / N);
  }
}

plan::DeepSpeedEstimate deepspeedEstimate(const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  uint64_t Params = 0, Largest = 0;
  for (const plan::Tensor &T : P.Tensors)
    Params += T.Elems;
  for (const plan::Module &M : P.Modules)
    Largest = std::max(Largest, M.Elems);
  bool OptimizerOffload = S.OptimizerOffload != plan::OffloadDevice::None;
  bool ParamOffload = S.ParamOffload != plan::OffloadDevice::None;
  plan::DeepSpeedEstimate E;
  ModelStateBytes States;
  if (S.ZeroStage == 0) {
    States.GpuBytes = zeroPaperModelStates(0, Params, S.WorldSize);
    E.Basis = "DeepSpeed has no estimator for stage 0: the ZeRO paper's "
              "16 bytes per parameter";
  } else if (S.ZeroStage < 3) {
    States = deepspeedZero2ModelStates(Params, S.GpusPerNode, S.Nodes,
                                       OptimizerOffload);
    E.Basis = std::string("estimate_zero2_model_states_mem_needs") +
              (S.ZeroStage == 1 ? " (DeepSpeed has no stage-1 estimator)"
                                : "");
  } else {
    States = deepspeedZero3ModelStates(Params, Largest, S.GpusPerNode,
                                       S.Nodes, OptimizerOffload,
                                       ParamOffload, /*ZeroInit=*/true);
    E.Basis = "estimate_zero3_model_states_mem_needs (zero_init)";
  }
  if (S.OptimizerOffload == plan::OffloadDevice::NVMe ||
      S.ParamOffload == plan::OffloadDevice::NVMe)
    E.Basis += ", NVMe taken as CPU offload";
  E.DeviceBytes = States.GpuBytes;
  E.HostBytes = States.CpuBytes;
  if (S.ZeroStage >= 1 && S.ZeroStage <= 2 && S.OverlapComm) {
    E.DeviceBytes += uint64_t(OverlapCommBucketFactor *
                              double(S.ReduceBucketElems +
                                     S.AllgatherBucketElems) *
                              HalfPrecisionBytes);
    E.Basis += " + 4.5 x (reduce_bucket_size + allgather_bucket_size) x 2 "
               "bytes for overlap_comm";
  }
  if (S.ZeroStage == 3) {
    uint64_t Window =
        std::min(Params, S.MaxLiveParams + S.PrefetchBucketElems);
    E.DeviceBytes += Window * HalfPrecisionBytes;
    E.Basis += " + 2 bytes x (stage3_max_live_parameters + "
               "stage3_prefetch_bucket_size), at most the model";
  }
  E.Basis += "; no activations";
  return E;
}

} // namespace dsc
