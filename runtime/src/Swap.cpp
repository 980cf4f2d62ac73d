//===- Swap.cpp - NVMe offload: optimizer state and parameters in files ---===//
//
// With offload device nvme, a rank's fp32 master weights and moments live
// in its optimizer swap file and pass, one sub-group at a time, through
// the planned nvme_optimizer_buffers (master, first and second moment);
// at stage 3 its parameter shards live in the parameter swap file and
// each unit passes through the one of the nvme_param_buffers the plan
// names for its read. The plan orders every reuse of those buffers; the
// I/O runs as host work on the stream the plan gives it.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "HostMath.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <cstring>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

void swapCheck(bool Ok, const std::string &Error, const std::string &Where) {
  if (!Ok)
    fatalError(Error + " (" + Where + ")");
}


} // namespace

HostState Executor::hostState(uint32_t G) const {
  // With NVMe, the sub-group's state is in the swap buffers, one each;
  // else in the host's partition arrays, from the sub-group's start.
  const plan::Placement &X = P.Places;
  if (OptimizerSwap)
    return {reinterpret_cast<float *>(Buffers.at(X.Runtime.NVMeState[0])),
            reinterpret_cast<float *>(Buffers.at(X.Runtime.NVMeState[1])),
            reinterpret_cast<float *>(Buffers.at(X.Runtime.NVMeState[2]))};
  uint64_t Lo = X.SubGroups[G].Begin;
  return {reinterpret_cast<float *>(Buffers.at(X.Owned.Master, Lo)),
          reinterpret_cast<float *>(Buffers.at(X.Owned.Moment1, Lo)),
          reinterpret_cast<float *>(Buffers.at(X.Owned.Moment2, Lo))};
}

void Executor::timedIo(uint32_t Instruction, uint64_t Bytes,
                       const std::function<void()> &Io) {
  Counts.IoNanos[Instruction] = nanosToRun(Io);
  Counts.IoBytes[Instruction] = Bytes;
}

bool Executor::setUpSwap() {
  const plan::Info &S = P.Settings;
  bool Optimizer = S.OptimizerOffload == plan::OffloadDevice::NVMe;
  bool Params = S.ParamOffload == plan::OffloadDevice::NVMe;
  if (!Optimizer && !Params)
    return true;
  Swap = std::make_unique<SwapLayout>(P);
  std::string Base = Options.NvmePath + "/dsrun-rank" +
                     std::to_string(Process.Rank) + "-";
  std::string Error;
  const unsigned QueueDepth = 8;
  const uint64_t Block = 1 << 20;
  // checkRunnable has checked the buffers' count and sizes.
  if (Optimizer) {
    OptimizerSwap = std::make_unique<SwapFile>();
    if (!OptimizerSwap->create(Base + "optimizer.swp",
                               Swap->OptimizerFileBytes, QueueDepth, Block,
                               Error)) {
      fprintf(stderr, "dsrun: %s\n", Error.c_str());
      return false;
    }
  }
  if (Params) {
    ParamSwap = std::make_unique<SwapFile>();
    if (!ParamSwap->create(Base + "params.swp", Swap->ParamFileBytes,
                           QueueDepth, Block, Error)) {
      fprintf(stderr, "dsrun: %s\n", Error.c_str());
      return false;
    }
  }
  if (Process.Rank == 0)
    fprintf(stderr, "dsrun: NVMe swap files in %s (%s I/O)\n",
            Options.NvmePath.c_str(),
            (OptimizerSwap ? OptimizerSwap->direct() : ParamSwap->direct())
                ? "direct"
                : "buffered: the file system refuses O_DIRECT");
  return true;
}

bool Executor::stateIo(uint32_t G, const HostState &Regions, bool Write,
                       std::string &Error) {
  uint64_t Bytes = P.Layout.SubGroups[G].Elems * 4;
  float *Region[3] = {Regions.Master, Regions.M, Regions.V};
  for (unsigned K = 0; K < 3; ++K) {
    uint64_t At = Swap->optimizerRegion(G, K);
    if (!(Write ? OptimizerSwap->write(Region[K], At, Bytes, Error)
                : OptimizerSwap->read(Region[K], At, Bytes, Error)))
      return false;
  }
  return true;
}

void Executor::initializeSwap() {
  std::string Error;
  if (OptimizerSwap) {
    // Master weights start as the stored 16-bit weights, moments at zero.
    uint64_t Owned = Stage == 0 ? P.Layout.FlatElems : P.Layout.PartitionElems;
    std::vector<float> All(Owned, 0.0f), Zero;
    for (const plan::OwnedPiece &O : plan::ownedPieces(P, Process.Rank))
      for (uint64_t I = 0; I < O.End - O.Begin; ++I)
        All[O.PartitionOffset + I] =
            storedValue(startWeight(O.Tensor, O.Begin + I), ParamType);
    for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G) {
      uint64_t Lo = P.Places.SubGroups[G].Begin;
      Zero.assign(P.Layout.SubGroups[G].Elems, 0.0f);
      swapCheck(stateIo(G, {All.data() + Lo, Zero.data(), Zero.data()},
                        /*Write=*/true, Error),
                Error, "initial optimizer state");
    }
  }
  if (ParamSwap) {
    for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
      std::vector<char> Block(Swap->unitBytes(U));
      for (uint32_t T : P.FetchUnits[U].Tensors) {
        const plan::Tensor &X = P.Tensors[T];
        uint64_t Base = uint64_t(ShardRank) * X.ShardElems;
        char *Dst = Block.data() + Swap->shardInUnit(T);
        for (uint64_t I = 0; I < X.ShardElems; ++I)
          storeAs(Dst, I, ParamType,
                  Base + I < X.Elems ? startWeight(T, Base + I) : 0.0f);
      }
      swapCheck(ParamSwap->write(Block.data(), Swap->unitBase(U), Block.size(),
                                 Error),
                Error, "initial parameters");
    }
  }
}

void Executor::swapIn(const Instr &C, const plan::Transfer &X) {
  std::string Where = where();
  uint32_t I = C.Index;
  if (X.Point == plan::TransferPoint::BeforeStep) {
    uint32_t G = X.Owner;
    uint64_t Bytes = 3 * P.Layout.SubGroups[G].Elems * 4;
    Timing.onHost(
        C,
        [=] {
          timedIo(I, Bytes, [&] {
            std::string Error;
            swapCheck(stateIo(G, hostState(G), /*Write=*/false, Error), Error,
                      Where);
          });
        });
    return;
  }
  // A stage-3 unit's shards, into the parameter buffer the plan gives this
  // read.
  uint32_t U = X.Owner;
  char *Buffer = Buffers.at(P.Places.InstructionSlots[I]);
  Timing.onHost(
      C,
      [=] {
        timedIo(I, Swap->unitBytes(U), [&] {
          std::string Error;
          swapCheck(ParamSwap->read(Buffer, Swap->unitBase(U),
                                    Swap->unitBytes(U), Error),
                    Error, Where);
        });
      });
}

void Executor::swapOut(const Instr &C, const plan::Transfer &X) {
  std::string Where = where();
  uint32_t G = X.Owner, I = C.Index;
  uint64_t Lo = P.Places.SubGroups[G].Begin, N = P.Layout.SubGroups[G].Elems;
  if (X.What != plan::Category::Params16) {
    Timing.onHost(
        C,
        [=] {
          timedIo(I, 3 * N * 4, [&] {
            std::string Error;
            swapCheck(stateIo(G, hostState(G), /*Write=*/true, Error), Error,
                      Where);
          });
        });
    return;
  }
  // The updated 16-bit shards of the sub-group's tensors (the persistent
  // ones stay on the device), through the parameter staging buffer.
  char *Staging = Buffers.at(P.Places.Runtime.ParamStaging);
  unsigned PB = elementBytes(ParamType);
  std::vector<plan::OwnedPiece> Pieces;
  for (const plan::OwnedPiece &O : plan::ownedPieces(P, Process.Rank))
    if (O.PartitionOffset >= Lo && O.PartitionOffset < Lo + N &&
        !P.Tensors[O.Tensor].Persistent)
      Pieces.push_back(O);
  Timing.onHost(
      C,
      [=] {
        HostState H = hostState(G);
        std::string Error;
        uint64_t Bytes = 0, Nanos = 0;
        for (const plan::OwnedPiece &O : Pieces) {
          uint64_t Elems = O.End - O.Begin;
          timedConvert(I, Staging, ParamType,
                       H.Master + (O.PartitionOffset - Lo), ElementType::F32,
                       Elems, false);
          // Only the write is timed; the conversion is host work.
          timedIo(I, Elems * PB, [&] {
            swapCheck(ParamSwap->write(Staging, Swap->shardOffset(O.Tensor),
                                       Elems * PB, Error),
                      Error, Where);
          });
          Bytes += Counts.IoBytes[I];
          Nanos += Counts.IoNanos[I];
        }
        Counts.IoBytes[I] = Bytes;
        Counts.IoNanos[I] = Nanos;
      });
}

} // namespace dsrun
