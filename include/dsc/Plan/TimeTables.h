//===- TimeTables.h - Kernel times measured on each GPU kind -----*- C++ -*-===//
//
// How long a kernel takes without a calibration run: tables measured on
// the project's GPU machines and shipped with dsc, one per GPU kind
// (lib/Plan/TimeTables/GPU.yaml, made by runtime/bench/time_tables.sh):
//   - products: bf16 TFLOP/s over a grid of m, n and k in each of the
//     three layouts training runs, interpolated in log2 of each size, and
//     what each fused epilogue adds;
//   - attention: TFLOP/s per algorithm, head size and causality, forward
//     and backward, over sequence lengths, interpolated likewise;
//   - the other kinds (norms, pointwise, losses): the rate profiled
//     training steps measured, and a fixed time a launch where steps of
//     two sizes show one;
//   - the gaps between two kernels and between two instructions on the
//     compute stream;
//   - how compute and collectives running at once slow each other.
// A kind a calibration file measured (dsc plan --calibration) keeps its
// measured rate; a kind the table lacks runs at the machine's dense and
// memory rates (KernelTime.h).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLAN_TIMETABLES_H
#define DSC_PLAN_TIMETABLES_H

#include "dsc/PlanFormat.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace dsc {

/// How much longer a product takes with an epilogue than without: the
/// geometric mean over training's shapes in the layout it runs in.
struct EpilogueCost {
  plan::GemmEpilogue Epilogue = plan::GemmEpilogue::None;
  double Factor = 1;
};

/// Products' TFLOP/s at every (m, n, k) of Sizes, m slowest, per layout:
/// nt (x W^T), nn (dy W), tn (dy^T x), without epilogue; Epilogues slow
/// the products that have one.
struct ProductGrid {
  std::vector<int64_t> Sizes;
  std::vector<double> NT, NN, TN;
  std::vector<EpilogueCost> Epilogues;
};

/// One attention algorithm's TFLOP/s at each of the table's sequences.
struct AttentionRates {
  std::string Algorithm;
  int64_t HeadDim = 0;
  bool Causal = false;
  std::vector<double> Forward, Backward;
};

/// NCCL's bus bandwidth (nccl-tests' convention) in GB/s alone, back to
/// back, at Ranks ranks of one node and at each of Sizes, the whole
/// buffer's bytes, by kind: all-reduce, reduce-scatter, all-gather, and
/// the stage-2 reduce as dsrun issues it (each rank's piece reduced to it,
/// an ncclReduce a root in one group, counted as a reduce-scatter).
struct CollectiveGrid {
  uint32_t Ranks = 0;
  std::vector<int64_t> Sizes;
  std::vector<double> AllReduce, ReduceScatter, AllGather, Reduce;
};

/// NCCL's all-gathers on the copy engines (its zero-CTA policy, dsc plan
/// --comm-cta-policy zero), as bus GB/s beside the step's compute, which
/// they do not slow: one figure for every size, measured at Ranks ranks
/// of one node.
struct CopyEngineGathers {
  uint32_t Ranks = 0;
  double BusGbps = 0;
  std::string Source;
};

/// How compute and NCCL's kernels slow each other where they run at
/// once. In the planner's replay, a collective that starts while a
/// compute instruction runs costs that instruction Compute times the
/// collective's own time plus CallNanos (its kernel takes SMs and breaks
/// into the running product's waves); and, where Wait, the collective
/// waits for SMs: it takes at least the longest kernel of that
/// instruction. Source names the runs that measured them.
struct SharedGpu {
  double Compute = 0;
  uint64_t CallNanos = 0;
  bool Wait = false;
  std::string Source;
  bool charged() const { return Compute || CallNanos || Wait; }
};

/// A kernel kind's fixed time a launch, beyond its bytes at its rate:
/// fitted on profiles of the same kind at several sizes (a 1024-row
/// layer norm of GPT-2 XL takes 9.4 us, not the 5 us its bytes would).
struct KernelLatency {
  std::string Kind;
  bool Backward = false;
  uint64_t Nanos = 0;
};

struct TimeTable {
  std::string Gpu;
  /// Where the figures come from: machine, driver, libraries, date.
  std::string Source;
  ProductGrid Products;
  std::vector<int64_t> Sequences;
  std::vector<AttentionRates> Attention;
  std::vector<plan::KernelRate> KernelRates;
  std::vector<KernelLatency> KernelLatencies;
  uint64_t KernelGapNanos = 0;
  /// What an op's instruction costs beyond its kernels and their gaps:
  /// a profiled step's idle between instructions over those gaps, less
  /// one kernel gap.
  uint64_t InstructionGapNanos = 0;
  /// The device's memory rate for a streaming pass: what dsrun's AdamW
  /// reached (--calibration-out); 0: the preset's figure.
  uint64_t MemoryBytesPerSec = 0;
  /// Per rank count measured (dsrun-bench --grid).
  std::vector<CollectiveGrid> Collectives;
  SharedGpu Sharing;
  CopyEngineGathers CopyEngine;
};

/// The sharing figures a plan on machine H is charged: the table's, less
/// what a calibration measured in a step already (its products' rate: no
/// charge to the compute; its collectives' rates: no wait). None without
/// a table.
SharedGpu chargedSharing(const plan::Hardware &H, const TimeTable *Table);

/// The bus rate in bytes a second of all-gathers on the copy engines on
/// machine H (its table's CopyEngineGathers), or 0 where its table has
/// none.
uint64_t copyEngineGatherRate(const plan::Hardware &H);

/// Reads a table; an error names the place in Path.
llvm::Expected<TimeTable> parseTimeTable(llvm::StringRef Text,
                                         llvm::StringRef Path);

/// The table shipped for GPU kind Gpu (a preset's name, also with the
/// default figures' note after it), or null.
const TimeTable *shippedTimeTable(llvm::StringRef Gpu);
/// The shipped tables' file names (GPU of GPU.yaml), and why any of them
/// cannot serve (it does not parse, or names another GPU): such a table
/// is never used, and the unit tests fail on it.
std::vector<std::string> shippedTimeTableNames();
std::vector<std::string> shippedTimeTableProblems();

/// A product's TFLOP/s from the grid (0: the grid is empty); a size
/// below the grid's smallest counts as the smallest, and an epilogue
/// slows it by its cost.
double productTflops(const ProductGrid &G, const plan::GemmAttrs &A);

/// A collective's bus bandwidth in bytes a second from the table (0: no
/// entry): Kind is a plan::Collective's name or "reduce" (stage 2's
/// reduces to each piece's rank), Bytes the whole buffer; the entry of
/// Ranks ranks, else of the nearest count measured in log2 (the fewer
/// ranks of two as near); between two sizes in log2, beyond the grid its
/// edge.
double collectiveBusRate(const TimeTable &T, llvm::StringRef Kind,
                         uint64_t Bytes, uint32_t Ranks);

/// An attention kernel's TFLOP/s (0: no entry of its algorithm): the
/// table's at its sequence and head size, lowered where the launch has
/// fewer query rows than the table's grid (SMs left without work).
double attentionTflops(const TimeTable &T, const plan::AttentionAttrs &A,
                       bool Backward);

/// Where a kernel's rates come from, the first found first: a rate the
/// calibration measured for its kind, the table's products or attention,
/// the table's rate for its kind, the machine's dense and memory rates.
enum class RateSource { Calibration, TableProduct, TableAttention, TableKind,
                        Machine };
struct KernelRates {
  RateSource Source = RateSource::Machine;
  /// 0: that dimension does not bound the kernel.
  uint64_t FlopsPerSec = 0, BytesPerSec = 0;
  /// What a launch costs beside its work (the table's kernel_latencies).
  uint64_t FixedNanos = 0;
};
KernelRates kernelRates(const plan::Kernel &K, const plan::Hardware &H,
                        const TimeTable *Table);

/// What the planner expects kernel K to run for on machine H (Table: the
/// GPU's, or null): max(FLOPs / flop rate, bytes / byte rate) at
/// kernelRates', plus the table's fixed time for a kind at its rate.
uint64_t kernelRunNanos(const plan::Kernel &K, const plan::Hardware &H,
                        const TimeTable *Table);

/// The idle time before each kernel: the calibration's, else the table's.
uint64_t kernelGapNanos(const plan::Hardware &H, const TimeTable *Table);

/// Each kernel's run time (kernelRunNanos), kept in the plan: what
/// dsrun --profile-step measures between a launch's events.
void estimateKernels(plan::Plan &P, const plan::Hardware &H,
                     const TimeTable *Table);

/// What an instruction running Kernels takes: their planned runs, a
/// kernel gap before each but the table's products (the grid's times
/// hold it), and the table's gap between instructions where it has
/// kernels.
uint64_t instructionNanos(const std::vector<plan::Kernel> &Kernels,
                          plan::Interval Range, const plan::Hardware &H,
                          const TimeTable *Table);

} // namespace dsc

#endif
