//===- Trace.cpp - A step's instructions, measured and planned ------------===//

#include "Trace.h"

#include "dsc/PlanFacts.h"
#include "dsc/SafeTensors.h"

#include <cstdio>

namespace plan = dsc::plan;

namespace dsrun {

std::string instructionName(const plan::Plan &P, const plan::Instruction &In) {
  std::string Name = plan::enumName(In.Kind);
  if ((In.Kind == plan::InstrKind::Forward ||
       In.Kind == plan::InstrKind::Backward) &&
      In.Arg < P.Ops.size())
    return Name + " " + P.Ops[In.Arg].Name;
  if (In.Arg != plan::NoIndex)
    Name += " " + std::to_string(In.Arg);
  return Name;
}

std::string chromeTrace(const plan::Plan &P, const std::vector<Span> &Measured,
                        uint32_t Step, int Rank) {
  std::vector<plan::PlannedSpan> Planned = plan::replaySpans(P);
  std::vector<std::string> Events;
  char Line[256];
  // Process 0: measured; 1: planned. A thread per stream.
  const char *Processes[2] = {"measured", "planned"};
  for (int Pid = 0; Pid < 2; ++Pid) {
    snprintf(Line, sizeof(Line),
             "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,"
             "\"args\":{\"name\":\"rank %d, step %u, %s\"}}",
             Pid, Rank, Step, Processes[Pid]);
    Events.push_back(Line);
    for (unsigned S = 0; S < plan::NumStreams; ++S) {
      snprintf(Line, sizeof(Line),
               "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
               "\"tid\":%u,\"args\":{\"name\":\"%s\"}}",
               Pid, S, plan::enumName(plan::Stream(S)));
      Events.push_back(Line);
    }
  }
  for (size_t I = 0; I < P.Program.size() && I < Measured.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    std::string Name = dsc::safetensors::quote(instructionName(P, In));
    double Us[2][2] = {{Measured[I].Start * 1e3,
                        (Measured[I].Finish - Measured[I].Start) * 1e3},
                       {double(Planned[I].Start) / 1e3,
                        double(Planned[I].Finish - Planned[I].Start) / 1e3}};
    for (int Pid = 0; Pid < 2; ++Pid) {
      snprintf(Line, sizeof(Line),
               "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,"
               "\"dur\":%.3f,\"args\":{\"instruction\":%zu,\"micro\":%u},"
               "\"name\":",
               Pid, unsigned(In.On), Us[Pid][0], Us[Pid][1], I, In.Micro);
      Events.push_back(Line + Name + "}");
    }
  }
  std::string Out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (size_t I = 0; I < Events.size(); ++I)
    Out += Events[I] + (I + 1 < Events.size() ? ",\n" : "\n");
  return Out + "]}\n";
}

} // namespace dsrun
