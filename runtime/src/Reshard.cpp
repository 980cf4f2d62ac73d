//===- Reshard.cpp --------------------------------------------------------===//

#include "Reshard.h"

#include "Checkpoint.h"
#include "HostMath.h"
#include "StateLayout.h"
#include "Weights.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

/// "" or why the two plans are not of one model with one parameter type.
std::string sameModel(const plan::Plan &From, const plan::Plan &To) {
  if (From.Settings.ModelHash != To.Settings.ModelHash ||
      From.Tensors.size() != To.Tensors.size())
    return "the plans are of different models (the ONNX files' hashes "
           "differ)";
  if (From.Settings.ParamDType != To.Settings.ParamDType)
    return std::string("the checkpoint's parameters are ") +
           plan::enumName(From.Settings.ParamDType) + " and the new plan's " +
           plan::enumName(To.Settings.ParamDType) +
           "; plan with the same precision";
  for (size_t T = 0; T < From.Tensors.size(); ++T)
    if (From.Tensors[T].Name != To.Tensors[T].Name ||
        From.Tensors[T].Elems != To.Tensors[T].Elems)
      return "tensor " + std::to_string(T) + " is '" + From.Tensors[T].Name +
             "' in the checkpoint's plan and '" + To.Tensors[T].Name +
             "' in the new one";
  return "";
}

/// The old run's state, all ranks: where each tensor's kind of state is.
struct OldState {
  std::vector<std::unique_ptr<ShardReader>> Shards;
  struct Source {
    uint32_t Rank;
    StateSegment Seg;
  };
  std::map<std::pair<StateKind, uint32_t>, std::vector<Source>> Where;
  uint64_t BytesRead = 0;

  /// The old stretch of Tensor's Kind, in ElemBytes-sized elements, that
  /// holds element At, or null.
  const Source *holding(StateKind K, uint32_t Tensor, uint64_t At,
                        unsigned ElemBytes) const {
    if (auto It = Where.find({K, Tensor}); It != Where.end())
      for (const Source &S : It->second)
        if (S.Seg.ElemBytes == ElemBytes && S.Seg.Begin <= At &&
            At < S.Seg.End)
          return &S;
    return nullptr;
  }

  /// Master weights and moments are fp32 (4 bytes) or bf16 (2, with
  /// bf16_master_weights_and_grads): a checkpoint of either width serves a
  /// plan of the other, converted as DeepSpeed's copy into its master
  /// tensors converts (widened exactly, narrowed to nearest even). 0 for
  /// parameters, whose dtype is the plan's own.
  static unsigned otherWidth(StateKind K, unsigned ElemBytes) {
    if (K == StateKind::Param)
      return 0;
    return ElemBytes == 4 ? 2 : ElemBytes == 2 ? 4 : 0;
  }

  /// The old stretch holding element At in ElemBytes-sized elements, else
  /// in the other width of optimizer state (Width says which), or null.
  const Source *holdingAny(StateKind K, uint32_t Tensor, uint64_t At,
                           unsigned ElemBytes, unsigned &Width) const {
    Width = ElemBytes;
    if (const Source *S = holding(K, Tensor, At, ElemBytes))
      return S;
    Width = otherWidth(K, ElemBytes);
    return Width ? holding(K, Tensor, At, Width) : nullptr;
  }

  /// "" or the first element of [Begin, End) of Tensor's Kind that no
  /// old shard holds in ElemBytes-sized elements (or, for optimizer state,
  /// the other width).
  std::string missing(StateKind K, uint32_t Tensor, uint64_t Begin,
                      uint64_t End, unsigned ElemBytes,
                      const plan::Plan &P) const {
    for (uint64_t At = Begin; At < End;) {
      unsigned Width;
      const Source *S = holdingAny(K, Tensor, At, ElemBytes, Width);
      if (!S)
        return std::string("no shard of the checkpoint holds the ") +
               stateKindName(K) + " of '" + P.Tensors[Tensor].Name +
               "' from element " + std::to_string(At) +
               " (a plan of another optimizer or precision?)";
      At = S->Seg.End;
    }
    return "";
  }

  /// Elements [Begin, End) of Tensor's Kind, ElemBytes each, into Out.
  bool read(StateKind K, uint32_t Tensor, uint64_t Begin, uint64_t End,
            unsigned ElemBytes, char *Out, const plan::Plan &P,
            std::string &Error) {
    std::vector<char> Other;
    for (uint64_t At = Begin; At < End;) {
      unsigned Width;
      const Source *Found = holdingAny(K, Tensor, At, ElemBytes, Width);
      if (!Found) {
        Error = missing(K, Tensor, At, End, ElemBytes, P);
        return false;
      }
      uint64_t Upto = std::min(End, Found->Seg.End);
      uint64_t Bytes = (Upto - At) * Width;
      char *To = Out + (At - Begin) * ElemBytes;
      if (Width != ElemBytes)
        Other.resize(Bytes);
      if (!Shards[Found->Rank]->readAt(
              Found->Seg.Part,
              Found->Seg.Offset + (At - Found->Seg.Begin) * Width, Bytes,
              Width == ElemBytes ? To : Other.data(), Error))
        return false;
      if (Width != ElemBytes)
        convertOnHost(To, ElemBytes == 4 ? ElementType::F32 : ElementType::BF16,
                      Other.data(),
                      Width == 4 ? ElementType::F32 : ElementType::BF16,
                      Upto - At, /*Accumulate=*/false, 1);
      BytesRead += Bytes;
      At = Upto;
    }
    return true;
  }
};

} // namespace

/// Every shard of FromDir, checked against From, the plan that wrote it;
/// First gets rank 0's header.
static bool openOld(const std::string &FromDir, const plan::Plan &From,
                    OldState &Old, CheckpointHeader &First,
                    std::string &Error) {
  for (uint32_t R = 0; R < From.Settings.WorldSize; ++R) {
    auto Shard = std::make_unique<ShardReader>();
    // Every byte is checked before any is moved: readAt does not check.
    if (!Shard->open(FromDir + "/rank" + std::to_string(R) + ".ckpt", Error) ||
        !Shard->verify(Error))
      return false;
    const CheckpointHeader &H = Shard->header();
    StateLayout L;
    if (std::string Why = stateLayout(From, R, L); !Why.empty()) {
      Error = "the checkpoint's plan: " + Why;
      return false;
    }
    std::string Why = checkShardAgainstPlan(H, Shard->parts(), From, R,
                                            checkpointParts(L.Parts));
    if (Why.empty() && R &&
        (H.Step != First.Step || H.OptimizerStep != First.OptimizerStep ||
         H.Seed != First.Seed)) {
      Error = Shard->path() + ": a shard of step " + std::to_string(H.Step) +
              " where rank 0's is of step " + std::to_string(First.Step) +
              " (or of another seed): a checkpoint written over, or shards "
              "of two checkpoints side by side";
      return false;
    }
    if (!Why.empty()) {
      // dsrun's advice on resuming does not apply here.
      Error = Shard->path() + ": " + Why.substr(0, Why.find("; resume with")) +
              "; the checkpoint's plan must be the one that wrote it "
              "(--from-plan)";
      return false;
    }
    if (R == 0)
      First = H;
    for (const StateSegment &S : L.Segments)
      Old.Where[{S.Kind, S.Tensor}].push_back({R, S});
    Old.Shards.push_back(std::move(Shard));
  }
  return true;
}

bool reshardCheckpoint(const std::string &FromDir, const plan::Plan &From,
                       const plan::Plan &To, const std::string &ToDir,
                       ReshardReport &Report, std::string &Error) {
  if (std::string Why = sameModel(From, To); !Why.empty()) {
    Error = Why;
    return false;
  }
  OldState Old;
  CheckpointHeader First;
  if (!openOld(FromDir, From, Old, First, Error))
    return false;
  // Everything the new plan keeps must be in the old shards: found out
  // before anything is written.
  std::vector<StateLayout> New(To.Settings.WorldSize);
  for (uint32_t R = 0; R < To.Settings.WorldSize; ++R) {
    if (std::string Why = stateLayout(To, R, New[R]); !Why.empty()) {
      Error = "the new plan: " + Why;
      return false;
    }
    for (const StateSegment &S : New[R].Segments)
      if (std::string Why = Old.missing(S.Kind, S.Tensor, S.Begin, S.End,
                                        S.ElemBytes, From);
          !Why.empty()) {
        Error = Why;
        return false;
      }
  }
  if (!makeDirectories(ToDir, Error))
    return false;

  // Every new rank's shard: zeros (the padding), then each stretch of
  // state from the old shards.
  for (uint32_t R = 0; R < To.Settings.WorldSize; ++R) {
    const StateLayout &L = New[R];
    std::vector<std::vector<const StateSegment *>> ByPart(L.Parts.size());
    for (const StateSegment &S : L.Segments)
      ByPart[S.Part].push_back(&S);
    CheckpointHeader H = First;
    H.WorldSize = To.Settings.WorldSize;
    H.Rank = R;
    H.ZeroStage = To.Settings.ZeroStage;
    std::vector<char> Elems;
    bool Ok = writeShard(
        ToDir + "/rank" + std::to_string(R) + ".ckpt", H,
        checkpointParts(L.Parts),
        [&](size_t Part, uint64_t At, uint64_t N, char *Out) {
          memset(Out, 0, N);
          for (const StateSegment *S : ByPart[Part]) {
            uint64_t SegEnd = S->Offset + (S->End - S->Begin) * S->ElemBytes;
            uint64_t Lo = std::max(At, S->Offset), Hi = std::min(At + N, SegEnd);
            if (Lo >= Hi)
              continue;
            // The whole elements that cover [Lo, Hi), then their bytes.
            uint64_t E0 = (Lo - S->Offset) / S->ElemBytes;
            uint64_t E1 = (Hi - S->Offset + S->ElemBytes - 1) / S->ElemBytes;
            Elems.resize((E1 - E0) * S->ElemBytes);
            if (!Old.read(S->Kind, S->Tensor, S->Begin + E0, S->Begin + E1,
                          S->ElemBytes, Elems.data(), From, Error))
              return false;
            memcpy(Out + (Lo - At),
                   Elems.data() + (Lo - S->Offset - E0 * S->ElemBytes),
                   Hi - Lo);
          }
          Report.BytesWritten += N;
          return true;
        },
        Error);
    if (!Ok)
      return false;
  }
  uint64_t Copied = 0;
  if (!writeCheckpointPlan(ToDir, To, Error))
    return false;
  std::vector<std::string> Carried = modelWeightsFiles(FromDir);
  Carried.insert(Carried.end(), std::begin(ModelConfigFiles),
                 std::end(ModelConfigFiles));
  for (const std::string &Name : Carried)
    if (!copyIfPresent(FromDir + "/" + Name, ToDir + "/" + Name, Copied,
                       Error))
      return false;
  Report.Step = First.Step;
  Report.BytesRead = Old.BytesRead;
  Report.BytesWritten += Copied;
  return true;
}

bool writeFp32Weights(const std::string &Dir, const plan::Plan &From,
                      const std::string &Path, uint64_t MaxShardBytes,
                      ReshardReport &Report, std::string &Error) {
  OldState Old;
  CheckpointHeader First;
  if (!openOld(Dir, From, Old, First, Error))
    return false;
  // The names transformers knows the tensors by, where dsrun saved them.
  std::vector<std::string> Names(From.Tensors.size());
  if (!modelWeightsFiles(Dir).empty()) {
    std::optional<InitialWeights> W = loadWeights(From, Dir, Error);
    if (!W) {
      Error = "the checkpoint's weights: " + Error;
      return false;
    }
    Names = W->FileName;
  }
  ElementType ParamType = ElementType(From.Settings.ParamDType);
  unsigned PB = plan::dtypeBytes(From.Settings.ParamDType);
  std::vector<std::vector<char>> Data(From.Tensors.size());
  for (uint32_t T = 0; T < From.Tensors.size(); ++T) {
    uint64_t Elems = From.Tensors[T].Elems;
    Data[T].resize(Elems * 4);
    if (Old.missing(StateKind::Master, T, 0, Elems, 4, From).empty()) {
      if (!Old.read(StateKind::Master, T, 0, Elems, 4, Data[T].data(), From,
                    Error))
        return false;
      continue;
    }
    std::vector<char> Params(Elems * PB);
    if (!Old.read(StateKind::Param, T, 0, Elems, PB, Params.data(), From,
                  Error))
      return false;
    convertOnHost(Data[T].data(), ElementType::F32, Params.data(), ParamType,
                  Elems, /*Accumulate=*/false, 1);
  }
  if (!saveWeightsAt(From, Names, Data, ElementType::F32, Path, MaxShardBytes,
                     Dir, Error))
    return false;
  Report.Step = First.Step;
  Report.BytesRead = Old.BytesRead;
  Report.BytesWritten = 0;
  for (const std::vector<char> &D : Data)
    Report.BytesWritten += D.size();
  return true;
}

bool checkCheckpoint(const std::string &Dir, const plan::Plan &From,
                     ReshardReport &Report, std::string &Error) {
  OldState Old;
  CheckpointHeader First;
  if (!openOld(Dir, From, Old, First, Error))
    return false;
  Report.Step = First.Step;
  for (const auto &Shard : Old.Shards)
    for (const CheckpointPart &Part : Shard->parts())
      Report.BytesRead += Part.Bytes;
  // The consolidated weights are the run's output: checked as closely.
  if (modelWeightsFiles(Dir).empty()) {
    Error = Dir + ": no model.safetensors or " + ModelIndexName +
            " (dsrun writes the weights with every checkpoint)";
    return false;
  }
  return checkWeightsFile(Dir, Error);
}

} // namespace dsrun
