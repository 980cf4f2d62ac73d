//===- Estimate.cpp - What each rank needs, and how long a step takes -----===//
//
// Device peak = the device arena (the memory plan's placement) + the fixed
// costs outside it. The live bound is the largest sum of live bytes at any
// instruction: no placement can do better, and the report says how far the
// arena is above it. Step time comes from replaying the program on its
// streams with each instruction's estimated duration; replaying it again
// with communication (or offload) made free shows how much of it is
// exposed.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"
#include "dsc/Plan/Estimate.h"
#include "dsc/PlanFacts.h"

using namespace llvm;

namespace dsc {

namespace {

uint64_t arenaBytes(const plan::Plan &P, plan::MemorySpace Space, size_t C) {
  uint64_t End = 0;
  for (const plan::Buffer &B : P.Buffers)
    if (B.Space == Space && B.Bytes[C] && !B.Live.empty())
      End = std::max(End, B.Offsets[C] + roundUp(B.Bytes[C], 256));
  return End;
}

/// The step's duration when instructions matching Free take no time.
template <typename Pred>
uint64_t replay(const plan::Plan &P, Pred Free) {
  uint64_t Last = 0;
  for (const plan::PlannedSpan &S : plan::replaySpans(P, Free))
    Last = std::max(Last, S.Finish);
  return Last;
}

} // namespace

Error runEstimatePass(plan::Plan &P) {
  if (P.Buffers.empty())
    return planError("the estimate needs the memory plan first");
  plan::Estimate &E = P.Estimates;
  const plan::Info &S = P.Settings;
  E.Ranks.clear();
  uint64_t Fixed = 0;
  for (const plan::FixedCost &F : E.Fixed)
    Fixed += F.Bytes;

  size_t N = P.Program.size();
  for (size_t C = 0; C < P.Layout.RankClasses.size(); ++C) {
    plan::RankEstimate R;
    R.DeviceArenaBytes = arenaBytes(P, plan::MemorySpace::Device, C);
    R.HostArenaBytes = arenaBytes(P, plan::MemorySpace::Host, C);
    R.DeviceFixedBytes = Fixed;
    R.DevicePeakBytes = R.DeviceArenaBytes + Fixed;

    // Live device bytes at each instruction, by difference array.
    std::vector<int64_t> Delta(N + 1, 0);
    for (const plan::Buffer &B : P.Buffers)
      if (B.Space == plan::MemorySpace::Device)
        for (const plan::Interval &L : B.Live) {
          Delta[L.Begin] += B.Bytes[C];
          Delta[L.End] -= B.Bytes[C];
        }
    int64_t Live = 0;
    for (size_t I = 0; I < N; ++I) {
      Live += Delta[I];
      if (uint64_t(Live) > R.DeviceLiveBoundBytes) {
        R.DeviceLiveBoundBytes = Live;
        R.PeakInstruction = I;
      }
    }
    uint64_t ByCategory[plan::NumCategories] = {};
    for (const plan::Buffer &B : P.Buffers) {
      if (B.Space == plan::MemorySpace::Host) {
        if (B.Pinned && !B.Live.empty())
          R.HostPinnedBytes += B.Bytes[C];
        continue;
      }
      for (const plan::Interval &L : B.Live)
        if (L.Begin <= R.PeakInstruction && R.PeakInstruction < L.End)
          ByCategory[unsigned(B.What)] += B.Bytes[C];
    }
    for (unsigned K = 0; K < plan::NumCategories; ++K)
      if (ByCategory[K])
        R.AtPeak.push_back({plan::Category(K), ByCategory[K]});
    R.HostPeakBytes = R.HostArenaBytes;

    // What lives on NVMe: optimizer state and master weights, or the
    // parameter shards.
    uint64_t Owned = P.Layout.PartitionElems;
    if (S.OptimizerOffload == plan::OffloadDevice::NVMe)
      R.NVMeBytes += bytesOf(Owned, S.MasterDType) +
                     S.OptimizerStates * bytesOf(Owned, S.OptimizerStateDType);
    if (S.ParamOffload == plan::OffloadDevice::NVMe)
      for (const plan::Tensor &T : P.Tensors)
        if (!T.Persistent)
          R.NVMeBytes += bytesOf(T.ShardElems, S.ParamDType);
    E.Ranks.push_back(std::move(R));
  }

  E.DeepSpeed = deepspeedEstimate(P);
  E.StepNanos = replay(P, [](const plan::Instruction &) { return false; });
  E.ExposedCommNanos = E.StepNanos - replay(P, plan::isCommunication);
  E.ExposedOffloadNanos = E.StepNanos - replay(P, plan::isOffload);
  return Error::success();
}

} // namespace dsc
