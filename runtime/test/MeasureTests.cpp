//===- MeasureTests.cpp - Measure tests -------------------------------------===//
//
// What dsrun measures and writes: --trace's Chrome trace, idle time blamed
// on communication or offload, bus bytes, kernel times, the calibration
// file.
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

/// --trace: each instruction on its stream as measured and as the plan's
/// replay puts it (after its stream's previous one and its waits).
TEST(Measure, Traces) {
  plan::Plan P;
  P.Ops.resize(1);
  P.Ops[0].Name = "layer.0/mlp \"fc\"";
  auto Instr = [](plan::InstrKind K, plan::Stream On, uint32_t Arg,
                  std::vector<uint32_t> Waits, uint64_t Nanos) {
    plan::Instruction In;
    In.Kind = K;
    In.On = On;
    In.Arg = Arg;
    In.Waits = std::move(Waits);
    In.Nanos = Nanos;
    return In;
  };
  P.Program = {
      Instr(plan::InstrKind::Forward, plan::Stream::Compute, 0, {}, 2000000),
      Instr(plan::InstrKind::Reduce, plan::Stream::Comm, 5, {0}, 1000000),
      Instr(plan::InstrKind::Transfer, plan::Stream::CopyOut, 2, {1}, 500000),
      Instr(plan::InstrKind::Backward, plan::Stream::Compute, 0, {}, 250000)};
  std::vector<plan::PlannedSpan> Planned = plan::replaySpans(P);
  EXPECT(Planned[1].Start == 2000000 && Planned[2].Start == 3000000 &&
         Planned[2].Finish == 3500000);
  EXPECT(Planned[3].Start == 2000000); // Its stream's previous, no waits.
  std::vector<Span> Measured = {{0, 2.5}, {2.5, 4}, {4.25, 4.75}, {2.5, 3}};
  std::string T = chromeTrace(P, Measured, 7, 1);
  auto Has = [&](const char *Text) { return T.find(Text) != std::string::npos; };
  EXPECT(Has("\"name\":\"rank 1, step 7, measured\""));
  EXPECT(Has("\"name\":\"rank 1, step 7, planned\""));
  EXPECT(Has("\"tid\":4,\"args\":{\"name\":\"host\"}"));
  // The reduce: measured at 2.5 ms for 1.5 ms, planned at 2 ms for 1 ms.
  EXPECT(Has("\"pid\":0,\"tid\":1,\"ts\":2500.000,\"dur\":1500.000"));
  EXPECT(Has("\"pid\":1,\"tid\":1,\"ts\":2000.000,\"dur\":1000.000"));
  EXPECT(Has("\"name\":\"reduce 5\""));
  EXPECT(Has("\"name\":\"forward layer.0/mlp \\\"fc\\\"\""));
  EXPECT(T.size() > 4 && T.substr(T.size() - 4) == "\n]}\n" &&
         T.find(",\n]") == std::string::npos);
}

/// Idle time on the compute stream is blamed on what held the instruction
/// after it, back along the chain of blockers; the parts add up to the step.
TEST(Measure, Exposed) {
  using plan::Stream;
  auto Instr = [](Stream On, std::vector<uint32_t> Waits) {
    plan::Instruction I;
    I.On = On;
    I.Waits = std::move(Waits);
    return I;
  };
  auto Near = [](double A, double B) { return std::fabs(A - B) < 1e-9; };
  auto Sum = [](const ExposedTime &E) {
    return E.ComputeMs + E.CommunicationMs + E.OffloadMs + E.OtherMs;
  };
  plan::Plan P;
  // A gather the second op waits for: the gap is communication while the
  // gather runs, other after it ended (the op was issued late).
  P.Program = {Instr(Stream::Compute, {}), Instr(Stream::Comm, {}),
               Instr(Stream::Compute, {1})};
  P.Program[1].Kind = plan::InstrKind::Gather;
  ExposedTime E = exposedTime(P, {{0, 2}, {0, 5}, {5.5, 7}}, 7);
  EXPECT(Near(E.ComputeMs, 3.5) && Near(E.CommunicationMs, 3));
  EXPECT(Near(E.OffloadMs, 0) && Near(E.OtherMs, 0.5) && Near(Sum(E), 7));
  // Without overlap_comm the reduction runs on the compute stream: it is
  // communication all the same, as the planner counts it.
  P.Program = {Instr(Stream::Compute, {}), Instr(Stream::Compute, {})};
  P.Program[1].Kind = plan::InstrKind::Reduce;
  E = exposedTime(P, {{0, 2}, {2, 3}}, 3);
  EXPECT(Near(E.ComputeMs, 2) && Near(E.CommunicationMs, 1) && Near(Sum(E), 3));
  // An edited plan whose instruction waits for itself ends the walk.
  P.Program = {Instr(Stream::Comm, {0}), Instr(Stream::Compute, {0})};
  P.Program[0].Kind = plan::InstrKind::Gather;
  E = exposedTime(P, {{0, 1}, {1, 2}}, 2);
  EXPECT(Near(E.CommunicationMs, 1) && Near(Sum(E), 2));
  // The gather waited for its shard's copy from the host: the stretch
  // before the gather started is offload.
  P.Program = {Instr(Stream::CopyIn, {}), Instr(Stream::Comm, {0}),
               Instr(Stream::Compute, {}), Instr(Stream::Compute, {1})};
  P.Program[0].Kind = plan::InstrKind::Transfer;
  P.Program[1].Kind = plan::InstrKind::Gather;
  E = exposedTime(P, {{0, 4}, {4, 6}, {0, 1}, {6, 8}}, 8);
  EXPECT(Near(E.ComputeMs, 3) && Near(E.CommunicationMs, 2));
  EXPECT(Near(E.OffloadMs, 3) && Near(Sum(E), 8));
  // The same gather held by the one before it on its stream instead.
  P.Program = {Instr(Stream::Comm, {}), Instr(Stream::Comm, {}),
               Instr(Stream::Compute, {}), Instr(Stream::Compute, {1})};
  P.Program[0].Kind = P.Program[1].Kind = plan::InstrKind::Gather;
  E = exposedTime(P, {{0, 4}, {4, 6}, {0, 1}, {6, 8}}, 8);
  EXPECT(Near(E.CommunicationMs, 5) && Near(E.OffloadMs, 0));
  // After the last op: the offloaded optimizer step on the host.
  P.Program = {Instr(Stream::Compute, {}), Instr(Stream::Host, {0})};
  P.Program[1].Kind = plan::InstrKind::OptimizerStep;
  E = exposedTime(P, {{0, 2}, {2, 5}}, 5.5);
  EXPECT(Near(E.ComputeMs, 2) && Near(E.OffloadMs, 3) && Near(E.OtherMs, 0.5));
  EXPECT(Near(Sum(E), 5.5));
  // A gap nothing explains, and a blocker that ended before the gap.
  P.Program = {Instr(Stream::Compute, {}), Instr(Stream::Comm, {}),
               Instr(Stream::Compute, {1})};
  P.Program[1].Kind = plan::InstrKind::Gather;
  E = exposedTime(P, {{0, 2}, {0, 1}, {3, 4}}, 4);
  EXPECT(Near(E.OtherMs, 1) && Near(E.CommunicationMs, 0) && Near(Sum(E), 4));
  // Spans that do not match the program give nothing.
  E = exposedTime(P, {{0, 1}}, 1);
  EXPECT(Near(Sum(E), 0));
}

/// Bus bytes of a group of reduces, stage 2's average_tensor: one root
/// moves its whole piece; several roots at least a reduce-scatter's share
/// and at least the largest root's piece.
TEST(Measure, ReduceBusBytes) {
  auto Reduce = [](uint64_t Count, int Root) {
    CollectiveCall C{CollectiveKind::Reduce};
    C.Count = Count;
    C.Type = ElementType::F32;
    C.Root = Root;
    return C;
  };
  EXPECT(busBytes({Reduce(25, 0)}, 2) == 100);
  EXPECT(busBytes({Reduce(10, 0), Reduce(15, 1)}, 2) == 60);
  EXPECT(busBytes({Reduce(12, 0), Reduce(13, 1)}, 2) == 52);
  // Four ranks, balanced: (4 - 1) / 4 of the whole.
  EXPECT(busBytes({Reduce(10, 0), Reduce(10, 1), Reduce(10, 2),
                   Reduce(10, 3)},
                  4) == 120);
}

/// Totals by kind carry the call's scope; calls among one rank (MiCS's
/// shard groups of one) are copies, kept apart from NCCL's kinds.
TEST(Measure, TotalsByScope) {
  auto Gather = [](CommScope Scope, unsigned Ranks) {
    CollectiveCall C{CollectiveKind::AllGather};
    C.Count = 8;
    C.Type = ElementType::F32;
    C.Scope = Scope;
    C.GroupRanks = Ranks;
    return C;
  };
  TotalsByKind T;
  addGroup(T, {Gather(CommScope::World, 0)}, 1.0, 4);
  addGroup(T, {Gather(CommScope::MicsShard, 2)}, 1.0, 4);
  addGroup(T, {Gather(CommScope::MicsShard, 1)}, 1.0, 4);
  EXPECT(T.size() == 3 && T.count("all-gather") &&
         T.count("all-gather-mics-shard") && T.count(CopyKind));
  // 8 floats a rank: 128 bytes over 4 ranks, 64 over 2.
  EXPECT(T["all-gather"].Bytes == 128 && T["all-gather-mics-shard"].Bytes == 64 &&
         T["all-gather-mics-shard"].BusBytes == 32);
}

/// The planner's kernel time (dsc/KernelTime.h): the machine's rates for
/// kinds never measured, the measured kind's rate on its bounding
/// dimension, and the gap after every kernel; a fitted rate reproduces
/// the time it was fitted to.
TEST(Measure, KernelTimes) {
  namespace plan = dsc::plan;
  plan::Hardware H;
  H.DenseFlopsPerSec = 1000000000000; // 1 TFLOP/s
  H.MemoryBytesPerSec = 100000000000; // 100 GB/s
  plan::Kernel Gemm;
  Gemm.Attrs = plan::GemmAttrs{};
  Gemm.Flops = 2000000000; // 2 ms at the machine's rate
  Gemm.Bytes = 10000000;   // 0.1 ms
  EXPECT(plan::kernelNanos(Gemm, H) == 2000000);
  plan::Kernel Norm;
  Norm.Attrs = plan::LayerNormAttrs{};
  Norm.Flops = 1000000;
  Norm.Bytes = 50000000; // 0.5 ms
  EXPECT(plan::kernelNanos(Norm, H) == 500000);
  // Fitted: the gemm took 4 ms (its flops bound it), the norm 0.25 ms.
  plan::KernelRate G = plan::fitKernelRate(plan::KernelKind::Gemm, false,
                                           2e9, 1e7, 4e6, H);
  EXPECT(G.Kind == "gemm" && G.FlopsPerSec == 500000000000 &&
         G.BytesPerSec == 0);
  plan::KernelRate N = plan::fitKernelRate(plan::KernelKind::LayerNorm, false,
                                           1e6, 5e7, 2.5e5, H);
  EXPECT(N.FlopsPerSec == 0 && N.BytesPerSec == 200000000000);
  H.KernelRates = {G, N};
  H.KernelGapNanos = 3000;
  EXPECT(plan::kernelNanos(Gemm, H) == 4003000);
  EXPECT(plan::kernelNanos(Norm, H) == 253000);
  // The backward's kernels of a kind are a kind of their own.
  Norm.Backward = true;
  EXPECT(plan::kernelNanos(Norm, H) == 503000);
  // Nothing measured: no rate.
  plan::KernelRate None =
      plan::fitKernelRate(plan::KernelKind::Fill, false, 0, 0, 0, H);
  EXPECT(!None.FlopsPerSec && !None.BytesPerSec);
}

/// A calibration sample: what --write-calibration writes for the lit test
/// that reads it back with dsc plan.
Calibration dsrun::sampleCalibration() {
  Calibration C;
  C.Ranks = 2;
  C.CudaContextBytes = 552468480;
  C.CublasWorkspaceBytes = 75497472;
  C.NcclBytes = 899678208;
  C.Rates.HostBytesPerSec = 13680000000;
  C.Rates.HostAdamElemsPerSec = 456000000;
  C.Rates.HostConvertElemsPerSec = 2500000000;
  C.Rates.NVMeReadBytesPerSec = 1170000000;
  C.Rates.KernelGapNanos = 5000;
  dsc::plan::KernelRate Gemm, NormGrad;
  Gemm.Kind = "gemm";
  Gemm.FlopsPerSec = 600000000000000;
  NormGrad.Kind = "layer-norm-grad";
  NormGrad.Backward = true;
  NormGrad.BytesPerSec = 1000000000000;
  C.Rates.KernelRates = {Gemm, NormGrad};
  dsc::plan::CollectiveRate Reduce;
  Reduce.Kind = "reduce-scatter";
  Reduce.BusBytesPerSec = 234000000000;
  C.Rates.CollectiveRates = {Reduce};
  dsc::plan::GemmAttrs Product;
  Product.M = 4096, Product.N = 2048, Product.K = 2048, Product.TransB = true;
  Product.LdA = Product.LdB = Product.LdC = 2048;
  Product.StrideC = 8388608;
  C.Rates.GemmAlgorithms = {{Product, dsc::plan::DType::BF16, 3}};
  return C;
}

/// Measured figures are written under the plan's names; those not
/// measured are left out, and an unwritable path is an error.
TEST(Measure, CalibrationFile) {
  char Dir[] = "/tmp/dsrun-calibration-XXXXXX";
  EXPECT(mkdtemp(Dir) != nullptr);
  std::string Path = std::string(Dir) + "/c.yaml", Error;
  EXPECT(writeCalibration(Path, sampleCalibration(), Error));
  std::ifstream In(Path);
  std::string Text((std::istreambuf_iterator<char>(In)),
                   std::istreambuf_iterator<char>());
  EXPECT(Text.find("\ncuda_context_bytes: 552468480\n") != std::string::npos);
  EXPECT(Text.find("\nnccl_bytes: 899678208\n") != std::string::npos);
  EXPECT(Text.find("\ncomm_cta_policy: default\n") != std::string::npos);
  EXPECT(Text.find("\nhost_convert_elems_per_sec: 2500000000\n") !=
         std::string::npos);
  EXPECT(Text.find("\nhost_adam_elems_per_sec: 456000000\n") !=
         std::string::npos);
  EXPECT(Text.find("\nnvme_read_bytes_per_sec: 1170000000\n") !=
         std::string::npos);
  EXPECT(Text.find("pinned_copy") == std::string::npos);
  EXPECT(Text.find("gpu:") == std::string::npos);
  EXPECT(Text.find("\nkernel_gap_ns: 5000\n") != std::string::npos);
  EXPECT(Text.find("\n  - { kind: layer-norm-grad, backward: true, "
                   "flops_per_sec: 0, bytes_per_sec: 1000000000000 }\n") !=
         std::string::npos);
  EXPECT(Text.find("\ncollective_rates:\n  - { kind: reduce-scatter, "
                   "bus_bytes_per_sec: 234000000000 }\n") != std::string::npos);
  EXPECT(Text.find("\ngemm_algorithms:\n  - { product: { m: 4096, n: 2048, "
                   "k: 2048, batch: 1, trans_a: false, trans_b: true, "
                   "ld_a: 2048, ld_b: 2048, ld_c: 2048, stride_a: 0, "
                   "stride_b: 0, stride_c: 8388608, epilogue: none, "
                   "alpha: 1, beta: 0 }, type: bf16, candidate: 3 }\n") !=
         std::string::npos);
  unlink(Path.c_str());
  rmdir(Dir);
  EXPECT(!writeCalibration(std::string(Dir) + "/gone/c.yaml",
                           sampleCalibration(), Error));
  EXPECT(Error.find("cannot write") != std::string::npos);
}
