//===- Exposed.cpp - Where a step's compute stream stood still ------------===//

#include "Exposed.h"
#include "dsc/PlanFacts.h"

#include <algorithm>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

enum class Blame { Communication, Offload, Other };

/// As the planner counts it (PlanFormat.h): by kind, not by stream.
Blame blameOf(const plan::Instruction &In) {
  return plan::isCommunication(In) ? Blame::Communication
         : plan::isOffload(In)     ? Blame::Offload
                                   : Blame::Other;
}

class Walker {
public:
  Walker(const plan::Plan &P, const std::vector<Span> &S, ExposedTime &Out)
      : P(P), S(S), Out(Out), StreamPrevious(P.Program.size(), plan::NoIndex) {
    uint32_t Last[plan::NumStreams];
    std::fill(std::begin(Last), std::end(Last), plan::NoIndex);
    for (uint32_t I = 0; I < P.Program.size(); ++I) {
      unsigned K = unsigned(P.Program[I].On);
      StreamPrevious[I] = Last[K];
      Last[K] = I;
    }
  }

  /// Of I's waits (and, with Stream, the instruction before it on its
  /// stream), the one that finished last. Only earlier instructions count,
  /// so that the walk back ends even on an edited plan.
  uint32_t heldBy(uint32_t I, bool Stream) const {
    uint32_t Best = plan::NoIndex;
    auto Consider = [&](uint32_t W) {
      if (W < I && (Best == plan::NoIndex || S[W].Finish > S[Best].Finish))
        Best = W;
    };
    for (uint32_t W : P.Program[I].Waits)
      Consider(W);
    if (Stream)
      Consider(StreamPrevious[I]);
    return Best;
  }

  /// Blames the compute stream's idle [From, To) on X while X ran and, before
  /// X started, on what held X. Time after X ended, before the next in the
  /// chain started, held nobody back but the host: other.
  void blame(uint32_t X, double From, double To) {
    while (To > From) {
      if (X == plan::NoIndex || S[X].Finish <= From ||
          blameOf(P.Program[X]) == Blame::Other) {
        add(Blame::Other, To - From); // Nothing else was running.
        return;
      }
      if (S[X].Finish < To) {
        add(Blame::Other, To - S[X].Finish);
        To = S[X].Finish;
      }
      double Begin = std::max(From, S[X].Start);
      add(blameOf(P.Program[X]), To - Begin);
      To = Begin;
      X = heldBy(X, true);
    }
  }

  void add(Blame B, double Ms) {
    (B == Blame::Communication ? Out.CommunicationMs
     : B == Blame::Offload     ? Out.OffloadMs
                               : Out.OtherMs) += Ms;
  }

private:
  const plan::Plan &P;
  const std::vector<Span> &S;
  ExposedTime &Out;
  std::vector<uint32_t> StreamPrevious;
};

} // namespace

ExposedTime exposedTime(const plan::Plan &P, const std::vector<Span> &Spans,
                        double StepMs) {
  ExposedTime Out;
  if (Spans.size() != P.Program.size())
    return Out;
  Walker W(P, Spans, Out);
  double Busy = 0; // The compute stream is busy until here.
  // Event timestamps are coarse: shorter gaps are not walked back.
  const double Tolerance = 1e-3;
  auto Idle = [&](uint32_t HeldBy, double To) {
    if (To > Busy + Tolerance)
      W.blame(HeldBy, Busy, To);
    else if (To > Busy)
      W.add(Blame::Other, To - Busy);
  };
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    if (In.On != plan::Stream::Compute)
      continue;
    const Span &X = Spans[I];
    Idle(W.heldBy(I, false), X.Start);
    // A collective on the compute stream (no overlap_comm) is exposed
    // communication, as the planner counts it.
    double Ran = std::max(0.0, X.Finish - std::max(Busy, X.Start));
    if (blameOf(In) == Blame::Other)
      Out.ComputeMs += Ran;
    else
      W.add(blameOf(In), Ran);
    Busy = std::max(Busy, X.Finish);
  }
  // After the compute stream's last instruction: whatever ended last.
  uint32_t Last = plan::NoIndex;
  for (uint32_t I = 0; I < Spans.size(); ++I)
    if (Last == plan::NoIndex || Spans[I].Finish > Spans[Last].Finish)
      Last = I;
  Idle(Last, StepMs);
  return Out;
}

} // namespace dsrun
