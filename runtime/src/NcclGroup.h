//===- NcclGroup.h - Issue an instruction's NCCL calls ----------*- C++ -*-===//
//
// The one place that turns Collectives.h's descriptions into NCCL calls:
// dsrun issues them beside compute, dsrun-bench alone.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_NCCLGROUP_H
#define DSRUN_NCCLGROUP_H

#include "Collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

namespace dsrun {

inline ncclDataType_t ncclTypeOf(ElementType T) {
  return T == ElementType::F32   ? ncclFloat32
         : T == ElementType::F16 ? ncclFloat16
         : T == ElementType::I8  ? ncclInt8
                                 : ncclBfloat16;
}

static_assert(NCCL_CTA_POLICY_DEFAULT == 0 && NCCL_CTA_POLICY_EFFICIENCY == 1 &&
                  NCCL_CTA_POLICY_ZERO == 2,
              "RunOptions::CtaPolicy follows NCCL's values");

/// The communicator's config: NCCL's defaults, or at least MinCTAs CTAs
/// (channels) for every collective when MinCTAs is not 0, and NCCL's CTA
/// policy (NCCL_CTA_POLICY_*) when Policy is not 0. NCCL 2.28 checks the
/// pair of counts and takes an unset maximum for invalid, so the maximum
/// is set to its own default, 64 (MAXCHANNELS).
inline ncclConfig_t commConfig(unsigned MinCTAs, int Policy = 0) {
  ncclConfig_t Config = NCCL_CONFIG_INITIALIZER;
  if (MinCTAs) {
    Config.minCTAs = int(MinCTAs);
    Config.maxCTAs = 64;
  }
  if (Policy)
    Config.CTAPolicy = Policy;
  return Config;
}

/// Issues Group as one NCCL group on stream S; offsets are into Arena.
/// Calls within the hpZ group run on HpzComm, the others on Comm.
/// Returns the first error and sets Failed to the NCCL function's name.
inline ncclResult_t issueGroup(const std::vector<CollectiveCall> &Group,
                               char *Arena, ncclComm_t WorldComm,
                               cudaStream_t S, const char *&Failed,
                               ncclComm_t HpzComm = nullptr) {
  Failed = "ncclGroupStart";
  ncclResult_t R = ncclGroupStart();
  for (const CollectiveCall &C : Group) {
    if (R != ncclSuccess)
      break;
    ncclComm_t Comm = C.Group ? HpzComm : WorldComm;
    if (!Comm) {
      Failed = "the hpZ group's communicator (none was made)";
      R = ncclInvalidUsage;
      break;
    }
    char *Send = Arena + C.Send, *Recv = Arena + C.Recv;
    ncclDataType_t T = ncclTypeOf(C.Type);
    switch (C.Kind) {
    case CollectiveKind::AllReduce:
      Failed = "ncclAllReduce";
      R = ncclAllReduce(Send, Recv, C.Count, T, ncclSum, Comm, S);
      break;
    case CollectiveKind::Reduce:
      Failed = "ncclReduce";
      R = ncclReduce(Send, Recv, C.Count, T, ncclSum, C.Root, Comm, S);
      break;
    case CollectiveKind::ReduceScatter:
      Failed = "ncclReduceScatter";
      R = ncclReduceScatter(Send, Recv, C.Count, T, ncclSum, Comm, S);
      break;
    case CollectiveKind::AllGather:
      Failed = "ncclAllGather";
      R = ncclAllGather(Send, Recv, C.Count, T, Comm, S);
      break;
    }
  }
  if (R != ncclSuccess) {
    ncclGroupEnd();
    return R;
  }
  Failed = "ncclGroupEnd";
  return ncclGroupEnd();
}

} // namespace dsrun

#endif
