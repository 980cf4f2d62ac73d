//===- Report.cpp - What a step measured, beside what the plan said -------===//

#include "Executor.h"
#include "GemmTuning.h"

#include "Calibration.h"
#include "Trace.h"

#include "dsc/KernelTime.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

double mib(uint64_t Bytes) { return double(Bytes) / (1 << 20); }

/// One write per line: the other ranks write to the same stderr, and a
/// line cut in two by theirs cannot be read back by tools.
void writeLine(const std::string &Line) {
  for (size_t Done = 0; Done < Line.size();) {
    ssize_t N = write(2, Line.data() + Done, Line.size() - Done);
    if (N <= 0)
      return;
    Done += size_t(N);
  }
}

double gbps(double Bytes, double Ms) { return Ms > 0 ? Bytes / Ms / 1e6 : 0; }

FILE *openLog(const std::string &Path, int Rank, const char *Mode = "a") {
  if (Path.empty())
    return nullptr;
  std::string Name = Path;
  size_t At = Name.find("%r");
  if (At != std::string::npos)
    Name.replace(At, 2, std::to_string(Rank));
  else if (Rank != 0)
    return nullptr;
  return fopen(Name.c_str(), Mode);
}

} // namespace

void Executor::writeTrace(uint32_t Step) {
  std::string Trace = chromeTrace(P, LastSpans, Step, Process.Rank);
  FILE *File = openLog(Options.TracePath, Process.Rank, "w");
  bool Ok = File && fwrite(Trace.data(), 1, Trace.size(), File) == Trace.size();
  if (File)
    Ok = fclose(File) == 0 && Ok;
  if (!Ok && (Process.Rank == 0 || Options.TracePath.find("%r") !=
                                       std::string::npos))
    fprintf(stderr, "dsrun: rank %d: cannot write the trace %s\n",
            Process.Rank, Options.TracePath.c_str());
}

void Executor::reportValidation(uint32_t Step, double Loss, uint64_t Tokens) {
  if (Process.Rank != 0)
    return;
  char Line[200];
  snprintf(Line, sizeof(Line),
           "dsrun: step %u: validation loss %.5f (%llu tokens, no dropout)\n",
           Step, Loss, (unsigned long long)Tokens);
  writeLine(Line);
  if (FILE *Log = openLog(Options.JsonLog, 0)) {
    fprintf(Log, "{\"rank\":0,\"step\":%u,\"val_loss\":%.9g,"
                 "\"val_tokens\":%llu}\n",
            Step, Loss, (unsigned long long)Tokens);
    fclose(Log);
  }
}

void Executor::report(uint32_t Step, const StepTiming &T) {
  std::string Collectives, Json;
  for (auto &[Kind, C] : T.Collectives) {
    char Line[200];
    snprintf(Line, sizeof(Line), ", %s %.1f MiB in %.2f ms (bus %.1f GB/s)",
             Kind.c_str(), mib(uint64_t(C.Bytes)), C.Ms,
             gbps(C.BusBytes, C.Ms));
    Collectives += Line;
    snprintf(Line, sizeof(Line),
             ",\"%s\":{\"bytes\":%.0f,\"calls\":%u,\"ms\":%.3f,"
             "\"bus_gbps\":%.2f}",
             Kind.c_str(), C.Bytes, C.Calls, C.Ms, gbps(C.BusBytes, C.Ms));
    Json += Line;
  }
  std::string Copies;
  if (T.CopyInBytes + T.CopyOutBytes > 0) {
    char Line[200];
    snprintf(Line, sizeof(Line),
             ", copies in %.1f MiB at %.1f GB/s, out %.1f MiB at %.1f GB/s, "
             "host stream %.2f ms",
             mib(uint64_t(T.CopyInBytes)), gbps(T.CopyInBytes, T.CopyInMs),
             mib(uint64_t(T.CopyOutBytes)), gbps(T.CopyOutBytes, T.CopyOutMs),
             T.HostMs);
    Copies = Line;
  }
  if (T.NvmeReadBytes + T.NvmeWriteBytes > 0) {
    char Line[200];
    snprintf(Line, sizeof(Line),
             ", NVMe read %.1f MiB at %.2f GB/s, written %.1f MiB at %.2f GB/s",
             mib(uint64_t(T.NvmeReadBytes)), gbps(T.NvmeReadBytes, T.NvmeReadMs),
             mib(uint64_t(T.NvmeWriteBytes)),
             gbps(T.NvmeWriteBytes, T.NvmeWriteMs));
    Copies += Line;
  }
  const ExposedTime &E = T.Split;
  // Training: the loss (mean over micro steps and ranks) and the rate.
  std::string Loss, LossJson;
  if (real()) {
    double Loss0 = stepLoss();
    uint64_t StepTokens = uint64_t(P.Settings.GradAccum) * P.Settings.WorldSize *
                          P.Values[P.Training.Targets[0]].Elems;
    bool Fp16 = P.Settings.ParamDType == plan::DType::F16;
    bool Normed =
        Fp16 || std::strtod(P.Settings.GradientClipping.c_str(), nullptr) > 0;
    double Norm = Normed ? HostLosses[P.Settings.GradAccum] : -1;
    char Line[260], NormText[96] = "";
    if (Normed)
      snprintf(NormText, sizeof(NormText), " grad norm %.3f,", Norm);
    if (Fp16)
      snprintf(NormText + strlen(NormText), sizeof(NormText) - strlen(NormText),
               " loss scale %.0f%s,", double(HostStep->LossScale),
               HostStep->Overflow ? " (overflow: step skipped)" : "");
    // Model FLOP utilisation: the plan's kernel FLOPs (forward, backward,
    // any recomputation) per second against the GPU's dense peak.
    double Mfu = PeakFlops > 0 && T.StepMs > 0
                     ? StepFlops / (T.StepMs / 1e3) / PeakFlops
                     : 0;
    char MfuText[32] = "";
    if (Mfu > 0)
      snprintf(MfuText, sizeof(MfuText), " MFU %.1f%%,", 100 * Mfu);
    snprintf(Line, sizeof(Line), " loss %.4f, lr %.3g,%s %.0f tokens/s,%s",
             Loss0, double(HostStep->Lr), NormText,
             T.StepMs > 0 ? StepTokens / (T.StepMs / 1e3) : 0.0, MfuText);
    Loss = Line;
    // An overflowed step's norm is inf or NaN, which JSON cannot spell.
    char NormJson[32] = "null";
    if (std::isfinite(Norm))
      snprintf(NormJson, sizeof(NormJson), "%.6g", Norm);
    snprintf(Line, sizeof(Line),
             "\"loss\":%.6f,\"lr\":%.6g,\"grad_norm\":%s,\"tokens\":%llu,"
             "\"mfu\":%.4f,\"loss_scale\":%.9g,\"skipped\":%s,",
             Loss0, double(HostStep->Lr), NormJson, (unsigned long long)StepTokens,
             Mfu, double(HostStep->LossScale),
             HostStep->Overflow ? "true" : "false");
    LossJson = Line;
  }
  if (!T.Timed) {
    if (Process.Rank == 0) {
      char Head[240];
      snprintf(Head, sizeof(Head),
               "dsrun: step %u:%s %.2f ms (lean; enqueued in %.2f ms)\n", Step,
               Loss.c_str(), T.StepMs, T.EnqueueMs);
      writeLine(Head);
    }
    if (FILE *Log = openLog(Options.JsonLog, Process.Rank)) {
      fprintf(Log, "{\"rank\":%d,\"step\":%u,%s\"step_ms\":%.3f,"
                   "\"enqueue_ms\":%.3f,\"lean\":true}\n",
              Process.Rank, Step, LossJson.c_str(), T.StepMs, T.EnqueueMs);
      fclose(Log);
    }
    return;
  }
  if (Process.Rank == 0) {
    char Head[240];
    snprintf(Head, sizeof(Head),
             "dsrun: step %u:%s %.2f ms (compute %.2f ms, exposed communication "
             "%.2f ms, exposed offload %.2f ms, other %.2f ms)",
             Step, Loss.c_str(), T.StepMs, E.ComputeMs, E.CommunicationMs,
             E.OffloadMs, E.OtherMs);
    writeLine(Head + Collectives + Copies + "\n");
  }
  if (FILE *Log = openLog(Options.JsonLog, Process.Rank)) {
    fprintf(Log,
            "{\"rank\":%d,\"step\":%u,%s\"step_ms\":%.3f,\"compute_ms\":%.3f,"
            "\"exposed_comm_ms\":%.3f,\"exposed_offload_ms\":%.3f,"
            "\"other_ms\":%.3f,\"copy_in_bytes\":%.0f,\"copy_in_ms\":%.3f,"
            "\"copy_out_bytes\":%.0f,\"copy_out_ms\":%.3f,\"host_ms\":%.3f,"
            "\"nvme_read_bytes\":%.0f,\"nvme_read_ms\":%.3f,"
            "\"nvme_write_bytes\":%.0f,\"nvme_write_ms\":%.3f,"
            "\"collectives\":{%s}}\n",
            Process.Rank, Step, LossJson.c_str(), T.StepMs, E.ComputeMs, E.CommunicationMs,
            E.OffloadMs, E.OtherMs, T.CopyInBytes, T.CopyInMs, T.CopyOutBytes,
            T.CopyOutMs, T.HostMs, T.NvmeReadBytes, T.NvmeReadMs,
            T.NvmeWriteBytes, T.NvmeWriteMs,
            Json.empty() ? "" : Json.c_str() + 1);
    fclose(Log);
  }
}

void Executor::fitCollectiveRates(plan::Hardware &Rates) const {
  // Each kind's bus bytes over its time less the latency the planner adds
  // per call, over the steady timed steps. Stage 2's grouped reduces to
  // several roots are planned as the reduce-scatter they amount to.
  struct Sum {
    double BusBytes = 0, Ms = 0, Calls = 0;
  };
  // Over several nodes every collective over all ranks crosses the link
  // between them: what was measured is that link's rate. The calls within
  // hpZ's groups or MiCS's shard groups stay within a node where the
  // groups tile it, qgZ's within its node always; MiCS's replicas are one
  // rank of each group, and qgZ's exchange across nodes one rank of each
  // node. The planner costs qgZ's all-to-alls at the reduce-scatter's
  // rate (each sends the same share of its buffer), so they count as one.
  const plan::Info &S = P.Settings;
  uint32_t Group = S.HpzPartition > 1 ? S.HpzPartition : plan::partitionRanks(S);
  bool GroupsInNode = S.GpusPerNode % Group == 0;
  std::map<std::pair<bool, std::string>, Sum> ByKind;
  for (size_t I = firstSteadyStep(); I < Timings.size(); ++I)
    for (const auto &[Name, T] : Timings[I].Collectives) {
      if (Name == CopyKind)
        continue;
      std::string Kind = Name;
      bool InGroup = false, InNode = false;
      for (CommScope Scope :
           {CommScope::HpzGroup, CommScope::MicsShard, CommScope::MicsReplicas,
            CommScope::Node, CommScope::AcrossNodes}) {
        std::string Suffix = scopeSuffix(Scope);
        if (Kind.size() > Suffix.size() &&
            Kind.compare(Kind.size() - Suffix.size(), Suffix.size(),
                         Suffix) == 0) {
          Kind.resize(Kind.size() - Suffix.size());
          InGroup = Scope == CommScope::HpzGroup ||
                    Scope == CommScope::MicsShard;
          InNode = Scope == CommScope::Node;
        }
      }
      if (Kind == "reduce" || Kind == "all-to-all")
        Kind = "reduce-scatter";
      Sum &Into = ByKind[{S.Nodes > 1 && !InNode && !(InGroup && GroupsInNode),
                          Kind}];
      Into.BusBytes += T.BusBytes;
      Into.Ms += T.Ms;
      Into.Calls += T.Calls;
    }
  double Latency = double(S.Machine.CollectiveLatencyNanos) / 1e6;
  for (const auto &[Key, Total] : ByKind) {
    double Ms = Total.Ms - Total.Calls * Latency;
    if (Total.BusBytes <= 0 || Ms <= 0)
      continue;
    plan::CollectiveRate R;
    R.Kind = Key.second;
    R.BusBytesPerSec = uint64_t(Total.BusBytes / Ms * 1e3);
    (Key.first ? Rates.InterNodeRates : Rates.CollectiveRates).push_back(R);
  }
}

void Executor::fitKernelRates(plan::Hardware &Rates) const {
  // The profiled step's kernels, per kind and direction (--profile-step,
  // the last step by default with --calibration-out).
  double KernelMs = 0;
  unsigned Launches = 0;
  for (const ModelProgram::KindTime &K : Model.Profiled) {
    plan::KernelRate R = plan::fitKernelRate(K.Kind, K.Backward, K.Flops,
                                             K.Bytes, K.Ms * 1e6,
                                             P.Settings.Machine);
    if (R.FlopsPerSec || R.BytesPerSec)
      Rates.KernelRates.push_back(R);
    KernelMs += K.Ms;
    Launches += K.Launches;
  }
  size_t First = firstSteadyStep();
  if (!Launches || Timings.size() <= First)
    return;
  // The compute stream's time in a step (lean where there are lean steps,
  // less what the timed steps spent waiting), less the kernels and what
  // the plan puts on the stream besides them (the optimizer), spread over
  // the launches: the gap between two kernels.
  double Step = 0, Waiting = 0;
  for (size_t I = First; I < Timings.size(); ++I) {
    const ExposedTime &X = Timings[I].Split;
    Step += Timings[I].StepMs;
    Waiting += X.CommunicationMs + X.OffloadMs + X.OtherMs;
  }
  size_t N = Timings.size() - First;
  Step = LeanMeanMs > 0 ? LeanMeanMs : Step / double(N);
  double Besides = 0;
  for (const plan::Instruction &I : P.Program)
    if (I.On == plan::Stream::Compute && I.Kind != plan::InstrKind::Forward &&
        I.Kind != plan::InstrKind::Backward)
      Besides += double(I.Nanos) / 1e6;
  double Gap = Step - Waiting / double(N) - KernelMs - Besides;
  if (Gap > 0)
    Rates.KernelGapNanos = uint64_t(Gap / Launches * 1e6);
}

size_t Executor::firstSteadyStep() const {
  // The first step pays for warm-up (NCCL connections, cuBLAS heuristics):
  // the later ones are the steady state the plan estimates.
  return Timings.size() > 1 ? 1 : 0;
}

void Executor::reportTime() {
  size_t First = firstSteadyStep();
  if (Timings.size() <= First || Process.Rank != 0)
    return;
  StepTiming Mean;
  for (size_t I = First; I < Timings.size(); ++I) {
    Mean.StepMs += Timings[I].StepMs;
    Mean.Split.ComputeMs += Timings[I].Split.ComputeMs;
    Mean.Split.CommunicationMs += Timings[I].Split.CommunicationMs;
    Mean.Split.OffloadMs += Timings[I].Split.OffloadMs;
    Mean.Split.OtherMs += Timings[I].Split.OtherMs;
  }
  double N = double(Timings.size() - First);
  const plan::Estimate &E = P.Estimates;
  double Planned = double(E.StepNanos) / 1e6;
  double Comm = double(E.ExposedCommNanos) / 1e6;
  double Offload = double(E.ExposedOffloadNanos) / 1e6;
  double Compute = std::max(0.0, Planned - Comm - Offload);
  double Step = Mean.StepMs / N;
  char Line[400];
  snprintf(Line, sizeof(Line),
           "dsrun: step time, mean of steps %zu-%zu: %.2f ms, planned %.2f ms "
           "(%+.1f%%): compute %.2f (planned %.2f), exposed communication "
           "%.2f (%.2f), exposed offload %.2f (%.2f), other %.2f\n",
           First + 1, Timings.size(), Step, Planned,
           Planned > 0 ? 100 * (Step - Planned) / Planned : 0,
           Mean.Split.ComputeMs / N, Compute, Mean.Split.CommunicationMs / N,
           Comm, Mean.Split.OffloadMs / N, Offload, Mean.Split.OtherMs / N);
  writeLine(Line);
  if (FILE *Log = openLog(Options.JsonLog, Process.Rank)) {
    fprintf(Log,
            "{\"rank\":%d,\"time\":{\"measured_ms\":%.3f,\"planned_ms\":%.3f,"
            "\"compute_ms\":%.3f,\"planned_compute_ms\":%.3f,"
            "\"exposed_comm_ms\":%.3f,\"planned_exposed_comm_ms\":%.3f,"
            "\"exposed_offload_ms\":%.3f,\"planned_exposed_offload_ms\":%.3f,"
            "\"other_ms\":%.3f}}\n",
            Process.Rank, Step, Planned, Mean.Split.ComputeMs / N, Compute,
            Mean.Split.CommunicationMs / N, Comm, Mean.Split.OffloadMs / N,
            Offload, Mean.Split.OtherMs / N);
    fclose(Log);
  }
}

void Executor::reportLean(const std::vector<float> &Ms) {
  if (Ms.empty() || Process.Rank != 0)
    return;
  double Lean = 0, Measured = 0;
  for (float M : Ms)
    Lean += M;
  Lean /= double(Ms.size());
  size_t First = firstSteadyStep();
  for (size_t I = First; I < Timings.size(); ++I)
    Measured += Timings[I].StepMs / double(Timings.size() - First);
  std::string How =
      StepGraph ? "as one CUDA graph"
      : !Options.Graph
          ? "issued instruction by instruction (--graph off)"
          : "issued instruction by instruction (" + NoGraphReason + ")";
  std::string Graph =
      StepGraph ? "; the graph took " + std::to_string(GraphBytes >> 20) +
                      " MiB of device memory besides the plan"
                : "";
  char Line[500];
  snprintf(Line, sizeof(Line),
           "dsrun: lean steps %u-%zu, timed whole and %s: mean %.2f ms (the "
           "measured steps: %.2f ms)%s\n",
           Options.Steps + 1, size_t(Options.Steps) + Ms.size(), How.c_str(),
           Lean, Measured, Graph.c_str());
  writeLine(Line);
  if (FILE *Log = openLog(Options.JsonLog, Process.Rank)) {
    fprintf(Log,
            "{\"rank\":%d,\"lean\":{\"steps\":%zu,\"mean_ms\":%.3f,"
            "\"measured_mean_ms\":%.3f,\"graph\":%s,\"graph_bytes\":%llu}}\n",
            Process.Rank, Ms.size(), Lean, Measured,
            StepGraph ? "true" : "false", (unsigned long long)GraphBytes);
    fclose(Log);
  }
}

double Executor::steadyRate(double StepTiming::*Amount,
                            double StepTiming::*Ms) const {
  double Sum = 0, Time = 0;
  for (size_t I = firstSteadyStep(); I < Timings.size(); ++I) {
    Sum += Timings[I].*Amount;
    Time += Timings[I].*Ms;
  }
  return Time > 0 ? Sum / Time * 1e3 : 0;
}

double Executor::hostAdamElemsPerSec() const {
  return steadyRate(&StepTiming::HostAdamElems, &StepTiming::HostAdamMs);
}

double Executor::deviceAdamBytesPerSec() const {
  return steadyRate(&StepTiming::DeviceAdamBytes, &StepTiming::DeviceAdamMs);
}

void Executor::reportHostOptimizer() {
  double ElemsPerSec = hostAdamElemsPerSec();
  if (!HostTriadBytesPerSec || ElemsPerSec <= 0)
    return;
  double BytesPerSec = ElemsPerSec * plan::hostAdamBytesPerElem(P.Settings);
  char Line[300];
  snprintf(Line, sizeof(Line),
           "dsrun: rank %d host AdamW: %.2f G elements/s, %.1f GB/s, %.0f %% "
           "of the host's triad bandwidth (%.1f GB/s on %u threads, measured "
           "before the first step)\n",
           Process.Rank, ElemsPerSec / 1e9, BytesPerSec / 1e9,
           100 * BytesPerSec / HostTriadBytesPerSec, HostTriadBytesPerSec / 1e9,
           Options.HostThreads);
  writeLine(Line);
  if (FILE *Log = openLog(Options.JsonLog, Process.Rank)) {
    fprintf(Log,
            "{\"rank\":%d,\"host_optimizer\":{\"elems_per_sec\":%.0f,"
            "\"bytes_per_sec\":%.0f,\"triad_bytes_per_sec\":%.0f,"
            "\"threads\":%u}}\n",
            Process.Rank, ElemsPerSec, BytesPerSec, HostTriadBytesPerSec,
            Options.HostThreads);
    fclose(Log);
  }
}

bool Executor::reportSummary() {
  const plan::RankEstimate &R = P.Estimates.Ranks[Buffers.Class];
  uint64_t Context = Memory.Context;
  uint64_t Cublas = Memory.Cublas - Memory.Context;
  uint64_t Nccl = Memory.Nccl - Memory.Cublas;
  uint64_t Arena = Memory.Arena - Memory.Nccl - WindowBytes;
  // The step's CUDA graph and NCCL's window are the runtime's choices, not
  // the plan's: they are reported beside the comparison.
  uint64_t Measured =
      Memory.Peak - std::min(Memory.Peak, GraphBytes + WindowBytes);
  double Error = R.DevicePeakBytes
                     ? 100.0 * (double(Measured) - double(R.DevicePeakBytes)) /
                           double(R.DevicePeakBytes)
                     : 0;
  uint64_t Planned[3] = {0, 0, 0};
  for (const plan::FixedCost &F : P.Estimates.Fixed)
    Planned[F.Name == "cuda_context" ? 0 : F.Name == "cublas_workspace" ? 1
                                                                      : 2] +=
        F.Bytes;
  char Graph[160] = "";
  if (GraphBytes)
    snprintf(Graph, sizeof(Graph), "; the step's CUDA graph %.1f besides",
             mib(GraphBytes));
  if (WindowBytes)
    snprintf(Graph + strlen(Graph), sizeof(Graph) - strlen(Graph),
             "; NCCL's symmetric window %.1f besides", mib(WindowBytes));
  char Summary[480];
  snprintf(Summary, sizeof(Summary),
          "dsrun: rank %d device memory: measured %.1f MiB, planned %.1f MiB "
          "(%+.2f%%): context %.1f (planned %.1f), cuBLAS %.1f (%.1f), NCCL "
          "%.1f (%.1f), arena %.1f (%.1f)%s\n",
          Process.Rank, mib(Measured), mib(R.DevicePeakBytes), Error,
          mib(Context), mib(Planned[0]), mib(Cublas), mib(Planned[1]),
          mib(Nccl), mib(Planned[2]), mib(Arena), mib(R.DeviceArenaBytes),
          Graph);
  writeLine(Summary);
  reportTime();
  reportHostOptimizer();
  if (double Rate = deviceAdamBytesPerSec(); Rate > 0) {
    char Line[200];
    snprintf(Line, sizeof(Line),
             "dsrun: rank %d device AdamW: %.0f GB/s, %llu bytes an element "
             "(the plan's memory rate: %.0f GB/s)\n",
             Process.Rank, Rate / 1e9,
             (unsigned long long)plan::deviceAdamBytesPerElem(P.Settings),
             double(P.Settings.Machine.MemoryBytesPerSec) / 1e9);
    writeLine(Line);
  }
  if (FILE *Log = openLog(Options.JsonLog, Process.Rank)) {
    fprintf(Log,
            "{\"rank\":%d,\"memory\":{\"measured_bytes\":%llu,"
            "\"planned_bytes\":%llu,\"error_percent\":%.3f,\"context\":%llu,"
            "\"cublas\":%llu,\"nccl\":%llu,\"arena\":%llu,"
            "\"planned_arena\":%llu,\"graph\":%llu,\"window\":%llu}}\n",
            Process.Rank, (unsigned long long)Measured,
            (unsigned long long)R.DevicePeakBytes, Error,
            (unsigned long long)Context, (unsigned long long)Cublas,
            (unsigned long long)Nccl, (unsigned long long)Arena,
            (unsigned long long)R.DeviceArenaBytes,
            (unsigned long long)GraphBytes, (unsigned long long)WindowBytes);
    fclose(Log);
  }
  for (const SwapFile *F : {OptimizerSwap.get(), ParamSwap.get()})
    if (F) {
      char Line[300];
      snprintf(Line, sizeof(Line),
               "dsrun: rank %d %s: %.1f MiB with direct I/O, %.1f MiB "
               "through the page cache\n",
               Process.Rank, F->path().c_str(), mib(F->directBytes()),
               mib(F->bufferedBytes()));
      writeLine(Line);
    }
  if (Options.CalibrationOut.empty() || Process.Rank != 0)
    return true;
  Calibration C;
  C.Ranks = Process.WorldSize;
  C.CtaPolicy = Options.CommCtaPolicy;
  C.CudaContextBytes = Context;
  C.CublasWorkspaceBytes = Cublas;
  C.NcclBytes = Nccl;
  // Rates of the steady steps; the planner has one pinned-copy figure
  // for both directions.
  double CopyBytes = 0, CopyMs = 0;
  for (size_t I = firstSteadyStep(); I < Timings.size(); ++I) {
    CopyBytes += Timings[I].CopyInBytes + Timings[I].CopyOutBytes;
    CopyMs += Timings[I].CopyInMs + Timings[I].CopyOutMs;
  }
  C.Rates.HostAdamElemsPerSec = uint64_t(hostAdamElemsPerSec());
  // AdamW is bound by the host's memory: the bandwidth it reached is the
  // rank's share that the plan's other host passes get.
  C.Rates.HostBytesPerSec = uint64_t(hostAdamElemsPerSec() *
                                     plan::hostAdamBytesPerElem(P.Settings));
  // The device AdamW streams its state once: the bandwidth it reached is
  // the device's for every such pass.
  C.Rates.MemoryBytesPerSec = uint64_t(deviceAdamBytesPerSec());
  C.Rates.HostConvertElemsPerSec = uint64_t(
      steadyRate(&StepTiming::ConvertElems, &StepTiming::ConvertMs));
  C.Rates.PinnedCopyBytesPerSec =
      CopyMs > 0 ? uint64_t(CopyBytes / CopyMs * 1e3) : 0;
  C.Rates.NVMeReadBytesPerSec = uint64_t(
      steadyRate(&StepTiming::NvmeReadBytes, &StepTiming::NvmeReadMs));
  C.Rates.NVMeWriteBytesPerSec = uint64_t(
      steadyRate(&StepTiming::NvmeWriteBytes, &StepTiming::NvmeWriteMs));
  fitKernelRates(C.Rates);
  if (Process.WorldSize > 1)
    fitCollectiveRates(C.Rates);
  if (real()) {
    // The products whose fastest algorithm beats cuBLASLt's first, for
    // the next plan to name.
    std::vector<ProductTiming> Timed;
    std::string Why = timeProducts(P, Products, CalibrationCandidates,
                                   CalibrationReps,
                                   Timing.stream(plan::Stream::Compute), Timed);
    if (!Why.empty())
      fprintf(stderr, "dsrun: --calibration-out: the products' algorithms "
                      "were not timed: %s\n", Why.c_str());
    C.Rates.GemmAlgorithms = fasterAlgorithms(Timed, CalibrationMargin);
  }
  std::string WriteError;
  if (!writeCalibration(Options.CalibrationOut, C, WriteError)) {
    fprintf(stderr, "dsrun: --calibration-out: %s\n", WriteError.c_str());
    return false;
  }
  return true;
}

} // namespace dsrun
