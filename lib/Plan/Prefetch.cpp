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
    // ZeRO++ qwZ quantizes a rank's chunk of the unit in groups whose size
    // is a multiple of 8; DeepSpeed's quantizer asserts otherwise.
    uint64_t Chunk = 0;
    for (uint32_t T : U.Tensors)
      Chunk += P.Tensors[T].ShardElems;
    // (An hpZ group's secondary partition, Chunk x world / group, is then a
    // multiple of 8 too.)
    if (plan::unitGathersQuantized(P) && !plan::qwzGroups(Chunk))
      return planError(formatv(
          "zero_optimization.zero_quantized_weights: module '{0}' leaves each "
          "rank {1} elements to quantize, not a multiple of 8, where "
          "DeepSpeed's int8 quantizer asserts",
          P.Modules[M].Name, Chunk));
    P.FetchUnits.push_back(std::move(U));
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
