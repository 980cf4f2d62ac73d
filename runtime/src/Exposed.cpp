//===- Exposed.cpp - Where a step's compute stream stood still ------------===//

#include "Exposed.h"

#include <algorithm>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

enum class Blame { Communication, Offload, Other };

Blame blameOf(plan::Stream S) {
  switch (S) {
  case plan::Stream::Comm:
    return Blame::Communication;
  case plan::Stream::CopyIn:
  case plan::Stream::CopyOut:
  case plan::Stream::Host:
    return Blame::Offload;
  default:
    return Blame::Other;
  }
}

class Walker {
public:
  Walker(const plan::Plan &P, const std::vector<Span> &S, ExposedTime &Out)
      : P(P), S(S), Out(Out), StreamPrevious(P.Program.size(), plan::NoIndex) {
    uint32_t Last[5];
    std::fill(std::begin(Last), std::end(Last), plan::NoIndex);
    for (uint32_t I = 0; I < P.Program.size(); ++I) {
      unsigned K = unsigned(P.Program[I].On);
      StreamPrevious[I] = Last[K];
      Last[K] = I;
    }
  }

  /// Of I's waits (and, with Stream, the instruction before it on its
  /// stream), the one that finished last.
  uint32_t heldBy(uint32_t I, bool Stream) const {
    uint32_t Best = plan::NoIndex;
    auto Consider = [&](uint32_t W) {
      if (W < S.size() && (Best == plan::NoIndex || S[W].Finish > S[Best].Finish))
        Best = W;
    };
    for (uint32_t W : P.Program[I].Waits)
      Consider(W);
    if (Stream)
      Consider(StreamPrevious[I]);
    return Best;
  }

  /// Blames the compute stream's idle [From, To) on X and, before X
  /// started, on what held X.
  void blame(uint32_t X, double From, double To) {
    while (To > From) {
      if (X == plan::NoIndex || S[X].Finish <= From ||
          blameOf(P.Program[X].On) == Blame::Other) {
        add(Blame::Other, To - From); // Nothing else was running.
        return;
      }
      double Begin = std::max(From, S[X].Start);
      add(blameOf(P.Program[X].On), To - Begin);
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
  // Event timestamps are coarse: gaps shorter than this are none.
  const double Tolerance = 1e-3;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    if (P.Program[I].On != plan::Stream::Compute)
      continue;
    const Span &X = Spans[I];
    if (X.Start > Busy + Tolerance)
      W.blame(W.heldBy(I, false), Busy, X.Start);
    Out.ComputeMs += std::max(0.0, X.Finish - std::max(Busy, X.Start));
    Busy = std::max(Busy, X.Finish);
  }
  // After the compute stream's last instruction: whatever ended last.
  if (StepMs > Busy + Tolerance) {
    uint32_t Last = plan::NoIndex;
    for (uint32_t I = 0; I < Spans.size(); ++I)
      if (Last == plan::NoIndex || Spans[I].Finish > Spans[Last].Finish)
        Last = I;
    W.blame(Last, Busy, StepMs);
  }
  return Out;
}

} // namespace dsrun
