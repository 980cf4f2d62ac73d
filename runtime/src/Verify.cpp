//===- Verify.cpp - dsrun --verify: every element against the reference ---===//
//
// After the steps, this rank's fp32 master weights and moments, its 16-bit
// parameters (all of them at stage 0-2, which checks the all-gather after
// the step; its shards and the persistent parameters at stage 3) and every
// stage-3 unit gathered once more must equal, bit for bit, what
// expectedState computes on the host. The first difference fails the run
// and names the tensor, the element and both values.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "HostMath.h"
#include "Quantize.h"
#include "dsc/PlanFacts.h"

#include <cstring>
#include <thread>
#include <vector>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

struct Mismatch {
  bool Found = false;
  std::string What;
  uint32_t Tensor = 0;
  uint64_t Elem = 0;
  float Expected = 0, Got = 0;
};

/// Runs Check(I) for I in [0, N) on Threads threads; the first mismatch by
/// index wins.
template <typename F>
Mismatch parallelCheck(uint64_t N, unsigned Threads, F Check) {
  Threads = std::max(1u, std::min<unsigned>(Threads, unsigned(N / 4096) + 1));
  std::vector<Mismatch> Found(Threads);
  std::vector<std::thread> Pool;
  for (unsigned T = 0; T < Threads; ++T)
    Pool.emplace_back([&, T] {
      for (uint64_t I = N * T / Threads; I < N * (T + 1) / Threads; ++I)
        if (Check(I, Found[T]))
          return;
    });
  for (std::thread &T : Pool)
    T.join();
  for (Mismatch &M : Found)
    if (M.Found)
      return M;
  return {};
}

bool sameBits(float A, float B) { return floatBits(A) == floatBits(B); }

/// ZeRO++ qgZ across nodes: for each quantized gradient, what the host's
/// quantizer leaves each of its elements in every step and micro step
/// (reducedGradient's Reduced), partition by partition as every rank's
/// synthetic gradients make it; empty for the other tensors.
std::vector<std::vector<float>> qgzReferences(const plan::Plan &P,
                                              uint32_t Steps) {
  const plan::Info &S = P.Settings;
  std::vector<std::vector<float>> Out(P.Tensors.size());
  if (!plan::qgzAcrossNodes(S))
    return Out;
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    const plan::Tensor &X = P.Tensors[T];
    plan::QgzTensor Q = plan::qgzTensor(S, X);
    if (X.Role != plan::TensorRole::Trainable || !Q.Quantized)
      continue;
    uint64_t Part = X.Elems / S.WorldSize;
    Out[T].resize(uint64_t(Steps) * S.GradAccum * X.Elems);
    for (uint32_t Step = 1; Step <= Steps; ++Step)
      for (uint32_t Micro = 0; Micro < S.GradAccum; ++Micro)
        for (uint32_t R = 0; R < S.WorldSize; ++R) {
          std::vector<float> Left = qgzReducePartition(
              Part, Q.GroupSize, S.Nodes, S.GpusPerNode,
              float(S.GpusPerNode), [&](uint32_t Rank, uint64_t I) {
                return syntheticGrad(Rank, Step, Micro, T, R * Part + I);
              });
          std::copy(Left.begin(), Left.end(),
                    Out[T].begin() +
                        ((uint64_t(Step - 1) * S.GradAccum + Micro) *
                             X.Elems +
                         R * Part));
        }
  }
  return Out;
}

/// Bytes of a view (either arena: cudaMemcpyDefault tells host from
/// device addresses).
std::vector<char> download(const char *Source, uint64_t Bytes) {
  std::vector<char> Out(Bytes);
  CHECK_CUDA(cudaMemcpy(Out.data(), Source, Bytes, cudaMemcpyDefault));
  return Out;
}

} // namespace

bool Executor::checkFirstClip(const std::vector<std::vector<float>> &Reduced) {
  const plan::Info &S = P.Settings;
  double MaxNorm = std::strtod(S.GradientClipping.c_str(), nullptr);
  if (MaxNorm <= 0 || Clips.empty())
    return true;
  uint64_t Work = 0;
  for (const plan::Tensor &X : P.Tensors)
    if (X.Role == plan::TensorRole::Trainable)
      Work += X.Elems * S.GradAccum * S.WorldSize;
  if (Work > (uint64_t(1) << 27)) {
    if (Process.Rank == 0)
      fprintf(stderr, "dsrun --verify: the gradient norm is not recomputed "
                      "on the host for a model this large\n");
    return true;
  }
  // The first step's gradient of each element: its synthetic values summed
  // over micro steps and ranks, divided by the world size.
  double Sum = 0;
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    if (P.Tensors[T].Role != plan::TensorRole::Trainable)
      continue;
    for (uint64_t E = 0; E < P.Tensors[T].Elems; ++E) {
      double G = reducedGradient(P, T, E, 1,
                                 Reduced[T].empty() ? nullptr : &Reduced[T]);
      Sum += G * G;
    }
  }
  double Norm = std::sqrt(Sum) / (S.AverageGradients ? S.WorldSize : 1);
  double Want = std::min(1.0, MaxNorm / (Norm + 1e-6));
  if (std::fabs(Clips[0] - Want) > 1e-4 * Want) {
    fprintf(stderr, "dsrun --verify: rank %d: step 1 clipped the gradient by "
                    "%.7g; its norm %.7g and gradient_clipping %g make %.7g\n",
            Process.Rank, Clips[0], Norm, MaxNorm, Want);
    return false;
  }
  return true;
}

bool Executor::verify(uint32_t Steps) {
  CHECK_CUDA(cudaDeviceSynchronize());
  const plan::Info &S = P.Settings;
  const plan::Placement &X = P.Places;
  // Every core this rank can have: the check is the slow part.
  unsigned Threads = std::max(
      Options.HostThreads,
      std::max(1u, std::thread::hardware_concurrency() /
                       unsigned(std::max(1, Process.WorldSize))));
  std::string ScheduleError;
  std::vector<AdamW> Schedule = adamwSchedule(S, Steps, ScheduleError);
  // gradient_clipping: the factor each step applied, as the device found
  // it (the norm itself is checked below), so that the update is compared
  // bit for bit.
  for (uint32_t K = 0; K < Steps && K < Clips.size(); ++K)
    Schedule[K].GradScale *= Clips[K];
  std::vector<std::vector<float>> Reduced = qgzReferences(P, Steps);
  auto ReducedOf = [&](uint32_t T) {
    return Reduced[T].empty() ? nullptr : &Reduced[T];
  };
  if (!checkFirstClip(Reduced))
    return false;
  unsigned PB = elementBytes(ParamType);
  auto Fail = [&](const Mismatch &M) {
    fprintf(stderr,
            "dsrun --verify: rank %d: %s of %s element %llu: expected %.9g "
            "(0x%08x), found %.9g (0x%08x)\n",
            Process.Rank, M.What.c_str(), P.Tensors[M.Tensor].Name.c_str(),
            (unsigned long long)M.Elem, M.Expected, floatBits(M.Expected),
            M.Got, floatBits(M.Got));
    return false;
  };

  // The optimizer state this rank owns.
  uint64_t Owned = Stage == 0 ? P.Layout.FlatElems : P.Layout.PartitionElems;
  std::vector<char> MasterBytes, StateBytes;
  if (OptimizerSwap) {
    // Read back from the swap file, sub-group by sub-group.
    MasterBytes.resize(Owned * 4);
    StateBytes.resize(2 * Owned * 4);
    std::string Error;
    for (uint32_t G = 0; G < P.Layout.SubGroups.size(); ++G) {
      uint64_t Lo = X.SubGroups[G].Begin;
      auto *Master = reinterpret_cast<float *>(MasterBytes.data());
      auto *States = reinterpret_cast<float *>(StateBytes.data());
      if (!stateIo(G, {Master + Lo, States + Lo, States + Owned + Lo},
                   /*Write=*/false, Error)) {
        fprintf(stderr, "dsrun --verify: %s\n", Error.c_str());
        return false;
      }
    }
  } else {
    // The master weights and moments as the plan keeps them (fp32, or bf16
    // with bf16_master_weights_and_grads), read back as floats.
    ElementType T = ElementType(Buffers.view(X.Owned.Master).Type);
    auto Floats = [&](uint32_t View, uint64_t Count) {
      std::vector<char> Stored = download(Buffers.at(View), Count * elementBytes(T));
      if (T == ElementType::F32)
        return Stored;
      std::vector<char> Out(Count * 4);
      convertOnHost(Out.data(), ElementType::F32, Stored.data(), T, Count,
                    /*Accumulate=*/false, Threads);
      return Out;
    };
    MasterBytes = Floats(X.Owned.Master, Owned);
    StateBytes = Floats(X.Owned.Moment1, 2 * Owned);
  }
  const float *MasterValues = reinterpret_cast<const float *>(MasterBytes.data());
  const float *M = reinterpret_cast<const float *>(StateBytes.data());
  const float *V = M + Owned;
  for (const plan::OwnedPiece &O : plan::ownedPieces(P, Process.Rank)) {
    Mismatch Bad = parallelCheck(
        O.End - O.Begin, Threads, [&](uint64_t I, Mismatch &Out) {
          ElementState E = expectedState(P, O.Tensor, O.Begin + I, Schedule,
                                         ReducedOf(O.Tensor));
          uint64_t At = O.PartitionOffset + I;
          const char *What = nullptr;
          float Want = 0, Have = 0;
          if (!sameBits(E.Master, MasterValues[At]))
            What = "master weight", Want = E.Master, Have = MasterValues[At];
          else if (!sameBits(E.M, M[At]))
            What = "first moment", Want = E.M, Have = M[At];
          else if (!sameBits(E.V, V[At]))
            What = "second moment", Want = E.V, Have = V[At];
          if (!What)
            return false;
          Out = {true, What, O.Tensor, O.Begin + I, Want, Have};
          return true;
        });
    if (Bad.Found)
      return Fail(Bad);
  }

  // The parameters as the next forward would read them.
  auto StoredWant = [&](uint32_t T, uint64_t E) {
    const plan::Tensor &Tn = P.Tensors[T];
    return E >= Tn.Elems ? 0.0f
           : Tn.Role == plan::TensorRole::Frozen
               ? storedValue(initialWeight(T, E), ParamType)
               : storedValue(expectedState(P, T, E, Schedule, ReducedOf(T)).Master,
                             ParamType);
  };
  auto CheckStored = [&](const char *Stored, uint32_t T, uint64_t From,
                         uint64_t Count, const char *What) {
    return parallelCheck(Count, Threads, [&](uint64_t I, Mismatch &Out) {
      uint64_t E = From + I;
      float Want = StoredWant(T, E);
      float Have = loadAs(Stored, I, ParamType);
      if (sameBits(Want, Have))
        return false;
      Out = {true, What, T, E, Want, Have};
      return true;
    });
  };
  if (Stage < 3) {
    for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
      std::vector<char> Param =
          download(Buffers.at(X.Tensors[T].Param), P.Tensors[T].Elems * PB);
      Mismatch Bad = CheckStored(Param.data(), T, 0, P.Tensors[T].Elems,
                                 "16-bit parameter");
      if (Bad.Found)
        return Fail(Bad);
    }
  } else {
    bool HostParams = S.ParamOffload != plan::OffloadDevice::None;
    for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
      const plan::Tensor &Tn = P.Tensors[T];
      std::vector<char> Stored;
      if (Tn.Persistent) {
        Stored = download(Buffers.at(X.Tensors[T].Param), Tn.Elems * PB);
      } else if (ParamSwap) {
        // From the swap file, where its unit's shards lie.
        uint32_t U = Swap->unitOf(T);
        std::vector<char> Block(Swap->unitBytes(U));
        std::string Error;
        if (!ParamSwap->read(Block.data(), Swap->unitBase(U), Block.size(),
                             Error)) {
          fprintf(stderr, "dsrun --verify: %s\n", Error.c_str());
          return false;
        }
        const char *Shard = Block.data() + Swap->shardInUnit(T);
        Stored.assign(Shard, Shard + Tn.ShardElems * PB);
      } else {
        Stored = download(Buffers.at(X.Tensors[T].Shard), Tn.ShardElems * PB);
      }
      Mismatch Bad =
          Tn.Persistent
              ? CheckStored(Stored.data(), T, 0, Tn.Elems,
                            "persistent parameter")
              : CheckStored(Stored.data(), T,
                            uint64_t(ShardRank) * Tn.ShardElems,
                            Tn.ShardElems, "parameter shard");
      if (Bad.Found)
        return Fail(Bad);
    }
    // Gather every unit once more, the way the program does (with the
    // copy in from the host, or the read from NVMe and the copy, before
    // its gather), and check the whole tensors.
    cudaStream_t Comm = Timing.stream(plan::Stream::Comm);
    auto Run = [&](uint32_t I) {
      Instr C{I, P.Program[I], Comm, 0};
      issue(C);
    };
    std::vector<uint32_t> GatherOf(P.FetchUnits.size(), plan::NoIndex),
        SecondaryOf(P.FetchUnits.size(), plan::NoIndex),
        CopyBefore(P.FetchUnits.size(), plan::NoIndex),
        ReadBefore(P.FetchUnits.size(), plan::NoIndex);
    for (uint32_t I = 0; I < P.Program.size(); ++I) {
      const plan::Instruction &In = P.Program[I];
      if (In.Kind == plan::InstrKind::Gather &&
          GatherOf[In.Arg] == plan::NoIndex)
        GatherOf[In.Arg] = I;
      if (In.Kind == plan::InstrKind::GatherSecondary &&
          SecondaryOf[In.Arg] == plan::NoIndex)
        SecondaryOf[In.Arg] = I;
      if (In.Kind != plan::InstrKind::Transfer)
        continue;
      const plan::Transfer &Tr = P.Transfers[In.Arg];
      if (Tr.Point != plan::TransferPoint::BeforeGather)
        continue;
      std::vector<uint32_t> &First =
          Tr.Kind == plan::TransferKind::NVMeRead ? ReadBefore : CopyBefore;
      if (First[Tr.Owner] == plan::NoIndex)
        First[Tr.Owner] = I;
    }
    bool Lean = Timing.Lean;
    Timing.Lean = true; // Nothing to time: no events but the instructions' own.
    for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
      if (GatherOf[U] == plan::NoIndex)
        continue;
      if (ParamSwap && ReadBefore[U] != plan::NoIndex) {
        Run(ReadBefore[U]);
        CHECK_CUDA(cudaStreamSynchronize(Comm));
      }
      if (HostParams && CopyBefore[U] != plan::NoIndex)
        Run(CopyBefore[U]);
      const plan::UnitViews &UV = X.Units[U];
      // ZeRO++ qwZ: each rank's chunk of the stored weights through the
      // host reference's quantizer, in the gather's layout.
      std::vector<float> Quantized;
      uint64_t Chunk = Buffers.elems(UV.Send);
      if (UV.Quantized != plan::NoIndex) {
        Quantized.assign(Chunk * Shards, 0.0f);
        for (uint32_t Tn : P.FetchUnits[U].Tensors) {
          uint64_t Shard = P.Tensors[Tn].ShardElems, Off = chunkOffset(U, Tn);
          parallelFor(Shard * Shards, Threads, [&](uint64_t B, uint64_t E) {
            for (; B < E; ++B)
              Quantized[B / Shard * Chunk + Off + B % Shard] =
                  StoredWant(Tn, B);
          });
        }
      }
      // Each sender's slice of the reference in the gather's layout,
      // through the host's quantizer and stored as the parameters' type:
      // every rank's chunk, or within an hpZ group each member's secondary
      // partition (what the first gather left, quantized again).
      auto Requantize = [&](uint32_t SendView, uint32_t KeptView) {
        uint64_t N = Buffers.elems(SendView), Groups = Buffers.elems(KeptView);
        for (uint64_t At = 0; At < Quantized.size(); At += N) {
          std::vector<float> Back = qwzRoundTrip(&Quantized[At], N, Groups);
          for (uint64_t I = 0; I < N; ++I)
            Quantized[At + I] = storedValue(Back[I], ParamType);
        }
      };
      if (!Quantized.empty())
        Requantize(UV.QuantizedSend, UV.ScalesSend);
      auto CheckGathered = [&](const char *What) {
        CHECK_CUDA(cudaStreamSynchronize(Comm));
        for (uint32_t Tn : P.FetchUnits[U].Tensors) {
          uint64_t N = P.Tensors[Tn].Elems;
          std::vector<char> Whole =
              download(Buffers.at(X.Tensors[Tn].Param), N * PB);
          if (Quantized.empty()) {
            if (Mismatch Bad = CheckStored(Whole.data(), Tn, 0, N, What);
                Bad.Found)
              return Bad;
            continue;
          }
          uint64_t Shard = P.Tensors[Tn].ShardElems, Off = chunkOffset(U, Tn);
          Mismatch Bad =
              parallelCheck(N, Threads, [&](uint64_t E, Mismatch &Out) {
                float Want = Quantized[E / Shard * Chunk + Off + E % Shard];
                float Have = loadAs(Whole.data(), E, ParamType);
                if (sameBits(Want, Have))
                  return false;
                Out = {true, "parameter gathered through the int8 quantizer",
                       Tn, E, Want, Have};
                return true;
              });
          if (Bad.Found)
            return Bad;
        }
        return Mismatch{};
      };
      Run(GatherOf[U]);
      if (Mismatch Bad = CheckGathered("gathered parameter"); Bad.Found)
        return Fail(Bad);
      if (SecondaryOf[U] == plan::NoIndex)
        continue;
      // ZeRO++ hpZ: the same unit again, from the group's secondary
      // partitions the gather just kept, over what it left (scribbled).
      for (uint32_t V : {UV.Whole, UV.Target})
        CHECK_CUDA(cudaMemsetAsync(Buffers.at(V), 0xff,
                                   Buffers.elems(V) * PB, Comm));
      if (!Quantized.empty())
        Requantize(UV.QuantizedSecondarySend, UV.ScalesSecondarySend);
      Run(SecondaryOf[U]);
      if (Mismatch Bad = CheckGathered("parameter gathered in its hpZ group");
          Bad.Found)
        return Fail(Bad);
    }
    Timing.Lean = Lean;
  }
  fprintf(stderr,
          "dsrun --verify: rank %d: %llu owned elements and every parameter "
          "this rank holds match the reference after %u step(s)\n",
          Process.Rank, (unsigned long long)Owned, Steps);
  return true;
}

} // namespace dsrun
