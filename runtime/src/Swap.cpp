//===- Swap.cpp - NVMe offload: optimizer state and parameters in files ---===//
//
// With offload device nvme, a rank's fp32 master weights and moments live
// in its optimizer swap file and pass, one sub-group at a time, through
// the planned nvme_optimizer_buffers (master, first and second moment);
// at stage 3 its parameter shards live in the parameter swap file and
// each unit passes through one of the nvme_param_buffers on its way to
// the device. The plan orders every reuse of those buffers; the I/O runs
// as host work on the stream the plan gives it.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "HostMath.h"

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
  auto [Lo, Hi] = L.SubGroupRange[G];
  if (OptimizerSwap) {
    // The sub-group's state is in the swap buffers, one region each.
    uint64_t Stride = swapBufferStride(L.buffer("nvme_optimizer_buffers"),
                                       P.Settings.AioBufferCount);
    char *Buffers = host("nvme_optimizer_buffers");
    return {reinterpret_cast<float *>(Buffers),
            reinterpret_cast<float *>(Buffers + Stride),
            reinterpret_cast<float *>(Buffers + 2 * Stride)};
  }
  uint64_t Owned = L.Stage == 0 ? P.Layout.FlatElems : P.Layout.PartitionElems;
  float *Master = reinterpret_cast<float *>(host("master_params"));
  float *States = reinterpret_cast<float *>(host("optimizer_states"));
  return {Master + Lo, States + Lo, States + Owned + Lo};
}

char *Executor::paramSwapBuffer() const {
  uint64_t Stride = swapBufferStride(L.buffer("nvme_param_buffers"),
                                     P.Settings.AioBufferCount);
  return host("nvme_param_buffers") + SwapSlot[CurrentInstruction] * Stride;
}

void Executor::timedIo(uint32_t Instruction, uint64_t Bytes,
                       const std::function<void()> &Io) {
  IoNanos[Instruction] = nanosToRun(Io);
  IoBytes[Instruction] = Bytes;
}

bool Executor::setUpSwap() {
  const plan::Info &S = P.Settings;
  bool Optimizer = S.OptimizerOffload == plan::OffloadDevice::NVMe;
  bool Params = S.ParamOffload == plan::OffloadDevice::NVMe;
  if (!Optimizer && !Params)
    return true;
  Swap = std::make_unique<SwapLayout>(L);
  std::string Base = Options.NvmePath + "/dsrun-rank" +
                     std::to_string(Process.Rank) + "-";
  std::string Error;
  const unsigned QueueDepth = 8;
  const uint64_t Block = 1 << 20;
  // checkRuntimeNeeds has checked the buffers' count and sizes.
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
    // The buffers are used in turn, in program order (as the plan's waits
    // assume): a unit's copy to the device reads the buffer its read
    // filled.
    SwapSlot.assign(P.Program.size(), 0);
    uint32_t Reads = 0;
    std::vector<uint32_t> SlotOfUnit(P.FetchUnits.size(), 0);
    for (uint32_t I = 0; I < P.Program.size(); ++I) {
      const plan::Instruction &In = P.Program[I];
      if (In.Kind != plan::InstrKind::Transfer)
        continue;
      const plan::Transfer &X = P.Transfers[In.Arg];
      if (X.Point != plan::TransferPoint::BeforeGather)
        continue;
      if (X.Kind == plan::TransferKind::NVMeRead)
        SlotOfUnit[X.Owner] = Reads++ % S.AioBufferCount;
      SwapSlot[I] = SlotOfUnit[X.Owner];
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
  auto [Lo, Hi] = L.SubGroupRange[G];
  float *Region[3] = {Regions.Master, Regions.M, Regions.V};
  for (unsigned K = 0; K < 3; ++K) {
    uint64_t At = Swap->optimizerRegion(G, K), Bytes = (Hi - Lo) * 4;
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
    uint64_t Owned = 0;
    for (auto [Lo, Hi] : L.SubGroupRange)
      Owned = std::max(Owned, Hi);
    std::vector<float> All(Owned, 0.0f), Zero;
    for (const OwnedRange &O : L.Owned)
      for (uint64_t I = 0; I < O.End - O.Begin; ++I)
        All[O.PartitionOffset + I] =
            storedValue(startWeight(O.Tensor, O.Begin + I), L.Param);
    for (uint32_t G = 0; G < L.SubGroupRange.size(); ++G) {
      auto [Lo, Hi] = L.SubGroupRange[G];
      Zero.assign(Hi - Lo, 0.0f);
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
        uint64_t Base = uint64_t(Process.Rank) * X.ShardElems;
        char *Dst = Block.data() + Swap->shardInUnit(T);
        for (uint64_t I = 0; I < X.ShardElems; ++I)
          storeAs(Dst, I, L.Param,
                  Base + I < X.Elems ? startWeight(T, Base + I) : 0.0f);
      }
      swapCheck(ParamSwap->write(Block.data(), Swap->unitBase(U), Block.size(),
                                 Error),
                Error, "initial parameters");
    }
  }
}

void Executor::swapIn(const plan::Transfer &X, cudaStream_t S) {
  uint32_t Slot = uint32_t(P.Program.size()) + CurrentInstruction;
  std::string Where = where();
  uint32_t I = CurrentInstruction;
  if (X.Point == plan::TransferPoint::BeforeStep) {
    uint32_t G = X.Owner;
    auto [Lo, Hi] = L.SubGroupRange[G];
    onHost(S, Slot, [=] {
      timedIo(I, 3 * (Hi - Lo) * 4, [&] {
        std::string Error;
        swapCheck(stateIo(G, hostState(G), /*Write=*/false, Error), Error,
                  Where);
      });
    });
    return;
  }
  // A stage-3 unit's shards, into this read's parameter buffer.
  uint32_t U = X.Owner;
  char *Buffer = paramSwapBuffer();
  onHost(S, Slot, [=] {
    timedIo(I, Swap->unitBytes(U), [&] {
      std::string Error;
      swapCheck(ParamSwap->read(Buffer, Swap->unitBase(U), Swap->unitBytes(U),
                                Error),
                Error, Where);
    });
  });
}

void Executor::swapOut(const plan::Transfer &X, cudaStream_t S) {
  uint32_t Slot = uint32_t(P.Program.size()) + CurrentInstruction;
  std::string Where = where();
  uint32_t G = X.Owner;
  auto [Lo, Hi] = L.SubGroupRange[G];
  uint32_t I = CurrentInstruction;
  if (X.What != plan::Category::Params16) {
    onHost(S, Slot, [=] {
      timedIo(I, 3 * (Hi - Lo) * 4, [&] {
        std::string Error;
        swapCheck(stateIo(G, hostState(G), /*Write=*/true, Error), Error,
                  Where);
      });
    });
    return;
  }
  // The updated 16-bit shards of the sub-group's tensors (the persistent
  // ones stay on the device), through the parameter staging buffer.
  onHost(S, Slot, [=] {
    HostState H = hostState(G);
    std::string Error;
    uint64_t Bytes = 0, Nanos = 0;
    for (const OwnedRange &O : L.Owned) {
      if (O.PartitionOffset < Lo || O.PartitionOffset >= Hi ||
          P.Tensors[O.Tensor].Persistent)
        continue;
      uint64_t N = O.End - O.Begin;
      timedConvert(I, ParamStaging, L.Param, H.Master + (O.PartitionOffset - Lo),
                   ElementType::F32, N, false);
      uint32_t U = L.UnitOfTensor[O.Tensor];
      // Only the write is timed; the conversion is host work.
      timedIo(I, N * elementBytes(L.Param), [&] {
        swapCheck(ParamSwap->write(ParamStaging,
                                   Swap->unitBase(U) +
                                       Swap->shardInUnit(O.Tensor),
                                   N * elementBytes(L.Param), Error),
                  Error, Where);
      });
      Bytes += IoBytes[I];
      Nanos += IoNanos[I];
    }
    IoBytes[I] = Bytes;
    IoNanos[I] = Nanos;
  });
}

} // namespace dsrun
