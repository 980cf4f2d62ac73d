//===- Offload.cpp - Copies between device, host and NVMe -----------------===//
//
// With the optimizer offloaded (stage 1-3) each rank's share of the
// reduced gradients goes to the host after its reduction, the optimizer
// steps on the CPU sub-group by sub-group, and the updated 16-bit shard
// comes back (unless parameters live on the host too). NVMe adds a read
// of the master weights and states before each sub-group's step and a
// write after it. Stage 3 parameter offload copies a unit's host shard to
// the device before every gather.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"
#include "dsc/PlanFacts.h"

using namespace llvm;

namespace dsc {

namespace {

class OffloadPlanner {
public:
  explicit OffloadPlanner(plan::Plan &P) : P(P), S(P.Settings) {}

  void run() {
    P.Transfers.clear();
    if (S.OptimizerOffload != plan::OffloadDevice::None) {
      gradientsOut();
      optimizerStep();
    }
    if (S.ParamOffload != plan::OffloadDevice::None)
      parameterFetches();
  }

private:
  /// A transfer; ConvertedElems are converted between 16-bit and fp32 on
  /// the host beside it (an updated parameter before its copy), or by it
  /// (a host conversion, which copies nothing), moving ConvertBytes bytes
  /// an element in host memory.
  void add(plan::TransferKind Kind, plan::Category What,
           plan::TransferPoint Point, uint32_t Owner, uint64_t Bytes,
           bool Pinned, uint64_t ConvertedElems = 0, uint64_t ConvertBytes = 0,
           bool Staged = false) {
    const plan::Hardware &H = S.Machine;
    uint64_t Rate;
    switch (Kind) {
    case plan::TransferKind::NVMeRead:
      Rate = H.NVMeReadBytesPerSec;
      break;
    case plan::TransferKind::NVMeWrite:
      Rate = H.NVMeWriteBytesPerSec;
      break;
    default:
      Rate = Pinned ? H.PinnedCopyBytesPerSec : H.PageableCopyBytesPerSec;
    }
    uint64_t Nanos =
        (Kind == plan::TransferKind::HostConvert ? 0
                                                 : transferNanos(Bytes, Rate)) +
        hostPassNanos(ConvertedElems, ConvertBytes, H.HostConvertElemsPerSec,
                      H);
    P.Transfers.push_back(
        {Kind, What, Point, Owner, Bytes, Pinned, Nanos, Staged});
  }

  /// Each bucket's reduced gradients, this rank's share, to the host
  /// partition: one copy straight into place where they keep their type
  /// and the micro step starts the partition's gradients; otherwise
  /// (stagedGradients) a copy into a pinned staging slot, and a host
  /// conversion on the host stream that converts the slot into the
  /// partition, adding in later micro steps, while the next bucket's copy
  /// runs. A bucket has the forms its micro steps use.
  void gradientsOut() {
    for (uint32_t B = 0; B < P.Buckets.size(); ++B) {
      uint64_t Share = 0;
      for (const plan::Segment &Seg : P.Buckets[B].Segments)
        Share += S.ZeroStage == 3 ? P.Tensors[Seg.Tensor].ShardElems
                                  : divideRoundingUp(Seg.End - Seg.Begin,
                                                     S.WorldSize);
      uint64_t Bytes = bytesOf(Share, plan::gradSourceType(P, B));
      if (!plan::stagedGradients(P, B, 0))
        add(plan::TransferKind::DeviceToHost, plan::Category::Grads,
            plan::TransferPoint::AfterReduce, B, Bytes,
            S.OptimizerOffloadPinned);
      if (!plan::stagedInSomeMicroStep(P, B))
        continue;
      add(plan::TransferKind::DeviceToHost, plan::Category::Grads,
          plan::TransferPoint::AfterReduce, B, Bytes, S.OptimizerOffloadPinned,
          0, 0, /*Staged=*/true);
      // The slot read and the partition written; read too where a later
      // micro step adds to it (one time serves every micro step: the
      // adding one's).
      bool Adds = plan::gradientsAdd(S, S.GradAccum - 1);
      add(plan::TransferKind::HostConvert, plan::Category::Grads,
          plan::TransferPoint::AfterReduce, B, Bytes, S.OptimizerOffloadPinned,
          Share,
          bytesOf(1, plan::gradSourceType(P, B)) +
              (Adds ? 2 : 1) * bytesOf(1, plan::hostGradType(S)),
          /*Staged=*/true);
    }
  }

  void optimizerStep() {
    bool NVMe = S.OptimizerOffload == plan::OffloadDevice::NVMe;
    for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G) {
      uint64_t Elems = P.Layout.SubGroups[G].Elems;
      uint64_t StateBytes = bytesOf(Elems, S.MasterDType) +
                            S.OptimizerStates *
                                bytesOf(Elems, S.OptimizerStateDType);
      if (NVMe)
        add(plan::TransferKind::NVMeRead, plan::Category::OptimizerStates,
            plan::TransferPoint::BeforeStep, G, StateBytes, true);
      if (NVMe)
        add(plan::TransferKind::NVMeWrite, plan::Category::OptimizerStates,
            plan::TransferPoint::AfterStep, G, StateBytes, true);
      if (S.ParamOffload == plan::OffloadDevice::None) {
        // The host AdamW writes the 16-bit copy in its pass (as
        // DeepSpeedCPUAdam's adam_update_copy): only the copy is left.
        add(plan::TransferKind::HostToDevice, plan::Category::Params16,
            plan::TransferPoint::AfterStep, G, bytesOf(Elems, S.ParamDType),
            S.OptimizerOffloadPinned);
        continue;
      }
      // Parameters live on the host, except the persistent ones every
      // rank keeps whole on the device: their updated shards go back.
      uint64_t Persistent = 0;
      const plan::SubGroup &Group = P.Layout.SubGroups[G];
      for (uint32_t I = Group.FirstTensor; I < Group.EndTensor; ++I)
        if (P.Tensors[P.Layout.Order[I]].Persistent)
          Persistent += P.Tensors[P.Layout.Order[I]].ShardElems;
      if (Persistent)
        add(plan::TransferKind::HostToDevice, plan::Category::Params16,
            plan::TransferPoint::AfterStep, G,
            bytesOf(Persistent, S.ParamDType), S.OptimizerOffloadPinned,
            Persistent, 4 + bytesOf(1, S.ParamDType));
      if (S.ParamOffload == plan::OffloadDevice::NVMe)
        add(plan::TransferKind::NVMeWrite, plan::Category::Params16,
            plan::TransferPoint::AfterStep, G, bytesOf(Elems, S.ParamDType),
            true);
    }
  }

  void parameterFetches() {
    for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
      uint64_t Shard = 0;
      for (uint32_t T : P.FetchUnits[U].Tensors)
        Shard += P.Tensors[T].ShardElems;
      uint64_t Bytes = bytesOf(Shard, S.ParamDType);
      if (S.ParamOffload == plan::OffloadDevice::NVMe)
        add(plan::TransferKind::NVMeRead, plan::Category::Params16,
            plan::TransferPoint::BeforeGather, U, Bytes, true);
      add(plan::TransferKind::HostToDevice, plan::Category::Params16,
          plan::TransferPoint::BeforeGather, U, Bytes, S.ParamOffloadPinned);
    }
  }

  plan::Plan &P;
  const plan::Info &S;
};

} // namespace

Error runOffloadPass(plan::Plan &P) {
  OffloadPlanner(P).run();
  // A unit read from NVMe must fit one aio buffer (DeepSpeed asserts the
  // same of its largest parameter); say so now rather than at run time.
  const plan::Info &S = P.Settings;
  if (S.ParamOffload != plan::OffloadDevice::NVMe)
    return Error::success();
  uint64_t PB = plan::dtypeBytes(S.ParamDType);
  for (uint32_t I = 0; I < P.FetchUnits.size(); ++I) {
    const plan::FetchUnit &U = P.FetchUnits[I];
    // Shards are read on page boundaries (direct I/O): count their padding.
    uint64_t Elems = divideRoundingUp(plan::swapUnitBytes(P, I), PB);
    if (Elems * PB > S.AioBufferBytes)
      return createStringError(
          inconvertibleErrorCode(),
          "zero_optimization.offload_param.buffer_size holds %llu elements "
          "but the fetch unit of '%s' reads %llu per rank from NVMe; raise "
          "buffer_size to at least %llu",
          (unsigned long long)(S.AioBufferBytes / PB),
          U.Module < P.Modules.size() ? P.Modules[U.Module].Name.c_str() : "?",
          (unsigned long long)Elems, (unsigned long long)Elems);
  }
  return Error::success();
}

} // namespace dsc
