//===- TimeTables.cpp - Kernel times measured on each GPU kind ------------===//

#include "dsc/Plan/TimeTables.h"
#include "llvm/ADT/STLExtras.h"

#include "dsc/KernelTime.h"
#include "dsc/Plan/MeasuredRatesYAML.h"
#include "dsc/Support/YAMLInput.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

using namespace llvm;

LLVM_YAML_IS_SEQUENCE_VECTOR(dsc::AttentionRates)
LLVM_YAML_IS_SEQUENCE_VECTOR(dsc::EpilogueCost)
LLVM_YAML_IS_SEQUENCE_VECTOR(dsc::KernelLatency)
LLVM_YAML_IS_SEQUENCE_VECTOR(dsc::CollectiveGrid)

namespace llvm::yaml {
/// Every rate of a table's list is above 0.
static bool allPositive(const std::vector<double> &Rates) {
  return std::all_of(Rates.begin(), Rates.end(),
                     [](double R) { return R > 0; });
}

template <> struct MappingTraits<dsc::EpilogueCost> {
  static void mapping(IO &IO, dsc::EpilogueCost &E) {
    IO.mapRequired("epilogue", E.Epilogue);
    IO.mapRequired("factor", E.Factor);
  }
  static std::string validate(IO &, dsc::EpilogueCost &E) {
    if (!(E.Factor >= 0.5 && E.Factor <= 10))
      return "an epilogue's factor must be from 0.5 to 10";
    return "";
  }
  static const bool flow = true;
};

template <> struct MappingTraits<dsc::KernelLatency> {
  static void mapping(IO &IO, dsc::KernelLatency &L) {
    IO.mapRequired("kind", L.Kind);
    IO.mapRequired("backward", L.Backward);
    IO.mapRequired("ns", L.Nanos);
  }
  static std::string validate(IO &, dsc::KernelLatency &L) {
    using Kinds = dsc::plan::EnumInfo<dsc::plan::KernelKind>;
    if (std::find(Kinds::Names, Kinds::Names + Kinds::Count, L.Kind) ==
        Kinds::Names + Kinds::Count)
      return "kernel_latencies: no kernel kind is named '" + L.Kind + "'";
    if (L.Nanos > 1000000)
      return "a kernel's fixed time is at most 1 ms";
    return "";
  }
  static const bool flow = true;
};

template <> struct MappingTraits<dsc::ProductGrid> {
  static void mapping(IO &IO, dsc::ProductGrid &G) {
    IO.mapRequired("sizes", G.Sizes);
    IO.mapRequired("nt", G.NT);
    IO.mapRequired("nn", G.NN);
    IO.mapRequired("tn", G.TN);
    IO.mapOptional("epilogues", G.Epilogues);
  }
  static std::string validate(IO &, dsc::ProductGrid &G) {
    if (G.Sizes.empty() || !std::is_sorted(G.Sizes.begin(), G.Sizes.end()) ||
        G.Sizes.front() <= 0 ||
        std::adjacent_find(G.Sizes.begin(), G.Sizes.end()) != G.Sizes.end())
      return "products' sizes must be positive and ascending";
    size_t N = G.Sizes.size() * G.Sizes.size() * G.Sizes.size();
    for (const std::vector<double> *L : {&G.NT, &G.NN, &G.TN}) {
      if (L->size() != N)
        return "each layout of the products has one rate per (m, n, k): " +
               std::to_string(N);
      // A rate of 0 (a shape the bench could not run) would pull its
      // neighbours' interpolation towards nothing.
      if (!allPositive(*L))
        return "every product rate must be positive";
    }
    for (size_t I = 0; I < G.Epilogues.size(); ++I) {
      dsc::plan::GemmEpilogue E = G.Epilogues[I].Epilogue;
      if (E == dsc::plan::GemmEpilogue::None)
        return "products' epilogues: 'none' is the grid itself";
      for (size_t J = 0; J < I; ++J)
        if (G.Epilogues[J].Epilogue == E)
          return "products' epilogues: '" +
                 std::string(dsc::plan::enumName(E)) + "' twice";
    }
    return "";
  }
};

template <> struct MappingTraits<dsc::AttentionRates> {
  static void mapping(IO &IO, dsc::AttentionRates &A) {
    IO.mapRequired("algorithm", A.Algorithm);
    IO.mapRequired("head_dim", A.HeadDim);
    IO.mapRequired("causal", A.Causal);
    IO.mapRequired("forward", A.Forward);
    IO.mapRequired("backward", A.Backward);
  }
  static const bool flow = true;
};

struct AttentionSection {
  std::vector<int64_t> &Sequences;
  std::vector<dsc::AttentionRates> &Entries;
};
template <> struct MappingTraits<AttentionSection> {
  static void mapping(IO &IO, AttentionSection &A) {
    IO.mapRequired("sequences", A.Sequences);
    IO.mapRequired("entries", A.Entries);
  }
  static std::string validate(IO &, AttentionSection &A) {
    if (A.Sequences.empty() ||
        !std::is_sorted(A.Sequences.begin(), A.Sequences.end()) ||
        A.Sequences.front() <= 0)
      return "attention's sequences must be positive and ascending";
    for (const dsc::AttentionRates &E : A.Entries) {
      if (E.Forward.size() != A.Sequences.size() ||
          E.Backward.size() != A.Sequences.size() || E.HeadDim <= 0)
        return "each attention entry has a head size and one rate per "
               "sequence, forward and backward";
      if (!allPositive(E.Forward) || !allPositive(E.Backward))
        return "every attention rate must be positive";
    }
    return "";
  }
};

template <> struct MappingTraits<dsc::CollectiveGrid> {
  static void mapping(IO &IO, dsc::CollectiveGrid &C) {
    IO.mapRequired("ranks", C.Ranks);
    IO.mapRequired("sizes", C.Sizes);
    IO.mapRequired("all-reduce", C.AllReduce);
    IO.mapRequired("reduce-scatter", C.ReduceScatter);
    IO.mapRequired("all-gather", C.AllGather);
    IO.mapRequired("reduce", C.Reduce);
  }
  static std::string validate(IO &, dsc::CollectiveGrid &C) {
    if (C.Ranks < 2 || C.Ranks > 1024)
      return "a collectives entry's ranks must be from 2 to 1024";
    if (C.Sizes.empty() || !std::is_sorted(C.Sizes.begin(), C.Sizes.end()) ||
        C.Sizes.front() <= 0)
      return "collectives' sizes must be positive and ascending";
    for (const std::vector<double> *R :
         {&C.AllReduce, &C.ReduceScatter, &C.AllGather, &C.Reduce}) {
      if (R->size() != C.Sizes.size())
        return "each collective kind has one rate per size";
      if (!allPositive(*R))
        return "every collective rate must be positive";
    }
    return "";
  }
};

template <> struct MappingTraits<dsc::SharedGpu> {
  static void mapping(IO &IO, dsc::SharedGpu &S) {
    IO.mapRequired("compute", S.Compute);
    IO.mapRequired("call_ns", S.CallNanos);
    IO.mapRequired("wait", S.Wait);
    IO.mapRequired("source", S.Source);
  }
  static std::string validate(IO &, dsc::SharedGpu &S) {
    constexpr uint64_t Millisecond = 1000000;
    if (!(S.Compute >= 0 && S.Compute <= 10) || S.CallNanos > Millisecond)
      return "sharing's compute slowdown must be from 0 to 10, its call_ns "
             "at most 1 ms";
    return "";
  }
};

template <> struct MappingTraits<dsc::CopyEngineGathers> {
  static void mapping(IO &IO, dsc::CopyEngineGathers &C) {
    IO.mapRequired("ranks", C.Ranks);
    IO.mapRequired("bus_gbps", C.BusGbps);
    IO.mapRequired("source", C.Source);
  }
  static std::string validate(IO &, dsc::CopyEngineGathers &C) {
    if (C.Ranks < 2 || C.Ranks > 1024 || !(C.BusGbps > 0 && C.BusGbps < 10000))
      return "copy_engine_all_gather needs ranks from 2 to 1024 and a bus "
             "rate above 0 and below 10000 GB/s";
    return "";
  }
};

template <> struct MappingTraits<dsc::TimeTable> {
  static void mapping(IO &IO, dsc::TimeTable &T) {
    IO.mapRequired("gpu", T.Gpu);
    IO.mapRequired("source", T.Source);
    IO.mapOptional("products", T.Products);
    AttentionSection A{T.Sequences, T.Attention};
    IO.mapOptional("attention", A);
    IO.mapOptional("kernel_rates", T.KernelRates);
    IO.mapOptional("kernel_latencies", T.KernelLatencies);
    IO.mapOptional("kernel_gap_ns", T.KernelGapNanos);
    IO.mapOptional("instruction_gap_ns", T.InstructionGapNanos);
    IO.mapOptional("memory_bytes_per_sec", T.MemoryBytesPerSec);
    IO.mapOptional("collectives", T.Collectives);
    IO.mapOptional("sharing", T.Sharing);
    IO.mapOptional("copy_engine_all_gather", T.CopyEngine);
  }
  static std::string validate(IO &, dsc::TimeTable &T) {
    // Idle time around a launch, not a kernel's own.
    constexpr uint64_t Millisecond = 1000000;
    if (T.KernelGapNanos > Millisecond || T.InstructionGapNanos > Millisecond)
      return "kernel_gap_ns and instruction_gap_ns are idle time between "
             "launches: at most 1 ms";
    // HBM3e is 4.8 TB/s; no device streams 100.
    constexpr uint64_t TBps = 1000000000000;
    if (T.MemoryBytesPerSec > 100 * TBps)
      return "memory_bytes_per_sec is a device's memory rate: at most "
             "100 TB/s";
    return "";
  }
};
} // namespace llvm::yaml

namespace dsc {

namespace {

/// Where X falls among ascending Sizes, in log2: the lower index and the
/// upper one's weight; clamped to the ends (a size beyond the table runs
/// at its nearest edge's rate).
std::pair<size_t, double> bracket(const std::vector<int64_t> &Sizes,
                                  double X) {
  if (X <= double(Sizes.front()))
    return {0, 0.0};
  if (X >= double(Sizes.back()))
    return {Sizes.size() - 1, 0.0};
  size_t I = size_t(std::upper_bound(Sizes.begin(), Sizes.end(), X) -
                    Sizes.begin()) -
             1;
  double Lo = std::log2(double(Sizes[I])), Hi = std::log2(double(Sizes[I + 1]));
  return {I, (std::log2(X) - Lo) / (Hi - Lo)};
}

/// Rates at the sequence lengths of the table, at length X.
double alongSequences(const std::vector<int64_t> &Sequences,
                      const std::vector<double> &Rates, double X) {
  auto [I, W] = bracket(Sequences, X);
  double R = Rates[I];
  if (W > 0)
    R = R * (1 - W) + Rates[I + 1] * W;
  return R;
}

struct Shipped {
  const char *Gpu;
  const char *Text;
};

// The tables, each lib/Plan/TimeTables/GPU.yaml as text (CMakeLists.txt).
#include "TimeTablesData.inc"

} // namespace

Expected<TimeTable> parseTimeTable(StringRef Text, StringRef Path) {
  TimeTable T;
  if (Error E = readYAMLInto(T, Text, Path, "a time table"))
    return E;
  return T;
}

namespace {
/// Every shipped table, parsed once: the table, or why it cannot serve.
struct ParsedTable {
  std::string File;
  std::optional<TimeTable> Table;
  std::string Problem;
};

const std::vector<ParsedTable> &parsedTables() {
  static const std::vector<ParsedTable> Tables = [] {
    std::vector<ParsedTable> All;
    for (const Shipped &S : ShippedTables) {
      if (!S.Gpu)
        break;
      ParsedTable P{S.Gpu, std::nullopt, ""};
      Expected<TimeTable> T = parseTimeTable(S.Text, S.Gpu);
      if (!T)
        P.Problem = toString(T.takeError());
      else if (T->Gpu != S.Gpu)
        P.Problem = std::string(S.Gpu) + ".yaml is the table of " + T->Gpu;
      else
        P.Table = std::move(*T);
      All.push_back(std::move(P));
    }
    return All;
  }();
  return Tables;
}
} // namespace

std::vector<std::string> shippedTimeTableProblems() {
  std::vector<std::string> Out;
  for (const ParsedTable &P : parsedTables())
    if (!P.Problem.empty())
      Out.push_back(P.Problem);
  return Out;
}

std::vector<std::string> shippedTimeTableNames() {
  std::vector<std::string> Out;
  for (const ParsedTable &P : parsedTables())
    Out.push_back(P.File);
  return Out;
}

const TimeTable *shippedTimeTable(StringRef Gpu) {
  // The default figures are a preset's with a note after its name
  // ("H100-80GB (default figures, no memory limit)").
  StringRef Name = Gpu.split(" (").first;
  for (const ParsedTable &P : parsedTables())
    if (P.Table && P.File == Name)
      return &*P.Table;
  return nullptr;
}

uint64_t copyEngineGatherRate(const plan::Hardware &H) {
  const TimeTable *T = shippedTimeTable(H.GpuName);
  return T && T->CopyEngine.Ranks ? uint64_t(T->CopyEngine.BusGbps * 1e9) : 0;
}

double collectiveBusRate(const TimeTable &T, StringRef Kind, uint64_t Bytes,
                         uint32_t Ranks) {
  const CollectiveGrid *Nearest = nullptr;
  auto Distance = [&](const CollectiveGrid &C) {
    return std::abs(std::log2(double(C.Ranks)) - std::log2(double(Ranks)));
  };
  // Nearest in log2; of two as near, the fewer ranks.
  for (const CollectiveGrid &C : T.Collectives)
    if (!Nearest || Distance(C) < Distance(*Nearest) ||
        (Distance(C) == Distance(*Nearest) && C.Ranks < Nearest->Ranks))
      Nearest = &C;
  if (!Nearest || !Bytes)
    return 0;
  const std::vector<double> *Rates =
      Kind == "all-reduce"       ? &Nearest->AllReduce
      : Kind == "reduce-scatter" ? &Nearest->ReduceScatter
      : Kind == "all-gather"     ? &Nearest->AllGather
      : Kind == "reduce"         ? &Nearest->Reduce
                                 : nullptr;
  if (!Rates)
    return 0;
  return alongSequences(Nearest->Sizes, *Rates, double(Bytes)) * 1e9;
}

double productTflops(const ProductGrid &G, const plan::GemmAttrs &A) {
  const std::vector<double> &Rates = A.TransA ? G.TN : A.TransB ? G.NT : G.NN;
  size_t N = G.Sizes.size();
  if (!N || Rates.size() != N * N * N)
    return 0;
  std::pair<size_t, double> At[3] = {
      bracket(G.Sizes, double(A.M) * double(std::max<int64_t>(A.Batch, 1))),
      bracket(G.Sizes, double(A.N)), bracket(G.Sizes, double(A.K))};
  // Trilinear in log2 of each size.
  double Rate = 0;
  for (int Corner = 0; Corner < 8; ++Corner) {
    double Weight = 1;
    size_t Index[3];
    for (int D = 0; D < 3; ++D) {
      bool Upper = Corner >> D & 1;
      auto [I, W] = At[D];
      Weight *= Upper ? W : 1 - W;
      Index[D] = std::min(I + (Upper ? 1 : 0), N - 1);
    }
    if (Weight > 0)
      Rate += Weight * Rates[(Index[0] * N + Index[1]) * N + Index[2]];
  }
  // A size below the grid's smallest takes as long as the smallest: the
  // kernel still runs whole tiles (the lm head's last column, n = 1, ran
  // 8 us in GPT-2 XL's step, like a 128-column product).
  double Floor = double(G.Sizes.front()), Scale = 1;
  for (double Size : {double(A.M) * double(std::max<int64_t>(A.Batch, 1)),
                      double(A.N), double(A.K)})
    Scale *= std::min(1.0, Size / Floor);
  for (const EpilogueCost &E : G.Epilogues)
    if (E.Epilogue == A.Epilogue)
      Scale /= E.Factor;
  return Rate * Scale;
}

/// The attention grid's launches (runtime/bench/attention_bench.cu): 16
/// heads over 16 k tokens, whatever the sequence.
static constexpr double GridQueryRows = 16.0 * 16384;
/// A launch with fewer query rows (batch x heads x sequence) leaves SMs
/// without work: its rate is the grid's times occupancy(rows) /
/// occupancy(grid's rows), occupancy(R) = R / (R + HalfRateRows), at
/// most the grid's. Fitted on dsrun-attention-bench's five shapes of 65 k
/// to 197 k rows against the H200 table (2026-11-28, cuDNN, within 8 %);
/// it puts GPT-2 XL's in-step attention at 1, 4 and 16 x 1024 tokens
/// within 15 % of what the step's profile measured.
static constexpr double HalfRateRows = 24000;

static double attentionOccupancy(const plan::AttentionAttrs &A) {
  double Rows = double(std::max<int64_t>(A.Batch, 1)) *
                double(std::max<int64_t>(A.QHeads, 1)) *
                double(std::max<int64_t>(A.QLen, 1));
  auto Occupancy = [](double R) { return R / (R + HalfRateRows); };
  return std::min(1.0, Occupancy(Rows) / Occupancy(GridQueryRows));
}

double attentionTflops(const TimeTable &T, const plan::AttentionAttrs &A,
                       bool Backward) {
  // The entries of the algorithm and masking nearest the head size, at
  // or below it and at or above it (a kernel's time is asked for often:
  // nothing is allocated).
  const AttentionRates *Below = nullptr, *Above = nullptr;
  for (const AttentionRates &E : T.Attention) {
    if (E.Algorithm != plan::enumName(A.Algorithm) || E.Causal != A.Causal)
      continue;
    if (E.HeadDim <= A.HeadDim && (!Below || E.HeadDim > Below->HeadDim))
      Below = &E;
    if (E.HeadDim >= A.HeadDim && (!Above || E.HeadDim < Above->HeadDim))
      Above = &E;
  }
  if ((!Below && !Above) || T.Sequences.empty())
    return 0;
  // Beyond the table's head sizes, its edge's.
  Below = Below ? Below : Above, Above = Above ? Above : Below;
  double Seq = double(std::max<int64_t>(A.QLen, 1));
  auto RateOf = [&](const AttentionRates *E) {
    return alongSequences(T.Sequences, Backward ? E->Backward : E->Forward,
                          Seq);
  };
  double Occupancy = attentionOccupancy(A);
  if (Below == Above)
    return RateOf(Below) * Occupancy;
  // Between two head sizes, in log2.
  double Lo = std::log2(double(Below->HeadDim)),
         Hi = std::log2(double(Above->HeadDim));
  double W = (std::log2(double(A.HeadDim)) - Lo) / (Hi - Lo);
  return (RateOf(Below) * (1 - W) + RateOf(Above) * W) * Occupancy;
}

KernelRates kernelRates(const plan::Kernel &K, const plan::Hardware &H,
                        const TimeTable *Table) {
  if (const plan::KernelRate *R = plan::measuredRate(K, H))
    return {RateSource::Calibration, R->FlopsPerSec, R->BytesPerSec};
  if (Table) {
    if (const plan::GemmAttrs *G = std::get_if<plan::GemmAttrs>(&K.Attrs))
      if (double Tflops = productTflops(Table->Products, *G); Tflops > 0)
        return {RateSource::TableProduct, uint64_t(Tflops * 1e12),
                H.MemoryBytesPerSec};
    if (const plan::AttentionAttrs *A = K.as<plan::AttentionAttrs>())
      if (double Tflops = attentionTflops(
              *Table, *A, K.kind() == plan::KernelKind::AttentionGrad);
          Tflops > 0)
        return {RateSource::TableAttention, uint64_t(Tflops * 1e12),
                H.MemoryBytesPerSec};
    for (const plan::KernelRate &R : Table->KernelRates)
      if (R.Backward == K.Backward && R.Kind == plan::enumName(K.kind())) {
        uint64_t Fixed = 0;
        for (const KernelLatency &L : Table->KernelLatencies)
          if (L.Backward == R.Backward && L.Kind == R.Kind)
            Fixed = L.Nanos;
        return {RateSource::TableKind, R.FlopsPerSec, R.BytesPerSec, Fixed};
      }
  }
  return {RateSource::Machine, H.DenseFlopsPerSec, H.MemoryBytesPerSec};
}

SharedGpu chargedSharing(const plan::Hardware &H, const TimeTable *Table) {
  if (!Table)
    return {};
  SharedGpu S = Table->Sharing;
  if (llvm::any_of(H.KernelRates,
                   [](const plan::KernelRate &R) { return R.Kind == "gemm"; }))
    S.Compute = 0, S.CallNanos = 0;
  if (!H.CollectiveRates.empty())
    S.Wait = false;
  return S;
}

uint64_t kernelRunNanos(const plan::Kernel &K, const plan::Hardware &H,
                        const TimeTable *Table) {
  KernelRates R = kernelRates(K, H, Table);
  return std::max(plan::nanosAt(K.Flops, R.FlopsPerSec),
                  plan::nanosAt(K.Bytes, R.BytesPerSec)) +
         R.FixedNanos;
}

uint64_t kernelGapNanos(const plan::Hardware &H, const TimeTable *Table) {
  return H.KernelGapNanos || !Table ? H.KernelGapNanos : Table->KernelGapNanos;
}

void estimateKernels(plan::Plan &P, const plan::Hardware &H,
                     const TimeTable *Table) {
  for (plan::Kernel &K : P.Kernels)
    K.PlannedNanos = kernelRunNanos(K, H, Table);
}

uint64_t instructionNanos(const std::vector<plan::Kernel> &Kernels,
                          plan::Interval Range, const plan::Hardware &H,
                          const TimeTable *Table) {
  if (Range.End <= Range.Begin)
    return 0;
  uint64_t Total = Table ? Table->InstructionGapNanos : 0;
  for (uint32_t K = Range.Begin; K < Range.End; ++K) {
    // The grid times a product over launches back to back, so its time
    // holds the gap before the next launch already.
    bool GapTimed =
        kernelRates(Kernels[K], H, Table).Source == RateSource::TableProduct;
    Total += Kernels[K].PlannedNanos + (GapTimed ? 0 : kernelGapNanos(H, Table));
  }
  return Total;
}

} // namespace dsc
