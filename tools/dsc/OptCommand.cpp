//===- OptCommand.cpp - dsc opt: planner passes one at a time -------------===//
//
// As mlir-opt runs passes on IR, dsc opt runs planner passes on a plan:
// the input is a plan as the passes before the first one asked for left it
// (dsc plan --print-after=PASS writes one), checked as far as it has come;
// the passes run in the pipeline's order; the output is checked again and
// printed. Each pass gets lit specs of its own this way (test/Plan/passes).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dsc/Plan/PlanYAML.h"
#include "dsc/Plan/Planner.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace dsc::tool {

cl::SubCommand OptCommand("opt", "Run planner passes on a plan, one after "
                                 "another (for testing each pass)");

static cl::opt<std::string> OptInput(cl::Positional,
                                     cl::desc("<plan.yaml or plan.bin>"),
                                     cl::Required, cl::sub(OptCommand));
static cl::list<std::string>
    OptPasses("pass", cl::desc("Passes to run, in the pipeline's order "
                               "(partition, buckets, prefetch, offload, "
                               "schedule, memory, placement, estimate)"),
              cl::CommaSeparated, cl::OneOrMore, cl::sub(OptCommand));
static cl::opt<std::string>
    OptOutput("o", cl::desc("Write the plan here (YAML, or plan.bin for a "
                            "complete plan) instead of printing it"),
              cl::value_desc("file"), cl::sub(OptCommand));

int runOpt() {
  const char *Tool = "dsc opt";
  auto Fail = [&](const Twine &Message, int Code) {
    WithColor::error(errs(), Tool) << Message << "\n";
    return Code;
  };
  ArrayRef<PlanPass> Pipeline = planPasses();
  std::vector<size_t> Order;
  for (const std::string &Name : OptPasses) {
    auto It = find_if(Pipeline, [&](const PlanPass &P) { return Name == P.Name; });
    if (It == Pipeline.end()) {
      std::string Names;
      for (const PlanPass &P : Pipeline)
        Names += std::string(Names.empty() ? "" : ", ") + P.Name;
      return Fail("--pass=" + Name + ": no such pass; the passes are " + Names,
                  ExitUsage);
    }
    size_t At = size_t(It - Pipeline.begin());
    if (!Order.empty() && At != Order.back() + 1)
      return Fail("--pass=" + Name + " does not follow " +
                      Pipeline[Order.back()].Name +
                      ": give passes in the pipeline's order, none left out",
                  ExitUsage);
    Order.push_back(At);
  }
  // The input must be as far as the passes before the first one take it.
  Expected<plan::Plan> P =
      readPlanFile(OptInput, plan::PlanStage(Order.front()));
  if (!P)
    return Fail(toString(P.takeError()) + " (the input of --pass=" +
                    Pipeline[Order.front()].Name +
                    " is a plan after the passes before it: dsc plan "
                    "--print-after=PASS writes one)",
                ExitFindings);
  for (size_t At : Order) {
    if (Error E = Pipeline[At].Run(*P))
      return Fail(Twine(Pipeline[At].Name) + ": " + toString(std::move(E)),
                  ExitFindings);
    std::string Problem = plan::checkPlan(*P, plan::PlanStage(At + 1));
    if (!Problem.empty())
      return Fail(Twine("internal error: after ") + Pipeline[At].Name +
                      " the plan is inconsistent: " + Problem,
                  ExitFindings);
  }
  if (OptOutput.empty()) {
    writePlanYAML(outs(), *P);
    return ExitClean;
  }
  if (!StringRef(OptOutput).endswith(".bin")) {
    std::error_code EC;
    raw_fd_ostream OS(OptOutput, EC, sys::fs::OF_None);
    if (EC)
      return Fail(OptOutput + ": " + EC.message(), ExitUsage);
    writePlanYAML(OS, *P);
    return ExitClean;
  }
  if (Order.back() + 1 != Pipeline.size())
    return Fail("-o " + OptOutput + ": plan.bin holds complete plans; write "
                "YAML, or run the passes up to " + Pipeline.back().Name,
                ExitUsage);
  if (Error E = writePlanFile(OptOutput, *P))
    return Fail(toString(std::move(E)), ExitUsage);
  return ExitClean;
}

} // namespace dsc::tool
