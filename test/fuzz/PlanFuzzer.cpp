//===- PlanFuzzer.cpp - libFuzzer target: the plan.bin and YAML readers ---===//
//
// Arbitrary bytes through the plan readers: an error or a plan, never a
// crash. Mutated files almost never keep a valid checksum, so each input
// is also read with its size and checksum fields repaired: that is what
// reaches the section decoders. A plan that reads and passes checkPlan
// must then print (YAML, estimate JSON and text) without crashing, and
// go through what dsrun derives from a plan before it touches a GPU (every
// view resolved for a rank, its refusal of what it cannot run, its NCCL
// calls, its swap-file layout, where a checkpoint keeps its state): a
// message, never a crash. A view that checkPlan passes but that lies
// outside the rank's arena is a finding.
//
//===----------------------------------------------------------------------===//

#include "dsc/Plan/PlanYAML.h"
#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"
#include "dsc/Plan/Report.h"

#include "Collectives.h"
#include "Arena.h"
#include "Nvme.h"
#include "StateLayout.h"

#include <cstdint>
#include <vector>

using namespace dsc;

static void use(const plan::Plan &P) {
  if (!plan::checkPlan(P).empty())
    return;
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  writePlanYAML(OS, P);
  OS << estimateJSON(P);
  printEstimateText(OS, P);
  // dsrun's host side, for the first and the last rank.
  if (!dsrun::checkRunnable(P).empty())
    return;
  for (uint32_t Rank : {0u, P.Settings.WorldSize - 1}) {
    dsrun::Arena A(P, Rank);
    for (uint32_t V = 0; V < P.Views.size(); ++V) {
      uint64_t End = A.offset(V) + P.Views[V].Elems *
                                       plan::dtypeBytes(P.Views[V].Type);
      if (End > (A.onDevice(V) ? A.deviceBytes() : A.hostBytes()))
        __builtin_trap();
    }
    for (uint32_t I = 0; I < P.Program.size(); ++I)
      (void)dsrun::collectiveCalls(A, I);
    dsrun::SwapLayout Swap(P);
    (void)Swap;
    // Where a checkpoint keeps the rank's state: a message, or stretches
    // inside their parts.
    dsrun::StateLayout L;
    if (dsrun::stateLayout(P, Rank, L).empty())
      for (const dsrun::StateSegment &S : L.Segments)
        if (S.Part >= L.Parts.size() ||
            S.Offset + (S.End - S.Begin) * S.ElemBytes > L.Parts[S.Part].Bytes)
          __builtin_trap();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string Error;
  if (auto P = plan::readPlan(Data, Size, Error))
    use(*P);
  if (Size >= 32) {
    std::vector<uint8_t> Fixed(Data, Data + Size);
    std::memcpy(Fixed.data(), plan::FileMagic, 8);
    Fixed[8] = plan::FormatVersion;
    Fixed[9] = Fixed[10] = Fixed[11] = 0;
    uint64_t N = Size;
    uint64_t Sum = plan::fnv1a(Fixed.data() + 32, Size - 32);
    for (int I = 0; I < 8; ++I) {
      Fixed[16 + I] = uint8_t(N >> (8 * I));
      Fixed[24 + I] = uint8_t(Sum >> (8 * I));
    }
    if (auto P = plan::readPlan(Fixed.data(), Fixed.size(), Error))
      use(*P);
  }
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  if (!Text.contains('\0')) {
    llvm::Expected<plan::Plan> Y = readPlanYAML(Text, "fuzz.yaml");
    if (Y)
      use(*Y);
    else
      llvm::consumeError(Y.takeError());
  }
  return 0;
}
