//===- LintFuzzer.cpp - libFuzzer target: the whole of dsc lint -----------===//
//
// Reader, schema walk, cross-field rules, dsc plan's treatments, fix-its and
// all three emitters on arbitrary input, as a ds_config and as an
// accelerate YAML.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/AccelerateConfig.h"
#include "dsc/Config/Lint.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace dsc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  for (const char *Name : {"fuzz.json", "fuzz.yaml"}) {
    DiagnosticEngine Engine;
    unsigned ID =
        Engine.addFile(llvm::MemoryBuffer::getMemBufferCopy(Text, Name));
    LintOptions Options;
    Options.WorldSize = 1 + Size % 16;
    // Half the inputs also take dsc plan's checks (PlanRules.cpp).
    Options.ForPlan = Size % 2 == 0;
    if (llvm::StringRef(Name).endswith(".yaml"))
      lintAccelerateConfig(Engine, ID, Options);
    else
      lintConfig(Engine, ID, Options);
    std::string Out;
    llvm::raw_string_ostream OS(Out);
    emitText(Engine, OS, /*Colors=*/false);
    emitJSON(Engine, OS);
    emitSARIF(Engine, lintRules(), "fuzz", OS);
    unsigned Applied = 0;
    (void)applyFixIts(Engine, ID, Applied);
  }
  return 0;
}
