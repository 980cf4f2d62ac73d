//===- Report.cpp - The estimate for people and for scripts ---------------===//

#include "dsc/Plan/Report.h"
#include "PlanInternal.h"

#include "dsc/PlanFacts.h"
#include "dsc/Plan/TimeTables.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"

#include <map>
#include <set>

using namespace llvm;

namespace dsc {

std::string formatBytes(uint64_t Bytes) {
  const char *Units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double V = double(Bytes);
  unsigned U = 0;
  while (V >= 1024 && U < 4) {
    V /= 1024;
    ++U;
  }
  if (U == 0)
    return formatv("{0} B", Bytes).str();
  return formatv("{0:f2} {1}", V, Units[U]).str();
}

namespace {

std::string ranksText(const plan::RankClass &C) {
  std::string S;
  for (const plan::RankRange &R : C.Ranks) {
    if (!S.empty())
      S += ",";
    S += R.Count == 1 ? std::to_string(R.First)
                      : formatv("{0}-{1}", R.First, R.First + R.Count - 1)
                            .str();
  }
  return S;
}

uint32_t rankCount(const plan::RankClass &C) {
  uint32_t N = 0;
  for (const plan::RankRange &R : C.Ranks)
    N += R.Count;
  return N;
}

/// Device bytes by category at the peak, then the fixed costs, then what
/// the arena wastes above the live bound: these add up to the peak.
std::vector<std::pair<std::string, uint64_t>>
deviceBreakdown(const plan::Plan &P, const plan::RankEstimate &R) {
  std::vector<std::pair<std::string, uint64_t>> Rows;
  for (const plan::CategoryBytes &C : R.AtPeak)
    Rows.push_back({plan::enumName(C.What), C.Bytes});
  for (const plan::FixedCost &F : P.Estimates.Fixed)
    Rows.push_back({F.Name, F.Bytes});
  Rows.push_back({"arena_fragmentation",
                  R.DeviceArenaBytes - R.DeviceLiveBoundBytes});
  return Rows;
}

uint64_t largestDevicePeak(const plan::Plan &P, size_t *Which = nullptr) {
  uint64_t Max = 0;
  for (size_t I = 0; I < P.Estimates.Ranks.size(); ++I)
    if (P.Estimates.Ranks[I].DevicePeakBytes >= Max) {
      Max = P.Estimates.Ranks[I].DevicePeakBytes;
      if (Which)
        *Which = I;
    }
  return Max;
}

std::string millis(uint64_t Nanos) {
  return formatv("{0:f1} ms", double(Nanos) / 1e6).str();
}

/// The step's kernels by kind as planned: each forward and backward
/// instruction's kernels (recomputed forwards again), their runs summed,
/// named as dsrun --profile-step names them, the largest first.
std::string timeByKind(const plan::Plan &P) {
  std::map<std::string, uint64_t> Nanos;
  for (const plan::Instruction &In : P.Program) {
    plan::Interval R = plan::kernelsOf(P, In);
    for (uint32_t K = R.Begin; K < R.End; ++K)
      Nanos[plan::kindLabel(P.Kernels[K])] += P.Kernels[K].PlannedNanos;
  }
  if (Nanos.empty())
    return "";
  std::vector<std::pair<std::string, uint64_t>> Kinds(Nanos.begin(),
                                                      Nanos.end());
  std::stable_sort(Kinds.begin(), Kinds.end(),
                   [](auto &A, auto &B) { return A.second > B.second; });
  std::string Text = "time: the step's kernels by kind, as planned (dsrun "
                     "--profile-step measures the same):";
  for (size_t I = 0; I < Kinds.size(); ++I)
    Text += formatv("{0} {1} {2:F2} ms", I ? "," : "", Kinds[I].first,
                    double(Kinds[I].second) / 1e6);
  return Text + "\n";
}

/// Where the kernels' times come from: the calibration's kinds, the
/// shipped table's products and attention kernels, the machine's rates.
std::string timeBasis(const plan::Plan &P) {
  const plan::Hardware &H = P.Settings.Machine;
  const TimeTable *T = shippedTimeTable(H.GpuName);
  unsigned Calibrated = 0, Products = 0, Attention = 0, Kinds = 0, Rest = 0;
  for (const plan::Kernel &K : P.Kernels)
    switch (kernelRates(K, H, T).Source) {
    case RateSource::Calibration:
      ++Calibrated;
      break;
    case RateSource::TableProduct:
      ++Products;
      break;
    case RateSource::TableAttention:
      ++Attention;
      break;
    case RateSource::TableKind:
      ++Kinds;
      break;
    case RateSource::Machine:
      ++Rest;
      break;
    }
  if (P.Kernels.empty())
    return "";
  std::string Text = "time: ";
  if (Calibrated)
    Text += formatv("{0} kernels at the calibration's rates; ", Calibrated);
  if (T)
    Text += formatv("{0} products and {1} attention kernels from dsc's {2} "
                    "time table, {3} kernels at its measured kind rates ({4}); ",
                    Products, Attention, T->Gpu, Kinds, T->Source);
  Text += formatv("{0} at the machine's dense and memory rates\n", Rest);
  if (T && !T->Collectives.empty() && P.Settings.WorldSize > 1) {
    std::string Measured;
    for (size_t I = 0; I < T->Collectives.size(); ++I)
      Measured += formatv("{0}{1}",
                          I == 0                            ? ""
                          : I + 1 == T->Collectives.size() ? " and "
                                                            : ", ",
                          T->Collectives[I].Ranks);
    Text += formatv("time: collectives at NCCL's bus bandwidth by kind and "
                    "size from the table (measured at {0} ranks; the nearest "
                    "count serves {1}), but for kinds a calibration "
                    "measured\n",
                    Measured, P.Settings.WorldSize);
  }
  if (SharedGpu Sh = chargedSharing(P.Settings.Machine, T);
      P.Settings.WorldSize > 1 && Sh.charged())
    Text += formatv("time: compute and NCCL's kernels that run at once slow "
                    "each other: a collective costs the compute beside it "
                    "{0:F0} % of its own time and {1:F0} us{2} ({3}; what a "
                    "calibration measured is not charged again)\n",
                    100 * Sh.Compute, Sh.CallNanos / 1e3,
                    Sh.Wait ? ", and the first beside an instruction waits "
                              "for the running kernel's SMs"
                            : "",
                    Sh.Source);
  if (P.Settings.CtaPolicy == plan::CommCtaPolicy::Zero &&
      P.Settings.WorldSize > 1) {
    if (T && T->CopyEngine.Ranks)
      Text += formatv("time: all-gathers within a node on the copy engines "
                      "(--comm-cta-policy zero) at {0:F0} GB/s bus and a "
                      "call's latency, slowing no compute (measured at {1} "
                      "ranks, serving {2}: {3}), but where a calibration "
                      "measured them\n",
                      T->CopyEngine.BusGbps, T->CopyEngine.Ranks,
                      P.Settings.GpusPerNode, T->CopyEngine.Source);
    else
      Text += "time: all-gathers within a node on the copy engines "
              "(--comm-cta-policy zero) slow no compute, but no table of "
              "this GPU measured their rate: timed as NCCL's kernels'\n";
  }
  if (P.Settings.OptimizerOffload == plan::OffloadDevice::CPU) {
    const plan::Hardware &H = P.Settings.Machine;
    // The rate the schedule times AdamW at: a billion elements' pass.
    uint64_t BillionNanos = hostPassNanos(
        1000000000, plan::hostAdamBytesPerElem(P.Settings), H.HostAdamElemsPerSec, H);
    double AdamW = BillionNanos ? 1e18 / double(BillionNanos) : 0;
    std::string Share =
        H.HostBytesPerSec
            ? std::string(formatv("at {0:F0} GB/s a rank, its share of the "
                                  "host's memory bandwidth with {1} rank{2} "
                                  "a host",
                                  H.HostBytesPerSec / 1e9,
                                  P.Settings.GpusPerNode,
                                  P.Settings.GpusPerNode == 1 ? "" : "s"))
            : "at their calibrated rates alone";
    Text += formatv("time: the host's passes {0}: AdamW at {1:F1} G elements "
                    "a second (dsc's figures: measured with one rank of 16 "
                    "threads, scaled by --host-threads and the ranks; a "
                    "calibration file's replace them)\n",
                    Share, AdamW / 1e9);
  }
  return Text;
}

} // namespace

std::vector<std::string> planAdvice(const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  const plan::Estimate &E = P.Estimates;
  std::vector<std::string> Out;
  auto Share = [&](uint64_t Nanos) {
    return formatv("{0} ({1:F0} % of the step)", millis(Nanos),
                   100.0 * double(Nanos) / double(std::max<uint64_t>(
                                               E.StepNanos, 1)))
        .str();
  };
  // A bucket of every gradient does the reductions a larger one does.
  uint64_t Trainable = 0, BucketBytes = 0;
  for (const plan::Tensor &T : P.Tensors)
    Trainable += T.Role == plan::TensorRole::Trainable ? T.Elems : 0;
  for (const plan::Buffer &B : P.Buffers)
    if (B.Role == plan::BufferRole::ReduceBucket && !B.Bytes.empty())
      BucketBytes += *std::max_element(B.Bytes.begin(), B.Bytes.end());
  if (S.ZeroStage > 0 && S.ReduceBucketElems > 2 * Trainable &&
      BucketBytes >= (64ull << 20))
    Out.push_back(formatv(
        "reduce_bucket_size {0} is {1:F0}x the model's {2} trainable "
        "parameters: its buckets hold {3}; {2} reduces the same gradients "
        "the same way in less",
        S.ReduceBucketElems, double(S.ReduceBucketElems) / Trainable,
        Trainable, formatBytes(BucketBytes)));
  // Compute held up by a gather: the wait that starts a compute
  // instruction late is a gather's.
  if (S.ZeroStage == 3) {
    std::vector<plan::PlannedSpan> Spans = plan::replaySpans(P);
    uint64_t Held = 0, ComputeFree = 0, CommBusy = 0;
    for (size_t I = 0; I < P.Program.size(); ++I) {
      const plan::Instruction &In = P.Program[I];
      if (In.On == plan::Stream::Comm)
        CommBusy += Spans[I].Finish - Spans[I].Start;
      if (In.On != plan::Stream::Compute)
        continue;
      uint32_t Last = plan::NoIndex;
      for (uint32_t W : In.Waits)
        if (W < I && (Last == plan::NoIndex ||
                      Spans[W].Finish > Spans[Last].Finish))
          Last = W;
      if (Last != plan::NoIndex && Spans[I].Start > ComputeFree &&
          (P.Program[Last].Kind == plan::InstrKind::Gather ||
           P.Program[Last].Kind == plan::InstrKind::GatherSecondary))
        Held += Spans[I].Start - ComputeFree;
      ComputeFree = Spans[I].Finish;
    }
    // A step gathers the model whatever its micro batch: a larger one, or
    // a lower stage, moves fewer bytes a token.
    if (Held * 10 > E.StepNanos)
      Out.push_back(formatv("stage-3 gathers hold compute up for {0}, with "
                            "communication busy {1:F0} % of the step (dsc "
                            "tune compares larger micro batches and lower "
                            "stages)",
                            Share(Held), 100.0 * CommBusy / E.StepNanos));
  }
  if (E.ExposedOffloadNanos * 10 > E.StepNanos)
    Out.push_back(formatv("the offload adds {0} the step cannot hide behind "
                          "compute (dsc tune compares keeping the optimizer "
                          "on the GPU, and larger micro batches)",
                          Share(E.ExposedOffloadNanos)));
  return Out;
}

bool planFits(const plan::Plan &P) {
  uint64_t Limit = P.Settings.Machine.GpuMemoryBytes;
  return !Limit || largestDevicePeak(P) <= Limit;
}

void printEstimateText(raw_ostream &OS, const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  uint64_t Trainable = 0, Frozen = 0;
  for (const plan::Tensor &T : P.Tensors)
    (T.Role == plan::TensorRole::Trainable ? Trainable : Frozen) += T.Elems;
  OS << formatv("plan: {0} rank{1} ({2} node{3} x {4} GPU{5}), ZeRO stage "
                "{6}, {7}, micro batch {8} x accumulation {9}, {10} ({11} "
                "state{12} per parameter)\n",
                S.WorldSize, S.WorldSize == 1 ? "" : "s", S.Nodes,
                S.Nodes == 1 ? "" : "s", S.GpusPerNode,
                S.GpusPerNode == 1 ? "" : "s", S.ZeroStage,
                plan::enumName(S.ParamDType), S.MicroBatch, S.GradAccum,
                S.Optimizer, S.OptimizerStates,
                S.OptimizerStates == 1 ? "" : "s");
  std::string Dims;
  for (const plan::DimBinding &D : S.Dims)
    Dims += (Dims.empty() ? "" : ", ") + D.Name + "=" + std::to_string(D.Value);
  OS << formatv("model: {0} trainable + {1} frozen parameters in {2} modules, "
                "{3} compute ops{4}\n",
                Trainable, Frozen, P.Modules.size(), P.Ops.size(),
                Dims.empty() ? "" : " (" + Dims + ")");
  const plan::Partition &L = P.Layout;
  if (S.ZeroStage == 3)
    OS << formatv("partition: every parameter split over {0} ranks: {1} "
                  "elements per rank in {2} sub-group{3}\n",
                  plan::partitionRanks(S), L.PartitionElems,
                  L.SubGroups.size(), L.SubGroups.size() == 1 ? "" : "s");
  else if (S.ZeroStage > 0)
    OS << formatv("partition: {0} elements padded to {1} (alignment {2}): "
                  "{3} per rank\n",
                  L.FlatElems, L.PaddedElems, L.AlignmentElems,
                  L.PartitionElems);
  if (S.MicsShard && plan::replicaRanks(S) == 1) {
    OS << "MiCS: one shard group of every rank: ZeRO 3's partitions and "
          "communication\n";
  } else if (S.MicsShard) {
    // What the replicas' all-reduce moves in a step: each rank's share of
    // every bucket once, in the accumulation type.
    uint64_t Moved = 0;
    for (const plan::Instruction &In : P.Program)
      if (In.Kind == plan::InstrKind::ReduceReplicas)
        Moved += plan::bucketShardElems(P, In.Arg);
    uint32_t Replicas = plan::replicaRanks(S);
    bool InNode = S.GpusPerNode % S.MicsShard == 0;
    OS << formatv("MiCS: {0} shard groups of {1} consecutive rank{2} ({3}) "
                  "gather and reduce-scatter; each rank all-reduces {4} of "
                  "gradients with {5} replica{6} a step\n",
                  Replicas, S.MicsShard, S.MicsShard == 1 ? "" : "s",
                  InNode ? "within a node" : "across nodes",
                  formatBytes(Moved * plan::dtypeBytes(S.GradAccumDType)),
                  Replicas - 1, Replicas == 2 ? "" : "s");
  }
  uint64_t Largest = 0;
  for (const plan::Bucket &B : P.Buckets)
    Largest = std::max(Largest, B.Elems);
  if (!P.Buckets.empty())
    OS << formatv("buckets: {0} {1} bucket{2} (largest {3} elements, {4}); "
                  "overlap_comm {5}\n",
                  P.Buckets.size(), plan::enumName(P.Buckets[0].Kind),
                  P.Buckets.size() == 1 ? "" : "s", Largest,
                  plan::enumName(P.Buckets[0].Type),
                  S.OverlapComm ? "on" : "off");
  if (!P.FetchUnits.empty())
    OS << formatv("fetch: {0} units gathered before use; prefetch {1} "
                  "elements, max live {2}, reuse distance {3}\n",
                  P.FetchUnits.size(), S.PrefetchBucketElems, S.MaxLiveParams,
                  S.MaxReuseDistance);
  if (S.HpzPartition > 1) {
    size_t Gathers = 0, Within = 0;
    for (const plan::Instruction &In : P.Program) {
      Gathers += In.Kind == plan::InstrKind::Gather ||
                 In.Kind == plan::InstrKind::GatherSecondary;
      Within += In.Kind == plan::InstrKind::GatherSecondary;
    }
    uint64_t Held = 0;
    for (const plan::Buffer &B : P.Buffers)
      if (B.Role == plan::BufferRole::HpzSecondary && !B.Bytes.empty())
        Held += B.Bytes[0];
    bool InNode = S.GpusPerNode % S.HpzPartition == 0;
    OS << formatv("hpZ: groups of {0} ranks ({1}) keep secondary partitions "
                  "of {2}; {3} of {4} gathers run within a group\n",
                  S.HpzPartition, InNode ? "within a node" : "across nodes",
                  formatBytes(Held), Within, Gathers);
  }
  if (plan::unitGathersQuantized(P)) {
    // Each unit's gathers in the step, at int8 with their scales against
    // the parameters' type.
    uint64_t Moved = 0, Unquantized = 0;
    for (const plan::Instruction &In : P.Program) {
      bool Secondary = In.Kind == plan::InstrKind::GatherSecondary;
      if (In.Kind != plan::InstrKind::Gather && !Secondary)
        continue;
      plan::QwzGather Q = plan::qwzGather(P, In.Arg, Secondary);
      Moved += Q.bytes();
      Unquantized += Q.Send * Q.Ranks * plan::dtypeBytes(S.ParamDType);
    }
    if (Moved)
      OS << formatv("qwZ: gathers move int8 weights and a scale per group: "
                    "{0} a step instead of {1}\n",
                    formatBytes(Moved), formatBytes(Unquantized));
    else
      OS << "qwZ: nothing to quantize: every parameter persists, none is "
            "gathered\n";
  }
  if (S.QuantizedGradients && !plan::qgzAcrossNodes(S))
    OS << "qgZ: on one node DeepSpeed reduces gradients unquantized (its "
          "quantized all-to-all runs between nodes): planned as ZeRO 3's "
          "reduce-scatter\n";
  if (plan::qgzAcrossNodes(S)) {
    // What a rank sends to other nodes and within its own in a step for
    // the quantized gradients, against what reduce-scattering them sends.
    uint64_t Sent = 0, Within = 0, Plain = 0, Quantized = 0, Tensors = 0;
    for (const plan::Tensor &T : P.Tensors)
      if (T.Role == plan::TensorRole::Trainable) {
        ++Tensors;
        Quantized += plan::qgzTensor(S, T).Quantized;
      }
    for (const plan::Instruction &In : P.Program)
      if (In.Kind == plan::InstrKind::ReduceAcrossNodes) {
        plan::QgzLayout L = plan::qgzLayout(P, In.Arg);
        Sent += (S.Nodes - 1) * L.Block2;
        Within += (S.GpusPerNode - 1) * L.Block1;
        for (const plan::QgzLayout::Piece &Pc : L.Pieces)
          Plain += P.Tensors[Pc.Tensor].Elems * 2 * (S.WorldSize - 1) /
                   S.WorldSize;
      }
    OS << formatv("qgZ: {0} of {1} gradients reduced by 4-bit all-to-alls "
                  "within each node, then between nodes: a rank sends {2} "
                  "to other nodes and {3} within its own a step, where "
                  "reduce-scattering them sends {4}; the others "
                  "reduce-scatter over every rank. As in DeepSpeed, the "
                  "quantized gradients arrive as the sum divided by the "
                  "nodes: {5} times the mean\n",
                  Quantized, Tensors, formatBytes(Sent), formatBytes(Within),
                  formatBytes(Plain), S.GpusPerNode);
  }
  if (!P.Transfers.empty())
    OS << formatv("offload: {0} transfers per step\n", P.Transfers.size());
  OS << formatv("program: {0} instructions; step ~{1} on {2} (exposed "
                "communication {3}, offload {4})\n",
                P.Program.size(), millis(P.Estimates.StepNanos),
                S.Machine.GpuName, millis(P.Estimates.ExposedCommNanos),
                millis(P.Estimates.ExposedOffloadNanos));
  OS << timeBasis(P) << timeByKind(P);
  if (S.Nodes > 1) {
    // Measured kinds first; the modelled figure serves the others.
    std::string Rates;
    for (const plan::CollectiveRate &R : S.Machine.InterNodeRates)
      Rates += formatv("{0}{1} {2:F1}", Rates.empty() ? "" : ", ", R.Kind,
                       R.BusBytesPerSec / 1e9);
    std::string Modelled =
        formatv("{0:F1} GB/s", S.Machine.InterNodeBytesPerSec / 1e9);
    Rates = Rates.empty() ? Modelled
                          : Rates + " GB/s calibrated, other kinds " + Modelled;
    OS << formatv("between nodes: {0} bus bandwidth ({1}) against {2:F1} "
                  "GB/s within a node: {3}\n",
                  Rates, S.Machine.InterNodeLink,
                  S.Machine.CollectiveBytesPerSec / 1e9,
                  crossesNodes(S) ? "the link between nodes limits every "
                                    "collective over the ranks"
                                  : "the link within a node limits them");
  }
  for (const std::string &A : planAdvice(P))
    OS << "speed: " << A << "\n";
  size_t Backward = 0;
  for (const plan::Kernel &K : P.Kernels)
    Backward += K.Backward;
  OS << formatv("training: {0} kernels ({1} forward, {2} backward) in {3} "
                "ops, {4} loss\n",
                P.Kernels.size(), P.Kernels.size() - Backward, Backward,
                P.Ops.size(), plan::enumName(P.Training.Loss));
  if (P.Settings.CheckpointLayers) {
    // Each micro step's forward instructions beyond one per op are the
    // checkpointed layers' recomputations.
    size_t Forwards = count_if(P.Program, [](const plan::Instruction &I) {
      return I.Kind == plan::InstrKind::Forward;
    });
    std::set<uint32_t> Layers;
    for (const plan::Op &Op : P.Ops)
      if (Op.Layer != plan::NoIndex)
        Layers.insert(Op.Layer);
    size_t Micros = std::max<uint32_t>(P.Settings.GradAccum, 1);
    OS << formatv("activation checkpointing: {0} layers keep only their "
                  "inputs; {1} of {2} ops run their forward again before "
                  "their backward\n",
                  Layers.size(), Forwards / Micros - P.Ops.size(),
                  P.Ops.size());
  }
  for (const std::string &M : P.Training.Missing)
    WithColor::warning(OS) << "this plan cannot train: it needs " << M
                           << "; export the model with its weights\n";

  // One line per rank layout, then the fullest rank in detail.
  size_t Worst = 0;
  largestDevicePeak(P, &Worst);
  if (P.Estimates.Ranks.size() > 1) {
    OS << formatv("\n{0} rank layouts (ranks differ in the gradients their "
                  "partition touches, or in padding):\n",
                  P.Estimates.Ranks.size());
    for (size_t C = 0; C < P.Estimates.Ranks.size(); ++C) {
      const plan::RankEstimate &R = P.Estimates.Ranks[C];
      OS << formatv("  ranks {0,-14} device {1,12}  host {2,12}{3}\n",
                    ranksText(L.RankClasses[C]),
                    formatBytes(R.DevicePeakBytes),
                    formatBytes(R.HostPeakBytes),
                    L.RankClasses[C].UpperBound ? "  (largest of them)" : "");
    }
  }
  const plan::RankEstimate &R = P.Estimates.Ranks[Worst];
  const plan::RankClass &RC = L.RankClasses[Worst];
  OS << formatv("\nranks {0} ({1} alike{2}): device peak {3}, host {4}{5}\n",
                ranksText(RC), rankCount(RC),
                RC.UpperBound ? ", largest of them" : "",
                formatBytes(R.DevicePeakBytes), formatBytes(R.HostPeakBytes),
                R.NVMeBytes ? ", NVMe " + formatBytes(R.NVMeBytes) : "");
  for (auto &[Name, Bytes] : deviceBreakdown(P, R))
    if (Bytes)
      OS << formatv("  {0,-22} {1,12}\n", Name, formatBytes(Bytes));
  if (R.DeviceLiveBoundBytes)
    OS << formatv("  arena {0} is {1:f1}% above the live bound {2}\n",
                  formatBytes(R.DeviceArenaBytes),
                  100.0 * (double(R.DeviceArenaBytes) /
                               double(R.DeviceLiveBoundBytes) -
                           1),
                  formatBytes(R.DeviceLiveBoundBytes));
  if (R.HostPeakBytes)
    OS << formatv("  host: {0} ({1} pinned)\n", formatBytes(R.HostPeakBytes),
                  formatBytes(R.HostPinnedBytes));
  // Where each fixed cost comes from, the costs of one basis together.
  std::vector<std::pair<std::string, std::string>> Bases;
  for (const plan::FixedCost &F : P.Estimates.Fixed) {
    auto It = llvm::find_if(Bases, [&](auto &B) { return B.first == F.Basis; });
    if (It == Bases.end())
      Bases.push_back({F.Basis, F.Name});
    else
      It->second += ", " + F.Name;
  }
  for (auto &[Basis, Names] : Bases)
    if (!Basis.empty())
      OS << "  " << Names << ": " << Basis << "\n";
  const plan::DeepSpeedEstimate &D = P.Estimates.DeepSpeed;
  OS << formatv("\nDeepSpeed's own estimate: {0} per GPU, {1} host per node "
                "({2})\n",
                formatBytes(D.DeviceBytes), formatBytes(D.HostBytes), D.Basis);

  uint64_t Limit = S.Machine.GpuMemoryBytes;
  if (!Limit)
    return;
  uint64_t Peak = R.DevicePeakBytes;
  if (Peak <= Limit) {
    WithColor(OS, raw_ostream::GREEN, /*Bold=*/true)
        << formatv("fits {0} ({1}): {2} to spare on the fullest rank\n",
                   S.Machine.GpuName, formatBytes(Limit),
                   formatBytes(Limit - Peak));
    return;
  }
  auto Rows = deviceBreakdown(P, P.Estimates.Ranks[Worst]);
  llvm::sort(Rows, [](auto &A, auto &B) { return A.second > B.second; });
  std::string Top;
  for (size_t I = 0; I < Rows.size() && I < 3; ++I)
    Top += (I ? ", " : "") + Rows[I].first + " " + formatBytes(Rows[I].second);
  WithColor(OS, raw_ostream::RED, /*Bold=*/true)
      << formatv("does not fit {0} ({1}): needs {2}, {3} too much; largest: "
                 "{4}\n",
                 S.Machine.GpuName, formatBytes(Limit), formatBytes(Peak),
                 formatBytes(Peak - Limit), Top);
}

json::Value estimateJSON(const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  json::Array Ranks;
  for (size_t C = 0; C < P.Estimates.Ranks.size(); ++C) {
    const plan::RankEstimate &R = P.Estimates.Ranks[C];
    const plan::RankClass &RC = P.Layout.RankClasses[C];
    json::Object ByCategory, HostByCategory;
    for (auto &[Name, Bytes] : deviceBreakdown(P, R))
      ByCategory[Name] = int64_t(Bytes);
    for (const plan::Buffer &B : P.Buffers)
      if (B.Space == plan::MemorySpace::Host && B.Bytes[C]) {
        json::Value *V = HostByCategory.get(plan::enumName(B.What));
        int64_t Sum = (V ? *V->getAsInteger() : 0) + int64_t(B.Bytes[C]);
        HostByCategory[plan::enumName(B.What)] = Sum;
      }
    json::Array Members;
    for (const plan::RankRange &RR : RC.Ranks)
      Members.push_back(json::Array{int64_t(RR.First),
                                    int64_t(RR.First + RR.Count - 1)});
    Ranks.push_back(json::Object{
        {"ranks", std::move(Members)},
        {"ranks_alike", int64_t(rankCount(RC))},
        {"upper_bound", RC.UpperBound},
        {"device_peak_bytes", int64_t(R.DevicePeakBytes)},
        {"device_arena_bytes", int64_t(R.DeviceArenaBytes)},
        {"device_live_bound_bytes", int64_t(R.DeviceLiveBoundBytes)},
        {"device_fixed_bytes", int64_t(R.DeviceFixedBytes)},
        {"host_peak_bytes", int64_t(R.HostPeakBytes)},
        {"host_pinned_bytes", int64_t(R.HostPinnedBytes)},
        {"nvme_bytes", int64_t(R.NVMeBytes)},
        {"by_category", std::move(ByCategory)},
        {"host_by_category", std::move(HostByCategory)},
    });
  }
  uint64_t Limit = S.Machine.GpuMemoryBytes;
  json::Object Fit{{"gpu", S.Machine.GpuName},
                   {"gpu_memory_bytes", Limit ? json::Value(int64_t(Limit))
                                              : json::Value(nullptr)},
                   {"fits", Limit ? json::Value(planFits(P))
                                  : json::Value(nullptr)}};
  if (Limit)
    Fit["margin_bytes"] = int64_t(Limit) - int64_t(largestDevicePeak(P));
  return json::Object{
      {"world_size", int64_t(S.WorldSize)},
      {"nodes", int64_t(S.Nodes)},
      {"gpus_per_node", int64_t(S.GpusPerNode)},
      {"zero_stage", int64_t(S.ZeroStage)},
      {"micro_batch", int64_t(S.MicroBatch)},
      {"gradient_accumulation", int64_t(S.GradAccum)},
      {"param_dtype", plan::enumName(S.ParamDType)},
      {"kernels", int64_t(P.Kernels.size())},
      {"can_train", P.Training.Missing.empty()},
      {"ranks", std::move(Ranks)},
      {"deepspeed_estimate",
       json::Object{{"device_bytes", int64_t(P.Estimates.DeepSpeed.DeviceBytes)},
                    {"host_bytes", int64_t(P.Estimates.DeepSpeed.HostBytes)},
                    {"basis", P.Estimates.DeepSpeed.Basis}}},
      {"step_time_ns", int64_t(P.Estimates.StepNanos)},
      {"exposed_comm_ns", int64_t(P.Estimates.ExposedCommNanos)},
      {"exposed_offload_ns", int64_t(P.Estimates.ExposedOffloadNanos)},
      {"advice", json::Array(planAdvice(P))},
      {"fit", std::move(Fit)},
  };
}

} // namespace dsc
