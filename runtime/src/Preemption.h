//===- Preemption.h - Stopping a run when the job is told to stop -*- C++ -*-===//
//
// Slurm, Kubernetes and torchrun stop a job with SIGTERM and, a grace
// period later, SIGKILL; a terminal sends SIGINT. On the first of these a
// rank finishes the step in flight, agrees with every other rank on the
// step to stop after (one all-reduce per step), writes a checkpoint of
// that step when --save is given, and exits with ExitStopped. If that
// takes longer than --term-timeout seconds the process exits with
// ExitTermTimeout instead (the previous checkpoint stays whole: a save is
// renamed into place only when every file is written). A second signal,
// two seconds or more after the first, ends the process at once, killed
// by that signal; one sooner is the same request arriving twice (a
// scheduler that signals every process of the job, and dsrun -n's
// launcher passing the signal on).
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_PREEMPTION_H
#define DSRUN_PREEMPTION_H

namespace dsrun {

/// Exit status of a run that stopped on a signal at a step boundary (with
/// its checkpoint written, under --save): EX_TEMPFAIL, "try again later".
constexpr int ExitStopped = 75;
/// Exit status when --term-timeout passed before the run could stop.
constexpr int ExitTermTimeout = 124;

/// Catches SIGTERM and SIGINT as the header says; TermTimeoutSeconds
/// bounds the time from the first signal to the exit.
void catchStopSignals(unsigned TermTimeoutSeconds);

/// The signal that asked this process to stop (SIGTERM, SIGINT), 0 when
/// none has.
int stopSignal();

/// Another rank caught Signal and every rank stops: this one too, within
/// the same --term-timeout (a later signal here is a second one).
void stopRequestedElsewhere(int Signal);

/// The signal's name for messages: "SIGTERM".
const char *signalName(int Signal);

/// For dsrun -n: the launcher passes the first SIGTERM or SIGINT on to
/// its children as SIGTERM, and a second (two seconds or more later) as
/// SIGKILL. Children is read from the handler: pids, 0 for a child not
/// started or reaped, Count of them.
void forwardStopSignals(const volatile int *Children, int Count);

} // namespace dsrun

#endif
