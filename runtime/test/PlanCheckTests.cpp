//===- PlanCheckTests.cpp - RuntimePlans tests ------------------------------===//
//
// Every plan given on the command line, for every rank: each trainable
// element owned by exactly one rank, every view inside the rank's arena,
// the pieces of reductions and gathers tiling what they cut up, the same
// NCCL calls on every rank, the offload staging large enough for every
// copy through it, and edited plans refused with the buffer named.
//
//===----------------------------------------------------------------------===//

#include "HostTests.h"

#include "Calibration.h"
#include "Checkpoint.h"
#include "Collectives.h"
#include "Exposed.h"
#include "FastDivmod.h"
#include "HostMath.h"
#include "Launch.h"
#include "Arena.h"
#include "LossScaler.h"
#include "dsc/KernelTime.h"
#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"
#include "Nvme.h"
#include "TokenData.h"
#include "Trace.h"
#include "Weights.h"
#include "dsc/PlanFacts.h"
#include "dsc/SafeTensors.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;

/// Every rank must make the same NCCL calls in the same order (else NCCL
/// hangs), each inside the device arena; a bucket's reduction covers it.
static void collectiveChecks(const char *Path, const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  std::vector<Arena> Ranks;
  for (uint32_t R = 0; R < S.WorldSize; ++R)
    Ranks.emplace_back(P, R);
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    std::vector<CollectiveCall> First = collectiveCalls(Ranks[0], I);
    const plan::Instruction &In = P.Program[I];
    bool Collective = In.Kind == plan::InstrKind::Reduce ||
                      In.Kind == plan::InstrKind::Gather ||
                      In.Kind == plan::InstrKind::GatherSecondary ||
                      In.Kind == plan::InstrKind::GatherParams ||
                      In.Kind == plan::InstrKind::ReduceReplicas ||
                      In.Kind == plan::InstrKind::ReduceAcrossNodes;
    EXPECT(Collective == !First.empty() ||
           In.Kind == plan::InstrKind::GatherParams);
    if (In.Kind == plan::InstrKind::Reduce && S.ZeroStage < 3) {
      // Stage 0/1 all-reduce the bucket, stage 2 reduces every piece of it
      // to its owner: together, the whole bucket.
      uint64_t Covered = 0;
      for (const CollectiveCall &C : First)
        Covered += C.Count;
      EXPECT(Covered == P.Buckets[In.Arg].Elems);
    }
    if (In.Kind == plan::InstrKind::Gather) {
      // One all-gather of every rank's chunk: its shards of the unit, side
      // by side in the chunk; with qwZ, the chunk's int8 bytes and then
      // its scales, one per quantization group.
      const plan::UnitViews &U = P.Places.Units[In.Arg];
      uint64_t Chunk = P.Views[U.Target].Elems / plan::partitionRanks(S);
      if (U.Quantized == plan::NoIndex)
        EXPECT(First.size() == 1 && First[0].Count == Chunk);
      else
        EXPECT(First.size() == 2 && First[0].Count == Chunk &&
               First[0].Type == ElementType::I8 &&
               First[1].Count == plan::qwzGroups(Chunk) &&
               First[1].Type == ElementType::F32);
    }
    if (In.Kind == plan::InstrKind::GatherSecondary) {
      // One all-gather within the hpZ group of each member's slice; with
      // qwZ, its int8 bytes and then its scales.
      const plan::UnitViews &U = P.Places.Units[In.Arg];
      uint64_t Slice = P.Views[U.Target].Elems / S.HpzPartition;
      bool Quantized = U.QuantizedSecondarySend != plan::NoIndex;
      EXPECT(First.size() == (Quantized ? 2u : 1u) &&
             First[0].Scope == CommScope::HpzGroup &&
             First[0].GroupRanks == S.HpzPartition && First[0].Count == Slice &&
             (!Quantized ||
              (First[0].Type == ElementType::I8 &&
               First[1].Scope == CommScope::HpzGroup &&
               First[1].GroupRanks == S.HpzPartition &&
               First[1].Count == plan::qwzGroups(Slice))));
    }
    if (plan::qgzAcrossNodes(S) && (In.Kind == plan::InstrKind::Reduce ||
                                    In.Kind == plan::InstrKind::ReduceAcrossNodes)) {
      // ZeRO++ qgZ: each gradient it does not quantize reduce-scattered
      // alone over every rank; the quantized ones' 4-bit blocks exchanged
      // within the node beside those, then across nodes.
      plan::QgzLayout L = plan::qgzLayout(P, In.Arg);
      size_t Plain = 0, K = 0;
      for (const plan::Segment &Seg : P.Buckets[In.Arg].Segments)
        if (!plan::qgzTensor(S, P.Tensors[Seg.Tensor]).Quantized) {
          EXPECT(In.Kind == plan::InstrKind::ReduceAcrossNodes ||
                 (K < First.size() &&
                  First[K].Kind == CollectiveKind::ReduceScatter &&
                  First[K].Scope == CommScope::World &&
                  First[K].Count == P.Tensors[Seg.Tensor].ShardElems));
          ++Plain, ++K;
        }
      bool Across = In.Kind == plan::InstrKind::ReduceAcrossNodes;
      size_t Exchanges = L.Pieces.empty() ? 0 : 1;
      EXPECT(First.size() == (Across ? 1 : Plain + Exchanges));
      if (Exchanges && !First.empty()) {
        const CollectiveCall &X = First.back();
        EXPECT(X.Kind == CollectiveKind::AllToAll &&
               X.Type == ElementType::I8 &&
               X.Scope == (Across ? CommScope::AcrossNodes : CommScope::Node) &&
               X.GroupRanks == (Across ? S.Nodes : S.GpusPerNode) &&
               X.Count == (Across ? L.Block2 : L.Block1));
      }
    }
    if (In.Kind == plan::InstrKind::ReduceReplicas) {
      // MiCS: the rank's shards of the bucket's tensors in its gradient
      // partition, all-reduced in place across the replicas.
      uint64_t Shards = 0, Covered = 0;
      for (const plan::Segment &Seg : P.Buckets[In.Arg].Segments)
        Shards += P.Tensors[Seg.Tensor].ShardElems;
      for (const CollectiveCall &C : First) {
        Covered += C.Count;
        EXPECT(C.Kind == CollectiveKind::AllReduce && C.Send == C.Recv &&
               C.Scope == CommScope::MicsReplicas &&
               C.GroupRanks == plan::replicaRanks(S));
      }
      EXPECT(Covered == Shards);
    }
    for (const Arena &A : Ranks) {
      std::vector<CollectiveCall> Mine = collectiveCalls(A, I);
      if (Mine.size() != First.size()) {
        fprintf(stderr, "%s: instruction %u: rank %u makes %zu NCCL calls, "
                        "rank 0 %zu\n",
                Path, I, A.Rank, Mine.size(), First.size());
        ADD_FAILURE();
        continue;
      }
      for (size_t K = 0; K < Mine.size(); ++K) {
        const CollectiveCall &C = Mine[K], &B = First[K];
        EXPECT(C.Kind == B.Kind && C.Count == B.Count && C.Type == B.Type &&
               C.Root == B.Root);
        uint64_t Elem = elementBytes(C.Type);
        bool Gathered = C.Kind == CollectiveKind::AllGather;
        bool Scattered = C.Kind == CollectiveKind::ReduceScatter;
        bool Exchanged = C.Kind == CollectiveKind::AllToAll;
        uint64_t SendBytes = C.Count * Elem *
                             (Scattered || Exchanged ? C.ranks(S.WorldSize) : 1);
        uint64_t RecvBytes = C.Count * Elem *
                             (Gathered || Exchanged ? C.ranks(S.WorldSize) : 1);
        EXPECT(C.Send + SendBytes <= A.deviceBytes() &&
               C.Recv + RecvBytes <= A.deviceBytes());
        // What a rank sends or receives as its part is its own.
        if (Gathered)
          EXPECT(C.Send == C.Recv + A.Slot * C.Count * Elem ||
                 (S.ParamOffload == plan::OffloadDevice::None &&
                  !plan::unitGathersQuantized(P)) ||
                 C.Scope == CommScope::HpzGroup);
        if (Scattered)
          EXPECT(C.Recv == C.Send + A.Slot * C.Count * Elem);
      }
    }
  }
}

/// The views every rank reads through cut what they cut up exactly: a
/// stage-3 bucket's chunk is its tensors' slots side by side (with ZeRO++
/// qgZ across nodes, the bucket its tensors whole, each rank's slot its
/// partition of one), a unit's
/// chunk likewise, a stage 1/2 bucket its owners' pieces in partition
/// order; and the offload staging holds every copy that passes through it.
static void viewChecks(const char *Path, const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  const plan::Placement &X = P.Places;
  for (uint32_t R = 0; R < S.WorldSize; ++R) {
    Arena A(P, R);
    for (uint32_t V = 0; V < P.Views.size(); ++V) {
      uint64_t End = A.offset(V) + P.Views[V].Elems *
                                       plan::dtypeBytes(P.Views[V].Type);
      if (End > (A.onDevice(V) ? A.deviceBytes() : A.hostBytes())) {
        fprintf(stderr, "%s: rank %u: view %u lies past its arena\n", Path, R,
                V);
        ADD_FAILURE();
      }
    }
    for (uint32_t B = 0; B < P.Buckets.size(); ++B) {
      const plan::BucketViews &BV = X.Buckets[B];
      if (plan::qgzAcrossNodes(S)) {
        uint64_t Next = A.offset(BV.Source);
        for (const plan::Segment &Seg : P.Buckets[B].Segments) {
          uint32_t G = X.Tensors[Seg.Tensor].Grad;
          uint64_t Bytes = A.elems(G) * plan::dtypeBytes(P.Views[G].Type);
          EXPECT(A.offset(G) == Next + A.Slot * Bytes);
          Next += Bytes * S.WorldSize;
        }
        EXPECT(Next == A.offset(BV.Source) +
                           A.elems(BV.Source) *
                               plan::dtypeBytes(P.Views[BV.Source].Type));
      } else if (S.ZeroStage == 3) {
        uint64_t Next = A.offset(BV.Chunk);
        for (const plan::Segment &Seg : P.Buckets[B].Segments) {
          uint32_t G = X.Tensors[Seg.Tensor].Grad;
          EXPECT(A.offset(G) == Next);
          Next += A.elems(G) * plan::dtypeBytes(P.Views[G].Type);
        }
        EXPECT(Next == A.offset(BV.Chunk) +
                           A.elems(BV.Chunk) *
                               plan::dtypeBytes(P.Views[BV.Chunk].Type));
      } else if (S.ZeroStage > 0) {
        uint64_t Next = A.offset(BV.Source);
        for (const plan::BucketPiece &Piece : BV.Pieces) {
          EXPECT(A.offset(Piece.View) == Next);
          Next += A.elems(Piece.View) * plan::dtypeBytes(S.ParamDType);
        }
      }
    }
    for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
      const plan::UnitViews &UV = X.Units[U];
      if (UV.Target == plan::NoIndex)
        continue;
      uint64_t PB = plan::dtypeBytes(S.ParamDType);
      uint64_t Next = A.offset(UV.Target) + A.Slot * A.elems(UV.Send) * PB;
      for (uint32_t T : P.FetchUnits[U].Tensors) {
        EXPECT(A.offset(X.Tensors[T].Chunk) == Next);
        Next += P.Tensors[T].ShardElems * PB;
      }
    }
  }
  // Offloaded gradients: a bucket's copy goes straight into the host
  // partition where the gradients keep their type and the micro step
  // starts them; otherwise into the next of two pinned staging slots, in
  // the host arena and apart, and a host conversion on the host stream
  // converts the slot its copy filled; a copy waits for the conversion
  // that last read its slot.
  if (S.OptimizerOffload != plan::OffloadDevice::None) {
    const std::vector<uint32_t> &Slots = X.Runtime.GradStaging;
    uint32_t Param = X.Runtime.ParamStaging;
    bool AnyStaged = false;
    for (uint32_t B = 0; B < P.Buckets.size(); ++B)
      AnyStaged |= plan::stagedInSomeMicroStep(P, B);
    size_t Want = AnyStaged ? plan::GradStagingSlots : 0;
    EXPECT(Slots.size() == Want && Param != plan::NoIndex);
    if (Slots.size() != Want || Param == plan::NoIndex)
      return;
    std::vector<uint32_t> Pinned = Slots;
    Pinned.push_back(Param);
    for (uint32_t V : Pinned) {
      const plan::Buffer &B = P.Buffers[P.Views[V].Buffer];
      EXPECT(B.Space == plan::MemorySpace::Host && B.Pinned);
    }
    if (AnyStaged) {
      uint64_t GradBytes = P.Views[Slots[0]].Elems;
      EXPECT(P.Views[Slots[1]].Offset >=
             P.Views[Slots[0]].Offset + GradBytes);
      for (const plan::BucketViews &BV : X.Buckets) {
        uint64_t Own = 0;
        for (const plan::BucketPiece &Piece : BV.Pieces)
          Own = std::max<uint64_t>(
              Own, P.Views[Piece.View].Elems *
                       plan::dtypeBytes(P.Views[Piece.View].Type));
        if (BV.Chunk != plan::NoIndex)
          Own = P.Views[BV.Chunk].Elems *
                plan::dtypeBytes(P.Views[BV.Chunk].Type);
        EXPECT(Own <= GradBytes);
      }
    }
    std::vector<uint32_t> Converted;
    uint32_t Copied = plan::NoIndex;
    unsigned Straight = 0;
    auto WaitsOn = [](const plan::Instruction &In, uint32_t W) {
      return std::find(In.Waits.begin(), In.Waits.end(), W) != In.Waits.end();
    };
    for (uint32_t I = 0; I < P.Program.size(); ++I) {
      const plan::Instruction &In = P.Program[I];
      if (In.Kind != plan::InstrKind::Transfer ||
          P.Transfers[In.Arg].Point != plan::TransferPoint::AfterReduce)
        continue;
      const plan::Transfer &Tr = P.Transfers[In.Arg];
      uint32_t Slot = X.InstructionSlots[I];
      EXPECT(Tr.Staged == plan::stagedGradients(P, Tr.Owner, In.Micro));
      if (!Tr.Staged) {
        EXPECT(Tr.Kind == plan::TransferKind::DeviceToHost &&
               Slot == plan::NoIndex &&
               plan::gradSourceType(P, Tr.Owner) == plan::hostGradType(S));
        ++Straight;
        continue;
      }
      if (Tr.Kind == plan::TransferKind::DeviceToHost) {
        size_t Turn = Converted.size();
        EXPECT(Slot == Slots[Turn % Slots.size()]);
        if (Turn >= Slots.size())
          EXPECT(WaitsOn(In, Converted[Turn - Slots.size()]));
        Copied = I;
        continue;
      }
      EXPECT(Tr.Kind == plan::TransferKind::HostConvert &&
             In.On == plan::Stream::Host && Copied != plan::NoIndex &&
             Slot == X.InstructionSlots[Copied] && WaitsOn(In, Copied));
      Converted.push_back(I);
    }
    EXPECT(Straight + Converted.size() > 0 && Converted.empty() == !AnyStaged);
    for (const plan::SubGroup &G : P.Layout.SubGroups)
      EXPECT(G.Elems <= P.Views[Param].Elems);
  }
}

/// What an edited plan (YAML turned back into plan.bin) can get wrong is
/// refused by name before anything runs.
static void editedPlans(const char *Path, const plan::Plan &Good) {
  auto Refusal = [&](const plan::Plan &P) {
    std::string Why = plan::checkPlan(P);
    return Why.empty() ? checkRunnable(P) : Why;
  };
  for (size_t I = 0; I < Good.Buffers.size(); ++I) {
    plan::BufferRole Role = Good.Buffers[I].Role;
    if (Role != plan::BufferRole::OptimizerStates &&
        Role != plan::BufferRole::Grads16 &&
        Role != plan::BufferRole::GradPartition &&
        Role != plan::BufferRole::NVMeOptimizerBuffers)
      continue;
    const std::string &Name = Good.Buffers[I].Name;
    plan::Plan P = Good;
    P.Buffers[I].Bytes[0] /= 2;
    std::string Why = Refusal(P);
    if (Why.find(Name) == std::string::npos) {
      fprintf(stderr, "%s: halving %s was not refused: '%s'\n", Path,
              Name.c_str(), Why.c_str());
      ADD_FAILURE();
    }
    P = Good;
    P.Buffers[I].Live.clear();
    EXPECT(!Refusal(P).empty());
  }
  for (size_t I = 0; I < Good.Transfers.size(); ++I) {
    if (Good.Transfers[I].Point != plan::TransferPoint::AfterReduce)
      continue;
    plan::Plan P = Good;
    // On the host stream, where an NVMe read runs: past checkPlan, and
    // refused as a transfer dsrun does not carry out for these settings.
    P.Transfers[I].Kind = plan::TransferKind::NVMeRead;
    for (plan::Instruction &In : P.Program)
      if (In.Kind == plan::InstrKind::Transfer && In.Arg == I)
        In.On = plan::Stream::Host;
    std::string Why = Refusal(P);
    if (Why.find("does not fit") == std::string::npos) {
      fprintf(stderr, "%s: a misplaced NVMe read was not refused: '%s'\n",
              Path, Why.c_str());
      ADD_FAILURE();
    }
    break;
  }
  for (size_t I = 0; I < Good.Transfers.size(); ++I) {
    const plan::Transfer &X = Good.Transfers[I];
    if (X.Point != plan::TransferPoint::AfterReduce || !X.Staged ||
        X.Kind != plan::TransferKind::DeviceToHost)
      continue;
    // A staged copy made straight: refused, where the gradients change type
    // on the host and where the micro step adds them; anywhere, its slot
    // taken away is refused by name.
    plan::Plan P = Good;
    bool Changes = plan::gradSourceType(P, X.Owner) !=
                   plan::hostGradType(P.Settings);
    P.Transfers[I].Staged = false;
    std::string Why = Refusal(P);
    if (Why.find(Changes ? "needs them staged (their type changes"
                         : "needs them staged (it adds") == std::string::npos) {
      fprintf(stderr, "%s: a straight copy where the micro step needs a "
                      "staged one was not refused: '%s'\n", Path, Why.c_str());
      ADD_FAILURE();
    }
    P = Good;
    for (uint32_t In = 0; In < P.Program.size(); ++In)
      if (P.Program[In].Kind == plan::InstrKind::Transfer &&
          P.Program[In].Arg == I)
        P.Places.InstructionSlots[In] = plan::NoIndex;
    Why = Refusal(P);
    if (Why.find("names no staging slot") == std::string::npos) {
      fprintf(stderr, "%s: a staged copy without a slot was not refused: "
                      "'%s'\n", Path, Why.c_str());
      ADD_FAILURE();
    }
    break;
  }
  if (!Good.Buckets.empty()) {
    // A bucket reduced nowhere (contiguous_gradients off) is refused with
    // what to change.
    plan::Plan P = Good;
    P.Places.Buckets[0] = plan::BucketViews();
    EXPECT(Refusal(P).find("contiguous_gradients") != std::string::npos);
  }
  if (uint32_t M1 = Good.Places.Owned.Moment1; M1 != plan::NoIndex) {
    // Moments in bf16 beside fp32 master weights, or in a dtype the update
    // does not keep, are refused by name (2-byte types: the view stays in
    // its buffer).
    plan::Plan P = Good;
    bool Fp32 = P.Views[Good.Places.Owned.Master].Type == plan::DType::F32;
    P.Views[M1].Type = Fp32 ? plan::DType::BF16 : plan::DType::F16;
    EXPECT(Refusal(P).find(Fp32 ? "optimizer state in bf16 where its "
                                  "settings say fp32"
                                : "optimizer state in fp16") !=
           std::string::npos);
    // Settings of bf16 state with the optimizer offloaded: refused by name
    // whatever the views say.
    P = Good;
    P.Settings.MasterDType = P.Settings.OptimizerStateDType = plan::DType::BF16;
    P.Settings.OptimizerOffload = plan::OffloadDevice::CPU;
    EXPECT(Refusal(P).find("bf16 master weights or moments") !=
               std::string::npos ||
           !plan::checkPlan(P).empty());
  }
  // ZeRO++ hpZ: a gather from a secondary partition the plan does not
  // have, or one of the wrong size or type, and group sizes DeepSpeed
  // would not run.
  for (uint32_t I = 0; I < Good.Program.size(); ++I) {
    if (Good.Program[I].Kind != plan::InstrKind::GatherSecondary)
      continue;
    uint32_t U = Good.Program[I].Arg;
    uint32_t Secondary = Good.Places.Units[U].Secondary;
    plan::Plan P = Good;
    P.Settings.HpzPartition = 1;
    EXPECT(!Refusal(P).empty());
    P = Good;
    P.Places.Units[U].Secondary = plan::NoIndex;
    EXPECT(Refusal(P).find("hpZ secondary partition it does not have") !=
           std::string::npos);
    P = Good;
    P.Views[Secondary].Elems /= 2;
    EXPECT(Refusal(P).find("not its group's share") != std::string::npos);
    P = Good;
    P.Views[Secondary].Type = plan::DType::F32;
    EXPECT(Refusal(P).find("not of the parameters' type") !=
               std::string::npos ||
           Refusal(P).find("reaches past the end") != std::string::npos);
    P = Good;
    P.Settings.HpzPartition = 3;
    EXPECT(Refusal(P).find("hpZ group size") != std::string::npos);
    P = Good;
    for (plan::Instruction &In : P.Program)
      if (In.Kind == plan::InstrKind::Gather && In.Arg == U)
        In.Kind = plan::InstrKind::GatherSecondary; // Before any gather.
    EXPECT(!Refusal(P).empty());
    break;
  }
  // ZeRO++ qwZ: a quantized gather without its views, with views of the
  // wrong type, count or place, or where the settings do not ask for one.
  for (uint32_t U = 0; U < Good.Places.Units.size(); ++U) {
    const plan::UnitViews &V = Good.Places.Units[U];
    if (V.Quantized == plan::NoIndex)
      continue;
    plan::Plan P = Good;
    P.Places.Units[U].Scales = plan::NoIndex;
    EXPECT(Refusal(P).find("quantized gather lacks a view") !=
           std::string::npos);
    P = Good;
    P.Views[V.QuantizedSend].Type = plan::DType::U8;
    EXPECT(Refusal(P).find("not every rank's chunk of the gather") !=
           std::string::npos);
    P = Good;
    P.Views[V.ScalesSend].Elems += 1;
    P.Views[V.Scales].Elems += Good.Settings.WorldSize;
    EXPECT(!Refusal(P).empty());
    P = Good;
    P.Settings.QuantizedWeights = false;
    EXPECT(Refusal(P).find("without ZeRO++ qwZ") != std::string::npos);
    if (V.Secondary == plan::NoIndex) {
      P = Good;
      P.Places.Units[U].QuantizedSecondarySend = V.QuantizedSend;
      EXPECT(Refusal(P).find("hpZ group it does not gather in") !=
             std::string::npos);
    } else {
      P = Good;
      P.Views[V.ScalesSecondarySend].Offset += 4;
      EXPECT(Refusal(P).find("what the gather within the hpZ group") !=
                 std::string::npos ||
             Refusal(P).find("reaches past the end") != std::string::npos);
    }
    break;
  }
  // MiCS: a bucket's all-reduce across the replicas moved off its
  // reduction's stream, or made a second time in place of another
  // instruction of that stream, is refused.
  for (size_t I = 0; I < Good.Program.size(); ++I) {
    if (Good.Program[I].Kind != plan::InstrKind::ReduceReplicas)
      continue;
    plan::Plan P = Good;
    plan::Instruction &In = P.Program[I];
    In.On = In.On == plan::Stream::Comm ? plan::Stream::Compute
                                        : plan::Stream::Comm;
    EXPECT(Refusal(P).find("across MiCS replicas") != std::string::npos);
    if (Good.Buckets.size() > 1) {
      P = Good;
      P.Program[I].Arg = Good.Program[I].Arg == 0 ? 1 : 0;
      EXPECT(Refusal(P).find("MiCS replicas") != std::string::npos);
    }
    break;
  }
  // ZeRO++ qgZ across nodes: an exchange across nodes off its reduction's
  // stream, a second quantized reduction before it (which would overwrite
  // the one workspace), or of another bucket, is refused; so are bf16
  // parameters.
  for (size_t I = 0; I < Good.Program.size(); ++I) {
    if (Good.Program[I].Kind != plan::InstrKind::ReduceAcrossNodes)
      continue;
    plan::Plan P = Good;
    P.Program[I].On = P.Program[I].On == plan::Stream::Comm
                          ? plan::Stream::Compute
                          : plan::Stream::Comm;
    EXPECT(Refusal(P).find("sends across nodes") != std::string::npos);
    P = Good;
    P.Program[I].Kind = plan::InstrKind::Reduce;
    EXPECT(Refusal(P).find("before the last one was sent across nodes") !=
           std::string::npos);
    if (Good.Buckets.size() > 1) {
      P = Good;
      P.Program[I].Arg = Good.Program[I].Arg == 0 ? 1 : 0;
      EXPECT(!Refusal(P).empty());
    }
    P = Good;
    P.Settings.ParamDType = plan::DType::BF16;
    EXPECT(Refusal(P).find("qgZ") != std::string::npos);
    break;
  }
  if (!Good.Views.empty()) {
    plan::Plan P = Good;
    P.Views[0].RankStride = uint64_t(1) << 40;
    EXPECT(Refusal(P).find("view 0") != std::string::npos ||
           plan::partitionRanks(Good.Settings) == 1);
  }
}

void dsrun::planChecks(const char *Path) {
  std::ifstream In(Path, std::ios::binary);
  std::vector<uint8_t> Bytes((std::istreambuf_iterator<char>(In)),
                             std::istreambuf_iterator<char>());
  std::string Error;
  std::optional<plan::Plan> P = plan::readPlan(Bytes.data(), Bytes.size(), Error);
  if (!P) {
    fprintf(stderr, "%s: %s\n", Path, Error.c_str());
    ADD_FAILURE();
    return;
  }
  EXPECT(plan::checkPlan(*P).empty());
  if (std::string Short = checkRunnable(*P); !Short.empty()) {
    fprintf(stderr, "%s: %s\n", Path, Short.c_str());
    ADD_FAILURE();
  }
  const plan::Info &S = P->Settings;
  // Every trainable element is updated by exactly one rank (by every rank
  // at stage 0, where each holds a full replica; by one rank of each MiCS
  // shard group, its replicas).
  unsigned Want = S.ZeroStage == 0 ? S.WorldSize : plan::replicaRanks(S);
  std::vector<std::vector<uint8_t>> Owners(P->Tensors.size());
  for (uint32_t T = 0; T < P->Tensors.size(); ++T)
    Owners[T].assign(P->Tensors[T].Elems, 0);
  for (uint32_t R = 0; R < S.WorldSize; ++R)
    for (const plan::OwnedPiece &O : plan::ownedPieces(*P, R)) {
      EXPECT(O.End <= P->Tensors[O.Tensor].Elems);
      EXPECT(O.PartitionOffset + (O.End - O.Begin) <=
             (S.ZeroStage == 0 ? P->Layout.FlatElems
                               : P->Layout.PartitionElems));
      for (uint64_t E = O.Begin; E < O.End; ++E)
        ++Owners[O.Tensor][E];
    }
  for (uint32_t T = 0; T < P->Tensors.size(); ++T)
    if (P->Tensors[T].Role == plan::TensorRole::Trainable)
      for (uint64_t E = 0; E < P->Tensors[T].Elems; ++E)
        if (Owners[T][E] != Want) {
          fprintf(stderr, "%s: element %llu of %s has %u owners\n", Path,
                  (unsigned long long)E, P->Tensors[T].Name.c_str(),
                  Owners[T][E]);
          ADD_FAILURE();
          break;
        }
  if (S.ParamOffload == plan::OffloadDevice::NVMe)
    EXPECT(SwapLayout(*P).LargestUnitBytes <= S.AioBufferBytes);
  collectiveChecks(Path, *P);
  viewChecks(Path, *P);
  editedPlans(Path, *P);
  // Swap-file regions: aligned and disjoint.
  {
    SwapLayout W(*P);
    uint64_t End = 0;
    for (uint32_t G = 0; G < P->Layout.SubGroups.size(); ++G)
      for (unsigned K = 0; K < 3; ++K) {
        EXPECT(W.optimizerRegion(G, K) % SwapFile::Alignment == 0);
        EXPECT(W.optimizerRegion(G, K) >= End);
        End = W.optimizerRegion(G, K) + P->Layout.SubGroups[G].Elems * 4;
      }
    EXPECT(End <= W.OptimizerFileBytes);
  }
}
