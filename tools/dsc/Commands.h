//===- Commands.h - The subcommands of dsc ----------------------*- C++ -*-===//

#ifndef DSC_TOOLS_DSC_COMMANDS_H
#define DSC_TOOLS_DSC_COMMANDS_H

#include "llvm/Support/CommandLine.h"

namespace dsc::tool {

/// Exit codes shared by every subcommand.
enum ExitCode { ExitClean = 0, ExitFindings = 1, ExitUsage = 2 };

extern llvm::cl::SubCommand LintCommand;
extern llvm::cl::SubCommand ExplainCommand;
extern llvm::cl::SubCommand SchemaCommand;
extern llvm::cl::SubCommand InspectCommand;
extern llvm::cl::SubCommand LowerCommand;
extern llvm::cl::SubCommand ResolveCommand;
extern llvm::cl::SubCommand PlanCommand;
extern llvm::cl::SubCommand EstimateCommand;
extern llvm::cl::SubCommand TuneCommand;
extern llvm::cl::SubCommand ShowCommand;
extern llvm::cl::SubCommand DotCommand;
extern llvm::cl::SubCommand OptCommand;

int runLint();
int runExplain();
int runSchema();
int runInspect();
int runLower();
int runResolve();
int runPlan();
int runEstimate();
int runTune();
int runShow();
int runDot();
int runOpt();

} // namespace dsc::tool

#endif
