//===- MemoryView.cpp - Device bytes over the step ------------------------===//
//
// A stacked bar chart drawn with absolutely placed boxes (Graphviz's "nop"
// layout): the step's instructions in order along x, cut into bars; each
// bar shows the live bytes by category at the fullest instruction inside
// it, on top of the fixed costs. The peak bar is outlined and explained;
// the GPU's memory, when the plan has one, is a red line.
//
//===----------------------------------------------------------------------===//

#include "Views.h"

#include "dsc/Plan/Report.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace dsc::viz {

namespace {

constexpr double ChartHeight = 360, BarWidth = 9, BarGap = 1;
constexpr unsigned MaxBars = 100;

std::string point(double X, double Y) {
  return formatv("{0:f1},{1:f1}!", X, Y).str();
}

} // namespace

Error drawMemory(Graph &G, const plan::Plan &P, const DrawOptions &O) {
  size_t Class = 0;
  if (O.Rank) {
    Expected<size_t> C = rankClassOf(P, *O.Rank);
    if (!C)
      return C.takeError();
    Class = *C;
  } else {
    for (size_t C = 0; C < P.Estimates.Ranks.size(); ++C)
      if (P.Estimates.Ranks[C].DevicePeakBytes >
          P.Estimates.Ranks[Class].DevicePeakBytes)
        Class = C;
  }
  const plan::RankEstimate &R = P.Estimates.Ranks[Class];
  size_t N = P.Program.size();
  constexpr unsigned K = plan::NumCategories;

  // Live bytes per category at each instruction.
  std::vector<std::array<int64_t, K>> Live(N + 1);
  for (auto &Row : Live)
    Row.fill(0);
  for (const plan::Buffer &B : P.Buffers)
    if (B.Space == plan::MemorySpace::Device)
      for (const plan::Interval &L : B.Live) {
        Live[L.Begin][unsigned(B.What)] += B.Bytes[Class];
        Live[L.End][unsigned(B.What)] -= B.Bytes[Class];
      }
  for (size_t I = 1; I <= N; ++I)
    for (unsigned C = 0; C < K; ++C)
      Live[I][C] += Live[I - 1][C];
  auto Total = [&](size_t I) {
    int64_t S = 0;
    for (int64_t V : Live[I])
      S += V;
    return S;
  };

  uint64_t Fixed = R.DeviceFixedBytes;
  uint64_t Limit = P.Settings.Machine.GpuMemoryBytes;
  uint64_t Peak = std::max<uint64_t>(R.DeviceLiveBoundBytes + Fixed, 1);
  // A limit far above the peak would flatten the chart: it is named
  // instead of drawn.
  bool DrawLimit = Limit && Limit <= Peak * 3 / 2;
  double Top = double(DrawLimit ? std::max(Peak, Limit) : Peak);
  double Scale = ChartHeight / (Top * 1.05);
  size_t Bars = std::min<size_t>(N, MaxBars);
  G.set(G.root(), "fontname", "Helvetica");
  G.set(G.root(), "label",
        formatv("device memory of rank(s) {0} over one step ({1} "
                "instructions, {2} per bar): peak {3} at instruction {4} = "
                "arena {5} + fixed {6}",
                P.Layout.RankClasses[Class].Ranks.front().First, N,
                (N + Bars - 1) / std::max<size_t>(Bars, 1),
                formatBytes(R.DevicePeakBytes), R.PeakInstruction,
                formatBytes(R.DeviceArenaBytes), formatBytes(Fixed))
            .str());
  G.set(G.root(), "labelloc", "t");

  auto Box = [&](StringRef Name, double X, double Y, double W, double H,
                 StringRef Color) {
    Agnode_t *B = G.node(G.root(), Name);
    G.set(B, "shape", "box");
    G.set(B, "style", "filled");
    G.set(B, "color", Color);
    G.set(B, "fillcolor", Color);
    G.set(B, "label", "");
    G.set(B, "fixedsize", "true");
    G.set(B, "width", formatv("{0:f3}", W / 72).str());
    G.set(B, "height", formatv("{0:f3}", std::max(H, 0.5) / 72).str());
    G.set(B, "pos", point(X + W / 2, Y + H / 2));
    return B;
  };
  auto Text = [&](StringRef Name, double X, double Y, StringRef Label,
                  StringRef Size = "10") {
    Agnode_t *T = G.node(G.root(), Name);
    G.set(T, "shape", "plaintext");
    G.set(T, "label", Label);
    G.set(T, "fontsize", Size);
    G.set(T, "fontname", "Helvetica");
    G.set(T, "pos", point(X, Y));
    return T;
  };

  double X0 = 60;
  size_t PeakBar = 0;
  for (size_t Bar = 0; Bar < Bars; ++Bar) {
    size_t Begin = Bar * N / Bars, End = (Bar + 1) * N / Bars;
    size_t At = Begin;
    for (size_t I = Begin; I < End; ++I)
      if (Total(I) > Total(At))
        At = I;
    if (R.PeakInstruction >= Begin && R.PeakInstruction < End) {
      At = R.PeakInstruction;
      PeakBar = Bar;
    }
    double X = X0 + Bar * (BarWidth + BarGap), Y = 0;
    double H = Fixed * Scale;
    Box(formatv("b{0}fixed", Bar).str(), X, Y, BarWidth, H, "#bab0ac");
    Y += H;
    for (unsigned C = 0; C < K; ++C) {
      if (Live[At][C] <= 0)
        continue;
      H = Live[At][C] * Scale;
      Box(formatv("b{0}c{1}", Bar, C).str(), X, Y, BarWidth, H,
          categoryColor(plan::Category(C)));
      Y += H;
    }
  }
  double Width = Bars * (BarWidth + BarGap);

  // The peak, explained.
  double PeakX = X0 + PeakBar * (BarWidth + BarGap) + BarWidth / 2;
  double PeakY = (R.DeviceLiveBoundBytes + Fixed) * Scale;
  std::string Why = "peak " + formatBytes(R.DevicePeakBytes);
  for (const plan::CategoryBytes &C : R.AtPeak)
    Why += "\\n" + std::string(plan::enumName(C.What)) + " " +
           formatBytes(C.Bytes);
  Why += "\\nfixed " + formatBytes(Fixed);
  Text("peaklabel", PeakX, PeakY + 60, Why, "9");
  Box("peakmark", PeakX - 0.5, PeakY, 1, 20, "#000000");

  if (DrawLimit) {
    double Y = Limit * Scale;
    Box("limit", X0, Y, Width, 1.5, "#d62728");
    Text("limitlabel", X0 + Width + 70, Y,
         P.Settings.Machine.GpuName + " " + formatBytes(Limit));
  } else if (Limit) {
    Text("limitlabel", X0 + Width + 70, ChartHeight,
         P.Settings.Machine.GpuName + " " + formatBytes(Limit) + "\n" +
             formatBytes(Limit - std::min(Limit, Peak)) + " above the peak");
  }
  // Axis ticks.
  for (unsigned T = 0; T <= 4; ++T) {
    double Bytes = Top * 1.05 * T / 4;
    Text(formatv("tick{0}", T).str(), X0 - 30, Bytes * Scale,
         formatBytes(uint64_t(Bytes)), "9");
  }
  Text("xaxis", X0 + Width / 2, -20,
       "program order: forward, backward, optimizer step");
  // Legend.
  double LY = -45;
  double LX = X0;
  Box("legendfixed", LX, LY, 10, 10, "#bab0ac");
  Text("legendfixedtext", LX + 45, LY + 5, "fixed costs", "9");
  LX += 100;
  for (unsigned C = 0; C < K; ++C) {
    bool Used = false;
    for (size_t I = 0; I < N && !Used; ++I)
      Used = Live[I][C] > 0;
    if (!Used)
      continue;
    Box(formatv("legend{0}", C).str(), LX, LY, 10, 10,
        categoryColor(plan::Category(C)));
    Text(formatv("legendtext{0}", C).str(), LX + 55, LY + 5,
         plan::enumName(plan::Category(C)), "9");
    LX += 115;
  }
  return Error::success();
}

} // namespace dsc::viz
