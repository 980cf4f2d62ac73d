//===- dsc.cpp - The dsc driver -------------------------------------------===//
//
// dsc checks, resolves and plans DeepSpeed ZeRO configurations. This file
// only dispatches to the subcommands; each lives in its own file and calls
// into lib/.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "dsc/Version.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace dsc::tool;

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::SetVersionPrinter(
      [](raw_ostream &OS) { OS << "dsc " << dsc::Version << "\n"; });
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "dsc: a compiler for DeepSpeed ZeRO training configurations\n\n"
          "  dsc lint ds_config.json...   check configs like DeepSpeed would\n"
          "  dsc explain KEY              what a config key means and does\n"
          "  dsc schema                   the JSON Schema of ds_config\n"
          "  dsc inspect model.onnx       parameters, modules, hidden size\n"
          "  dsc lower model.onnx         the training program, pass by pass\n"
          "  dsc resolve ds_config.json [model.onnx]  fill every \"auto\"\n"
          "  dsc plan ds_config.json model.onnx -o plan.bin  lower to a plan\n"
          "  dsc estimate ds_config.json model.onnx  memory per rank\n"
          "  dsc tune ds_config.json model.onnx --gpu H100  the fastest config that fits\n"
          "  dsc show plan.bin            print a plan as YAML\n"
          "  dsc dot plan.bin -o plan.svg draw a plan\n"
          "  dsc opt plan.yaml --pass=P   run planner passes one by one\n",
          &errs()))
    return ExitUsage;
  if (LintCommand)
    return runLint();
  if (ExplainCommand)
    return runExplain();
  if (SchemaCommand)
    return runSchema();
  if (InspectCommand)
    return runInspect();
  if (LowerCommand)
    return runLower();
  if (ResolveCommand)
    return runResolve();
  if (PlanCommand)
    return runPlan();
  if (EstimateCommand)
    return runEstimate();
  if (TuneCommand)
    return runTune();
  if (ShowCommand)
    return runShow();
  if (DotCommand)
    return runDot();
  if (OptCommand)
    return runOpt();
  errs() << "dsc: no command given; try 'dsc --help'\n";
  return ExitUsage;
}
