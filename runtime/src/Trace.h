//===- Trace.h - A step's instructions, measured and planned ----*- C++ -*-===//
//
// dsrun --trace FILE writes the last timed step as a Chrome trace (open it
// in Perfetto or chrome://tracing): every instruction a slice on its
// stream as dsrun measured it, and below the same instructions where the
// plan's replay put them (their estimated durations, PlanFacts.h), so
// that where a step departs from its plan shows instruction by
// instruction. Host code, tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_TRACE_H
#define DSRUN_TRACE_H

#include "Exposed.h"

#include "dsc/PlanFormat.h"

#include <string>
#include <vector>

namespace dsrun {

/// What an instruction is called, in traces and messages: the op's name
/// for forward and backward work, else the kind and the index of what it
/// acts on ("reduce_scatter 3").
std::string instructionName(const dsc::plan::Plan &P,
                            const dsc::plan::Instruction &In);

/// The trace's JSON: Measured has one span per instruction of P.Program,
/// in ms from the step's start (measured spans, as the step split uses).
std::string chromeTrace(const dsc::plan::Plan &P,
                        const std::vector<Span> &Measured, uint32_t Step,
                        int Rank);

} // namespace dsrun

#endif
