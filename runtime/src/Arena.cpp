//===- Arena.cpp ----------------------------------------------------------===//

#include "Arena.h"

#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"
#include "dsc/PlanFacts.h"

#include <fstream>
#include <iterator>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

uint32_t classOf(const plan::Plan &P, uint32_t Rank) {
  for (size_t C = 0; C < P.Layout.RankClasses.size(); ++C)
    for (const plan::RankRange &R : P.Layout.RankClasses[C].Ranges())
      if (Rank >= R.First && Rank - R.First < R.Count)
        return uint32_t(C);
  return 0;
}

} // namespace

Arena::Arena(const plan::Plan &P, uint32_t Rank)
    : P(P), Rank(Rank), Slot(plan::partitionRank(P.Settings, Rank)),
      Class(classOf(P, Rank)) {
  Offsets.reserve(P.Views.size());
  for (const plan::View &V : P.Views)
    Offsets.push_back(P.Buffers[V.Buffer].Offsets[Class] +
                      plan::viewOffset(V, Slot));
}

uint64_t Arena::deviceBytes() const {
  return P.Estimates.Ranks[Class].DeviceArenaBytes;
}
uint64_t Arena::hostBytes() const {
  return P.Estimates.Ranks[Class].HostArenaBytes;
}

bool Arena::onDevice(uint32_t V) const {
  return P.Buffers[P.Views[V].Buffer].Space == plan::MemorySpace::Device;
}

char *Arena::bufferBase(uint32_t B) const {
  const plan::Buffer &X = P.Buffers[B];
  char *Base = X.Space == plan::MemorySpace::Device ? DeviceBase : HostBase;
  return Base ? Base + X.Offsets[Class] : nullptr;
}

Arena::Region Arena::buffer(plan::BufferRole Role, uint32_t Index) const {
  for (const plan::Buffer &B : P.Buffers)
    if (B.Role == Role && B.Index == Index && !B.Live.empty()) {
      char *Base = B.Space == plan::MemorySpace::Device ? DeviceBase : HostBase;
      return {Base ? Base + B.Offsets[Class] : nullptr, B.Bytes[Class], &B};
    }
  return {};
}

std::optional<plan::Plan> loadPlanFile(const std::string &Path,
                                       std::string &Error, bool &Unreadable) {
  std::ifstream In(Path, std::ios::binary);
  Unreadable = !In;
  if (Unreadable) {
    Error = Path + ": cannot open";
    return std::nullopt;
  }
  std::vector<uint8_t> Bytes((std::istreambuf_iterator<char>(In)),
                             std::istreambuf_iterator<char>());
  std::optional<plan::Plan> P =
      plan::readPlan(Bytes.data(), Bytes.size(), Error);
  if (P)
    Error = plan::checkPlan(*P);
  if (!P || !Error.empty()) {
    Error = Path + ": " + Error;
    return std::nullopt;
  }
  return P;
}

namespace {

/// Offload transfers must be ones dsrun carries out for the plan's
/// settings, and a unit read from NVMe is copied to the device out of the
/// same buffer next: reads and copies come in pairs.
std::string checkTransfers(const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  bool Offloaded = S.OptimizerOffload != plan::OffloadDevice::None;
  bool ReadPending = false;
  for (uint32_t I = 0; I < P.Program.size(); ++I) {
    const plan::Instruction &In = P.Program[I];
    if (In.Kind != plan::InstrKind::Transfer)
      continue;
    std::string Where = "instruction " + std::to_string(I) + ": ";
    const plan::Transfer &X = P.Transfers[In.Arg];
    bool Fits = true;
    switch (X.Point) {
    case plan::TransferPoint::AfterReduce:
      Fits = Offloaded && (X.Kind == plan::TransferKind::DeviceToHost ||
                           X.Kind == plan::TransferKind::HostConvert);
      if (Fits && X.Staged && P.Places.InstructionSlots[I] == plan::NoIndex)
        return Where + "a staged offloaded gradient copy or conversion names "
                       "no staging slot";
      // Each transfer in the form its micro step needs (PlanCheck has
      // refused a host conversion that is not staged).
      if (Fits && X.Staged != plan::stagedGradients(P, X.Owner, In.Micro))
        return Where + std::string("offloaded gradients are ") +
               (X.Staged ? "staged" : "copied straight") +
               " in a micro step that needs them " +
               (X.Staged ? "copied straight"
                : plan::gradSourceType(P, X.Owner) != plan::hostGradType(S)
                    ? "staged (their type changes on the host)"
                    : "staged (it adds them)");
      break;
    case plan::TransferPoint::BeforeStep:
      Fits = S.OptimizerOffload == plan::OffloadDevice::NVMe &&
             X.Kind == plan::TransferKind::NVMeRead;
      break;
    case plan::TransferPoint::AfterStep:
      Fits = Offloaded &&
             (X.Kind == plan::TransferKind::HostToDevice ||
              (X.Kind == plan::TransferKind::NVMeWrite &&
               (X.What == plan::Category::Params16
                    ? S.ParamOffload == plan::OffloadDevice::NVMe
                    : S.OptimizerOffload == plan::OffloadDevice::NVMe)));
      break;
    case plan::TransferPoint::BeforeGather:
      Fits = S.ParamOffload != plan::OffloadDevice::None &&
             (X.Kind == plan::TransferKind::HostToDevice ||
              (X.Kind == plan::TransferKind::NVMeRead &&
               S.ParamOffload == plan::OffloadDevice::NVMe));
      if (Fits && S.ParamOffload == plan::OffloadDevice::NVMe) {
        bool Read = X.Kind == plan::TransferKind::NVMeRead;
        if (Read == ReadPending)
          return Where + (Read ? "a unit is read from NVMe before the last "
                                 "one was copied to the device"
                               : "a unit is copied to the device without "
                                 "being read from NVMe first");
        ReadPending = Read;
        if (P.Places.InstructionSlots[I] == plan::NoIndex)
          return Where + "an NVMe parameter read or copy names no buffer";
      }
      break;
    }
    if (!Fits)
      return Where + "a " + plan::enumName(X.Kind) + " transfer at " +
             plan::enumName(X.Point) +
             " does not fit the plan's offload settings";
  }
  if (ReadPending)
    return "a unit read from NVMe is never copied to the device";
  return "";
}

} // namespace

std::string checkRunnable(const plan::Plan &P) {
  const plan::Info &S = P.Settings;
  const plan::Placement &X = P.Places;
  constexpr uint32_t None = plan::NoIndex;
  bool Offloaded = S.OptimizerOffload != plan::OffloadDevice::None;
  if (X.Runtime.Scratch == None || X.Runtime.HostScratch == None)
    return "the plan places no scratch buffers for the runtime";
  if (std::string Why = checkTransfers(P); !Why.empty())
    return Why;
  const plan::PartitionViews &O = X.Owned;
  if (S.OptimizerOffload == plan::OffloadDevice::NVMe) {
    if (X.Runtime.NVMeState.size() != 3)
      return "offload_optimizer.buffer_count is " +
             std::to_string(S.AioBufferCount) +
             "; dsrun swaps a sub-group's master weights and both moments "
             "at once and needs at least 3";
  } else if (O.Master == None || O.Moment1 == None || O.Moment2 == None) {
    return "the plan places no optimizer state for the partition";
  }
  // The update keeps master weights and both moments in one dtype: fp32,
  // or bf16 on the device for bf16 weights.
  bool BF16State = S.MasterDType == plan::DType::BF16 ||
                   S.OptimizerStateDType == plan::DType::BF16;
  if (BF16State && (S.MasterDType != S.OptimizerStateDType || Offloaded ||
                    S.ParamDType != plan::DType::BF16))
    return "the plan keeps bf16 master weights or moments beside fp32 ones, "
           "off the device, or for weights that are not bf16; dsrun keeps "
           "bf16 optimizer state whole, on the GPU, for bf16 training";
  plan::DType StateType = BF16State ? plan::DType::BF16 : plan::DType::F32;
  for (uint32_t V : {O.Master, O.Moment1, O.Moment2})
    if (V != None && P.Views[V].Type != StateType &&
        !(V == O.Master && P.Views[V].Type == S.ParamDType &&
          P.Buffers[P.Views[V].Buffer].Role == plan::BufferRole::Params16))
      return "the plan keeps optimizer state in " +
             std::string(plan::enumName(P.Views[V].Type)) + " where its "
             "settings say " + plan::enumName(StateType);
  if (O.Grads == None && !(Offloaded && S.ZeroStage < 3))
    return "the plan places no reduced gradients for the partition";
  if (S.ZeroStage < 3 && O.Params16 == None)
    return "the plan places no 16-bit parameters for the partition";
  if (S.ZeroStage > 0 && S.ZeroStage < 3 && O.GradsFP32 == None)
    return "the plan places no fp32 gradients for the partition";
  if (Offloaded && X.Runtime.ParamStaging == None)
    return "the plan places no pinned staging for offloaded parameters";
  if (S.ParamOffload == plan::OffloadDevice::NVMe) {
    if (X.Runtime.NVMeParams.empty())
      return "offload_param.buffer_count is 0";
    if (X.Runtime.ParamStaging == None)
      return "the plan places no staging for parameters written to NVMe";
    uint64_t Each = P.Views[X.Runtime.NVMeParams[0]].Elems;
    for (uint32_t U = 0; U < P.FetchUnits.size(); ++U)
      if (plan::swapUnitBytes(P, U) > Each)
        return "a stage-3 fetch unit takes " +
               std::to_string(plan::swapUnitBytes(P, U)) +
               " bytes on pages but the nvme_param_buffers are " +
               std::to_string(Each) + " bytes each; raise "
               "offload_param.buffer_size (in elements) so that a unit fits";
  }
  for (uint32_t B = 0; B < P.Buckets.size(); ++B)
    if (X.Buckets[B].Source == None)
      return "gradient bucket " + std::to_string(B) +
             " has no buffer to be reduced in: dsrun reduces through "
             "DeepSpeed's bucket buffer, so set "
             "zero_optimization.contiguous_gradients to true";
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    const plan::Tensor &Tn = P.Tensors[T];
    if (S.ZeroStage == 3 && !Tn.Persistent && X.Tensors[T].Shard == None &&
        S.ParamOffload != plan::OffloadDevice::NVMe)
      return "tensor " + Tn.Name + " has no place for its shard";
    if (Tn.Role == plan::TensorRole::Trainable && Tn.FirstUse != None &&
        X.Tensors[T].Grad == None)
      return "tensor " + Tn.Name + " has no place for its gradient";
  }
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U)
    if (!P.FetchUnits[U].Tensors.empty() && X.Units[U].Target == None)
      for (const plan::Instruction &In : P.Program)
        if ((In.Kind == plan::InstrKind::Gather ||
             In.Kind == plan::InstrKind::GatherSecondary) &&
            In.Arg == U)
          return "fetch unit " + std::to_string(U) +
                 " is gathered into no buffer";
  return "";
}

} // namespace dsrun
