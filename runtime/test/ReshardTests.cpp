//===- ReshardTests.cpp - Checkpoints between plans, without a GPU --------===//
//
// For pairs of plans of one model (other world sizes, stages, offloads),
// with no GPU:
//   - every rank's state layout (StateLayout.h) holds each tensor's
//     parameters once per rank that keeps them whole or its shard, and
//     each trainable element's master weight and moments on exactly one
//     rank (every rank at stage 0), never two stretches over one byte;
//   - a checkpoint of the first plan, every byte of state a function of
//     (kind, tensor, element), converted to the second holds the same
//     function at every stretch of the new layout and zeros elsewhere;
//   - converted back, it is the first checkpoint again, byte for byte;
//   - the same with shards moved in small odd chunks, so that stretches
//     of state straddle them;
//   - other models, precisions, missing shards and shards of another plan
//     are refused with the reason.
//
//   dsrunReshardTests DIR... [-- DIR...]   (DIR: plans of one model, e.g.
//                               one world size each from
//                               utils/runtime-plans.sh; "--" starts another
//                               cycle, e.g. of another precision)
//   dsrunReshardTests --write-checkpoint DIR PLAN.bin [STEP]
//   dsrunReshardTests --damage-each-part DIR PLAN.bin
//
//===----------------------------------------------------------------------===//

#include "Arena.h"
#include "Checkpoint.h"
#include "Expect.h"
#include "HostMath.h"
#include "Reshard.h"
#include "StateLayout.h"
#include "Weights.h"
#include "dsc/PlanFacts.h"
#include "dsc/SafeTensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;
namespace fs = std::filesystem;

/// The byte of state at element Elem of Tensor's Kind: distinct enough
/// that a stretch moved to the wrong tensor, element or kind shows.
static char stateByte(StateKind K, uint32_t Tensor, uint64_t Elem,
                      unsigned ByteInElem) {
  uint64_t X = (uint64_t(K) + 1) * 0x9E3779B97F4A7C15ull ^
               (uint64_t(Tensor) + 1) * 0xC2B2AE3D27D4EB4Full ^
               (Elem * 4 + ByteInElem) * 0x165667B19E3779F9ull;
  X ^= X >> 29;
  return char(X | 1); // never 0, so padding (0) tells from state
}

/// In fp32 the master weights are the parameters' values (at stage 0 the
/// very same bytes), so a synthetic checkpoint gives both one value.
static StateKind valueKind(StateKind K, const plan::Plan &P) {
  return K == StateKind::Master && P.Settings.ParamDType == plan::DType::F32
             ? StateKind::Param
             : K;
}

/// Element Elem of Tensor's Kind as a checkpoint of To holds it after
/// converting a synthetic one of From (ToWidth bytes into Out): From's
/// bytes, with master weights and moments narrowed to bf16 or widened from
/// it where the two plans keep them in different widths.
static void expectedElement(const plan::Plan &From, StateKind K,
                            uint32_t Tensor, uint64_t Elem, unsigned ToWidth,
                            char *Out) {
  unsigned FromWidth = K == StateKind::Param
                           ? ToWidth
                           : plan::dtypeBytes(From.Settings.MasterDType);
  char Old[4];
  for (unsigned B = 0; B < FromWidth; ++B)
    Old[B] = stateByte(valueKind(K, From), Tensor, Elem, B);
  auto TypeOf = [](unsigned W) {
    return W == 4 ? ElementType::F32 : ElementType::BF16;
  };
  if (FromWidth == ToWidth)
    memcpy(Out, Old, ToWidth);
  else
    convertOnHost(Out, TypeOf(ToWidth), Old, TypeOf(FromWidth), 1, false, 1);
}

static std::vector<char> readFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(In)),
                           std::istreambuf_iterator<char>());
}

/// Rank's layout: stretches inside their parts and never over each other.
static StateLayout checkedLayout(const plan::Plan &P, uint32_t Rank) {
  StateLayout L;
  std::string Why = stateLayout(P, Rank, L);
  EXPECT(Why.empty());
  if (!Why.empty())
    fprintf(stderr, "  rank %u: %s\n", Rank, Why.c_str());
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> Used(L.Parts.size());
  for (const StateSegment &S : L.Segments) {
    uint64_t End = S.Offset + (S.End - S.Begin) * S.ElemBytes;
    EXPECT(S.Part < L.Parts.size() && End <= L.Parts[S.Part].Bytes);
    // fp32 at stage 0: the master weights are the parameters themselves.
    bool Alias = S.Kind == StateKind::Master &&
                 P.Settings.ParamDType == plan::DType::F32 &&
                 P.Settings.ZeroStage == 0;
    if (S.Part < L.Parts.size() && !Alias)
      Used[S.Part].push_back({S.Offset, End});
  }
  for (auto &U : Used) {
    std::sort(U.begin(), U.end());
    for (size_t I = 1; I < U.size(); ++I)
      EXPECT(U[I - 1].second <= U[I].first);
  }
  return L;
}

/// Over all ranks: each tensor's parameters whole on a rank or sharded
/// across a partition's ranks, each trainable element's optimizer state on
/// one rank (every rank at stage 0; one rank of each MiCS shard group).
static void checkCoverage(const plan::Plan &P) {
  uint32_t World = P.Settings.WorldSize, Stage = P.Settings.ZeroStage;
  uint32_t Replicas = plan::replicaRanks(P.Settings);
  std::map<std::pair<StateKind, uint32_t>, uint64_t> Elems;
  for (uint32_t R = 0; R < World; ++R)
    for (const StateSegment &S : checkedLayout(P, R).Segments)
      Elems[{S.Kind, S.Tensor}] += S.End - S.Begin;
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    const plan::Tensor &X = P.Tensors[T];
    bool Whole = Stage < 3 || X.Persistent;
    uint64_t Params = Elems[{StateKind::Param, T}];
    EXPECT(Params == (Whole ? World : Replicas) * X.Elems);
  }
  for (uint32_t T : P.Layout.Order) {
    const plan::Tensor &X = P.Tensors[T];
    if (P.Places.Owned.Master != plan::NoIndex ||
        P.Settings.OptimizerOffload == plan::OffloadDevice::NVMe)
      for (StateKind K :
           {StateKind::Master, StateKind::Moment1, StateKind::Moment2})
      {
        uint64_t Held = Elems[{K, T}];
        EXPECT(Held == (Stage == 0 ? World : Replicas) * X.Elems);
      }
  }
}

/// A checkpoint of P in Dir, every stretch of state filled by stateByte.
static void writeSynthetic(const plan::Plan &P, const std::string &Dir,
                           uint32_t Step = 10) {
  std::string Error;
  EXPECT(makeDirectories(Dir, Error));
  for (uint32_t R = 0; R < P.Settings.WorldSize; ++R) {
    StateLayout L = checkedLayout(P, R);
    CheckpointHeader H;
    H.ModelHash = P.Settings.ModelHash;
    H.ConfigHash = P.Settings.ConfigHash;
    H.WorldSize = P.Settings.WorldSize;
    H.Rank = R;
    H.ZeroStage = P.Settings.ZeroStage;
    H.ParamType = uint32_t(P.Settings.ParamDType);
    H.Step = Step;
    H.OptimizerStep = Step - 1;
    H.Seed = 77;
    H.Scaler.Scale = 1024;
    H.Scaler.Iteration = 33;
    H.Scaler.LastOverflow = 21;
    H.Scaler.Hysteresis = 2;
    bool Ok = writeShard(
        Dir + "/rank" + std::to_string(R) + ".ckpt", H,
        checkpointParts(L.Parts),
        [&](size_t Part, uint64_t At, uint64_t N, char *Out) {
          memset(Out, 0, N);
          for (const StateSegment &S : L.Segments) {
            if (S.Part != Part)
              continue;
            for (uint64_t B = 0; B < (S.End - S.Begin) * S.ElemBytes; ++B)
              if (S.Offset + B >= At && S.Offset + B < At + N)
                Out[S.Offset + B - At] = stateByte(
                    valueKind(S.Kind, P), S.Tensor, S.Begin + B / S.ElemBytes,
                    unsigned(B % S.ElemBytes));
          }
          return true;
        },
        Error);
    EXPECT(Ok);
  }
  // The consolidated 16-bit weights every save writes beside the shards.
  unsigned PB = plan::dtypeBytes(P.Settings.ParamDType);
  std::vector<std::vector<char>> Weights(P.Tensors.size());
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    Weights[T].resize(P.Tensors[T].Elems * PB);
    for (uint64_t B = 0; B < Weights[T].size(); ++B)
      Weights[T][B] = stateByte(StateKind::Param, T, B / PB, unsigned(B % PB));
  }
  EXPECT(saveWeights(P, std::vector<std::string>(P.Tensors.size()), Weights, ElementType(P.Settings.ParamDType),
                     Dir + "/model.safetensors", Error));
}

/// Every stretch of P's layout in Dir holds what a synthetic checkpoint of
/// From converts to (expectedElement), every other byte 0.
static void checkSynthetic(const plan::Plan &P, const std::string &Dir,
                           uint64_t ConfigHash, const plan::Plan &From) {
  std::string Error;
  for (uint32_t R = 0; R < P.Settings.WorldSize; ++R) {
    StateLayout L = checkedLayout(P, R);
    ShardReader Shard;
    EXPECT(Shard.open(Dir + "/rank" + std::to_string(R) + ".ckpt", Error));
    const LossScaler::State &Sc = Shard.header().Scaler;
    EXPECT(Shard.header().ModelHash == P.Settings.ModelHash &&
           Shard.header().ConfigHash == ConfigHash &&
           Shard.header().ParamType == uint32_t(P.Settings.ParamDType) &&
           Sc.Iteration == 33 && Sc.LastOverflow == 21 && Sc.Hysteresis == 2);
    EXPECT(Shard.header().WorldSize == P.Settings.WorldSize &&
           Shard.header().Rank == R &&
           Shard.header().ZeroStage == P.Settings.ZeroStage &&
           Shard.header().Step == 10 && Shard.header().OptimizerStep == 9 &&
           Shard.header().Seed == 77 && Shard.header().Scaler.Scale == 1024);
    EXPECT(checkShardAgainstPlan(Shard.header(), Shard.parts(), P, R,
                                 checkpointParts(L.Parts))
               .empty());
    for (size_t Part = 0; Part < L.Parts.size(); ++Part) {
      std::vector<char> Bytes(L.Parts[Part].Bytes), Want(Bytes.size(), 0);
      EXPECT(Shard.readAt(Part, 0, Bytes.size(), Bytes.data(), Error));
      for (const StateSegment &S : L.Segments)
        if (S.Part == Part)
          for (uint64_t E = S.Begin; E < S.End; ++E)
            expectedElement(From, S.Kind, S.Tensor, E, S.ElemBytes,
                            &Want[S.Offset + (E - S.Begin) * S.ElemBytes]);
      bool Same = Bytes == Want;
      EXPECT(Same);
      if (!Same)
        fprintf(stderr, "  %s rank %u part %s differs\n", Dir.c_str(), R,
                L.Parts[Part].Name.c_str());
    }
  }
}

static std::optional<plan::Plan> load(const std::string &Path) {
  std::string Error;
  bool Unreadable = false;
  std::optional<plan::Plan> P = loadPlanFile(Path, Error, Unreadable);
  if (!P)
    fprintf(stderr, "%s\n", Error.c_str());
  EXPECT(P.has_value());
  return P;
}

/// From -> To -> From: the new layout filled right, then the old bytes.
static void roundTrip(const std::string &FromPath, const std::string &ToPath,
                      const std::string &Root) {
  std::optional<plan::Plan> From = load(FromPath), To = load(ToPath);
  if (!From || !To)
    return;
  checkCoverage(*From);
  checkCoverage(*To);
  std::string A = Root + "/a", B = Root + "/b", C = Root + "/c", Error;
  fs::remove_all(Root);
  writeSynthetic(*From, A);
  ReshardReport Report;
  bool Ok = reshardCheckpoint(A, *From, *To, B, Report, Error);
  // A cycle's directories hold one precision, but for ZeRO++ qgZ's fp16
  // plans: a conversion between precisions is refused, and says why.
  if (From->Settings.ParamDType != To->Settings.ParamDType) {
    EXPECT(!Ok && Error.find("plan with the same precision") !=
                      std::string::npos);
    fs::remove_all(Root);
    return;
  }
  EXPECT(Ok);
  if (!Ok) {
    fprintf(stderr, "  %s -> %s: %s\n", FromPath.c_str(), ToPath.c_str(),
            Error.c_str());
    return;
  }
  EXPECT(Report.Step == 10 && Report.BytesRead > 0);
  // The old run's config hash goes along: dsrun notes that it changed.
  checkSynthetic(*To, B, From->Settings.ConfigHash, *From);
  EXPECT(reshardCheckpoint(B, *To, *From, C, Report, Error));
  // Back to the old plan, the same bytes; unless the master weights went
  // through bf16 on the way, which keeps them only rounded.
  bool Narrowed = From->Settings.MasterDType != To->Settings.MasterDType;
  for (uint32_t R = 0; R < From->Settings.WorldSize && !Narrowed; ++R) {
    std::string Name = "/rank" + std::to_string(R) + ".ckpt";
    EXPECT(readFile(A + Name) == readFile(C + Name));
  }
  // The fp32 weights of the converted checkpoint: each tensor's master
  // weights whole, as the old plan's shards held them.
  std::string Weights = Root + "/fp32.safetensors";
  EXPECT(writeFp32Weights(B, *To, Weights, 5000000000ull, Report, Error));
  {
    // The same weights as a model folder of 4 KB shards.
    std::string Folder = Root + "/fp32-folder";
    EXPECT(writeFp32Weights(B, *To, Folder, 4096, Report, Error));
    std::optional<InitialWeights> One = loadWeights(*To, Weights, Error),
                                  Many = loadWeights(*To, Folder, Error);
    // Bit for bit: the synthetic state holds NaNs.
    bool Same = One && Many && One->FileName == Many->FileName;
    for (size_t T = 0; Same && T < One->Values.size(); ++T)
      Same = One->Values[T].size() == Many->Values[T].size() &&
             memcmp(One->Values[T].data(), Many->Values[T].data(),
                    One->Values[T].size() * 4) == 0;
    EXPECT(Same);
    if (!Same)
      fprintf(stderr, "  %s: %s\n", Folder.c_str(), Error.c_str());
    EXPECT(modelWeightsFiles(Folder).size() > 2 ||
           Report.BytesWritten <= 4096);
  }
  std::vector<char> File = readFile(Weights);
  dsc::safetensors::Header H;
  EXPECT(dsc::safetensors::readHeader(File.data(), File.size(), File.size(), H,
                                      Error));
  EXPECT(H.Tensors.size() == To->Tensors.size());
  for (const dsc::safetensors::TensorInfo &T : H.Tensors) {
    uint32_t Ti = 0;
    while (Ti < To->Tensors.size() && To->Tensors[Ti].Name != T.Name)
      ++Ti;
    EXPECT(Ti < To->Tensors.size() && T.DType == "F32");
    if (Ti == To->Tensors.size() || T.End - T.Begin != To->Tensors[Ti].Elems * 4)
      continue;
    bool Same = true;
    unsigned Width = plan::dtypeBytes(To->Settings.MasterDType);
    for (uint64_t E = 0; E < To->Tensors[Ti].Elems && Same; ++E) {
      char Held[4], Want[4];
      expectedElement(*From, StateKind::Master, Ti, E, Width, Held);
      convertOnHost(Want, ElementType::F32, Held,
                    Width == 4 ? ElementType::F32 : ElementType::BF16, 1,
                    false, 1);
      Same = memcmp(&File[H.DataStart + T.Begin + E * 4], Want, 4) == 0;
    }
    EXPECT(Same);
  }
  // The plan saved beside the new shards is the new plan.
  bool Unreadable = false;
  std::optional<plan::Plan> Saved = loadPlanFile(B + "/plan.bin", Error,
                                                 Unreadable);
  EXPECT(Saved && Saved->Settings.WorldSize == To->Settings.WorldSize &&
         Saved->Settings.ZeroStage == To->Settings.ZeroStage);
}

/// What does not fit is refused with its reason.
static void refusals(const std::string &FromPath, const std::string &ToPath,
                     const std::string &Root) {
  std::optional<plan::Plan> From = load(FromPath), To = load(ToPath);
  if (!From || !To)
    return;
  std::string A = Root + "/a", Error;
  fs::remove_all(Root);
  writeSynthetic(*From, A);
  ReshardReport Report;
  auto refused = [&](const plan::Plan &F, const plan::Plan &T,
                     const char *Because) {
    Error.clear();
    bool Ok = reshardCheckpoint(A, F, T, Root + "/x", Report, Error);
    bool Said = Error.find(Because) != std::string::npos;
    EXPECT(!Ok && Said);
    if (Ok || !Said)
      fprintf(stderr, "  wanted '%s', got '%s'\n", Because, Error.c_str());
  };
  plan::Plan Other = *To;
  Other.Settings.ModelHash ^= 1;
  refused(*From, Other, "different models");
  Other = *To;
  Other.Settings.ParamDType = From->Settings.ParamDType == plan::DType::F32
                                 ? plan::DType::BF16
                                 : plan::DType::F32;
  refused(*From, Other, "plan with the same precision");
  // The checkpoint read as if the other plan had written it.
  if (To->Settings.WorldSize != From->Settings.WorldSize ||
      To->Settings.ZeroStage != From->Settings.ZeroStage)
    refused(*To, *From, "it was written with");
  fs::remove(A + "/rank0.ckpt");
  refused(*From, *To, "rank0.ckpt: cannot open");
}

/// A swap file laid out for other sub-groups, of the very same size, is
/// another part: its shard is refused, not read at the wrong offsets.
static bool swapFingerprint(const std::string &Path) {
  std::optional<plan::Plan> P = load(Path);
  if (!P || P->Settings.OptimizerOffload != plan::OffloadDevice::NVMe ||
      P->Layout.SubGroups.size() < 2 || P->Layout.SubGroups[0].Elems <= 1024)
    return false;
  plan::Plan Q = *P;
  // 1024 fp32 elements are one 4 KiB page: the file keeps its size.
  Q.Layout.SubGroups[0].Elems -= 1024;
  Q.Layout.SubGroups[1].Elems += 1024;
  Q.Places.SubGroups[1].Begin -= 1024;
  std::vector<CheckpointPart> Mine = checkpointParts(stateParts(*P, 0)),
                              Other = checkpointParts(stateParts(Q, 0));
  EXPECT(Mine.size() == Other.size() &&
         Mine.back().Bytes == Other.back().Bytes &&
         Mine.back().Name != Other.back().Name);
  CheckpointHeader H;
  H.ModelHash = P->Settings.ModelHash;
  H.WorldSize = P->Settings.WorldSize;
  H.ZeroStage = P->Settings.ZeroStage;
  H.ParamType = uint32_t(P->Settings.ParamDType);
  EXPECT(checkShardAgainstPlan(H, Mine, Q, 0, Other)
             .find("laid out for other sub-groups") != std::string::npos);
  return true;
}

static std::vector<std::string> plansIn(const std::string &Dir) {
  std::vector<std::string> Plans;
  for (const fs::directory_entry &E : fs::directory_iterator(Dir))
    if (E.path().extension() == ".bin")
      Plans.push_back(E.path().string());
  std::sort(Plans.begin(), Plans.end());
  return Plans;
}

/// Block checksums: a shard of a 3.5 MiB part and a small one, moved in
/// chunks that split blocks, reads back whole; one flipped byte is named by
/// rank, part and block; a version-1 shard (no checksums) is refused.
static void checksums(const std::string &Root) {
  fs::create_directories(Root);
  std::string Path = Root + "/rank0.ckpt", Error;
  CheckpointHeader H;
  H.WorldSize = 1, H.Step = 3, H.OptimizerStep = 3, H.Scaler.Scale = 1;
  std::vector<CheckpointPart> Parts = {{"master_params", 3670016 + 5},
                                       {"optimizer_states", 100}};
  auto Byte = [](size_t Part, uint64_t I) { return char(I * 131 + Part * 7); };
  setCheckpointChunkBytes(777777);
  EXPECT(writeShard(Path, H, Parts,
                    [&](size_t Part, uint64_t At, uint64_t N, char *Out) {
                      for (uint64_t I = 0; I < N; ++I)
                        Out[I] = Byte(Part, At + I);
                      return true;
                    },
                    Error));
  ShardReader Whole;
  bool Same = Whole.open(Path, Error);
  EXPECT(Same);
  Same = Same && Whole.read(
                     [&](size_t Part, uint64_t At, uint64_t N, const char *In) {
                       for (uint64_t I = 0; I < N; ++I)
                         if (In[I] != Byte(Part, At + I))
                           return false;
                       return true;
                     },
                     Error);
  EXPECT(Same);
  setCheckpointChunkBytes(64ull << 20);
  {
    ShardReader Again;
    EXPECT(Again.open(Path, Error) && Again.verify(Error));
  }
  // One byte of the first part's third block, flipped where it lies.
  uint64_t DataBegin = fs::file_size(Path) - 8 - 4 * (4 + 1) - Parts[0].Bytes -
                       Parts[1].Bytes;
  {
    std::fstream F(Path, std::ios::in | std::ios::out | std::ios::binary);
    F.seekg(std::streamoff(DataBegin + 2200000));
    char C = 0;
    F.read(&C, 1);
    C ^= 0x10;
    F.seekp(std::streamoff(DataBegin + 2200000));
    F.write(&C, 1);
  }
  ShardReader Damaged;
  EXPECT(Damaged.open(Path, Error));
  EXPECT(!Damaged.verify(Error));
  EXPECT(Error == Path + ": rank 0's master_params, bytes 2097152 to 3145728 "
                         "(file offset " + std::to_string(DataBegin + 2097152) +
                         "), do not match their checksum: the shard is damaged");
  // An older shard's version: refused by name.
  {
    std::fstream F(Path, std::ios::in | std::ios::out | std::ios::binary);
    F.seekp(8);
    uint32_t One = 1;
    F.write(reinterpret_cast<const char *>(&One), 4);
  }
  ShardReader Old;
  EXPECT(!Old.open(Path, Error));
  EXPECT(Error.find("written without checksums (version 1)") !=
         std::string::npos);
  fs::remove_all(Root);
}

/// Every part of rank 0's shard in Dir, one at a time, with the byte at its
/// middle flipped: checkCheckpoint must name that part, or fail the test.
/// Prints one line a part, for the tool's lit test.
static void damageEachPart(const plan::Plan &P, const std::string &Dir) {
  std::string Shard = Dir + "/rank0.ckpt", Error;
  ShardReader Reader;
  EXPECT(Reader.open(Shard, Error));
  std::vector<CheckpointPart> Parts = Reader.parts();
  uint64_t Data = 0, Blocks = 0;
  for (const CheckpointPart &Part : Parts)
    Data += Part.Bytes, Blocks += (Part.Bytes + (1 << 20) - 1) >> 20;
  uint64_t At = fs::file_size(Shard) - 8 - 4 * Blocks - Data;
  std::vector<char> Whole = readFile(Shard);
  for (const CheckpointPart &Part : Parts) {
    std::vector<char> Bytes = Whole;
    Bytes[At + Part.Bytes / 2] ^= 0x01;
    std::ofstream(Shard, std::ios::binary | std::ios::trunc)
        .write(Bytes.data(), std::streamsize(Bytes.size()));
    ReshardReport Report;
    bool Refused = !checkCheckpoint(Dir, P, Report, Error) &&
                   Error.find("rank 0's " + Part.Name + ", bytes ") !=
                       std::string::npos;
    EXPECT(Refused);
    printf("%s: %s\n", Part.Name.c_str(), Refused ? "refused" : "ACCEPTED");
    At += Part.Bytes;
  }
  std::ofstream(Shard, std::ios::binary | std::ios::trunc)
      .write(Whole.data(), std::streamsize(Whole.size()));
}

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "--damage-each-part") {
    if (std::optional<plan::Plan> P = load(argv[3]))
      damageEachPart(*P, argv[2]);
    return Failures ? 1 : 0;
  }
  // For the tool's own test: a checkpoint of PLAN in DIR, and no more.
  if ((argc == 4 || argc == 5) &&
      std::string(argv[1]) == "--write-checkpoint") {
    if (std::optional<plan::Plan> P = load(argv[3]))
      writeSynthetic(*P, argv[2], argc == 5 ? uint32_t(atoi(argv[4])) : 10);
    return Failures ? 1 : 0;
  }
  // Cycles of directories, "--" between cycles (one precision each, but
  // for qgZ's fp16 plans, whose conversions must be refused).
  std::vector<std::vector<std::vector<std::string>>> Cycles(1);
  for (int I = 1; I < argc; ++I) {
    if (std::string(argv[I]) == "--")
      Cycles.emplace_back();
    else
      Cycles.back().push_back(plansIn(argv[I]));
  }
  std::string Root = (fs::temp_directory_path() / "dsrun-reshard-test").string();
  checksums(Root + "-checksums");
  // In each cycle, every third plan of a directory converted into one of
  // the next directory's (the last's into the first's), every sixth also
  // into one of its own, with another stage and offload each time.
  int Pairs = 0;
  for (const auto &Dirs : Cycles) {
    for (size_t D = 0; D < Dirs.size(); ++D) {
      const std::vector<std::string> &From = Dirs[D],
                                     &To = Dirs[(D + 1) % Dirs.size()];
      for (size_t I = 0; I < From.size() && !To.empty(); I += 3) {
        roundTrip(From[I], To[(I * 7 + 5) % To.size()], Root);
        ++Pairs;
        if (I % 6 == 0) {
          roundTrip(From[I], From[(I * 5 + 1) % From.size()], Root);
          ++Pairs;
        }
      }
    }
    if (!Dirs.empty() && Dirs[0].size() > 1) {
      refusals(Dirs[0][0], Dirs.back()[Dirs.back().size() / 2], Root);
      // Shards moved 4,093 bytes at a time: nearly every chunk boundary
      // falls inside an element, and stretches of state cross them.
      setCheckpointChunkBytes(4093);
      roundTrip(Dirs[0][0], Dirs.back()[Dirs.back().size() / 2], Root);
      roundTrip(Dirs.back()[Dirs.back().size() / 2], Dirs[0][0], Root);
      setCheckpointChunkBytes(64ull << 20);
      Pairs += 2;
    }
    bool Fingerprinted = false;
    for (const auto &Dir : Dirs)
      for (const std::string &Plan : Dir)
        Fingerprinted = Fingerprinted || swapFingerprint(Plan);
    EXPECT(Fingerprinted || Dirs.empty());
  }
  fs::remove_all(Root);
  printf("%s: %d failure(s), %d conversion(s) checked both ways\n",
         Failures ? "FAILED" : "passed", Failures, Pairs);
  return Failures ? 1 : 0;
}
