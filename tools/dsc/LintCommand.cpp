//===- LintCommand.cpp - dsc lint -----------------------------------------===//

#include "Commands.h"

#include "dsc/Config/AccelerateConfig.h"
#include "dsc/Config/Lint.h"
#include "dsc/Config/SchemaExport.h"
#include "dsc/Version.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dsc::tool {

cl::SubCommand LintCommand("lint", "Check DeepSpeed configs like DeepSpeed, "
                                   "the HF Trainer and accelerate would");

static cl::list<std::string>
    Files(cl::Positional,
          cl::desc("<ds_config.json | accelerate.yaml | ->..."),
          cl::sub(LintCommand));
static cl::opt<bool> ListRules("list-rules",
                               cl::desc("Print every diagnostic code as a "
                                        "Markdown table and exit"),
                               cl::sub(LintCommand));
static cl::opt<int64_t>
    WorldSize("world-size",
              cl::desc("Data-parallel world size for the batch checks"),
              cl::init(0), cl::sub(LintCommand));
static cl::opt<std::string>
    Target("target",
           cl::desc("Who reads the config: deepspeed, hf-trainer or "
                    "accelerate (default: hf-trainer when it holds \"auto\", "
                    "else deepspeed)"),
           cl::sub(LintCommand));
static cl::opt<std::string> ClientOptimizer(
    "client-optimizer",
    cl::desc("Class of the optimizer your code passes to deepspeed.initialize "
             "when the config has none (torch.optim.SGD, DeepSpeedCPUAdam, "
             "...)"),
    cl::sub(LintCommand));
static cl::opt<std::string> MixedPrecision(
    "mixed-precision",
    cl::desc("accelerate's --mixed_precision for the run (no, fp16, bf16, "
             "fp8)"),
    cl::sub(LintCommand));
enum class Format { Text, JSON, SARIF };
static cl::opt<Format> OutputFormat(
    "format", cl::desc("Output format"),
    cl::values(clEnumValN(Format::Text, "text", "clang-style diagnostics"),
               clEnumValN(Format::JSON, "json", "one JSON document"),
               clEnumValN(Format::SARIF, "sarif", "SARIF 2.1.0")),
    cl::init(Format::Text), cl::sub(LintCommand));
static cl::list<std::string>
    Warnings("W", cl::Prefix,
             cl::desc("-Werror: warnings are errors; -Wno-CODE: drop the "
                      "findings of rule CODE"),
             cl::value_desc("error|no-CODE"), cl::sub(LintCommand));
static cl::opt<bool> Fix("fix",
                         cl::desc("Rename deprecated keys, move misplaced "
                                  "ones and apply the other safe fixes, in "
                                  "place"),
                         cl::sub(LintCommand));
static cl::opt<bool> NoSummary("no-summary",
                               cl::desc("Do not print the summary line"),
                               cl::sub(LintCommand));
enum class ColorChoice { Auto, Always, Never };
static cl::opt<ColorChoice> Color(
    "color", cl::desc("Colour text output"),
    cl::values(clEnumValN(ColorChoice::Auto, "auto", "on a terminal"),
               clEnumValN(ColorChoice::Always, "always", "always"),
               clEnumValN(ColorChoice::Never, "never", "never")),
    cl::init(ColorChoice::Auto), cl::sub(LintCommand));

static int usageError(const Twine &Message) {
  WithColor::error(errs(), "dsc lint") << Message << "\n";
  return ExitUsage;
}

static std::unique_ptr<MemoryBuffer> readInput(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFileOrSTDIN(Path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!Buffer) {
    WithColor::error(errs(), "dsc lint")
        << Path << ": " << Buffer.getError().message() << "\n";
    return nullptr;
  }
  if (Path == "-")
    return MemoryBuffer::getMemBufferCopy((*Buffer)->getBuffer(), "<stdin>");
  return std::move(*Buffer);
}

/// Lints one input into Engine; the format follows the file name.
static void lintOne(DiagnosticEngine &Engine,
                    std::unique_ptr<MemoryBuffer> Buffer,
                    const LintOptions &Options) {
  bool Yaml = isYamlPath(Buffer->getBufferIdentifier());
  unsigned ID = Engine.addFile(std::move(Buffer));
  if (Yaml)
    lintAccelerateConfig(Engine, ID, Options);
  else
    lintConfig(Engine, ID, Options);
}

/// Applies the fixes of every JSON file in Engine and writes it back.
/// Fixes whose edits overlap are left for the next round; rounds repeat
/// until nothing changes, so removing two neighbouring keys takes two.
static bool applyFixes(const DiagnosticEngine &First,
                       const LintOptions &Options) {
  constexpr unsigned MaxRounds = 8;
  bool OK = true;
  for (unsigned ID : First.files()) {
    StringRef Path = First.path(ID);
    if (isYamlPath(Path)) {
      if (llvm::any_of(First.diagnostics(), [&](const Diagnostic &D) {
            return D.BufferID == ID && !D.FixIts.empty();
          }))
        errs() << "dsc lint: " << Path
               << ": --fix rewrites JSON configs only; apply the hints by "
                  "hand\n";
      continue;
    }
    std::string Text =
        First.sourceMgr().getMemoryBuffer(ID)->getBuffer().str();
    unsigned Total = 0;
    for (unsigned Round = 0; Round < MaxRounds; ++Round) {
      DiagnosticEngine Engine;
      unsigned Current = Engine.addFile(
          MemoryBuffer::getMemBufferCopy(Text, Path));
      lintConfig(Engine, Current, Options);
      unsigned Applied = 0;
      std::string Fixed = applyFixIts(Engine, Current, Applied);
      if (!Applied)
        break;
      Total += Applied;
      Text = std::move(Fixed);
    }
    if (!Total)
      continue;
    if (Path == "<stdin>") {
      outs() << Text;
      continue;
    }
    std::error_code EC;
    raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
    if (EC) {
      WithColor::error(errs(), "dsc lint")
          << Path << ": cannot write: " << EC.message() << "\n";
      OK = false;
      continue;
    }
    OS << Text;
    errs() << "dsc lint: " << Path << ": applied " << Total
           << (Total == 1 ? " fix\n" : " fixes\n");
  }
  return OK;
}

int runLint() {
  if (ListRules) {
    printRuleReference(outs(), lintRules());
    return ExitClean;
  }
  if (Files.empty())
    return usageError("no input files; try 'dsc lint --help'");
  LintOptions Options;
  if (!Target.empty() && !(Options.Target = parseLintTarget(Target)))
    return usageError("unknown --target '" + Target +
                      "'; use deepspeed, hf-trainer or accelerate");
  if (WorldSize.getNumOccurrences()) {
    if (WorldSize <= 0)
      return usageError("--world-size must be a positive integer");
    Options.WorldSize = WorldSize;
  }
  if (!ClientOptimizer.empty())
    Options.ClientOptimizer = ClientOptimizer;
  if (!MixedPrecision.empty()) {
    std::string MP = StringRef(MixedPrecision).lower();
    if (MP != "no" && MP != "fp16" && MP != "bf16" && MP != "fp8")
      return usageError("--mixed-precision must be no, fp16, bf16 or fp8");
    Options.MixedPrecision = MP;
  }
  bool Werror = false;
  std::vector<std::string> Discarded;
  for (StringRef W : Warnings) {
    if (W == "error")
      Werror = true;
    else if (W.consume_front("no-") && !W.empty())
      Discarded.push_back(W.str());
    else
      return usageError("unknown option -W" + W +
                        "; use -Werror or -Wno-CODE");
  }

  DiagnosticEngine Engine;
  bool IOError = false;
  for (const std::string &Path : Files) {
    std::unique_ptr<MemoryBuffer> Buffer = readInput(Path);
    if (!Buffer) {
      IOError = true;
      continue;
    }
    lintOne(Engine, std::move(Buffer), Options);
  }
  if (Fix) {
    if (!applyFixes(Engine, Options))
      IOError = true;
    // Report what is left after the fixes.
    DiagnosticEngine After;
    for (unsigned ID : Engine.files()) {
      StringRef Path = Engine.path(ID);
      if (Path == "<stdin>")
        continue;
      if (std::unique_ptr<MemoryBuffer> Buffer = readInput(Path))
        lintOne(After, std::move(Buffer), Options);
    }
    Engine = std::move(After);
  }
  for (const std::string &Code : Discarded)
    Engine.discard(Code);
  if (Werror)
    Engine.promoteWarningsToErrors();

  switch (OutputFormat) {
  case Format::Text: {
    bool Colors = Color == ColorChoice::Always ||
                  (Color == ColorChoice::Auto &&
                   sys::Process::StandardOutIsDisplayed());
    emitText(Engine, outs(), Colors);
    unsigned Errors = Engine.count(Severity::Error);
    unsigned WarningCount = Engine.count(Severity::Warning);
    size_t FileCount = Engine.files().size();
    if (!NoSummary)
      outs() << Errors << (Errors == 1 ? " error" : " errors") << " and "
             << WarningCount << (WarningCount == 1 ? " warning" : " warnings")
             << " in " << FileCount << (FileCount == 1 ? " file" : " files")
             << "\n";
    break;
  }
  case Format::JSON:
    emitJSON(Engine, outs());
    break;
  case Format::SARIF:
    emitSARIF(Engine, lintRules(), dsc::Version, outs());
    break;
  }
  if (IOError)
    return ExitUsage;
  return Engine.count(Severity::Error) ? ExitFindings : ExitClean;
}

} // namespace dsc::tool
