//===- TimeTablesTest.cpp - Kernel times from the shipped tables ----------===//

#include "dsc/Plan/Hardware.h"
#include "dsc/Plan/Planner.h"
#include "dsc/Plan/TimeTables.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <string>

using namespace dsc;

namespace {

/// Sizes 128 and 1024, nt's rates different at every corner (m 1024 adds
/// 8, n 1024 adds 10, k 1024 adds 100).
const char *Table = R"(gpu: TestGPU
source: "a test"
products:
  sizes: [128, 1024]
  nt: [100, 200, 110, 210, 108, 208, 118, 218]
  nn: [1, 1, 1, 1, 1, 1, 1, 1]
  tn: [2, 2, 2, 2, 2, 2, 2, 2]
  epilogues:
    - { epilogue: bias-grad-b, factor: 1.25 }
attention:
  sequences: [512, 2048]
  entries:
    - { algorithm: cudnn, head_dim: 64, causal: true, forward: [200, 300], backward: [100, 150] }
    - { algorithm: cudnn, head_dim: 128, causal: true, forward: [400, 500], backward: [300, 350] }
kernel_rates:
  - { kind: layer-norm, backward: false, flops_per_sec: 0, bytes_per_sec: 2000000000000 }
  - { kind: layer-norm-grad, backward: true, flops_per_sec: 0, bytes_per_sec: 1000000000000 }
kernel_latencies:
  - { kind: layer-norm-grad, backward: true, ns: 4000 }
kernel_gap_ns: 3000
)";

TimeTable parsed() {
  llvm::Expected<TimeTable> T = parseTimeTable(Table, "test.yaml");
  EXPECT_TRUE(bool(T)) << (T ? "" : llvm::toString(T.takeError()));
  return T ? *T : TimeTable{};
}

plan::GemmAttrs product(int64_t M, int64_t N, int64_t K, bool TransA = false,
                        bool TransB = true) {
  plan::GemmAttrs G;
  G.M = M, G.N = N, G.K = K, G.TransA = TransA, G.TransB = TransB;
  return G;
}

TEST(TimeTablesTest, ProductsAtTheGridAndBetween) {
  TimeTable T = parsed();
  // Corners: m slowest, k fastest.
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(128, 128, 128)), 100);
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(128, 128, 1024)), 200);
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(1024, 1024, 1024)), 218);
  // Halfway in log2 of k (362 = 128 x 2^1.5): the mean of the two.
  EXPECT_NEAR(productTflops(T.Products, product(128, 128, 362)), 150, 0.2);
  // Beyond the grid: its edge's rate; below its smallest size, the
  // smallest's time (64 x 64 rows and columns: a quarter of 128 x 128's
  // work in the same time).
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(128, 128, 1 << 20)), 200);
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(64, 64, 1 << 20)), 50);
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(128, 1, 128)), 100.0 / 128);
  // The layout picks the list; a batch counts as rows.
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(128, 128, 128, false, false)), 1);
  EXPECT_DOUBLE_EQ(productTflops(T.Products, product(128, 128, 128, true, false)), 2);
  plan::GemmAttrs Batched = product(128, 128, 128);
  Batched.Batch = 8;
  EXPECT_DOUBLE_EQ(productTflops(T.Products, Batched), 108);
  // An epilogue the table measured slows the product by its factor; one
  // it did not runs at the grid's rate.
  plan::GemmAttrs WithBiasGrad = product(128, 128, 128, true, false);
  WithBiasGrad.Epilogue = plan::GemmEpilogue::BiasGradB;
  EXPECT_DOUBLE_EQ(productTflops(T.Products, WithBiasGrad), 2 / 1.25);
  WithBiasGrad.Epilogue = plan::GemmEpilogue::BiasGradA;
  EXPECT_DOUBLE_EQ(productTflops(T.Products, WithBiasGrad), 2);
}

/// cuDNN's causal attention at head size 64 over 512 tokens, with as many
/// query rows as the table's grid (64 x 16 x 512 >= 16 x 16384).
plan::AttentionAttrs causalCudnn64() {
  plan::AttentionAttrs A;
  A.Algorithm = plan::AttentionAlgorithm::Cudnn;
  A.Causal = true;
  A.HeadDim = A.ValueDim = 64;
  A.QLen = A.KVLen = 512;
  A.Batch = 64, A.QHeads = A.KVHeads = 16;
  return A;
}

TEST(TimeTablesTest, AttentionBySequenceAndHeadSize) {
  TimeTable T = parsed();
  plan::AttentionAttrs A = causalCudnn64();
  EXPECT_DOUBLE_EQ(attentionTflops(T, A, false), 200);
  EXPECT_DOUBLE_EQ(attentionTflops(T, A, true), 100);
  A.QLen = 1024; // Halfway in log2.
  EXPECT_DOUBLE_EQ(attentionTflops(T, A, false), 250);
  A.HeadDim = 128, A.QLen = 8192;
  EXPECT_DOUBLE_EQ(attentionTflops(T, A, true), 350);
  A.HeadDim = 90; // Between the head sizes, in log2.
  double Between = attentionTflops(T, A, false);
  EXPECT_GT(Between, 300);
  EXPECT_LT(Between, 500);
  // No entry for the algorithm or the masking: none.
  A.Causal = false;
  EXPECT_EQ(attentionTflops(T, A, false), 0);
  A.Causal = true;
  A.Algorithm = plan::AttentionAlgorithm::Flash;
  EXPECT_EQ(attentionTflops(T, A, false), 0);
}

TEST(TimeTablesTest, AttentionWithFewRowsRunsBelowTheGrid) {
  TimeTable T = parsed();
  plan::AttentionAttrs A = causalCudnn64();
  // The grid's 16 x 16384 query rows and more: the table's rate.
  A.Batch = 32;
  EXPECT_DOUBLE_EQ(attentionTflops(T, A, false), 200);
  A.Batch = 1024;
  EXPECT_DOUBLE_EQ(attentionTflops(T, A, false), 200);
  // GPT-2 XL at one sample of 1024 tokens: 25 heads, 25,600 rows. The
  // rate is occupancy(25,600) / occupancy(262,144) of the table's, with
  // occupancy(R) = R / (R + 24,000): 0.563, as the bench's shapes put it.
  A.QLen = A.KVLen = 1024;
  A.Batch = 1, A.QHeads = 25;
  double Expected = 250 * (25600.0 / (25600 + 24000)) /
                    (262144.0 / (262144 + 24000));
  EXPECT_NEAR(attentionTflops(T, A, false), Expected, 1e-9);
  EXPECT_NEAR(Expected / 250, 0.563, 0.001);
  // Fewer rows, slower.
  A.QHeads = 12;
  EXPECT_LT(attentionTflops(T, A, false), Expected);
}

TEST(TimeTablesTest, CalibratedRatesWinOverTheTable) {
  TimeTable T = parsed();
  plan::Hardware H;
  H.DenseFlopsPerSec = 1000000000000000; // 1000 TFLOP/s
  H.MemoryBytesPerSec = 1000000000000;   // 1 TB/s
  plan::Kernel Gemm;
  Gemm.Attrs.emplace<size_t(plan::KernelKind::Gemm)>(product(128, 128, 128));
  Gemm.Flops = 100000000000; // 0.1 TFLOP: 1 ms at the table's 100 TFLOP/s
  EXPECT_EQ(kernelRunNanos(Gemm, H, &T), 1000000u);
  EXPECT_EQ(kernelGapNanos(H, &T), 3000u);
  // No table: the machine's dense rate, no gap.
  EXPECT_EQ(kernelRunNanos(Gemm, H, nullptr), 100000u);
  EXPECT_EQ(kernelGapNanos(H, nullptr), 0u);
  // A norm: the table's measured bytes rate.
  plan::Kernel Norm;
  Norm.Attrs.emplace<size_t(plan::KernelKind::LayerNorm)>();
  Norm.Bytes = 2000000000; // 2 GB at 2 TB/s
  EXPECT_EQ(kernelRunNanos(Norm, H, &T), 1000000u);
  // A kind with a fixed time a launch pays it beside its bytes.
  plan::Kernel NormGrad;
  NormGrad.Attrs.emplace<size_t(plan::KernelKind::LayerNormGrad)>();
  NormGrad.Backward = true;
  NormGrad.Bytes = 1000000; // 1 MB at 1 TB/s: 1 us, and 4 us fixed
  EXPECT_EQ(kernelRunNanos(NormGrad, H, &T), 5000u);
  // At the machine's rate (no table) there is no fixed time, nor at a
  // calibration's.
  EXPECT_EQ(kernelRunNanos(NormGrad, H, nullptr), 1000u);
  plan::Hardware Calibrated = H;
  Calibrated.KernelRates.push_back({"layer-norm-grad", true, 0, 500000000000});
  EXPECT_EQ(kernelRunNanos(NormGrad, Calibrated, &T), 2000u);
  // A kind the calibration measured keeps its rate, and its gap.
  H.KernelRates.push_back({"gemm", false, 200000000000000, 0});
  H.KernelGapNanos = 5000;
  EXPECT_EQ(kernelRunNanos(Gemm, H, &T), 500000u);
  EXPECT_EQ(kernelGapNanos(H, &T), 5000u);
}

TEST(TimeTablesTest, AnInstructionCostsItsGapOnce) {
  TimeTable T = parsed();
  T.InstructionGapNanos = 7000;
  plan::Hardware H;
  H.DenseFlopsPerSec = 1000000000000000; // 1000 TFLOP/s
  H.MemoryBytesPerSec = 1000000000000;   // 1 TB/s
  plan::Plan P;
  P.Kernels.resize(3);
  for (plan::Kernel &K : P.Kernels) {
    K.Attrs.emplace<size_t(plan::KernelKind::LayerNorm)>();
    K.Bytes = 2000000000; // 1 ms at the table's 2 TB/s, then 3 us of gap
  }
  // Each kernel keeps its run time, as a launch's events measure it; an
  // instruction of two costs their runs, a kernel gap before each and one
  // instruction gap.
  estimateKernels(P, H, &T);
  EXPECT_EQ(P.Kernels[2].PlannedNanos, 1000000u);
  EXPECT_EQ(instructionNanos(P.Kernels, {0, 2}, H, &T),
            2 * (1000000u + 3000u) + 7000u);
  // No kernels: nothing, not even the gap.
  EXPECT_EQ(instructionNanos(P.Kernels, {1, 1}, H, &T), 0u);
  // A product the grid timed (back to back: its gap is in its time)
  // takes no kernel gap; the layer norm after it does.
  plan::GemmAttrs Gemm = product(1024, 1024, 1024);
  P.Kernels[0].Attrs = Gemm;
  P.Kernels[0].Flops = 2 * Gemm.M * Gemm.N * Gemm.K;
  estimateKernels(P, H, &T);
  uint64_t Product = P.Kernels[0].PlannedNanos;
  EXPECT_GT(Product, 0u);
  EXPECT_EQ(instructionNanos(P.Kernels, {0, 2}, H, &T),
            Product + (1000000u + 3000u) + 7000u);
  // No table: the machine's figures, no gaps.
  estimateKernels(P, H, nullptr);
  EXPECT_EQ(instructionNanos(P.Kernels, {0, 1}, H, nullptr), 2000000u);
  // A table without the figure charges no instruction gap.
  EXPECT_EQ(parsed().InstructionGapNanos, 0u);
  std::string WithGap = std::string(Table) + "instruction_gap_ns: 7000\n";
  llvm::Expected<TimeTable> G = parseTimeTable(WithGap, "gap.yaml");
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  EXPECT_EQ(G->InstructionGapNanos, 7000u);
  // A gap is idle time around a launch: over a millisecond is refused.
  std::string Huge = std::string(Table) + "instruction_gap_ns: 2000000\n";
  llvm::Expected<TimeTable> Bad = parseTimeTable(Huge, "huge.yaml");
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("at most 1 ms"),
            std::string::npos);
}

TEST(TimeTablesTest, RefusesMalformedTables) {
  std::string Short = Table;
  Short.replace(Short.find("nn: [1, 1, 1, 1, 1, 1, 1, 1]"), 28, "nn: [1, 1]");
  llvm::Expected<TimeTable> T = parseTimeTable(Short, "short.yaml");
  ASSERT_FALSE(bool(T));
  std::string Message = llvm::toString(T.takeError());
  EXPECT_NE(Message.find("short.yaml"), std::string::npos) << Message;
  EXPECT_NE(Message.find("one rate per (m, n, k): 8"), std::string::npos)
      << Message;
  std::string NoSource = Table;
  NoSource.replace(NoSource.find("source: \"a test\"\n"), 17, "");
  llvm::Expected<TimeTable> U = parseTimeTable(NoSource, "nosource.yaml");
  ASSERT_FALSE(bool(U));
  EXPECT_NE(llvm::toString(U.takeError()).find("source"), std::string::npos);
  // Epilogues and fixed times that would change plans silently.
  auto Refused = [](std::string Text, const char *Old, const char *New,
                    const char *Why) {
    Text.replace(Text.find(Old), strlen(Old), New);
    llvm::Expected<TimeTable> T = parseTimeTable(Text, "bad.yaml");
    ASSERT_FALSE(bool(T)) << New;
    EXPECT_NE(llvm::toString(T.takeError()).find(Why), std::string::npos)
        << New;
  };
  Refused(Table, "factor: 1.25", "factor: 0.1", "from 0.5 to 10");
  Refused(Table, "epilogue: bias-grad-b", "epilogue: none",
          "'none' is the grid itself");
  Refused(Table, "    - { epilogue: bias-grad-b, factor: 1.25 }",
          "    - { epilogue: bias-grad-b, factor: 1.25 }\n"
          "    - { epilogue: bias-grad-b, factor: 1.5 }",
          "'bias-grad-b' twice");
  Refused(Table, "kind: layer-norm-grad, backward: true, ns",
          "kind: layernorm-grad, backward: true, ns",
          "no kernel kind is named 'layernorm-grad'");
}

TEST(TimeTablesTest, CopyEngineGathersAreReadAndBounded) {
  EXPECT_EQ(parsed().CopyEngine.Ranks, 0u);
  std::string With = std::string(Table) +
                     "copy_engine_all_gather: { ranks: 4, bus_gbps: 100, "
                     "source: \"a test\" }\n";
  llvm::Expected<TimeTable> T = parseTimeTable(With, "ce.yaml");
  ASSERT_TRUE(bool(T)) << llvm::toString(T.takeError());
  EXPECT_EQ(T->CopyEngine.Ranks, 4u);
  EXPECT_DOUBLE_EQ(T->CopyEngine.BusGbps, 100.0);
  for (const char *Bad : {"{ ranks: 1, bus_gbps: 100, source: s }",
                          "{ ranks: 4, bus_gbps: 0, source: s }",
                          "{ ranks: 4, bus_gbps: 100 }"}) {
    llvm::Expected<TimeTable> B = parseTimeTable(
        std::string(Table) + "copy_engine_all_gather: " + Bad + "\n",
        "bad.yaml");
    ASSERT_FALSE(bool(B)) << Bad;
    llvm::consumeError(B.takeError());
  }
  // Shipped: the H200's, measured; the H100 has none.
  std::optional<HardwareProfile> H200 = hardwarePreset("H200");
  ASSERT_TRUE(H200);
  EXPECT_EQ(copyEngineGatherRate(H200->Figures), 100000000000u);
  EXPECT_EQ(copyEngineGatherRate(hardwarePreset("H100")->Figures), 0u);
}

TEST(TimeTablesTest, EveryShippedTableParsesAndCoversItsGpu) {
  for (const std::string &Problem : shippedTimeTableProblems())
    ADD_FAILURE() << Problem;
  std::vector<std::string> Names = shippedTimeTableNames();
  EXPECT_GE(Names.size(), 2u) << "tables ship for the H100 and the H200";
  for (const std::string &Name : Names) {
    // Each is a preset's, found by the preset's GPU name.
    std::optional<HardwareProfile> H = hardwarePreset(Name);
    ASSERT_TRUE(H) << Name << ".yaml names no preset";
    const TimeTable *T = shippedTimeTable(H->Figures.GpuName);
    ASSERT_TRUE(T) << Name;
    EXPECT_FALSE(T->Source.empty());
    EXPECT_FALSE(T->Products.Sizes.empty());
    EXPECT_FALSE(T->Attention.empty());
    EXPECT_FALSE(T->KernelRates.empty());
    EXPECT_GT(T->KernelGapNanos, 0u);
    EXPECT_GT(T->Sharing.Compute, 0.0) << Name;
    EXPECT_GT(T->Sharing.CallNanos, 0u) << Name;
    EXPECT_TRUE(T->Sharing.Wait) << Name;
    EXPECT_FALSE(T->Sharing.Source.empty()) << Name;
    // A table's measured memory rate is the preset's; without one, the
    // preset keeps its own.
    if (T->MemoryBytesPerSec)
      EXPECT_EQ(H->Figures.MemoryBytesPerSec, T->MemoryBytesPerSec) << Name;
  }
  // The default figures are the H100's, and take its table.
  EXPECT_EQ(shippedTimeTable(defaultHardware().Figures.GpuName),
            shippedTimeTable("H100-80GB"));
}

TEST(TimeTablesTest, MemoryRateIsReadBoundedAndLosesToACalibration) {
  EXPECT_EQ(parsed().MemoryBytesPerSec, 0u);
  std::string With = std::string(Table) + "memory_bytes_per_sec: 4200000000000\n";
  llvm::Expected<TimeTable> T = parseTimeTable(With, "memory.yaml");
  ASSERT_TRUE(bool(T)) << llvm::toString(T.takeError());
  EXPECT_EQ(T->MemoryBytesPerSec, 4200000000000u);
  std::string Huge = std::string(Table) + "memory_bytes_per_sec: 200000000000000\n";
  llvm::Expected<TimeTable> Bad = parseTimeTable(Huge, "huge.yaml");
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("at most 100 TB/s"),
            std::string::npos);
  // A calibration's figure replaces the table's in the preset.
  std::optional<HardwareProfile> H = hardwarePreset("H200");
  ASSERT_TRUE(H);
  ASSERT_FALSE(bool(applyCalibration(*H, "memory_bytes_per_sec: 1000\n",
                                     "cal.yaml")));
  EXPECT_EQ(H->Figures.MemoryBytesPerSec, 1000u);
}

TEST(TimeTablesTest, CollectivesBySizeAndNearestRankCount) {
  std::string With = std::string(Table) + R"(collectives:
  - ranks: 2
    sizes: [1048576, 4194304]
    all-reduce: [100, 300]
    reduce-scatter: [80, 240]
    all-gather: [90, 270]
    reduce: [60, 180]
  - ranks: 8
    sizes: [1048576]
    all-reduce: [50]
    reduce-scatter: [40]
    all-gather: [45]
    reduce: [30]
)";
  llvm::Expected<TimeTable> T = parseTimeTable(With, "nccl.yaml");
  ASSERT_TRUE(bool(T)) << llvm::toString(T.takeError());
  const double G = 1e9;
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "all-reduce", 1 << 20, 2), 100 * G);
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "reduce", 4 << 20, 2), 180 * G);
  // Halfway in log2 between the sizes; beyond them, the edges.
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "reduce-scatter", 2 << 20, 2),
                   160 * G);
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "all-gather", 1 << 30, 2), 270 * G);
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "all-gather", 1024, 2), 90 * G);
  // 3 ranks take the 2-rank entry, 6 the 8-rank one (nearest in log2); 4
  // is as near to both and takes the fewer ranks', whatever the order.
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "all-reduce", 1 << 20, 3), 100 * G);
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "all-reduce", 1 << 20, 6), 50 * G);
  EXPECT_DOUBLE_EQ(collectiveBusRate(*T, "all-reduce", 1 << 20, 4), 100 * G);
  TimeTable Swapped = *T;
  std::swap(Swapped.Collectives[0], Swapped.Collectives[1]);
  EXPECT_DOUBLE_EQ(collectiveBusRate(Swapped, "all-reduce", 1 << 20, 4),
                   100 * G);
  // No such kind, no table entry: 0 (the machine's figure serves).
  EXPECT_EQ(collectiveBusRate(*T, "broadcast", 1 << 20, 2), 0.0);
  EXPECT_EQ(collectiveBusRate(parsed(), "all-reduce", 1 << 20, 2), 0.0);

  std::string Short = With;
  Short.replace(Short.find("reduce: [60, 180]"), 17, "reduce: [60]");
  llvm::Expected<TimeTable> Bad = parseTimeTable(Short, "short.yaml");
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("one rate per size"),
            std::string::npos);
  std::string One = With;
  One.replace(One.find("ranks: 8"), 8, "ranks: 1");
  llvm::Expected<TimeTable> Alone = parseTimeTable(One, "one.yaml");
  ASSERT_FALSE(bool(Alone));
  EXPECT_NE(llvm::toString(Alone.takeError()).find("from 2 to 1024"),
            std::string::npos);
}

TEST(TimeTablesTest, RefusesRatesOfZero) {
  std::string Zero = Table;
  Zero.replace(Zero.find("tn: [2, 2,"), 10, "tn: [0, 2,");
  llvm::Expected<TimeTable> T = parseTimeTable(Zero, "zero.yaml");
  ASSERT_FALSE(bool(T));
  EXPECT_NE(llvm::toString(T.takeError()).find("must be positive"),
            std::string::npos);
}

TEST(TimeTablesTest, SharingIsReadAndBounded) {
  std::string Shared = std::string(Table) +
                       "sharing: { compute: 0.25, call_ns: 15000, wait: true, "
                       "source: \"a profile\" }\n";
  llvm::Expected<TimeTable> T = parseTimeTable(Shared, "shared.yaml");
  ASSERT_TRUE(bool(T)) << llvm::toString(T.takeError());
  EXPECT_DOUBLE_EQ(T->Sharing.Compute, 0.25);
  EXPECT_EQ(T->Sharing.CallNanos, 15000u);
  EXPECT_TRUE(T->Sharing.Wait);
  EXPECT_EQ(T->Sharing.Source, "a profile");
  // Without the block nothing is charged.
  EXPECT_FALSE(parsed().Sharing.charged());
  std::string Negative = std::string(Table) +
                         "sharing: { compute: -1, call_ns: 0, wait: false, "
                         "source: x }\n";
  llvm::Expected<TimeTable> Bad = parseTimeTable(Negative, "bad.yaml");
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("from 0 to 10"),
            std::string::npos);
}

void emit(plan::Plan &P, plan::InstrKind Kind, plan::Stream On,
          uint64_t Nanos, std::vector<uint32_t> Waits) {
  plan::Instruction In;
  In.Kind = Kind, In.On = On, In.Nanos = Nanos, In.Waits = std::move(Waits);
  P.Program.push_back(In);
}

TEST(TimeTablesTest, CollectivesBesideComputeWaitAndSlowIt) {
  // Products of 50, 100 and 100 us back to back (0-50, 50-150, 150-250);
  // a 30 us gather after the first starts at 50, beside the second.
  plan::Plan P;
  auto Emit = [&](plan::InstrKind Kind, plan::Stream On, uint64_t Nanos,
                  std::vector<uint32_t> Waits = {}) {
    emit(P, Kind, On, Nanos, std::move(Waits));
  };
  Emit(plan::InstrKind::Forward, plan::Stream::Compute, 50000);
  Emit(plan::InstrKind::Forward, plan::Stream::Compute, 100000);
  Emit(plan::InstrKind::Gather, plan::Stream::Comm, 30000, {0});
  Emit(plan::InstrKind::Forward, plan::Stream::Compute, 100000);
  Emit(plan::InstrKind::Release, plan::Stream::Comm, 30000);
  plan::Plan Unwaited = P;
  chargeSharedGpu(P, SharedGpu{0.2, 20000, true, "a test"});
  EXPECT_EQ(P.Program[0].Nanos, 50000u) << "nothing starts beside it";
  // 0.2 of the gather's 30 us and 20 us a call.
  EXPECT_EQ(P.Program[1].Nanos, 100000u + 6000u + 20000u);
  // The gather waits for the SMs of the product it started beside: at
  // least that product's 100 us (an instruction without kernels counts
  // as one).
  EXPECT_EQ(P.Program[2].Nanos, 100000u);
  EXPECT_EQ(P.Program[3].Nanos, 100000u) << "no collective starts beside it";
  EXPECT_EQ(P.Program[4].Nanos, 30000u) << "not a collective";
  // Two collectives that start beside one instruction both cost it; one
  // that starts when no compute runs costs nothing and waits for none.
  plan::Plan Two;
  emit(Two, plan::InstrKind::Forward, plan::Stream::Compute, 100000, {}); // 0-100
  emit(Two, plan::InstrKind::Gather, plan::Stream::Comm, 10000, {});      // 0-10
  emit(Two, plan::InstrKind::Gather, plan::Stream::Comm, 10000, {});      // 10-20
  emit(Two, plan::InstrKind::Gather, plan::Stream::Comm, 10000, {0});     // 100-110
  chargeSharedGpu(Two, SharedGpu{0.5, 1000, true, "a test"});
  EXPECT_EQ(Two.Program[0].Nanos, 100000u + 2 * (5000u + 1000u));
  EXPECT_EQ(Two.Program[1].Nanos, 100000u);
  EXPECT_EQ(Two.Program[3].Nanos, 10000u) << "nothing runs beside it";
  // Without the wait the gather keeps its own time; the compute still
  // pays.
  chargeSharedGpu(Unwaited, SharedGpu{0.2, 20000, false, "a test"});
  EXPECT_EQ(Unwaited.Program[2].Nanos, 30000u);
  EXPECT_EQ(Unwaited.Program[1].Nanos, 126000u);
  // No figures: nothing changes.
  plan::Plan Q = Unwaited;
  chargeSharedGpu(Q, SharedGpu{});
  EXPECT_EQ(Q.Program[2].Nanos, Unwaited.Program[2].Nanos);
  EXPECT_EQ(Q.Program[1].Nanos, Unwaited.Program[1].Nanos);
}

TEST(TimeTablesTest, ACollectiveWaitsForTheLongestKernelNotTheOp) {
  // One op whose forward runs kernels of 30 and 70 us (0-100): a 20 us
  // gather starting beside it waits for SMs one kernel long, 70 us.
  plan::Plan P;
  P.Kernels.resize(2);
  P.Kernels[0].PlannedNanos = 30000;
  P.Kernels[1].PlannedNanos = 70000;
  P.Ops.resize(1);
  P.Ops[0].Forward = {0, 2};
  emit(P, plan::InstrKind::Forward, plan::Stream::Compute, 100000, {});
  P.Program[0].Arg = 0;
  emit(P, plan::InstrKind::Gather, plan::Stream::Comm, 20000, {});
  chargeSharedGpu(P, SharedGpu{0, 0, true, "a test"});
  EXPECT_EQ(P.Program[1].Nanos, 70000u);
  EXPECT_EQ(P.Program[0].Nanos, 100000u);
}

} // namespace
