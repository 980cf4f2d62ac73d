//===- Preemption.cpp - Stopping a run when the job is told to stop -------===//
//
// Everything a handler does is async-signal-safe: it stores a flag, arms
// alarm(2), writes a fixed message with write(2), kills or exits.
//
//===----------------------------------------------------------------------===//

#include "Preemption.h"

#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <unistd.h>

namespace dsrun {

namespace {

volatile sig_atomic_t Received = 0;
unsigned Timeout = 0;
/// When the first signal came, in ms of CLOCK_MONOTONIC (set before
/// Received, so that whoever sees Received sees the time).
volatile int64_t ReceivedAtMs = 0;
constexpr int64_t SameRequestMs = 2000;

int64_t nowMs() {
  timespec T;
  clock_gettime(CLOCK_MONOTONIC, &T);
  return int64_t(T.tv_sec) * 1000 + T.tv_nsec / 1000000;
}

/// Whether a signal now is the first one arriving again.
bool sameRequest() {
  return Received && nowMs() - ReceivedAtMs < SameRequestMs;
}

void receive(int Signal) {
  ReceivedAtMs = nowMs();
  Received = Signal;
}

void say(const char *Message) {
  ssize_t Ignored = write(STDERR_FILENO, Message, strlen(Message));
  (void)Ignored;
}

void onStop(int Signal) {
  // A scheduler that signals every process of the job and a launcher that
  // passes the signal on reach a rank twice at once: that is one request.
  if (sameRequest())
    return;
  if (Received) {
    // The second: at once, as the signal's default would have.
    say("dsrun: a second signal: stopping now\n");
    ::signal(Signal, SIG_DFL);
    raise(Signal);
    return;
  }
  receive(Signal);
  say(Signal == SIGINT ? "dsrun: SIGINT: stopping after the step in flight "
                         "(a second signal stops at once)\n"
                       : "dsrun: SIGTERM: stopping after the step in flight "
                         "(a second signal stops at once)\n");
  alarm(Timeout);
}

void onAlarm(int) {
  say("dsrun: --term-timeout passed before the run could stop; exiting "
      "(the last complete checkpoint stays as it was)\n");
  _exit(ExitTermTimeout);
}

const volatile int *Forwarded = nullptr;
int ForwardedCount = 0;

void onLauncherStop(int Signal) {
  if (sameRequest())
    return;
  int Send = Received ? SIGKILL : SIGTERM;
  if (!Received)
    receive(Signal);
  for (int I = 0; I < ForwardedCount; ++I)
    if (Forwarded[I] > 0)
      kill(Forwarded[I], Send);
}

void install(int Signal, void (*Handler)(int)) {
  struct sigaction A;
  memset(&A, 0, sizeof(A));
  A.sa_handler = Handler;
  // One handler at a time: a SIGINT landing inside the SIGTERM handler
  // waits for it.
  sigemptyset(&A.sa_mask);
  sigaddset(&A.sa_mask, SIGTERM);
  sigaddset(&A.sa_mask, SIGINT);
  // A signal that interrupts a system call restarts it: the run goes on
  // to the step's end as if nothing happened.
  A.sa_flags = SA_RESTART;
  sigaction(Signal, &A, nullptr);
}

} // namespace

void catchStopSignals(unsigned TermTimeoutSeconds) {
  Timeout = TermTimeoutSeconds;
  install(SIGTERM, onStop);
  install(SIGINT, onStop);
  install(SIGALRM, onAlarm);
}

int stopSignal() { return Received; }

void stopRequestedElsewhere(int Signal) {
  if (Received)
    return;
  receive(Signal);
  alarm(Timeout);
}

const char *signalName(int Signal) {
  return Signal == SIGTERM ? "SIGTERM" : Signal == SIGINT ? "SIGINT" : "a signal";
}

void forwardStopSignals(const volatile int *Children, int Count) {
  Forwarded = Children;
  ForwardedCount = Count;
  install(SIGTERM, onLauncherStop);
  install(SIGINT, onLauncherStop);
}

} // namespace dsrun
