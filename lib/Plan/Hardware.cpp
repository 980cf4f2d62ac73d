//===- Hardware.cpp - GPU presets, byte sizes, calibration ----------------===//

#include "dsc/Plan/Hardware.h"

#include "dsc/GpuPeaks.h"
#include "dsc/PlanFacts.h"

#include "dsc/Plan/MeasuredRatesYAML.h"
#include "dsc/Plan/TimeTables.h"

#include "dsc/Support/YAMLInput.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/YAMLTraits.h"

#include <cmath>

using namespace llvm;

namespace dsc {

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
constexpr uint64_t GB = 1000ull * 1000 * 1000, TF = 1000 * GB;

// Link and copy figures measured on the project's H200 machines
// (dsrun-bench, docs/runtime.md): pinned host copies 55.3 GB/s,
// pageable 8.5-8.9 GB/s, NCCL all-reduce bus bandwidth 348.5 GB/s at 4 GiB
// between two NVLink-connected H200s.
constexpr uint64_t MeasuredPinnedCopy = 55 * GB;
constexpr uint64_t MeasuredPageableCopy = 8.7 * GB;
constexpr uint64_t MeasuredNvlinkBusBandwidth = 348 * GB;
// One NCCL call costs 40-50 us below ~16 MiB on the same machines.
constexpr uint64_t MeasuredCollectiveLatencyNanos = 45000;
// A consumer Gen4 SSD under DeepNVMe (DeepSpeed's tutorial): 3.69 GB/s
// read, 3.18 GB/s write.
constexpr uint64_t TutorialNVMeRead = 3.69 * GB, TutorialNVMeWrite = 3.18 * GB;
// dsrun's host AdamW and its conversions of offloaded gradients and
// parameters (typed, vectorized loops over every core of the process),
// measured by dsrun --calibration-out on the Llama 1.1 B with the
// optimizer, then the parameters, on the CPU, one rank on a GPU machine's
// 16 cores: AdamW at 4.3-4.7 G elements per second, conversions at 6.1
// (stage 3's bf16 accumulation) to 11.1 G/s (docs/planner.md). DeepSpeedCPUAdam
// is of the same order with AVX-512. AdamW moves 30 bytes an element, so
// alone it streams 135 GB/s, the host's memory bandwidth: the bound when
// ranks share the host. setHostShare scales the figures to another
// count of threads and ranks; dsrun --calibration-out measures them on
// the machine itself.
constexpr uint64_t MeasuredHostAdamElemsPerSec = 4500000000;
constexpr uint64_t MeasuredHostConvertElemsPerSec = 8000000000;
constexpr uint64_t MeasuredHostBytesPerSec = 135 * GB;
// Device memory outside the arena, assumed until dsrun calibrates it: the
// CUDA context with lazy module loading, cuBLAS's default workspace on
// Hopper, NCCL's default 4 MiB buffers over 16 channels.
constexpr uint64_t AssumedCudaContext = 512 * MiB;
constexpr uint64_t AssumedCublasWorkspace = 32 * MiB;
constexpr uint64_t AssumedNcclChannels = 16;
constexpr uint64_t DefaultNcclBuffSize = 4 * MiB;

HardwareProfile make(StringRef Name, uint64_t MemoryBytes,
                     uint64_t DenseFlops, uint64_t MemoryBandwidth,
                     uint64_t BusBandwidth) {
  HardwareProfile H;
  H.Figures.GpuName = Name.str();
  H.Figures.GpuMemoryBytes = MemoryBytes;
  H.Figures.DenseFlopsPerSec = DenseFlops;
  H.Figures.MemoryBytesPerSec = MemoryBandwidth;
  H.Figures.CollectiveBytesPerSec = BusBandwidth;
  H.Figures.CollectiveLatencyNanos = MeasuredCollectiveLatencyNanos;
  H.Figures.PinnedCopyBytesPerSec = MeasuredPinnedCopy;
  H.Figures.PageableCopyBytesPerSec = MeasuredPageableCopy;
  H.Figures.NVMeReadBytesPerSec = TutorialNVMeRead;
  H.Figures.NVMeWriteBytesPerSec = TutorialNVMeWrite;
  H.Figures.HostBytesPerSec = MeasuredHostBytesPerSec;
  H.Figures.HostAdamElemsPerSec = MeasuredHostAdamElemsPerSec;
  H.Figures.HostConvertElemsPerSec = MeasuredHostConvertElemsPerSec;
  H.CudaContextBytes = AssumedCudaContext;
  H.CublasWorkspaceBytes = AssumedCublasWorkspace;
  H.NcclChannels = AssumedNcclChannels;
  H.NcclBufferBytes = DefaultNcclBuffSize;
  return H;
}

/// Where no dense rate was measured: 75 % of the datasheet's peak, what
/// the H200's measured 790 TFLOP/s is of its 989.
uint64_t UnmeasuredDense(const char *Gpu) {
  return uint64_t(0.75 * denseBf16PeakFlops(Gpu)) / TF * TF;
}

struct Preset {
  StringRef Name;
  uint64_t MemoryBytes;
  uint64_t DenseFlops; ///< Achievable dense 16-bit matmul rate.
  uint64_t MemoryBandwidth; ///< Achievable HBM/GDDR rate.
  uint64_t BusBandwidth;
  /// Hopper's attention is cuDNN's: dsrun-attention-bench on an H200
  /// (cuDNN 9.19) times it 1.3-2.9x dsrun's flash kernels at every shape,
  /// forward and backward (docs/results/attention.json). Elsewhere
  /// unmeasured: dsrun's own flash kernels.
  bool CudnnAttention = false;
};

// Memory is what cudaMemGetInfo reports as total. Dense rates: the H200's
// 790 TF/s bf16 matmul was measured on the project's machines (docs/training.md);
// the others are ~75 % of the vendor's dense peak, the same ratio. Memory
// rates are ~80 % of the vendor's figure, where the GPU's shipped time table
// has no measured one.
/// Device memory outside the arena that dsrun measured (cudaMemGetInfo
/// after each stage of its set-up; runtime/calibration/ and the training
/// runs of docs/training.md), CUDA 13, NCCL 2.28.3 at its defaults with
/// NVLS off, lazy module loading.
struct MeasuredFixed {
  StringRef Gpu;
  uint64_t Context, Cublas, Nccl1, Nccl2;
  StringRef When;
  /// A 2-rank hpZ group communicator beside the world's (dsrun's NCCL
  /// figure with hpZ less without, on every rank).
  uint64_t NcclHpz = 0;
  StringRef HpzWhen = "";
};
const MeasuredFixed Measured[] = {
    {"H100-80GB", 552402944, 75497472, 610271232, 0,
     "dsrun on an H100, 2026-11-23"},
    {"H200", 552402944, 75497472, 603979776, 899678208,
     "dsrun on 1 and 2 NVLink H200s, 2026-11-22", 509607936,
     "dsrun on 4 H200s as 2 nodes of 2, 2026-11-27"},
};

const Preset Presets[] = {
    {"H100-80GB", 79 * GiB + 647 * MiB, 740 * TF, 2680 * GB,
     MeasuredNvlinkBusBandwidth, true},
    {"H200", 139 * GiB + 804 * MiB, 790 * TF, 3840 * GB,
     MeasuredNvlinkBusBandwidth, true},
    {"A100-80GB", 79 * GiB + 254 * MiB, UnmeasuredDense("A100"), 1630 * GB,
     230 * GB},
    {"A100-40GB", 39 * GiB + 402 * MiB, UnmeasuredDense("A100"), 1250 * GB,
     230 * GB},
    {"L40S", 44 * GiB + 403 * MiB, UnmeasuredDense("L40S"), 690 * GB, 20 * GB},
    {"RTX4090", 23 * GiB + 546 * MiB, UnmeasuredDense("RTX4090"), 800 * GB,
     20 * GB},
    {"V100-32GB", 31 * GiB + 749 * MiB, UnmeasuredDense("V100"), 720 * GB,
     130 * GB},
};

} // namespace

std::optional<HardwareProfile> hardwarePreset(StringRef Name) {
  std::string Want = Name.lower();
  for (const Preset &P : Presets) {
    std::string Have = P.Name.lower();
    // "h100" names the 80 GB part; "h100-80gb" and "h100_80gb" too.
    std::string Short = StringRef(Have).split('-').first.str();
    std::replace(Want.begin(), Want.end(), '_', '-');
    if (Want == Have || Want == Short) {
      HardwareProfile H = make(P.Name, P.MemoryBytes, P.DenseFlops,
                               P.MemoryBandwidth, P.BusBandwidth);
      // The shipped time table's measured streaming rate, where it has one.
      if (const TimeTable *T = shippedTimeTable(P.Name);
          T && T->MemoryBytesPerSec)
        H.Figures.MemoryBytesPerSec = T->MemoryBytesPerSec;
      if (P.CudnnAttention)
        H.AttentionOrder = {plan::AttentionAlgorithm::Cudnn,
                            plan::AttentionAlgorithm::Flash};
      for (const MeasuredFixed &M : Measured)
        if (M.Gpu == P.Name) {
          H.CudaContextBytes = M.Context;
          H.CublasWorkspaceBytes = M.Cublas;
          H.NcclMeasured[1] = M.Nccl1;
          H.NcclMeasured[2] = M.Nccl2;
          H.MeasuredOn = M.When.str();
          H.NcclHpzMeasured = M.NcclHpz;
          H.HpzMeasuredOn = M.HpzWhen.str();
          H.ContextBasis = H.CublasBasis = "measured: " + M.When.str();
        }
      return H;
    }
  }
  return std::nullopt;
}

HardwareProfile defaultHardware() {
  HardwareProfile H = *hardwarePreset("H100-80GB");
  H.Figures.GpuName = "H100-80GB (default figures, no memory limit)";
  H.Figures.GpuMemoryBytes = 0;
  return H;
}

ArrayRef<StringRef> hardwarePresetNames() {
  static const std::vector<StringRef> Names = [] {
    std::vector<StringRef> N;
    for (const Preset &P : Presets)
      N.push_back(P.Name);
    return N;
  }();
  return Names;
}

Expected<uint64_t> parseByteSize(StringRef Text) {
  StringRef T = Text.trim();
  size_t Split = T.find_first_not_of("0123456789.");
  StringRef Number = T.substr(0, Split), Unit = T.substr(Split).trim();
  double V;
  uint64_t Scale = StringSwitch<uint64_t>(Unit.lower())
                       .Cases("", "b", 1)
                       .Cases("kib", "k", KiB)
                       .Cases("mib", "m", MiB)
                       .Cases("gib", "g", GiB)
                       .Cases("tib", "t", 1024 * GiB)
                       .Case("kb", 1000)
                       .Case("mb", 1000 * 1000)
                       .Case("gb", GB)
                       .Case("tb", 1000 * GB)
                       .Default(0);
  if (Number.empty() || Number.getAsDouble(V) || Scale == 0 || V < 0 ||
      V * double(Scale) >= 1.8e19)
    return createStringError(inconvertibleErrorCode(),
                             "'%s' is not a memory size; write e.g. 80GiB, "
                             "80GB or 85899345920",
                             Text.str().c_str());
  return uint64_t(std::llround(V * double(Scale)));
}

namespace {
struct Calibration {
  plan::Hardware &F;
  HardwareProfile &H;
};
} // namespace
} // namespace dsc

namespace llvm::yaml {
template <> struct MappingTraits<dsc::Calibration> {
  static void mapping(IO &IO, dsc::Calibration &C) {
    C.F.visit([&](const char *Name, auto &Field) {
      IO.mapOptional(Name, Field);
    });
    IO.mapOptional("cuda_context_bytes", C.H.CudaContextBytes);
    IO.mapOptional("cublas_workspace_bytes", C.H.CublasWorkspaceBytes);
    IO.mapOptional("nccl_channels", C.H.NcclChannels);
    IO.mapOptional("nccl_buffer_bytes", C.H.NcclBufferBytes);
    IO.mapOptional("nccl_bytes", C.H.NcclBytes);
    IO.mapOptional("comm_cta_policy", C.H.CalibrationCtaPolicy);
  }
};
} // namespace llvm::yaml

namespace dsc {

void setHostShare(HardwareProfile &H, unsigned Threads, unsigned RanksOnHost) {
  // 16 threads: the measured figures; 32 (one rank on the 2-GPU H200
  // machine's 32 cores): 1.35 times as fast (docs/results/time-matrix.json).
  constexpr double MeasuredThreads = 16, ThreadExponent = 0.43;
  // The ranks of one host share its memory bandwidth: two ranks of 16
  // threads on the 2-GPU H200 machine ran AdamW at 2.2-3.2 G elements a
  // second each (GPT-2 XL's tune check and traces), about 0.55 of one
  // rank's 4.5: 2^-0.85.
  constexpr double RankExponent = 0.85;
  double Threaded =
      std::pow(double(Threads ? Threads : MeasuredThreads) / MeasuredThreads,
               ThreadExponent);
  double Shared = std::pow(double(std::max(1u, RanksOnHost)), -RankExponent);
  H.Figures.HostBytesPerSec =
      uint64_t(double(MeasuredHostBytesPerSec) * Threaded * Shared);
  H.Figures.HostAdamElemsPerSec =
      uint64_t(double(MeasuredHostAdamElemsPerSec) * Threaded);
  H.Figures.HostConvertElemsPerSec =
      uint64_t(double(MeasuredHostConvertElemsPerSec) * Threaded);
}

Error applyCalibration(HardwareProfile &H, StringRef Text, StringRef Path) {
  HardwareProfile Copy = H;
  Calibration C{Copy.Figures, Copy};
  if (Error E = readYAMLInto(C, Text, Path, "a YAML mapping"))
    return E;
  // A file from before plan format 19 measured AdamW's rate but not the
  // bandwidth it reached: its rates alone bound the host's passes.
  if (Copy.Figures.HostAdamElemsPerSec != H.Figures.HostAdamElemsPerSec &&
      Copy.Figures.HostBytesPerSec == H.Figures.HostBytesPerSec)
    Copy.Figures.HostBytesPerSec = 0;
  std::string Calibrated = "calibrated: " + Path.str();
  if (Copy.CudaContextBytes != H.CudaContextBytes)
    Copy.ContextBasis = Calibrated;
  if (Copy.CublasWorkspaceBytes != H.CublasWorkspaceBytes)
    Copy.CublasBasis = Calibrated;
  H = Copy;
  return Error::success();
}

namespace {
/// A node's NICs for collectives between nodes, from the vendors' specs.
struct Fabric {
  StringRef Name;
  uint64_t Gbps; ///< The node's NICs together.
  uint64_t Nics;
  StringRef What;
};
const Fabric Fabrics[] = {
    {"ib-ndr", 3200, 8, "8 x 400 Gb/s InfiniBand NDR (DGX H100/H200)"},
    {"ib-hdr", 1600, 8, "8 x 200 Gb/s InfiniBand HDR (DGX A100)"},
    {"efa-p5", 3200, 32, "32 x 100 Gb/s EFA (AWS p5)"},
    {"efa-p4d", 400, 4, "4 x 100 Gb/s EFA (AWS p4d)"},
    {"roce-400", 3200, 8, "8 x 400 Gb/s RoCE"},
    {"eth-100", 100, 1, "one 100 Gb/s Ethernet NIC"},
    {"eth-25", 25, 1, "one 25 Gb/s Ethernet NIC"},
};
/// The GPUs a fabric's node is built around: its NICs are spread over
/// them, and a node running fewer ranks uses the NICs of those GPUs.
constexpr uint64_t GpusPerFabricNode = 8;
/// What NCCL's bus bandwidth between nodes is taken to reach of the line
/// rate (modelled).
constexpr double LineRateShare = 0.9;
} // namespace

std::vector<std::string> fabricNames() {
  std::vector<std::string> Names;
  for (const Fabric &F : Fabrics)
    Names.push_back(F.Name.str());
  return Names;
}

Error setInterNodeLink(plan::Hardware &H, StringRef Name, uint64_t Gbps,
                       uint32_t GpusPerNode) {
  std::string What;
  if (Name.empty() && Gbps > 100000)
    return createStringError(inconvertibleErrorCode(),
                             "--inter-node-gbps %llu: more than 100 Tb/s "
                             "per node",
                             (unsigned long long)Gbps);
  if (!Name.empty()) {
    const Fabric *Found = nullptr;
    for (const Fabric &F : Fabrics)
      if (F.Name == Name)
        Found = &F;
    if (!Found)
      return createStringError(inconvertibleErrorCode(),
                               "--fabric %s: unknown; known: %s",
                               Name.str().c_str(),
                               join(fabricNames(), ", ").c_str());
    // The NICs of the GPUs in use (rounded up to whole NICs).
    uint64_t Used =
        std::min<uint64_t>(Found->Nics, (uint64_t(GpusPerNode) * Found->Nics +
                                         GpusPerFabricNode - 1) /
                                            GpusPerFabricNode);
    Used = std::max<uint64_t>(Used, 1);
    Gbps = Found->Gbps * Used / Found->Nics;
    What = Found->What.str() + " (" + Name.str() + ")";
    if (Used < Found->Nics)
      What += ", the " + std::to_string(Used) + " NIC" +
              (Used == 1 ? "" : "s") + " of " + std::to_string(GpusPerNode) +
              " GPU" + (GpusPerNode == 1 ? "" : "s");
  } else {
    What = std::to_string(Gbps) + " Gb/s of NICs per node";
  }
  H.InterNodeBytesPerSec =
      uint64_t(double(Gbps) * 1e9 / 8 * LineRateShare);
  H.InterNodeLink = What + ", modelled at 90 % of the line rate";
  return Error::success();
}

namespace {

/// The buffers of a communicator over a group of Ranks ranks on one node
/// beside the world's: measured for a group of 2 (more than one peer's
/// buffers: a communicator keeps state of its own); a larger group's ring
/// has a second neighbour.
plan::FixedCost groupCommCost(const HardwareProfile &H, uint32_t Ranks,
                              uint64_t Peer, std::string Name) {
  const uint64_t *M = H.NcclMeasured;
  uint64_t Second = Ranks > 2 ? (M[1] ? Peer : 0) : 0;
  if (H.NcclHpzMeasured)
    return {std::move(Name), H.NcclHpzMeasured + Second,
            (Ranks > 2 ? "modelled: the measured 2-rank group plus one "
                         "peer's buffers ("
                       : "measured: ") +
                H.HpzMeasuredOn + (Ranks > 2 ? ")" : "")};
  // Where this GPU's group was not measured, the H200's 2-rank group (a
  // peer's buffers and the communicator's own state): one NCCL, its
  // world communicators within 1 % of each other on the two GPUs.
  if (M[1])
    return {std::move(Name), 509607936ull + Second,
            std::string("modelled: the 2-rank group measured on 4 H200s, "
                        "2026-11-27") +
                (Ranks > 2 ? ", plus one peer's buffers" : "")};
  return {std::move(Name),
          H.NcclChannels * H.NcclBufferBytes * 2 * (Ranks > 2 ? 2 : 1),
          "assumed: channels x NCCL_BUFFSIZE x neighbours"};
}

} // namespace

std::vector<plan::FixedCost> fixedCosts(const HardwareProfile &H,
                                        const plan::Info &S) {
  uint32_t WorldSize = S.WorldSize;
  std::vector<plan::FixedCost> Costs = {
      {"cuda_context", H.CudaContextBytes, H.ContextBasis},
      {"cublas_workspace", H.CublasWorkspaceBytes, H.CublasBasis}};
  uint32_t Local = std::min(WorldSize, std::max(1u, S.GpusPerNode));
  bool Nodes = WorldSize > Local;
  const uint64_t *M = H.NcclMeasured;
  // One ring neighbour's buffers on the node: the 2-rank measurement's
  // difference from the 1-rank one (the H200's where this GPU has none).
  uint64_t Peer = M[2] ? M[2] - M[1] : 899678208ull - 603979776ull;
  if (H.NcclBytes) {
    Costs.push_back({"nccl_buffers", H.NcclBytes, "calibrated"});
    return Costs; // A calibration measured every communicator.
  }
  if (M[1] && (WorldSize == 1 || (Local == 2 && !Nodes && M[2]))) {
    Costs.push_back({"nccl_buffers", WorldSize == 1 ? M[1] : M[2],
                     "measured: " + H.MeasuredOn});
  } else if (M[1]) {
    // NCCL's own state and kernels (the one-rank figure), plus the
    // buffers of its peers: each channel receives from one ring neighbour
    // on the node, and one more across nodes.
    Costs.push_back({"nccl_buffers", M[1] + Peer * (Nodes ? 2 : 1),
                     "modelled: the 1-rank measurement plus one peer's "
                     "buffers" +
                         std::string(Nodes ? " on the node and one across "
                                             "nodes"
                                           : "") +
                         " (" + H.MeasuredOn + ")"});
  } else if (WorldSize > 1) {
    // A ring needs a send and a receive buffer per channel for each of its
    // two neighbours; one rank alone needs no communicator buffers.
    Costs.push_back({"nccl_buffers",
                     H.NcclChannels * H.NcclBufferBytes * 2 *
                         (WorldSize > 2 ? 2 : 1),
                     "assumed: channels x NCCL_BUFFSIZE x neighbours"});
  }
  // Groups of one rank copy, and a group of every rank runs on the world's
  // communicator: neither has one of its own (dsrun, Executor.cpp).
  auto OwnComm = [&](uint32_t Ranks) { return Ranks > 1 && Ranks < WorldSize; };
  if (OwnComm(S.HpzPartition))
    Costs.push_back(groupCommCost(H, S.HpzPartition, Peer, "nccl_hpz_buffers"));
  uint32_t Shard = plan::partitionRanks(S), Replicas = plan::replicaRanks(S);
  if (OwnComm(Shard))
    Costs.push_back(groupCommCost(H, Shard, Peer, "nccl_mics_shard_buffers"));
  if (OwnComm(Replicas))
    Costs.push_back(
        groupCommCost(H, Replicas, Peer, "nccl_mics_replica_buffers"));
  // ZeRO++ qgZ's all-to-alls run within each node (on hpZ's communicator
  // where its groups are the nodes) and among the ranks of one place on
  // every node.
  if (plan::qgzAcrossNodes(S)) {
    if (OwnComm(Local) && S.HpzPartition != Local)
      Costs.push_back(groupCommCost(H, Local, Peer, "nccl_qgz_node_buffers"));
    if (OwnComm(S.Nodes))
      Costs.push_back(
          groupCommCost(H, S.Nodes, Peer, "nccl_qgz_across_nodes_buffers"));
    // Its sends and receives get NCCL buffers of their own at the first
    // exchange, for each communicator that has peers: 838 MiB for one
    // within the node and one across (4 H200s planned as 2 x 2, the
    // fixture Llama: 3318.9 MiB measured where the rest came to 2480.9).
    unsigned WithPeers = (Local > 1) + (S.Nodes > 1);
    if (WithPeers)
      Costs.push_back({"nccl_qgz_p2p_buffers", WithPeers * (419ull << 20),
                       "modelled: measured with one peer in each of qgZ's "
                       "two exchanges on 4 H200s, 2026-11-28 (more peers "
                       "not measured)"});
  }
  return Costs;
}

} // namespace dsc
