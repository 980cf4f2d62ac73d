//===- FileTests.cpp - Files tests ------------------------------------------===//
//
// The files dsrun reads and writes: NVMe swap files, token files, initial
// weights, checkpoint shards.
//
//===----------------------------------------------------------------------===//

#include "HostTests.h"

#include "Calibration.h"
#include "Checkpoint.h"
#include "Collectives.h"
#include "Crc32c.h"
#include "Exposed.h"
#include "FastDivmod.h"
#include "HostMath.h"
#include "Launch.h"
#include "Arena.h"
#include "LossScaler.h"
#include "dsc/KernelTime.h"
#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"
#include "Nvme.h"
#include "TokenData.h"
#include "Trace.h"
#include "Weights.h"
#include "dsc/PlanFacts.h"
#include "dsc/SafeTensors.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;

static std::string writeTemp(const std::string &Name, const void *Data,
                             size_t Bytes) {
  std::string Path = "/tmp/dsrun-host-test-" + std::to_string(getpid()) + "-" + Name;
  std::ofstream(Path, std::ios::binary)
      .write(static_cast<const char *>(Data), std::streamsize(Bytes));
  return Path;
}

/// The swap-file engine on plain files: every alignment of memory, offset
/// and size, several threads, and the errors a user can meet.
TEST(Files, SwapFiles) {
  const char *Tmp = getenv("TMPDIR");
  std::string Template = std::string(Tmp ? Tmp : "/tmp") + "/dsrun-swap-XXXXXX";
  std::vector<char> Name(Template.begin(), Template.end());
  Name.push_back(0);
  if (!mkdtemp(Name.data())) {
    EXPECT(!"mkdtemp");
    return;
  }
  std::string Path = std::string(Name.data()) + "/rank0.swp";
  const uint64_t Size = 3 << 20;
  std::string Error;
  {
    SwapFile F;
    EXPECT(F.create(Path, Size, 4, 64 << 10, Error));
    fprintf(stderr, "swap file on %s: direct I/O %s\n", Name.data(),
            F.direct() ? "yes" : "no (buffered)");
    // Aligned memory (what the pinned arena gives) and unaligned memory.
    std::vector<char> Storage(Size + 2 * SwapFile::Alignment);
    char *Aligned = reinterpret_cast<char *>(
        (uintptr_t(Storage.data()) + SwapFile::Alignment - 1) /
        SwapFile::Alignment * SwapFile::Alignment);
    for (uint64_t I = 0; I < Size; ++I)
      Aligned[I] = char(I * 131 + 7);
    EXPECT(F.write(Aligned, 0, Size, Error));
    struct Case {
      uint64_t Offset, Bytes, Shift;
    };
    for (Case C : {Case{0, Size, 0}, Case{4096, 1 << 20, 0},
                   Case{100, 300000, 100}, Case{8192, 5000, 3},
                   Case{Size - 1, 1, 0}, Case{12345, 0, 0}}) {
      std::vector<char> Back(C.Bytes + 2 * SwapFile::Alignment);
      char *Into = reinterpret_cast<char *>(
                       (uintptr_t(Back.data()) + SwapFile::Alignment - 1) /
                       SwapFile::Alignment * SwapFile::Alignment) +
                   C.Shift;
      EXPECT(F.read(Into, C.Offset, C.Bytes, Error));
      EXPECT(memcmp(Into, Aligned + C.Offset, C.Bytes) == 0);
    }
    // An unaligned write in the middle lands exactly there.
    std::vector<char> Patch(7777, 'x');
    EXPECT(F.write(Patch.data(), 50001, Patch.size(), Error));
    std::vector<char> Back(Size);
    EXPECT(F.read(Back.data(), 0, Size, Error));
    EXPECT(Back[50000] == Aligned[50000] && Back[50001] == 'x' &&
           Back[50001 + 7776] == 'x' && Back[50001 + 7777] == Aligned[57778]);
    // Past the end: an error that names the file.
    EXPECT(!F.read(Back.data(), Size - 10, 20, Error));
    EXPECT(Error.find(Path) != std::string::npos &&
           Error.find("past") != std::string::npos);
  }
  // The destructor removed the file; a directory that does not exist is a
  // clear error.
  EXPECT(access(Path.c_str(), F_OK) != 0);
  SwapFile Bad;
  EXPECT(!Bad.create(std::string(Name.data()) + "/missing/rank0.swp", 4096, 1,
                     4096, Error));
  EXPECT(Error.find("--nvme-path") != std::string::npos);
  rmdir(Name.data());
}

/// nanoGPT's raw uint16 ids and llm.c's headered files read alike; broken
/// ones are errors that say what is wrong; the sample order is a
/// permutation per epoch, the same for the same seed.
TEST(Files, TokenFiles) {
  std::vector<uint16_t> Raw = {5, 7, 11, 65535, 3};
  std::string Error;
  std::string A = writeTemp("raw.bin", Raw.data(), Raw.size() * 2);
  std::optional<TokenFile> F = TokenFile::open(A, Error);
  EXPECT(F && F->tokens() == 5 && F->tokenBytes() == 2 && (*F)[3] == 65535);
  EXPECT(F && F->firstAtLeast(1000) == 3 && F->firstAtLeast(70000) == 5);

  std::vector<int32_t> Header(256, 0);
  Header[0] = int32_t(LlmcMagic);
  Header[1] = 2;
  Header[2] = 3;
  std::vector<char> Llmc(1024 + 12);
  memcpy(Llmc.data(), Header.data(), 1024);
  uint32_t Ids[3] = {100000, 1, 2};
  memcpy(Llmc.data() + 1024, Ids, 12);
  std::string B = writeTemp("llmc.bin", Llmc.data(), Llmc.size());
  F = TokenFile::open(B, Error);
  EXPECT(F && F->tokens() == 3 && F->tokenBytes() == 4 && (*F)[0] == 100000);
  EXPECT(F && std::string(F->format()) == "llm.c");

  Header[2] = 4; // Promises more than the file holds.
  memcpy(Llmc.data(), Header.data(), 1024);
  std::string C = writeTemp("short.bin", Llmc.data(), Llmc.size());
  EXPECT(!TokenFile::open(C, Error) && Error.find("truncated") != std::string::npos);
  Header[1] = 7;
  memcpy(Llmc.data(), Header.data(), 1024);
  std::string D = writeTemp("version.bin", Llmc.data(), Llmc.size());
  EXPECT(!TokenFile::open(D, Error) && Error.find("version 7") != std::string::npos);
  // llm.c's own uint32 files (its Llama 3 data): magic 20240801, version 7.
  Header[0] = int32_t(LlmcWideMagic);
  Header[2] = 3;
  memcpy(Llmc.data(), Header.data(), 1024);
  std::string Wide = writeTemp("wide.bin", Llmc.data(), Llmc.size());
  F = TokenFile::open(Wide, Error);
  EXPECT(F && F->tokens() == 3 && F->tokenBytes() == 4 && (*F)[0] == 100000);
  Header[1] = 2;
  memcpy(Llmc.data(), Header.data(), 1024);
  std::string WideV2 = writeTemp("wide-v2.bin", Llmc.data(), Llmc.size());
  EXPECT(!TokenFile::open(WideV2, Error) &&
         Error.find("magic 20240801 and version 2") != std::string::npos);
  unlink(Wide.c_str());
  unlink(WideV2.c_str());
  std::string E = writeTemp("odd.bin", Raw.data(), 9);
  EXPECT(!TokenFile::open(E, Error) && Error.find("uint16") != std::string::npos);
  EXPECT(!TokenFile::open("/nonexistent/tokens.bin", Error));
  for (const std::string &Path : {A, B, C, D, E})
    unlink(Path.c_str());

  // 1000 tokens of windows of 9 + 1: 111 windows; each epoch visits each
  // once, epochs differ, and the seed decides.
  TokenSampler S(1000, 9, 42), Same(1000, 9, 42), Other(1000, 9, 43);
  EXPECT(S.windows() == 111);
  std::vector<bool> Seen(111, false);
  bool Differs = false, EpochDiffers = false;
  for (uint64_t G = 0; G < 111; ++G) {
    uint64_t Start = S.start(G);
    EXPECT(Start % 9 == 0 && Start + 10 <= 1000 && !Seen[Start / 9]);
    Seen[Start / 9] = true;
    EXPECT(Same.start(G) == Start);
    Differs |= Other.start(G) != Start;
    EpochDiffers |= S.start(G + 111) != Start;
  }
  EXPECT(Differs && EpochDiffers);
  // The order runtime/bench/dsrun_data.py reproduces (its test prints it).
  EXPECT((shuffledWindows(5, 1, 0) == std::vector<uint32_t>{2, 1, 4, 3, 0}));
  EXPECT((shuffledWindows(10, 1234, 3) ==
          std::vector<uint32_t>{6, 3, 5, 8, 1, 7, 2, 4, 0, 9}));
}

/// Weights match by name and shape; a tied weight the file keeps under
/// another name is the one unclaimed tensor of its shape; a shape that
/// differs names both; saving writes a file the reader takes back.
TEST(Files, Crc32c) {
  // The check value of CRC-32C (RFC 3720's), then a running sum taken in
  // two pieces equal to one taken whole.
  const char *Digits = "123456789";
  EXPECT(crc32c(0, Digits, 9) == 0xE3069283u);
  EXPECT(crc32c(crc32c(0, Digits, 4), Digits + 4, 5) == 0xE3069283u);
  EXPECT(crc32cText(0xE3069283u) == "e3069283");
  std::vector<char> Long(1000, 'x');
  EXPECT(crc32c(crc32c(0, Long.data(), 333), Long.data() + 333, 667) ==
         crc32c(0, Long.data(), 1000));
}

/// A large bf16 tensor decodes on several threads (one per 2^20 elements,
/// up to 8, where the machine has the cores): every element lands in its
/// place.
TEST(Files, LargeBf16WeightsDecodeInPlace) {
  constexpr uint64_t N = 3000000;
  plan::Plan P;
  P.Tensors.resize(1);
  P.Tensors[0].Name = "w";
  P.Tensors[0].Shape = {int64_t(N)};
  P.Tensors[0].Elems = N;
  std::vector<uint16_t> Bits(N);
  for (uint64_t I = 0; I < N; ++I) // 1 to 1.75, exact in bf16
    Bits[I] = uint16_t(0x3f80 + (I % 97));
  dsc::safetensors::Writer W;
  W.add("w", "BF16", {int64_t(N)}, Bits.data(), N * 2);
  std::vector<char> Bytes = W.bytes();
  std::string Path = writeTemp("big.safetensors", Bytes.data(), Bytes.size());
  std::string Error;
  std::optional<InitialWeights> I = loadWeights(P, Path, Error);
  EXPECT(I && I->Values[0].size() == N);
  bool Same = true;
  for (uint64_t K = 0; I && K < N; ++K) {
    uint32_t Expect = uint32_t(Bits[K]) << 16;
    float F;
    memcpy(&F, &Expect, 4);
    Same = Same && I->Values[0][K] == F;
  }
  EXPECT(Same);
}

TEST(Files, WeightFiles) {
  plan::Plan P;
  P.Tensors.resize(2);
  P.Tensors[0].Name = "lm_head.weight";
  P.Tensors[0].Shape = {3, 2};
  P.Tensors[0].Elems = 6;
  P.Tensors[1].Name = "ln.bias";
  P.Tensors[1].Shape = {2};
  P.Tensors[1].Elems = 2;
  float Embedding[6] = {1, 2, 3, 4, 5, 6};
  uint16_t Bias[2] = {0x3f80, 0xc000}; // bf16 1 and -2
  dsc::safetensors::Writer W;
  W.add("wte.weight", "F32", {3, 2}, Embedding, sizeof(Embedding));
  W.add("ln.bias", "BF16", {2}, Bias, sizeof(Bias));
  std::vector<char> Bytes = W.bytes();
  std::string Path = writeTemp("w.safetensors", Bytes.data(), Bytes.size());
  std::string Error;
  std::optional<InitialWeights> I = loadWeights(P, Path, Error);
  EXPECT(I && I->FileName[0] == "wte.weight" && I->Values[0][5] == 6.0f);
  EXPECT(I && I->Values[1][0] == 1.0f && I->Values[1][1] == -2.0f);

  P.Tensors[1].Shape = {3};
  P.Tensors[1].Elems = 3;
  EXPECT(!loadWeights(P, Path, Error) &&
         Error.find("'ln.bias' has shape [2]") != std::string::npos);
  P.Tensors[1].Name = "ln.weight";
  EXPECT(!loadWeights(P, Path, Error) &&
         Error.find("no tensor named 'ln.weight'") != std::string::npos);
  P.Tensors[1].Name = "ln.bias";
  P.Tensors[1].Shape = {2};
  P.Tensors[1].Elems = 2;

  std::vector<std::vector<char>> Data(2);
  Data[0].resize(12);
  Data[1].resize(4);
  for (int K = 0; K < 6; ++K)
    storeAs(Data[0].data(), K, ElementType::BF16, float(K) * 0.5f);
  memcpy(Data[1].data(), Bias, 4);
  std::string Saved = Path + ".saved";
  EXPECT(saveWeights(P, I->FileName, Data, ElementType::BF16, Saved, Error));
  std::optional<InitialWeights> Back = loadWeights(P, Saved, Error);
  EXPECT(Back && Back->FileName[0] == "wte.weight" &&
         Back->Values[0][3] == 1.5f && Back->Values[1][1] == -2.0f);
  EXPECT(checkWeightsFile(Saved, Error));
  // A file dsrun did not write has no checksums: loaded, but not "whole".
  EXPECT(!checkWeightsFile(Path, Error) &&
         Error.find("'wte.weight' has no checksum") != std::string::npos);
  {
    // One flipped bit in ln.bias, the last tensor: the last bytes.
    std::ifstream In(Saved, std::ios::binary);
    std::string File((std::istreambuf_iterator<char>(In)), {});
    File.back() ^= 1;
    std::string Damaged =
        writeTemp("damaged.safetensors", File.data(), File.size());
    const char *Says = "tensor 'ln.bias', bytes 12 to 16 of the data (file "
                       "offset ";
    EXPECT(!loadWeights(P, Damaged, Error) &&
           Error.find(Says) != std::string::npos &&
           Error.find("does not match its checksum: the file is damaged") !=
               std::string::npos);
    EXPECT(!checkWeightsFile(Damaged, Error) &&
           Error.find(Says) != std::string::npos);
    unlink(Damaged.c_str());
  }
  EXPECT(!saveWeights(P, I->FileName, Data, ElementType::BF16,
                      "/nonexistent/dir/w.safetensors", Error));
  unlink(Path.c_str());
  unlink(Saved.c_str());
}

/// save_pretrained's layout: shards cut as transformers cuts them, the
/// index, config.json along; read back through the index, a folder or the
/// index's path; an earlier save's files that would shadow this one gone;
/// an index that lies, or points outside its folder, refused by name.
TEST(Files, ModelFolders) {
  namespace fs = std::filesystem;
  plan::Plan P;
  const char *Names[4] = {"embed.weight", "l0.weight", "l1.weight", "norm"};
  const int64_t Rows[4] = {8, 4, 4, 1};
  std::vector<std::vector<char>> Data(4);
  for (uint32_t T = 0; T < 4; ++T) {
    plan::Tensor X;
    X.Name = Names[T];
    X.Shape = {Rows[T], 4};
    X.Elems = uint64_t(Rows[T]) * 4;
    P.Tensors.push_back(X);
    Data[T].resize(X.Elems * 2);
    for (uint64_t K = 0; K < X.Elems; ++K)
      storeAs(Data[T].data(), K, ElementType::BF16, float(T * 64 + K));
  }
  std::vector<std::string> FileNames = {"model.embed_tokens.weight", "", "",
                                        ""};
  std::string Dir = "/tmp/dsrun-host-test-" + std::to_string(getpid()) + "-m",
              From = Dir + "-from", Error;
  fs::remove_all(Dir);
  fs::create_directories(From);
  std::ofstream(From + "/config.json") << "{\"model_type\": \"llama\"}\n";
  // A single file an earlier save left, which from_pretrained would read
  // before the index.
  fs::create_directories(Dir);
  std::ofstream(Dir + "/model.safetensors") << "stale";
  std::ofstream(Dir + "/model-00009-of-00009.safetensors") << "stale";
  // 64 + 32 bytes fit 100; the next 32 start a shard; the last 8 join it.
  EXPECT(saveModelFolder(P, FileNames, Data, ElementType::BF16, Dir, 100,
                         From, Error));
  EXPECT(modelWeightsFiles(Dir) ==
         std::vector<std::string>({"model-00001-of-00002.safetensors",
                                   "model-00002-of-00002.safetensors",
                                   "model.safetensors.index.json"}));
  EXPECT(fs::exists(Dir + "/config.json"));
  std::ifstream IndexFile(Dir + "/model.safetensors.index.json");
  std::string IndexText((std::istreambuf_iterator<char>(IndexFile)), {});
  dsc::safetensors::Index Index;
  EXPECT(dsc::safetensors::readIndex(IndexText.data(), IndexText.size(), Index,
                                     Error));
  EXPECT(Index.TotalSize == 136 && Index.WeightMap.size() == 4 &&
         Index.WeightMap["model.embed_tokens.weight"] ==
             "model-00001-of-00002.safetensors" &&
         Index.WeightMap["l0.weight"] == "model-00001-of-00002.safetensors" &&
         Index.WeightMap["l1.weight"] == "model-00002-of-00002.safetensors" &&
         Index.WeightMap["norm"] == "model-00002-of-00002.safetensors");
  for (const std::string &Path :
       {Dir, Dir + "/model.safetensors.index.json"}) {
    std::optional<InitialWeights> Back = loadWeights(P, Path, Error);
    EXPECT(Back && Back->Folder == Dir &&
           Back->FileName[0] == "model.embed_tokens.weight" &&
           Back->Values[0][31] == 31.0f && Back->Values[2][5] == 133.0f &&
           Back->Values[3][3] == 195.0f);
  }
  EXPECT(checkWeightsFile(Dir, Error));
  // A user's own file beside the weights survives every save.
  std::ofstream(Dir + "/my.safetensors") << "mine";
  // A second save that fits one file replaces the shards and the index.
  EXPECT(saveModelFolder(P, FileNames, Data, ElementType::BF16, Dir,
                         5000000000ull, From, Error));
  EXPECT(modelWeightsFiles(Dir) ==
         std::vector<std::string>({"model.safetensors"}));
  EXPECT(fs::exists(Dir + "/my.safetensors"));
  EXPECT(loadWeights(P, Dir, Error).has_value());
  // An index beside model.safetensors (left by another tool): the single
  // file is read, as from_pretrained reads it.
  std::ofstream(Dir + "/model.safetensors.index.json")
      << "{\"weight_map\": {\"norm\": \"gone.safetensors\"}}";
  EXPECT(loadWeights(P, Dir, Error).has_value());
  fs::remove(Dir + "/model.safetensors.index.json");
  // A tensor past the limit gets a shard of its own where it comes; the
  // current shard goes on filling (huggingface_hub's rule): 64-byte embed
  // alone at 40 bytes; 32 + 0 ... l0 and l1 (32 each) cannot share 40.
  EXPECT(saveModelFolder(P, FileNames, Data, ElementType::BF16, Dir, 40, From,
                         Error));
  {
    std::ifstream In(Dir + "/model.safetensors.index.json");
    std::string Text((std::istreambuf_iterator<char>(In)), {});
    dsc::safetensors::Index Cut;
    EXPECT(dsc::safetensors::readIndex(Text.data(), Text.size(), Cut, Error));
    EXPECT(Cut.WeightMap["model.embed_tokens.weight"] ==
               "model-00001-of-00003.safetensors" &&
           Cut.WeightMap["l0.weight"] == "model-00002-of-00003.safetensors" &&
           Cut.WeightMap["l1.weight"] == "model-00003-of-00003.safetensors" &&
           Cut.WeightMap["norm"] == "model-00003-of-00003.safetensors");
  }

  // Indexes that lie.
  auto Refused = [&](const std::string &Json, const char *Says) {
    std::ofstream(Dir + "/model.safetensors.index.json") << Json;
    bool Ok = !loadWeights(P, Dir, Error) &&
              Error.find(Says) != std::string::npos;
    if (!Ok)
      fprintf(stderr, "wanted '%s', got '%s'\n", Says, Error.c_str());
    EXPECT(Ok);
  };
  Refused("{\"weight_map\": {\"norm\": \"model-00003-of-00003.safetensors\", "
          "\"gone\": \"model-00003-of-00003.safetensors\"}}",
          "puts 'gone' in model-00003-of-00003.safetensors, which does not "
          "hold it");
  Refused("{\"weight_map\": {\"norm\": \"../model.safetensors\"}}",
          "which is not a file name in the index's folder");
  Refused("{\"metadata\": {}}", "it has no weight_map");
  Refused("{\"weight_map\": {\"norm\": \"absent.safetensors\"}}",
          "absent.safetensors: cannot open");
  Refused("{\"weight_map\": {\"norm\": 3}}", "malformed safetensors index");
  // What transformers reads past: metadata that is null, or sizes that are
  // not integers.
  for (const char *Meta : {"null", "{\"total_size\": 136.0}",
                           "{\"total_size\": \"136\", \"format\": \"pt\"}"}) {
    std::string Json = std::string("{\"metadata\": ") + Meta +
                       ", \"weight_map\": {\"x\": \"f.safetensors\"}}";
    dsc::safetensors::Index Lenient;
    EXPECT(dsc::safetensors::readIndex(Json.data(), Json.size(), Lenient,
                                       Error) &&
           Lenient.WeightMap.size() == 1 && Lenient.TotalSize == 0);
  }
  // Empty objects are closed once: an index without members has no
  // weight_map, a header without tensors holds none, and an empty tensor
  // entry lacks its dtype.
  {
    dsc::safetensors::Index Empty;
    EXPECT(!dsc::safetensors::readIndex("{ }", 3, Empty, Error) &&
           Error == "malformed safetensors index: it has no weight_map");
    auto Header = [](const std::string &Json) {
      std::string F(8, '\0');
      for (int K = 0; K < 8; ++K)
        F[size_t(K)] = char((Json.size() >> (8 * K)) & 0xff);
      return F + Json;
    };
    dsc::safetensors::Header H;
    std::string File = Header("{}");
    EXPECT(dsc::safetensors::readHeader(File.data(), File.size(), File.size(),
                                        H, Error) &&
           H.Tensors.empty());
    File = Header("{\"x\": {}}");
    EXPECT(!dsc::safetensors::readHeader(File.data(), File.size(),
                                         File.size(), H, Error) &&
           Error == "malformed safetensors header: tensor 'x' has dtype '', "
                    "which dsc does not read");
  }
  fs::remove_all(Dir);
  fs::create_directories(Dir);
  EXPECT(!loadWeights(P, Dir, Error) &&
         Error.find("a folder with neither model.safetensors nor "
                    "model.safetensors.index.json") != std::string::npos);

  // The folder's vocabulary, which dsrun holds token ids to.
  std::ofstream(Dir + "/config.json")
      << "{\"architectures\": [\"X\"], \"rope_scaling\": {\"factor\": 8.0},"
         " \"vocab_size\": 32000, \"tie_word_embeddings\": false}";
  EXPECT(configVocabSize(Dir, Error) == 32000ull);
  std::ofstream(Dir + "/config.json") << "{\"hidden_size\": 64}";
  Error.clear();
  EXPECT(!configVocabSize(Dir, Error) && Error.empty());
  std::ofstream(Dir + "/config.json") << "{\"vocab_size\": \"many\"}";
  EXPECT(!configVocabSize(Dir, Error) &&
         Error.find("config.json: expected a number") != std::string::npos);

  EXPECT(parseShardSize("5GB") == 5000000000ull);
  EXPECT(parseShardSize("500MB") == 500000000ull);
  EXPECT(parseShardSize("2GiB") == 2147483648ull);
  EXPECT(parseShardSize("1000") == 1000ull);
  EXPECT(parseShardSize("8Gb") == 1000000000ull); // Bits, as transformers.
  EXPECT(!parseShardSize("5 GB") && !parseShardSize("GB") &&
         !parseShardSize("-1GB") && !parseShardSize("5XB"));
  fs::remove_all(Dir);
  fs::remove_all(From);
}

/// A full file system while saving, on a 1 MiB tmpfs of a mount namespace
/// of its own: the shard that does not fit is refused before a byte is
/// written, naming the bytes needed and free, and leaves no file behind;
/// a failed save's directory is removed unless latest names it.
TEST(Files, FullDisk) {
  char Dir[] = "/tmp/dsrun-full-XXXXXX";
  ASSERT_TRUE(mkdtemp(Dir));
  std::string Root = Dir;
  int Pipe[2];
  ASSERT_EQ(pipe(Pipe), 0);
  fflush(nullptr);
  pid_t Pid = fork();
  if (Pid == 0) {
    std::string Said;
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("dsrun-test", Dir, "tmpfs", 0, "size=1m") != 0) {
      Said = "skip: cannot mount a tmpfs here";
    } else {
      CheckpointHeader H;
      H.WorldSize = 1;
      std::vector<CheckpointPart> Parts = {{"master_params", 3u << 20}};
      std::string Error;
      bool Wrote = writeShard(Root + "/rank0.ckpt", H, Parts,
                              [](size_t, uint64_t, uint64_t N, char *Out) {
                                memset(Out, 1, N);
                                return true;
                              },
                              Error);
      Said = (Wrote ? "written" : Error) + "|";
      for (const auto &E : std::filesystem::directory_iterator(Root))
        Said += E.path().filename().string() + ",";
    }
    (void)!write(Pipe[1], Said.data(), Said.size());
    _exit(0);
  }
  close(Pipe[1]);
  std::string Said;
  char Buffer[1024];
  for (ssize_t N; (N = read(Pipe[0], Buffer, sizeof(Buffer))) > 0;)
    Said.append(Buffer, size_t(N));
  close(Pipe[0]);
  waitpid(Pid, nullptr, 0);
  if (Said.rfind("skip", 0) == 0) {
    std::filesystem::remove_all(Root);
    GTEST_SKIP() << Said;
  }
  // Nothing left in the directory: the text after '|' is empty.
  EXPECT_TRUE(
      Said.find(Root + "/rank0.ckpt: needs 3145865 bytes (3.00 MiB) ") == 0)
      << Said;
  EXPECT_TRUE(Said.find("and the file system has 1048576 bytes (1.00 MiB) "
                        "free (No space left on device)|") != std::string::npos)
      << Said;
  EXPECT_TRUE(Said.back() == '|') << Said;

  // latest names step 5; step 10's save failed part way.
  std::filesystem::create_directories(Root + "/global_step5");
  std::filesystem::create_directories(Root + "/global_step10");
  std::ofstream(Root + "/global_step10/rank1.ckpt") << "half";
  std::ofstream(Root + "/latest") << "global_step5\n";
  EXPECT(discardCheckpoint(Root, 10) ==
         Root + "/global_step10 (partly written) is removed");
  EXPECT(!std::filesystem::exists(Root + "/global_step10"));
  EXPECT(discardCheckpoint(Root, 5).empty());
  EXPECT(std::filesystem::exists(Root + "/global_step5"));
  std::filesystem::remove_all(Root);
}

/// A shard written, read back, cut short, and checked against a plan.
TEST(Files, CheckpointFiles) {
  char Dir[] = "/tmp/dsrun-ckpt-XXXXXX";
  EXPECT(mkdtemp(Dir) != nullptr);
  std::string Root = Dir, Error;
  std::string Step = Root + "/save/" + checkpointName(7);
  EXPECT(makeDirectories(Step, Error));
  CheckpointHeader H;
  H.ModelHash = 11;
  H.ConfigHash = 12;
  H.WorldSize = 2;
  H.Rank = 1;
  H.ZeroStage = 3;
  H.ParamType = uint32_t(plan::DType::BF16);
  H.Step = 7;
  H.OptimizerStep = 6;
  H.Seed = 99;
  H.Scaler.Scale = 512;
  H.Scaler.LastOverflow = 3;
  std::vector<CheckpointPart> Parts = {{"params16", 10}, {"master_params", 0},
                                       {"optimizer_states", 100}};
  std::string Path = Step + "/rank0.ckpt";
  auto Byte = [](size_t Part, uint64_t At) { return char(Part * 31 + At); };
  EXPECT(writeShard(Path, H, Parts,
                    [&](size_t I, uint64_t At, uint64_t N, char *Out) {
                      for (uint64_t K = 0; K < N; ++K)
                        Out[K] = Byte(I, At + K);
                      return true;
                    },
                    Error));
  ShardReader R;
  EXPECT(R.open(Path, Error));
  EXPECT(R.header().Step == 7 && R.header().OptimizerStep == 6 &&
         R.header().Seed == 99 && R.header().Scaler.Scale == 512 &&
         R.header().Scaler.LastOverflow == 3 && R.parts().size() == 3 &&
         R.parts()[2].Name == "optimizer_states" && R.parts()[2].Bytes == 100);
  uint64_t Same = 0;
  EXPECT(R.read(
      [&](size_t I, uint64_t At, uint64_t N, const char *From) {
        for (uint64_t K = 0; K < N; ++K)
          Same += From[K] == Byte(I, At + K);
        return true;
      },
      Error));
  EXPECT(Same == 110);

  // latest names the step's directory; --resume takes either.
  EXPECT(checkpointToResume(Root + "/save", Error).empty());
  EXPECT(writeFileAtomically(Root + "/save/latest", "global_step7\n", Error));
  EXPECT(checkpointToResume(Root + "/save", Error) == Step);
  EXPECT(checkpointToResume(Step, Error) == Step);
  EXPECT(writeFileAtomically(Root + "/save/latest", "global_step8\n", Error));
  EXPECT(checkpointToResume(Root + "/save", Error).empty() &&
         Error.find("names 'global_step8'") != std::string::npos);

  // A shard cut short is refused, whole or not.
  std::string Cut = Root + "/cut.ckpt";
  {
    std::ifstream In(Path, std::ios::binary);
    std::string Bytes((std::istreambuf_iterator<char>(In)), {});
    EXPECT(writeFileAtomically(Cut, Bytes.substr(0, Bytes.size() - 20), Error));
  }
  ShardReader Short;
  EXPECT(!Short.open(Cut, Error) &&
         Error.find("cut short") != std::string::npos);

  // Damaged shards, byte by byte and cut at every length: each is refused
  // or read whole, never a crash or a read past the file.
  {
    std::ifstream In(Path, std::ios::binary);
    std::string Good((std::istreambuf_iterator<char>(In)), {});
    std::string Bad = Root + "/bad.ckpt";
    uint64_t Refused = 0, Tries = 0, Damaged = 0;
    auto Try = [&](const std::string &Bytes) {
      std::string E;
      EXPECT(writeFileAtomically(Bad, Bytes, E));
      ShardReader B;
      ++Tries;
      if (!B.open(Bad, E)) {
        EXPECT(!E.empty());
        ++Refused;
        return;
      }
      uint64_t Seen = 0;
      // Bytes of the parts (or their checksums) flipped: the read names
      // the damaged block.
      bool Read = B.read([&](size_t, uint64_t, uint64_t N, const char *) {
        Seen += N;
        return true;
      }, E);
      EXPECT(Read || E.find("do not match their checksum") != std::string::npos);
      if (!Read) {
        ++Damaged;
        return;
      }
      uint64_t Promised = 0;
      for (const CheckpointPart &X : B.parts())
        Promised += X.Bytes;
      EXPECT(Seen == Promised && Promised <= Bytes.size());
    };
    for (size_t Length = 0; Length < Good.size(); ++Length)
      Try(Good.substr(0, Length));
    for (size_t At = 0; At < Good.size(); ++At)
      for (unsigned char Flip : {0x01, 0x80, 0xff}) {
        std::string Bytes = Good;
        Bytes[At] = char(Bytes[At] ^ Flip);
        Try(Bytes);
      }
    EXPECT(Refused >= Good.size()); // Every cut; most flips of the table.
    EXPECT(Tries > Refused);        // Flips of header values still read.
    // Every flip of the parts' 110 bytes and of their blocks' checksums
    // (one block for each part that has bytes) is caught when the shard is
    // read.
    uint64_t Blocks = 0;
    for (const CheckpointPart &X : R.parts())
      Blocks += X.Bytes > 0;
    EXPECT(Damaged == 3 * (110 + 4 * Blocks));
  }

  // Against a plan: what differs is named.
  plan::Plan P;
  P.Settings.ModelHash = 11;
  P.Settings.WorldSize = 2;
  P.Settings.ZeroStage = 3;
  P.Settings.ParamDType = plan::DType::BF16;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Parts).empty());
  P.Settings.WorldSize = 4;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Parts)
             .find("world size 2 and this plan has 4") != std::string::npos);
  P.Settings.WorldSize = 2;
  std::vector<CheckpointPart> Bigger = Parts;
  Bigger[2].Bytes = 200;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Bigger)
             .find("optimizer_states of bytes 100") != std::string::npos);
  P.Settings.ModelHash = 5;
  EXPECT(checkShardAgainstPlan(H, Parts, P, 1, Parts)
             .find("another model") != std::string::npos);
  std::string Clean = "rm -rf " + Root;
  EXPECT(system(Clean.c_str()) == 0);
}
