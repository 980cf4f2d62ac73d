//===- HostTests.cpp - What dsrun does without a GPU ----------------------===//
//
// Runs in CI (no GPU) and on the GPU machines (no GoogleTest there, so
// plain checks):
//   - 16-bit conversions against known values and a full round trip;
//   - the host AdamW against a double-precision reference, and threading
//     that does not change a bit; the typed (vectorized) host loops
//     against the generic ones on every kind of value; the thread pool;
//   - --trace's Chrome trace, measured beside the plan's replay;
//   - the launcher environments and the TCP rendezvous between processes;
//   - a step's idle compute time blamed on communication or offload;
//   - the calibration file dsrun writes (read back by dsc in a lit test);
//   - token files of both formats, their errors, and the sample order;
//   - initial weights matched by name, shape and tied name, and saved;
//   - for every plan given as an argument, for every rank: each trainable
//     element owned by exactly one rank, every view inside the rank's
//     arena, the chunks and pieces of reductions and gathers tiling what
//     they cut up, the same NCCL calls on every rank, the offload staging
//     inside the planned host arena and large enough for every copy
//     through it, and edited plans refused with the buffer named.
//
//   dsrunHostTests [plan.bin...]
//
//===----------------------------------------------------------------------===//

#include "Calibration.h"
#include "Checkpoint.h"
#include "Expect.h"
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

/// Division by multiply and shift: exact for every numerator below 2^31,
/// checked at the edges of each divisor's range and at random.
static void fastDivision() {
  uint64_t Seed = 1;
  auto Next = [&] {
    Seed = Seed * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(Seed >> 33); // below 2^31
  };
  std::vector<uint32_t> Divisors = {1, 2, 3, 5, 7, 24, 25, 32, 64, 100, 1000,
                                    1024, 4095, 4096, 4097, 32000, 50257,
                                    (1u << 30) - 1, 1u << 30, (1u << 31) - 1};
  for (int I = 0; I < 200; ++I)
    Divisors.push_back(Next() % 100000 + 1);
  int Wrong = 0;
  for (uint32_t D : Divisors) {
    FastDivmod F(D);
    std::vector<uint32_t> Ns = {0, 1, D - 1, D, D + 1, 2 * D - 1,
                                (1u << 31) - 1, (1u << 31) - D};
    for (int I = 0; I < 2000; ++I)
      Ns.push_back(Next());
    for (uint32_t N : Ns) {
      if (N >= (1u << 31))
        continue;
      uint32_t R;
      uint32_t Q = F.divmod(N, R);
      Wrong += Q != N / D || R != N % D;
    }
  }
  EXPECT(Wrong == 0);
}

/// The host side of offload copies: every element converted once, on any
/// number of threads, accumulating when asked.
static void hostConversions() {
  const uint64_t N = 300001;
  std::vector<uint16_t> Half(N);
  std::vector<float> Sum(N), Want(N);
  for (uint64_t I = 0; I < N; ++I) {
    Half[I] = toBF16(float(int64_t(I % 97) - 48) / 16);
    Sum[I] = float(I % 5);
    Want[I] = Sum[I] + fromBF16(Half[I]);
  }
  for (unsigned Threads : {1u, 3u, 8u}) {
    std::vector<float> Out = Sum;
    convertOnHost(Out.data(), ElementType::F32, Half.data(), ElementType::BF16,
                  N, true, Threads);
    EXPECT(Out == Want);
    std::vector<uint16_t> Back(N, 0xffff);
    convertOnHost(Back.data(), ElementType::BF16, Out.data(), ElementType::F32,
                  N, false, Threads);
    bool Same = true;
    for (uint64_t I = 0; I < N; ++I)
      Same &= Back[I] == toBF16(Want[I]);
    EXPECT(Same);
  }
}

/// The host's typed (vectorized) loops against the generic element-by-
/// element ones, bit for bit, on every kind of value: NaNs, infinities,
/// subnormals and both roundings' halfway cases.
static void vectorizedHostLoops() {
  const uint64_t N = 100003;
  uint64_t State = 12345;
  auto Bits = [&] { return uint32_t((State = mix(State)) >> 13); };
  std::vector<uint16_t> Half(N);
  std::vector<float> Wide(N), Master(N), M(N), V(N);
  for (uint64_t I = 0; I < N; ++I) {
    Half[I] = uint16_t(Bits());
    uint32_t U = Bits();
    // Mostly ordinary magnitudes, some of every other kind.
    if (I % 7)
      U = (U & 0x807fffffu) | ((100u + U % 60u) << 23);
    Wide[I] = bitsFloat(U);
    Master[I] = float(int(Bits() % 2001) - 1000) / 1024;
    M[I] = float(int(Bits() % 2001) - 1000) / 65536;
    V[I] = float(Bits() % 1000) / 1048576;
  }
  auto SameBits = [](const auto &X, const auto &Y) {
    return X.size() == Y.size() &&
           !memcmp(X.data(), Y.data(), X.size() * sizeof(X[0]));
  };
  // A sum of two NaNs is a NaN, but which one the compiler's operand order
  // decides: nothing else may differ.
  auto SameSums = [](const auto &X, const auto &Y) {
    for (size_t I = 0; I < X.size(); ++I) {
      float A, B;
      if constexpr (sizeof(X[0]) == 2)
        A = fromBF16(X[I]), B = fromBF16(Y[I]);
      else
        A = X[I], B = Y[I];
      if (floatBits(A) != floatBits(B) && !(std::isnan(A) && std::isnan(B)))
        return false;
    }
    return X.size() == Y.size();
  };
  for (bool Accumulate : {false, true}) {
    std::vector<float> Fast = Wide, Slow = Wide;
    convertOnHost(Fast.data(), ElementType::F32, Half.data(),
                  ElementType::BF16, N, Accumulate, 3);
    for (uint64_t I = 0; I < N; ++I)
      Slow[I] = Accumulate ? fromBF16(Half[I]) + Slow[I] : fromBF16(Half[I]);
    EXPECT(Accumulate ? SameSums(Fast, Slow) : SameBits(Fast, Slow));
  }
  for (bool Accumulate : {false, true}) {
    std::vector<uint16_t> Fast(N), Slow(N);
    for (uint64_t I = 0; I < N; ++I)
      Fast[I] = Slow[I] = uint16_t(Bits());
    convertOnHost(Fast.data(), ElementType::BF16, Half.data(),
                  ElementType::BF16, N, Accumulate, 3);
    for (uint64_t I = 0; I < N; ++I)
      Slow[I] = toBF16(Accumulate ? fromBF16(Half[I]) + fromBF16(Slow[I])
                                  : fromBF16(Half[I]));
    EXPECT(Accumulate ? SameSums(Fast, Slow) : SameBits(Fast, Slow));
  }
  std::vector<uint16_t> Fast16(N), Slow16(N);
  convertOnHost(Fast16.data(), ElementType::BF16, Wide.data(), ElementType::F32,
                N, false, 3);
  for (uint64_t I = 0; I < N; ++I)
    Slow16[I] = toBF16(Wide[I]);
  EXPECT(SameBits(Fast16, Slow16));

  plan::Info S;
  S.WorldSize = 2;
  S.LearningRate = "0.001";
  S.WeightDecay = "0.1";
  std::string Error;
  AdamW A = adamwFor(S, 3, Error);
  for (ElementType T : {ElementType::F32, ElementType::BF16, ElementType::F16}) {
    std::vector<float> Grad32(N);
    for (uint64_t I = 0; I < N; ++I)
      Grad32[I] = float(int(Bits() % 4001) - 2000) / 4096;
    std::vector<uint16_t> Grad16(N);
    for (uint64_t I = 0; I < N; ++I)
      Grad16[I] = T == ElementType::F16 ? toFP16(Grad32[I]) : toBF16(Grad32[I]);
    const void *G = T == ElementType::F32 ? static_cast<const void *>(Grad32.data())
                                          : Grad16.data();
    std::vector<float> FM = Master, FMo = M, FV = V, SM = Master, SMo = M,
                       SV = V;
    hostAdamW(A, G, T, FM.data(), FMo.data(), FV.data(), N, 5);
    for (uint64_t I = 0; I < N; ++I)
      adamwUpdate(A, loadAs(G, I, T), SM[I], SMo[I], SV[I]);
    EXPECT(SameBits(FM, SM) && SameBits(FMo, SMo) && SameBits(FV, SV));
    // With the 16-bit copy written in the same pass: the same update, and
    // each copy what convertOnHost makes of the updated master, bf16 on
    // the vectorized path, fp16 on the generic one.
    for (ElementType PT : {ElementType::BF16, ElementType::F16}) {
      std::vector<float> WM = Master, WMo = M, WV = V;
      std::vector<uint16_t> Params(N, 0xffff), Expected(N);
      hostAdamW(A, G, T, WM.data(), WMo.data(), WV.data(), N, 5,
                Params.data(), PT);
      convertOnHost(Expected.data(), PT, WM.data(), ElementType::F32, N, false,
                    3);
      EXPECT(SameBits(WM, SM) && SameBits(WMo, SMo) && SameBits(WV, SV));
      EXPECT(Params == Expected);
    }
  }

  // The norm's sum: the same double on any number of threads, and the
  // generic path's for fp32 gradients.
  double One = sumOfSquares(Master.data(), ElementType::F32, N, 1);
  EXPECT(sumOfSquares(Master.data(), ElementType::F32, N, 7) == One);
  double Chunked = 0;
  for (unsigned K = 0; K < 64; ++K) {
    double Part = 0;
    for (uint64_t I = N * K / 64; I < N * (K + 1) / 64; ++I) {
      double X = loadAs(Master.data(), I, ElementType::F32);
      Part += X * X;
    }
    Chunked += Part;
  }
  EXPECT(One == Chunked);
  // bf16 gradients (stage 3's) sum as their fp32 values do.
  std::vector<uint16_t> Rounded(N);
  std::vector<float> Widened(N);
  for (uint64_t I = 0; I < N; ++I)
    Widened[I] = fromBF16(Rounded[I] = toBF16(Master[I]));
  EXPECT(sumOfSquares(Rounded.data(), ElementType::BF16, N, 4) ==
         sumOfSquares(Widened.data(), ElementType::F32, N, 1));
}

/// The host's thread pool: each task once, and no more threads than asked
/// even after an earlier call grew the pool.
static void hostPool() {
  std::vector<int> Runs(1000, 0);
  parallelTasks(1000, 6, [&](unsigned K) { ++Runs[K]; });
  EXPECT(std::all_of(Runs.begin(), Runs.end(), [](int R) { return R == 1; }));
  std::mutex M;
  std::set<std::thread::id> Ids;
  parallelTasks(64, 2, [&](unsigned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> Lock(M);
    Ids.insert(std::this_thread::get_id());
  });
  EXPECT(Ids.size() <= 2);
  // The triad the host optimizer's rate is held against: a figure only
  // when the passes computed what they should (any host streams more than
  // 100 MB/s).
  double Triad = hostTriadBytesPerSec(2);
  EXPECT(std::isfinite(Triad) && Triad > 1e8);
}

/// --trace: each instruction on its stream as measured and as the plan's
/// replay puts it (after its stream's previous one and its waits).
static void traces() {
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

static void conversions() {
  EXPECT(toBF16(1.0f) == 0x3f80);
  EXPECT(toBF16(1.00390625f) == 0x3f80); // Halfway: to even.
  EXPECT(toBF16(1.01171875f) == 0x3f82); // Halfway above an odd: up.
  EXPECT(toBF16(bitsFloat(0x7f800001u)) == 0x7fc0); // A NaN, quieted.
  EXPECT(toBF16(bitsFloat(0xff812345u)) == 0xffc1);
  EXPECT(toBF16(bitsFloat(0x7f800000u)) == 0x7f80); // Infinity stays.
  EXPECT(toBF16(bitsFloat(0x7f7fffffu)) == 0x7f80); // Rounds up to it.
  EXPECT(toFP16(1.0f) == 0x3c00);
  EXPECT(toFP16(65504.0f) == 0x7bff);
  EXPECT(toFP16(65520.0f) == 0x7c00);
  EXPECT(toFP16(-2.0f) == 0xc000);
  EXPECT(toFP16(std::ldexp(1.0f, -24)) == 0x0001);
  EXPECT(toFP16(std::ldexp(1.0f, -25)) == 0x0000); // Halfway: to even 0.
  EXPECT(toFP16(std::ldexp(3.0f, -25)) == 0x0002); // 1.5 ulp: to even 2.
  EXPECT(toFP16(std::nanf("")) == 0x7e00);
  for (uint32_t H = 0; H < 0x10000; ++H) {
    uint16_t X = uint16_t(H);
    bool HalfNaN = (X & 0x7c00) == 0x7c00 && (X & 0x3ff);
    if (!HalfNaN && toFP16(fromFP16(X)) != X) {
      fprintf(stderr, "fp16 0x%04x does not round-trip\n", H);
      ++Failures;
      break;
    }
    bool BrainNaN = (X & 0x7f80) == 0x7f80 && (X & 0x7f);
    if (!BrainNaN && toBF16(fromBF16(X)) != X) {
      fprintf(stderr, "bf16 0x%04x does not round-trip\n", H);
      ++Failures;
      break;
    }
  }
  // Synthetic gradients are k/16, |k| <= 4: exact in every dtype.
  for (uint64_t E = 0; E < 1000; ++E) {
    float G = syntheticGrad(1, 2, 0, 3, E);
    EXPECT(G * 16 == std::round(G * 16) && std::fabs(G) <= 0.25f);
    EXPECT(fromBF16(toBF16(G)) == G && fromFP16(toFP16(G)) == G);
    EXPECT(G == syntheticGrad(1, 2, 0, 3, E));
  }
}

static void adam() {
  plan::Info S;
  S.WorldSize = 2;
  S.LearningRate = "0.001";
  S.WeightDecay = "0.01";
  std::string Error;
  AdamW A = adamwFor(S, 1, Error);
  EXPECT(Error.empty());
  EXPECT(A.GradScale == 0.5f);
  const uint64_t N = 200000;
  std::vector<float> G(N), P1(N), M1(N, 0), V1(N, 0);
  for (uint64_t I = 0; I < N; ++I) {
    G[I] = syntheticGrad(0, 1, 0, 7, I) + syntheticGrad(1, 1, 0, 7, I);
    P1[I] = initialWeight(7, I);
  }
  std::vector<float> P4 = P1, M4 = M1, V4 = V1;
  hostAdamW(A, G.data(), ElementType::F32, P1.data(), M1.data(), V1.data(), N,
            1);
  hostAdamW(A, G.data(), ElementType::F32, P4.data(), M4.data(), V4.data(), N,
            4);
  EXPECT(P1 == P4 && M1 == M4 && V1 == V4);
  for (uint64_t I = 0; I < N; I += 997) {
    double Gd = double(G[I]) * 0.5, Md = 0.1 * Gd, Vd = 0.001 * Gd * Gd;
    double Pd = initialWeight(7, I);
    double Ref = Pd - 0.001 * ((Md / 0.1) / (std::sqrt(Vd / 0.001) + 1e-8) +
                               0.01 * Pd);
    EXPECT(std::fabs(Ref - P1[I]) < 1e-6);
  }
  // Gradients read as bf16 give the same update as the same values in fp32.
  std::vector<uint16_t> G16(N);
  for (uint64_t I = 0; I < N; ++I)
    G16[I] = toBF16(G[I]);
  std::vector<float> P2(N), M2(N, 0), V2(N, 0);
  for (uint64_t I = 0; I < N; ++I)
    P2[I] = initialWeight(7, I);
  hostAdamW(A, G16.data(), ElementType::BF16, P2.data(), M2.data(), V2.data(),
            N, 2);
  EXPECT(P2 == P1);
}

/// The swap-file engine on plain files: every alignment of memory, offset
/// and size, several threads, and the errors a user can meet.
static void swapFiles() {
  const char *Tmp = getenv("TMPDIR");
  std::string Template = std::string(Tmp ? Tmp : "/tmp") + "/dsrun-swap-XXXXXX";
  std::vector<char> Name(Template.begin(), Template.end());
  Name.push_back(0);
  if (!mkdtemp(Name.data())) {
    EXPECT(!"mkdtemp");
    return;
  }
  std::string Path = std::string(Name.data()) + "/rank0.swp";
  const uint64_t Size = 3 << 20;
  std::string Error;
  {
    SwapFile F;
    EXPECT(F.create(Path, Size, 4, 64 << 10, Error));
    fprintf(stderr, "swap file on %s: direct I/O %s\n", Name.data(),
            F.direct() ? "yes" : "no (buffered)");
    // Aligned memory (what the pinned arena gives) and unaligned memory.
    std::vector<char> Storage(Size + 2 * SwapFile::Alignment);
    char *Aligned = reinterpret_cast<char *>(
        (uintptr_t(Storage.data()) + SwapFile::Alignment - 1) /
        SwapFile::Alignment * SwapFile::Alignment);
    for (uint64_t I = 0; I < Size; ++I)
      Aligned[I] = char(I * 131 + 7);
    EXPECT(F.write(Aligned, 0, Size, Error));
    struct Case {
      uint64_t Offset, Bytes, Shift;
    };
    for (Case C : {Case{0, Size, 0}, Case{4096, 1 << 20, 0},
                   Case{100, 300000, 100}, Case{8192, 5000, 3},
                   Case{Size - 1, 1, 0}, Case{12345, 0, 0}}) {
      std::vector<char> Back(C.Bytes + 2 * SwapFile::Alignment);
      char *Into = reinterpret_cast<char *>(
                       (uintptr_t(Back.data()) + SwapFile::Alignment - 1) /
                       SwapFile::Alignment * SwapFile::Alignment) +
                   C.Shift;
      EXPECT(F.read(Into, C.Offset, C.Bytes, Error));
      EXPECT(memcmp(Into, Aligned + C.Offset, C.Bytes) == 0);
    }
    // An unaligned write in the middle lands exactly there.
    std::vector<char> Patch(7777, 'x');
    EXPECT(F.write(Patch.data(), 50001, Patch.size(), Error));
    std::vector<char> Back(Size);
    EXPECT(F.read(Back.data(), 0, Size, Error));
    EXPECT(Back[50000] == Aligned[50000] && Back[50001] == 'x' &&
           Back[50001 + 7776] == 'x' && Back[50001 + 7777] == Aligned[57778]);
    // Past the end: an error that names the file.
    EXPECT(!F.read(Back.data(), Size - 10, 20, Error));
    EXPECT(Error.find(Path) != std::string::npos &&
           Error.find("past") != std::string::npos);
  }
  // The destructor removed the file; a directory that does not exist is a
  // clear error.
  EXPECT(access(Path.c_str(), F_OK) != 0);
  SwapFile Bad;
  EXPECT(!Bad.create(std::string(Name.data()) + "/missing/rank0.swp", 4096, 1,
                     4096, Error));
  EXPECT(Error.find("--nvme-path") != std::string::npos);
  rmdir(Name.data());
}

static void launchers() {
  std::string Error;
  for (const char *V : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                        "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                        "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE", "DSRUN_CHILD",
                        "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                        "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    unsetenv(V);
  EXPECT(processFromEnvironment(Error)->Launcher == "single");
  // An MPICH-style job: the rendezvous goes through MPI when dsrun has it,
  // else it needs MASTER_ADDR and says how to do without.
  setenv("PMI_RANK", "1", 1);
  setenv("PMI_SIZE", "2", 1);
  std::optional<ProcessInfo> Mpi = processFromEnvironment(Error);
  if (builtWithMpi()) {
    EXPECT(Mpi && Mpi->Launcher == "mpi" && Mpi->Mpi && Mpi->Rank == 1);
  } else {
    EXPECT(!Mpi);
    EXPECT(Error.find("built with MPI") != std::string::npos);
  }
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_NTASKS", "4", 1);
  EXPECT(!processFromEnvironment(Error));
  EXPECT(Error.find("MASTER_ADDR") != std::string::npos);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29777", 1);
  std::optional<ProcessInfo> I = processFromEnvironment(Error);
  EXPECT(I && I->Rank == 3 && I->WorldSize == 4 && I->Launcher == "slurm");
  EXPECT(I && I->LocalSize == 0); // Unsaid: dsrun guesses from the GPUs.
  // The processes on this node share its cores (--host-threads' default).
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && I->LocalSize == 2);
  // A variable that is set but is no count is a problem, which dsrun
  // reports where it needs the count (--host-threads' default), not a
  // guess.
  setenv("LOCAL_WORLD_SIZE", "two", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && I->LocalSize == 0 &&
         I->LocalSizeProblem.find("LOCAL_WORLD_SIZE is 'two', not a count") !=
             std::string::npos &&
         I->LocalSizeProblem.find("--host-threads") != std::string::npos);
  setenv("LOCAL_WORLD_SIZE", "0", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && !I->LocalSizeProblem.empty());
  unsetenv("LOCAL_WORLD_SIZE");
  setenv("SLURM_NTASKS_PER_NODE", "4", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && I->LocalSize == 4 && I->LocalSizeProblem.empty());
  unsetenv("SLURM_NTASKS_PER_NODE");
  setenv("SLURM_PROCID", "4", 1);
  EXPECT(!processFromEnvironment(Error));
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");

  // Rank 0 hands a blob to three other processes over TCP.
  int Port = 20000 + int(getpid() % 20000);
  auto Process = [](int Rank, int World, int ToPort) {
    ProcessInfo P;
    P.Rank = P.LocalRank = Rank;
    P.WorldSize = World;
    P.MasterPort = ToPort;
    P.Launcher = "test";
    return P;
  };
  std::vector<pid_t> Children;
  for (int R = 1; R < 4; ++R) {
    pid_t Pid = fork();
    if (Pid == 0) {
      ProcessInfo Me = Process(R, 4, Port);
      std::string Blob, E;
      bool OK = exchangeBlob(Me, Blob, 20, E) && Blob == "nccl-id-123";
      _exit(OK ? 0 : 1);
    }
    Children.push_back(Pid);
  }
  ProcessInfo Root = Process(0, 4, Port);
  std::string Blob = "nccl-id-123";
  EXPECT(exchangeBlob(Root, Blob, 20, Error));
  for (pid_t Pid : Children) {
    int Status = 0;
    waitpid(Pid, &Status, 0);
    EXPECT(WIFEXITED(Status) && WEXITSTATUS(Status) == 0);
  }
  // Nobody listening: a bounded wait and a message, not a hang.
  ProcessInfo Lonely = Process(1, 2, Port + 1);
  std::string Nothing;
  EXPECT(!exchangeBlob(Lonely, Nothing, 1, Error));
  EXPECT(Error.find("could not reach rank 0") != std::string::npos);
}

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
                      In.Kind == plan::InstrKind::GatherParams;
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
      // by side in the chunk.
      const plan::UnitViews &U = P.Places.Units[In.Arg];
      EXPECT(First.size() == 1 &&
             First[0].Count * S.WorldSize == P.Views[U.Target].Elems);
    }
    for (const Arena &A : Ranks) {
      std::vector<CollectiveCall> Mine = collectiveCalls(A, I);
      if (Mine.size() != First.size()) {
        fprintf(stderr, "%s: instruction %u: rank %u makes %zu NCCL calls, "
                        "rank 0 %zu\n",
                Path, I, A.Rank, Mine.size(), First.size());
        ++Failures;
        continue;
      }
      for (size_t K = 0; K < Mine.size(); ++K) {
        const CollectiveCall &C = Mine[K], &B = First[K];
        EXPECT(C.Kind == B.Kind && C.Count == B.Count && C.Type == B.Type &&
               C.Root == B.Root);
        uint64_t Elem = elementBytes(C.Type);
        bool Gathered = C.Kind == CollectiveKind::AllGather;
        bool Scattered = C.Kind == CollectiveKind::ReduceScatter;
        uint64_t SendBytes = C.Count * Elem * (Scattered ? S.WorldSize : 1);
        uint64_t RecvBytes = C.Count * Elem * (Gathered ? S.WorldSize : 1);
        EXPECT(C.Send + SendBytes <= A.deviceBytes() &&
               C.Recv + RecvBytes <= A.deviceBytes());
        // What a rank sends or receives as its part is its own.
        if (Gathered)
          EXPECT(C.Send == C.Recv + A.Rank * C.Count * Elem ||
                 S.ParamOffload == plan::OffloadDevice::None);
        if (Scattered)
          EXPECT(C.Recv == C.Send + A.Rank * C.Count * Elem);
      }
    }
  }
}

/// The views every rank reads through cut what they cut up exactly: a
/// stage-3 bucket's chunk is its tensors' slots side by side, a unit's
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
        ++Failures;
      }
    }
    for (uint32_t B = 0; B < P.Buckets.size(); ++B) {
      const plan::BucketViews &BV = X.Buckets[B];
      if (S.ZeroStage == 3) {
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
      uint64_t Next = A.offset(UV.Target) + R * A.elems(UV.Send) * PB;
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
      ++Failures;
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
      ++Failures;
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
      ++Failures;
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
      ++Failures;
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
  if (!Good.Views.empty()) {
    plan::Plan P = Good;
    P.Views[0].RankStride = uint64_t(1) << 40;
    EXPECT(Refusal(P).find("view 0") != std::string::npos ||
           Good.Settings.WorldSize == 1);
  }
}

static void planChecks(const char *Path) {
  std::ifstream In(Path, std::ios::binary);
  std::vector<uint8_t> Bytes((std::istreambuf_iterator<char>(In)),
                             std::istreambuf_iterator<char>());
  std::string Error;
  std::optional<plan::Plan> P = plan::readPlan(Bytes.data(), Bytes.size(), Error);
  if (!P) {
    fprintf(stderr, "%s: %s\n", Path, Error.c_str());
    ++Failures;
    return;
  }
  EXPECT(plan::checkPlan(*P).empty());
  if (std::string Short = checkRunnable(*P); !Short.empty()) {
    fprintf(stderr, "%s: %s\n", Path, Short.c_str());
    ++Failures;
  }
  const plan::Info &S = P->Settings;
  // Every trainable element is updated by exactly one rank (by every rank
  // at stage 0, where each holds a full replica).
  unsigned Want = S.ZeroStage == 0 ? S.WorldSize : 1;
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
          ++Failures;
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

/// Idle time on the compute stream is blamed on what held the instruction
/// after it, back along the chain of blockers; the parts add up to the step.
static void exposed() {
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
static void reduceBusBytes() {
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

/// The planner's kernel time (dsc/KernelTime.h): the machine's rates for
/// kinds never measured, the measured kind's rate on its bounding
/// dimension, and the gap after every kernel; a fitted rate reproduces
/// the time it was fitted to.
static void kernelTimes() {
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
static Calibration sampleCalibration() {
  Calibration C;
  C.Ranks = 2;
  C.CudaContextBytes = 552468480;
  C.CublasWorkspaceBytes = 75497472;
  C.NcclBytes = 899678208;
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
static void calibrationFile() {
  char Dir[] = "/tmp/dsrun-calibration-XXXXXX";
  EXPECT(mkdtemp(Dir) != nullptr);
  std::string Path = std::string(Dir) + "/c.yaml", Error;
  EXPECT(writeCalibration(Path, sampleCalibration(), Error));
  std::ifstream In(Path);
  std::string Text((std::istreambuf_iterator<char>(In)),
                   std::istreambuf_iterator<char>());
  EXPECT(Text.find("\ncuda_context_bytes: 552468480\n") != std::string::npos);
  EXPECT(Text.find("\nnccl_bytes: 899678208\n") != std::string::npos);
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

/// Run by mpiexec: each rank learns who it is from MPI's environment alone
/// (no MASTER_ADDR) and receives rank 0's id by MPI.
static int mpiRendezvous() {
  std::string Error;
  std::optional<ProcessInfo> Me = processFromEnvironment(Error);
  if (!Me || !Me->Mpi || Me->WorldSize < 2) {
    fprintf(stderr, "mpi rendezvous: not an MPI job of several ranks: %s\n",
            Error.c_str());
    return 1;
  }
  std::string Blob = Me->Rank == 0 ? std::string("nccl-id-\0-456", 14) : "";
  if (!exchangeBlob(*Me, Blob, 20, Error)) {
    fprintf(stderr, "mpi rendezvous: rank %d: %s\n", Me->Rank, Error.c_str());
    return 1;
  }
  bool OK = Blob == std::string("nccl-id-\0-456", 14);
  printf("mpi rendezvous: rank %d of %d: %s\n", Me->Rank, Me->WorldSize,
         OK ? "passed" : "FAILED");
  return leaveJob(OK ? 0 : 1);
}

static std::string writeTemp(const std::string &Name, const void *Data,
                             size_t Bytes) {
  std::string Path = "/tmp/dsrun-host-test-" + std::to_string(getpid()) + "-" + Name;
  std::ofstream(Path, std::ios::binary)
      .write(static_cast<const char *>(Data), std::streamsize(Bytes));
  return Path;
}

/// nanoGPT's raw uint16 ids and llm.c's headered files read alike; broken
/// ones are errors that say what is wrong; the sample order is a
/// permutation per epoch, the same for the same seed.
static void tokenFiles() {
  std::vector<uint16_t> Raw = {5, 7, 11, 65535, 3};
  std::string Error;
  std::string A = writeTemp("raw.bin", Raw.data(), Raw.size() * 2);
  std::optional<TokenFile> F = TokenFile::open(A, Error);
  EXPECT(F && F->tokens() == 5 && F->tokenBytes() == 2 && (*F)[3] == 65535);
  EXPECT(F && F->firstAtLeast(1000) == 3 && F->firstAtLeast(70000) == 5);

  std::vector<int32_t> Header(256, 0);
  Header[0] = int32_t(LlmcMagic);
  Header[1] = 2;
  Header[2] = 3;
  std::vector<char> Llmc(1024 + 12);
  memcpy(Llmc.data(), Header.data(), 1024);
  uint32_t Ids[3] = {100000, 1, 2};
  memcpy(Llmc.data() + 1024, Ids, 12);
  std::string B = writeTemp("llmc.bin", Llmc.data(), Llmc.size());
  F = TokenFile::open(B, Error);
  EXPECT(F && F->tokens() == 3 && F->tokenBytes() == 4 && (*F)[0] == 100000);
  EXPECT(F && std::string(F->format()) == "llm.c");

  Header[2] = 4; // Promises more than the file holds.
  memcpy(Llmc.data(), Header.data(), 1024);
  std::string C = writeTemp("short.bin", Llmc.data(), Llmc.size());
  EXPECT(!TokenFile::open(C, Error) && Error.find("truncated") != std::string::npos);
  Header[1] = 7;
  memcpy(Llmc.data(), Header.data(), 1024);
  std::string D = writeTemp("version.bin", Llmc.data(), Llmc.size());
  EXPECT(!TokenFile::open(D, Error) && Error.find("version 7") != std::string::npos);
  std::string E = writeTemp("odd.bin", Raw.data(), 9);
  EXPECT(!TokenFile::open(E, Error) && Error.find("uint16") != std::string::npos);
  EXPECT(!TokenFile::open("/nonexistent/tokens.bin", Error));
  for (const std::string &Path : {A, B, C, D, E})
    unlink(Path.c_str());

  // 1000 tokens of windows of 9 + 1: 111 windows; each epoch visits each
  // once, epochs differ, and the seed decides.
  TokenSampler S(1000, 9, 42), Same(1000, 9, 42), Other(1000, 9, 43);
  EXPECT(S.windows() == 111);
  std::vector<bool> Seen(111, false);
  bool Differs = false, EpochDiffers = false;
  for (uint64_t G = 0; G < 111; ++G) {
    uint64_t Start = S.start(G);
    EXPECT(Start % 9 == 0 && Start + 10 <= 1000 && !Seen[Start / 9]);
    Seen[Start / 9] = true;
    EXPECT(Same.start(G) == Start);
    Differs |= Other.start(G) != Start;
    EpochDiffers |= S.start(G + 111) != Start;
  }
  EXPECT(Differs && EpochDiffers);
  // The order runtime/bench/dsrun_data.py reproduces (its test prints it).
  EXPECT((shuffledWindows(5, 1, 0) == std::vector<uint32_t>{2, 1, 4, 3, 0}));
  EXPECT((shuffledWindows(10, 1234, 3) ==
          std::vector<uint32_t>{6, 3, 5, 8, 1, 7, 2, 4, 0, 9}));
}

/// Weights match by name and shape; a tied weight the file keeps under
/// another name is the one unclaimed tensor of its shape; a shape that
/// differs names both; saving writes a file the reader takes back.
static void weightFiles() {
  plan::Plan P;
  P.Tensors.resize(2);
  P.Tensors[0].Name = "lm_head.weight";
  P.Tensors[0].Shape = {3, 2};
  P.Tensors[0].Elems = 6;
  P.Tensors[1].Name = "ln.bias";
  P.Tensors[1].Shape = {2};
  P.Tensors[1].Elems = 2;
  float Embedding[6] = {1, 2, 3, 4, 5, 6};
  uint16_t Bias[2] = {0x3f80, 0xc000}; // bf16 1 and -2
  dsc::safetensors::Writer W;
  W.add("wte.weight", "F32", {3, 2}, Embedding, sizeof(Embedding));
  W.add("ln.bias", "BF16", {2}, Bias, sizeof(Bias));
  std::vector<char> Bytes = W.bytes();
  std::string Path = writeTemp("w.safetensors", Bytes.data(), Bytes.size());
  std::string Error;
  std::optional<InitialWeights> I = loadWeights(P, Path, Error);
  EXPECT(I && I->FileName[0] == "wte.weight" && I->Values[0][5] == 6.0f);
  EXPECT(I && I->Values[1][0] == 1.0f && I->Values[1][1] == -2.0f);

  P.Tensors[1].Shape = {3};
  P.Tensors[1].Elems = 3;
  EXPECT(!loadWeights(P, Path, Error) &&
         Error.find("'ln.bias' has shape [2]") != std::string::npos);
  P.Tensors[1].Name = "ln.weight";
  EXPECT(!loadWeights(P, Path, Error) &&
         Error.find("no tensor named 'ln.weight'") != std::string::npos);
  P.Tensors[1].Name = "ln.bias";
  P.Tensors[1].Shape = {2};
  P.Tensors[1].Elems = 2;

  std::vector<std::vector<char>> Data(2);
  Data[0].resize(12);
  Data[1].resize(4);
  for (int K = 0; K < 6; ++K)
    storeAs(Data[0].data(), K, ElementType::BF16, float(K) * 0.5f);
  memcpy(Data[1].data(), Bias, 4);
  std::string Saved = Path + ".saved";
  EXPECT(saveWeights(P, I->FileName, Data, ElementType::BF16, Saved, Error));
  std::optional<InitialWeights> Back = loadWeights(P, Saved, Error);
  EXPECT(Back && Back->FileName[0] == "wte.weight" &&
         Back->Values[0][3] == 1.5f && Back->Values[1][1] == -2.0f);
  EXPECT(!saveWeights(P, I->FileName, Data, ElementType::BF16,
                      "/nonexistent/dir/w.safetensors", Error));
  unlink(Path.c_str());
  unlink(Saved.c_str());
}

/// fp16 loss scaling, step by step as DeepSpeed's DynamicLossScaler goes.
static void lossScaling() {
  plan::Info S;
  S.ParamDType = plan::DType::F16;
  S.InitialScalePower = 4;
  S.LossScaleWindow = 3;
  S.Hysteresis = 2;
  S.MinLossScale = 2;
  LossScaler A(S);
  EXPECT(A.dynamic() && A.scale() == 16);
  EXPECT(A.update(true).empty() && A.scale() == 16); // Hysteresis 2 -> 1.
  EXPECT(A.update(true).empty() && A.scale() == 8);  // Then it halves.
  for (int Clean = 0; Clean < 3; ++Clean) {
    EXPECT(A.scaleIfApplied() == 8);
    EXPECT(A.update(false).empty() && A.scale() == 8);
  }
  // The window's third clean step past the overflow doubles the scale,
  // and the optimizer already divides that step's gradients by 16.
  EXPECT(A.scaleIfApplied() == 16);
  EXPECT(A.update(false).empty() && A.scale() == 16);
  EXPECT(A.state().Hysteresis == 2 && A.state().Iteration == 6 &&
         A.state().LastOverflow == 1);

  // Without consecutive hysteresis a clean step in between leaves it used.
  S.Hysteresis = 2;
  LossScaler B(S);
  B.update(true);
  B.update(false);
  B.update(true);
  EXPECT(B.scale() == 8);
  S.ConsecutiveHysteresis = true;
  LossScaler C(S);
  C.update(true);
  C.update(false);
  C.update(true);
  EXPECT(C.scale() == 16);

  // Halving stops at the minimum; an overflow there ends the run.
  S = plan::Info();
  S.ParamDType = plan::DType::F16;
  S.InitialScalePower = 2;
  S.Hysteresis = 1;
  S.MinLossScale = 3;
  LossScaler D(S);
  EXPECT(D.update(true).empty() && D.scale() == 3);
  EXPECT(D.update(true).find("minimum loss scale (3") != std::string::npos);

  // A static scale never moves; bf16 has none.
  S.LossScale = "128";
  LossScaler E(S);
  EXPECT(!E.dynamic() && E.scale() == 128 && E.scaleIfApplied() == 128);
  EXPECT(E.update(true).empty() && E.scale() == 128);
  S.ParamDType = plan::DType::BF16;
  EXPECT(LossScaler(S).scale() == 1 && LossScaler(S).update(true).empty());

  // What a checkpoint keeps brings it back exactly.
  LossScaler F(plan::Info{});
  F.restore(A.state());
  EXPECT(F.scale() == 16 && F.state().Iteration == 6);
}

/// A shard written, read back, cut short, and checked against a plan.
static void checkpointFiles() {
  char Dir[] = "/tmp/dsrun-ckpt-XXXXXX";
  EXPECT(mkdtemp(Dir) != nullptr);
  std::string Root = Dir, Error;
  std::string Step = Root + "/save/" + checkpointName(7);
  EXPECT(makeDirectories(Step, Error));
  CheckpointHeader H;
  H.ModelHash = 11;
  H.ConfigHash = 12;
  H.WorldSize = 2;
  H.Rank = 1;
  H.ZeroStage = 3;
  H.ParamType = uint32_t(plan::DType::BF16);
  H.Step = 7;
  H.OptimizerStep = 6;
  H.Seed = 99;
  H.Scaler.Scale = 512;
  H.Scaler.LastOverflow = 3;
  std::vector<CheckpointPart> Parts = {{"params16", 10}, {"master_params", 0},
                                       {"optimizer_states", 100}};
  std::string Path = Step + "/rank0.ckpt";
  auto Byte = [](size_t Part, uint64_t At) { return char(Part * 31 + At); };
  EXPECT(writeShard(Path, H, Parts,
                    [&](size_t I, uint64_t At, uint64_t N, char *Out) {
                      for (uint64_t K = 0; K < N; ++K)
                        Out[K] = Byte(I, At + K);
                      return true;
                    },
                    Error));
  ShardReader R;
  EXPECT(R.open(Path, Error));
  EXPECT(R.header().Step == 7 && R.header().OptimizerStep == 6 &&
         R.header().Seed == 99 && R.header().Scaler.Scale == 512 &&
         R.header().Scaler.LastOverflow == 3 && R.parts().size() == 3 &&
         R.parts()[2].Name == "optimizer_states" && R.parts()[2].Bytes == 100);
  uint64_t Same = 0;
  EXPECT(R.read(
      [&](size_t I, uint64_t At, uint64_t N, const char *From) {
        for (uint64_t K = 0; K < N; ++K)
          Same += From[K] == Byte(I, At + K);
        return true;
      },
      Error));
  EXPECT(Same == 110);

  // latest names the step's directory; --resume takes either.
  EXPECT(checkpointToResume(Root + "/save", Error).empty());
  EXPECT(writeFileAtomically(Root + "/save/latest", "global_step7\n", Error));
  EXPECT(checkpointToResume(Root + "/save", Error) == Step);
  EXPECT(checkpointToResume(Step, Error) == Step);
  EXPECT(writeFileAtomically(Root + "/save/latest", "global_step8\n", Error));
  EXPECT(checkpointToResume(Root + "/save", Error).empty() &&
         Error.find("names 'global_step8'") != std::string::npos);

  // A shard cut short is refused, whole or not.
  std::string Cut = Root + "/cut.ckpt";
  {
    std::ifstream In(Path, std::ios::binary);
    std::string Bytes((std::istreambuf_iterator<char>(In)), {});
    EXPECT(writeFileAtomically(Cut, Bytes.substr(0, Bytes.size() - 20), Error));
  }
  ShardReader Short;
  EXPECT(!Short.open(Cut, Error) &&
         Error.find("cut short") != std::string::npos);

  // Damaged shards, byte by byte and cut at every length: each is refused
  // or read whole, never a crash or a read past the file.
  {
    std::ifstream In(Path, std::ios::binary);
    std::string Good((std::istreambuf_iterator<char>(In)), {});
    std::string Bad = Root + "/bad.ckpt";
    uint64_t Refused = 0, Tries = 0;
    auto Try = [&](const std::string &Bytes) {
      std::string E;
      EXPECT(writeFileAtomically(Bad, Bytes, E));
      ShardReader B;
      ++Tries;
      if (!B.open(Bad, E)) {
        EXPECT(!E.empty());
        ++Refused;
        return;
      }
      uint64_t Seen = 0;
      EXPECT(B.read([&](size_t, uint64_t, uint64_t N, const char *) {
        Seen += N;
        return true;
      }, E));
      uint64_t Promised = 0;
      for (const CheckpointPart &X : B.parts())
        Promised += X.Bytes;
      EXPECT(Seen == Promised && Promised <= Bytes.size());
    };
    for (size_t Length = 0; Length < Good.size(); ++Length)
      Try(Good.substr(0, Length));
    for (size_t At = 0; At < Good.size() - 110; ++At)
      for (unsigned char Flip : {0x01, 0x80, 0xff}) {
        std::string Bytes = Good;
        Bytes[At] = char(Bytes[At] ^ Flip);
        Try(Bytes);
      }
    EXPECT(Refused >= Good.size()); // Every cut; most flips of the table.
    EXPECT(Tries > Refused);        // Flips of header values still read.
  }

  // Against a plan: what differs is named.
  plan::Plan P;
  P.Settings.ModelHash = 11;
  P.Settings.WorldSize = 2;
  P.Settings.ZeroStage = 3;
  P.Settings.ParamDType = plan::DType::BF16;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Parts).empty());
  P.Settings.WorldSize = 4;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Parts)
             .find("world size 2 and this plan has 4") != std::string::npos);
  P.Settings.WorldSize = 2;
  std::vector<CheckpointPart> Bigger = Parts;
  Bigger[2].Bytes = 200;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Bigger)
             .find("optimizer_states of bytes 100") != std::string::npos);
  P.Settings.ModelHash = 5;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Parts)
             .find("another model") != std::string::npos);
  std::string Clean = "rm -rf " + Root;
  EXPECT(system(Clean.c_str()) == 0);
}

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--mpi-rendezvous")
    return mpiRendezvous();
  if (argc == 3 && std::string(argv[1]) == "--write-calibration") {
    std::string Error;
    if (writeCalibration(argv[2], sampleCalibration(), Error))
      return 0;
    fprintf(stderr, "%s\n", Error.c_str());
    return 1;
  }
  conversions();
  kernelTimes();
  reduceBusBytes();
  fastDivision();
  adam();
  launchers();
  hostConversions();
  vectorizedHostLoops();
  hostPool();
  traces();
  swapFiles();
  exposed();
  calibrationFile();
  tokenFiles();
  weightFiles();
  lossScaling();
  checkpointFiles();
  for (int I = 1; I < argc; ++I)
    planChecks(argv[I]);
  printf("%s: %d failure(s), %d plan(s) checked\n",
         Failures ? "FAILED" : "passed", Failures, argc - 1);
  return Failures ? 1 : 0;
}
