//===- Prefetch.cpp - Stage 3 fetch units ---------------------------------===//
//
// DeepSpeed gathers a module's own parameters together before the module
// runs (its pre-forward and pre-backward hooks), so the fetch unit is the
// module: all its parameters that are not persistent. When each unit is
// gathered, prefetched and released is decided while the program is
// scheduled (Schedule.cpp), because it depends on what is live then.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"

#include "dsc/PlanFacts.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace dsc {

Error runPrefetchPass(plan::Plan &P) {
  P.FetchUnits.clear();
  if (P.Settings.ZeroStage != 3)
    return Error::success();
  for (uint32_t M = 0; M < P.Modules.size(); ++M) {
    plan::FetchUnit U;
    U.Module = M;
    for (uint32_t T : P.Modules[M].Tensors)
      if (!P.Tensors[T].Persistent) {
        U.Tensors.push_back(T);
        U.Elems += P.Tensors[T].Elems;
      }
    if (U.Tensors.empty())
      continue;
    P.FetchUnits.push_back(std::move(U));
    if (!plan::unitGathersQuantized(P))
      continue;
    // ZeRO++ qwZ quantizes a rank's chunk of the unit in groups whose size
    // is a multiple of 8; DeepSpeed's quantizer asserts otherwise. (An hpZ
    // group's secondary partition, chunk x world / group, is then a
    // multiple of 8 too.)
    const uint32_t Unit = uint32_t(P.FetchUnits.size() - 1);
    uint64_t Chunk = plan::unitChunkElems(P, Unit);
    if (!plan::qwzGroups(Chunk))
      return planError(formatv(
          "zero_optimization.zero_quantized_weights: module '{0}' leaves each "
          "rank {1} elements to quantize, not a multiple of 8, where "
          "DeepSpeed's int8 quantizer asserts",
          P.Modules[M].Name, Chunk));
    // With hpZ groups smaller than the world, DeepSpeed's secondary
    // partition is each parameter's slice in turn, which it quantizes as
    // one piece; dsc's is a slice of the rank-major gather, which for a
    // unit of several tensors puts other elements in each group.
    uint32_t Hpz = P.Settings.HpzPartition;
    if (Hpz > 1 && Hpz < P.Settings.WorldSize &&
        P.FetchUnits[Unit].Tensors.size() > 1)
      return planError(formatv(
          "zero_optimization.zero_quantized_weights with "
          "zero_hpz_partition_size {0} below the world size: module '{1}' "
          "gathers {2} parameters together, whose hpZ secondary partition "
          "DeepSpeed quantizes parameter by parameter, which dsc does not "
          "plan yet; set zero_hpz_partition_size to the world size or drop "
          "one of the two",
          Hpz, P.Modules[M].Name, P.FetchUnits[Unit].Tensors.size()));
  }
  return Error::success();
}

/// The fetch unit of each module, or NoIndex (all persistent, or not
/// stage 3).
std::vector<uint32_t> fetchUnitOfModule(const plan::Plan &P) {
  std::vector<uint32_t> Of(P.Modules.size(), plan::NoIndex);
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U)
    if (P.FetchUnits[U].Module < Of.size())
      Of[P.FetchUnits[U].Module] = U;
  return Of;
}

} // namespace dsc
