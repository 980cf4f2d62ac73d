//===- dsc-modelgen.cpp - Write transformer graphs without weights --------===//
//
//   dsc-modelgen --preset llama-70b -o llama-70b.onnx
//   dsc-modelgen --arch llama --layers 4 --hidden 256 --heads 8 \
//                --kv-heads 2 -o small.onnx
//
// Prints the parameter count PyTorch would report for the same model.
//
//===----------------------------------------------------------------------===//

#include "dsc/Graph/ModelGen.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace dsc;

static cl::OptionCategory ModelGenCategory("dsc-modelgen options");

static cl::opt<std::string> Output("o", cl::desc("Output .onnx file"),
                                   cl::value_desc("file"), cl::Required,
                                   cl::cat(ModelGenCategory));
static cl::opt<std::string> Preset("preset",
                                   cl::desc("gpt2-small, gpt2-xl, llama-1b, "
                                            "llama-7b, llama-70b, llama-405b"),
                                   cl::cat(ModelGenCategory));
static cl::opt<std::string> Arch("arch", cl::desc("gpt or llama"),
                                 cl::init("gpt"), cl::cat(ModelGenCategory));
static cl::opt<int64_t> Layers("layers", cl::desc("Transformer blocks"),
                               cl::init(2), cl::cat(ModelGenCategory));
static cl::opt<int64_t> Hidden("hidden", cl::desc("Hidden size"), cl::init(64),
                               cl::cat(ModelGenCategory));
static cl::opt<int64_t> Heads("heads", cl::desc("Attention heads"), cl::init(4),
                              cl::cat(ModelGenCategory));
static cl::opt<int64_t>
    KVHeads("kv-heads",
            cl::desc("Key/value heads (grouped-query attention; 0 = heads)"),
            cl::init(0), cl::cat(ModelGenCategory));
static cl::opt<int64_t> FFN("ffn",
                            cl::desc("MLP width (0: 4 x hidden for gpt, 8/3 x "
                                     "hidden rounded up to 256 for llama)"),
                            cl::init(0), cl::cat(ModelGenCategory));
static cl::opt<int64_t> Vocab("vocab", cl::desc("Vocabulary size"),
                              cl::init(1000), cl::cat(ModelGenCategory));
static cl::opt<bool> Untied("untied", cl::desc("A separate lm_head weight"),
                            cl::cat(ModelGenCategory));
static cl::opt<bool> BF16("bf16", cl::desc("bf16 weights"),
                          cl::cat(ModelGenCategory));

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::HideUnrelatedOptions(ModelGenCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "Write a GPT- or Llama-structured ONNX graph "
                              "with external weights that are never "
                              "written\n");
  TransformerSpec S;
  if (!Preset.empty()) {
    Expected<TransformerSpec> P = transformerPreset(Preset);
    if (!P) {
      WithColor::error(errs(), "dsc-modelgen")
          << toString(P.takeError()) << "\n";
      return 2;
    }
    S = *P;
  } else {
    if (Arch != "gpt" && Arch != "llama") {
      WithColor::error(errs(), "dsc-modelgen") << "--arch is gpt or llama\n";
      return 2;
    }
    S.Arch = Arch == "gpt" ? Architecture::GPT : Architecture::Llama;
    S.Layers = Layers, S.Hidden = Hidden, S.Heads = Heads;
    S.KVHeads = KVHeads, S.FFN = FFN, S.Vocab = Vocab;
    S.TiedEmbeddings = !Untied;
    S.BF16 = BF16;
  }
  S.WeightsFile = sys::path::filename(Output).str() + ".data";
  Expected<std::string> Bytes = generateTransformer(S);
  if (!Bytes) {
    WithColor::error(errs(), "dsc-modelgen")
        << toString(Bytes.takeError()) << "\n";
    return 2;
  }
  std::error_code EC;
  raw_fd_ostream OS(Output, EC, sys::fs::OF_None);
  if (EC) {
    WithColor::error(errs(), "dsc-modelgen")
        << Output << ": " << EC.message() << "\n";
    return 2;
  }
  OS << *Bytes;
  outs() << Output << ": " << expectedParameters(S) << " parameters, "
         << Bytes->size() << " bytes of graph (weights not written)\n";
  return 0;
}
