//===- Hardware.h - The machine a plan is made for --------------*- C++ -*-===//
//
// Memory size, compute and link speeds, and the device memory that is not
// the plan's own (CUDA context, cuBLAS workspace, NCCL buffers). Presets
// carry figures measured on the project's GPU machines where there are
// some and published figures otherwise; a calibration file measured by
// dsrun replaces any of them.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLAN_HARDWARE_H
#define DSC_PLAN_HARDWARE_H

#include "dsc/PlanFormat.h"

#include <optional>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace dsc {

struct HardwareProfile {
  plan::Hardware Figures;
  /// Per-rank device memory outside the plan's arena, by name. The NCCL
  /// entry scales with the world size (fixedCosts()).
  uint64_t CudaContextBytes = 0;
  uint64_t CublasWorkspaceBytes = 0;
  uint64_t NcclChannels = 0;
  uint64_t NcclBufferBytes = 0; ///< NCCL_BUFFSIZE.
  /// Measured NCCL memory per rank (dsrun --calibration-out); replaces the
  /// channels x buffers formula when set.
  uint64_t NcclBytes = 0;
  /// What dsrun measured on this GPU kind, shipped with dsc: NCCL's memory
  /// per rank with 1 and 2 ranks on the node (0: not measured), and where
  /// the context and cuBLAS figures come from.
  uint64_t NcclMeasured[3] = {0, 0, 0};
  /// What a ZeRO++ hpZ group communicator of 2 NVLink ranks adds beside
  /// the world's, measured (0: not measured on this GPU kind).
  uint64_t NcclHpzMeasured = 0;
  std::string HpzMeasuredOn;
  /// The attention algorithms in the order the planner tries them (the
  /// fastest measured first); math, which runs every kernel, is the last
  /// resort and needs no entry.
  std::vector<plan::AttentionAlgorithm> AttentionOrder = {
      plan::AttentionAlgorithm::Flash};
  std::string MeasuredOn;
  std::string ContextBasis = "assumed", CublasBasis = "assumed";
  /// A calibration's NCCL CTA policy (`comm_cta_policy`; a file without
  /// one was measured with NCCL's default), which the plan's must match.
  plan::CommCtaPolicy CalibrationCtaPolicy = plan::CommCtaPolicy::Default;
};

/// The preset for a GPU name (case-insensitive: h100, h100-80gb, h200,
/// a100-40gb, a100-80gb, l40s, ...), or nullopt.
std::optional<HardwareProfile> hardwarePreset(llvm::StringRef Name);
/// The preset used when no GPU is named: H100-80GB figures, no memory
/// limit.
HardwareProfile defaultHardware();
llvm::ArrayRef<llvm::StringRef> hardwarePresetNames();

/// The link between nodes, as the plan's InterNodeBytesPerSec and
/// InterNodeLink: a named fabric (fabricNames(): ib-ndr, ib-hdr, efa-p5,
/// eth-100, ...), of which a node of GpusPerNode ranks uses the NICs of
/// those GPUs (fabrics are built around 8), or, with Fabric empty, Gbps
/// Gbit/s of NICs per node. Both are modelled, not measured: NCCL's bus
/// bandwidth between nodes taken as 90 % of that line rate; a calibration
/// file's inter_node_bytes_per_sec or inter_node_rates replaces it.
llvm::Error setInterNodeLink(plan::Hardware &H, llvm::StringRef Fabric,
                             uint64_t Gbps, uint32_t GpusPerNode);
std::vector<std::string> fabricNames();

/// Device memory outside the arena for each rank: the CUDA context,
/// cuBLAS's workspace and NCCL's buffers, each with its basis (measured,
/// calibrated, modelled or assumed); with ZeRO++ hpZ groups or MiCS shard
/// groups smaller than the world, the buffers of their communicators too.
std::vector<plan::FixedCost> fixedCosts(const HardwareProfile &H,
                                        const plan::Info &S);

/// "80GiB", "80GB", "81920MiB", "1.5TiB" or a plain byte count.
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef Text);

/// The host's optimizer and conversions for one of RanksOnHost ranks on
/// a host, each getting Threads threads (cores; 0: 16): the figures
/// measured with one rank of 16, scaled by (Threads / 16)^0.43 (32
/// threads: 1.35 times as fast, the one other count measured); the
/// rank's share of the host's memory bandwidth also by RanksOnHost^-0.85
/// (two ranks ran AdamW 0.55 times as fast each).
void setHostShare(HardwareProfile &H, unsigned Threads, unsigned RanksOnHost);

/// Applies a calibration file: a YAML mapping whose keys are the plan's
/// hardware field names (dense_flops_per_sec, pinned_copy_bytes_per_sec,
/// ...) and cuda_context_bytes, cublas_workspace_bytes, nccl_channels,
/// nccl_buffer_bytes, nccl_bytes (what dsrun --calibration-out writes).
llvm::Error applyCalibration(HardwareProfile &H, llvm::StringRef Text,
                             llvm::StringRef Path);

} // namespace dsc

#endif
