//===- Tune.cpp - The configs dsc tune plans ------------------------------===//

#include "dsc/Plan/Tune.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace dsc {

std::vector<std::pair<std::string, std::string>> TuneChoice::settings() const {
  auto Device = [](plan::OffloadDevice D) {
    return std::string("\"") + plan::enumName(D) + "\"";
  };
  std::vector<std::pair<std::string, std::string>> Out = {
      {"zero_optimization.stage", std::to_string(Stage)},
      {"zero_optimization.offload_optimizer.device", Device(Optimizer)},
      {"zero_optimization.offload_param.device", Device(Params)},
      {"train_micro_batch_size_per_gpu", std::to_string(MicroBatch)},
      {"gradient_accumulation_steps", std::to_string(GradAccum)}};
  if (Bucket) {
    Out.push_back({"zero_optimization.reduce_bucket_size",
                   std::to_string(Bucket)});
    if (Stage == 1 || Stage == 2)
      Out.push_back({"zero_optimization.allgather_bucket_size",
                     std::to_string(Bucket)});
  }
  if (Prefetch)
    Out.push_back({"zero_optimization.prefetch_bucket_size",
                   std::to_string(Prefetch)});
  if (Keep) {
    Out.push_back({"zero_optimization.max_live_parameters",
                   std::to_string(Keep)});
    Out.push_back({"zero_optimization.max_reuse_distance",
                   std::to_string(Keep)});
  } else if (MaxLive) {
    Out.push_back({"zero_optimization.max_live_parameters",
                   std::to_string(MaxLive)});
  }
  if (OverlapComm >= 0)
    Out.push_back({"zero_optimization.overlap_comm",
                   OverlapComm ? "true" : "false"});
  if (SetsGroups) {
    Out.push_back({"zero_optimization.zero_hpz_partition_size",
                   std::to_string(HpzGroup ? HpzGroup : 1)});
    Out.push_back({"zero_optimization.mics_shard_size",
                   MicsShard ? std::to_string(MicsShard) : "-1"});
    if (MicsShard) {
      Out.push_back({"zero_optimization.zero_quantized_weights", "false"});
      Out.push_back({"zero_optimization.zero_quantized_gradients", "false"});
    }
  }
  return Out;
}

std::string TuneChoice::describe() const {
  std::string S = formatv("ZeRO {0}, micro batch {1} x {2}", Stage,
                          MicroBatch, GradAccum);
  auto Where = [](plan::OffloadDevice D) {
    return D == plan::OffloadDevice::NVMe ? "NVMe" : "the CPU";
  };
  if (Params != plan::OffloadDevice::None)
    S += std::string(", optimizer and parameters on ") + Where(Params);
  else if (Optimizer != plan::OffloadDevice::None)
    S += std::string(", optimizer on ") + Where(Optimizer);
  if (Checkpoint)
    S += ", checkpointed";
  // 5e8, as configs write them.
  auto Short = [](uint64_t N) {
    unsigned Exponent = 0;
    while (N >= 10 && N % 10 == 0)
      N /= 10, ++Exponent;
    return std::to_string(N) + (Exponent ? "e" + std::to_string(Exponent) : "");
  };
  if (Bucket)
    S += ", buckets " + Short(Bucket);
  if (Prefetch)
    S += ", prefetch " + Short(Prefetch);
  if (Keep)
    S += ", parameters kept from forward to backward (reuse distance " +
         Short(Keep) + ")";
  else if (MaxLive)
    S += ", max live " + Short(MaxLive);
  if (OverlapComm >= 0)
    S += OverlapComm ? ", overlap_comm" : ", no overlap_comm";
  if (Policy == plan::CommCtaPolicy::Zero)
    S += ", all-gathers on the copy engines";
  if (HpzGroup)
    S += ", hpZ groups of " + std::to_string(HpzGroup);
  if (MicsShard)
    S += ", MiCS shard groups of " + std::to_string(MicsShard);
  return S;
}

std::vector<TuneChoice> tuneRefinements(const TuneChoice &Best) {
  std::vector<TuneChoice> Out;
  const uint64_t Sizes[] = {50000000, 200000000, 500000000};
  const uint64_t Live[] = {100000000, 1000000000};
  bool Stage3 = Best.Stage == 3;
  for (uint64_t Bucket : Sizes)
    for (uint64_t Prefetch : Sizes)
      for (uint64_t MaxLive : Live) {
        if (!Stage3 && (Prefetch != Sizes[0] || MaxLive != Live[0]))
          continue;
        // Keeping the parameters sets the live parameters itself.
        if (Best.Keep && MaxLive != Live[0])
          continue;
        for (int Overlap : {1, 0}) {
          TuneChoice C = Best;
          C.Bucket = Bucket;
          C.Prefetch = Stage3 ? Prefetch : 0;
          C.MaxLive = Stage3 && !Best.Keep ? MaxLive : 0;
          C.OverlapComm = Overlap;
          Out.push_back(C);
        }
      }
  return Out;
}

uint64_t tuneKeepElements(uint64_t ModelElems, bool Checkpoint) {
  // Far beyond any model (2^48 elements a tensor): no wrap below.
  ModelElems = std::min<uint64_t>(ModelElems, uint64_t(1) << 56);
  uint64_t Distance = (Checkpoint ? 3 : 2) * ModelElems, Scale = 1;
  while (Distance > 9 * Scale)
    Scale *= 10;
  return (Distance + Scale - 1) / Scale * Scale;
}

std::vector<TuneChoice> tuneChoices(uint64_t SamplesPerRank,
                                    NvmeChoices Nvme, uint32_t NodeRanks,
                                    uint32_t MaxMicroBatch) {
  using plan::OffloadDevice;
  // Where the optimizer's state and the parameters go: optimizer offload
  // needs stage 1-3; the parameters' stage 3 and the optimizer's with
  // them (what dsc plans); NVMe stage 3 and a path in the config.
  struct Offload {
    OffloadDevice Optimizer, Params;
    uint32_t FromStage;
    bool Allowed;
  };
  const Offload Offloads[] = {
      {OffloadDevice::None, OffloadDevice::None, 0, true},
      {OffloadDevice::CPU, OffloadDevice::None, 1, true},
      {OffloadDevice::CPU, OffloadDevice::CPU, 3, true},
      {OffloadDevice::NVMe, OffloadDevice::None, 3, Nvme.Optimizer},
      {OffloadDevice::NVMe, OffloadDevice::NVMe, 3, Nvme.Params}};
  // Over several nodes, stage 3's groups within a node: none, ZeRO++
  // hpZ's or MiCS's, each where dsc plans it with the offload (hpZ not
  // with the parameters on the host, MiCS with nothing offloaded).
  struct Groups {
    bool Hpz, Mics;
  };
  const Groups Grouping[] = {{false, false}, {true, false}, {false, true}};
  std::vector<TuneChoice> Out;
  for (uint32_t Stage = 0; Stage <= 3; ++Stage)
    for (const Offload &O : Offloads)
      for (const Groups &G : Grouping) {
        if (!O.Allowed || Stage < O.FromStage)
          continue;
        if ((G.Hpz || G.Mics) &&
            (Stage != 3 || NodeRanks < 2 || O.Params != OffloadDevice::None ||
             (G.Mics && O.Optimizer != OffloadDevice::None)))
          continue;
        for (bool Checkpoint : {false, true})
          for (uint64_t Micro = 1;
               Micro <= std::min<uint64_t>(SamplesPerRank, MaxMicroBatch);
               ++Micro) {
            if (SamplesPerRank % Micro)
              continue;
            TuneChoice C;
            C.Stage = Stage;
            C.Optimizer = O.Optimizer;
            C.Params = O.Params;
            C.Checkpoint = Checkpoint;
            C.MicroBatch = uint32_t(Micro);
            C.GradAccum = uint32_t(SamplesPerRank / Micro);
            C.HpzGroup = G.Hpz ? NodeRanks : 0;
            C.MicsShard = G.Mics ? NodeRanks : 0;
            C.SetsGroups = Stage == 3 && NodeRanks > 1;
            Out.push_back(C);
          }
      }
  return Out;
}

std::vector<size_t> microBatchGroups(const std::vector<TuneChoice> &Choices) {
  std::vector<size_t> Start;
  for (size_t I = 0; I < Choices.size(); ++I) {
    const TuneChoice &A = Choices[I], *B = I ? &Choices[I - 1] : nullptr;
    if (!B || A.Stage != B->Stage || A.Optimizer != B->Optimizer ||
        A.Params != B->Params || A.Checkpoint != B->Checkpoint ||
        A.Bucket != B->Bucket || A.Prefetch != B->Prefetch ||
        A.MaxLive != B->MaxLive || A.OverlapComm != B->OverlapComm ||
        A.HpzGroup != B->HpzGroup || A.MicsShard != B->MicsShard ||
        A.MicroBatch <= B->MicroBatch)
      Start.push_back(I);
  }
  return Start;
}

StepLimit stepLimit(const plan::Plan &P) {
  const plan::Estimate &E = P.Estimates;
  uint64_t Tenth = E.StepNanos / 10;
  if (E.ExposedOffloadNanos > Tenth &&
      E.ExposedOffloadNanos >= E.ExposedCommNanos)
    return StepLimit::Offload;
  if (E.ExposedCommNanos > Tenth)
    return StepLimit::Communication;
  return StepLimit::Compute;
}

const char *stepLimitName(StepLimit L) {
  switch (L) {
  case StepLimit::Communication:
    return "exposed communication";
  case StepLimit::Offload:
    return "offload";
  case StepLimit::Compute:
    break;
  }
  return "compute";
}

bool tunedBefore(uint64_t StepNanos, size_t Changed, uint64_t OtherNanos,
                 size_t OtherChanged) {
  auto Rank = [](uint64_t Nanos) {
    return int64_t(std::floor(std::log(double(std::max<uint64_t>(Nanos, 1))) /
                              std::log(1.001)));
  };
  int64_t A = Rank(StepNanos), B = Rank(OtherNanos);
  return A != B ? A < B : Changed < OtherChanged;
}

} // namespace dsc
