//===- ModelGen.cpp -------------------------------------------------------===//
//
// GPT (GPT-2 style: learned positions, LayerNorm, GELU MLP, fused c_attn)
// and Llama (RMSNorm, rotary inputs elided, grouped-query attention, SwiGLU)
// blocks, named as Hugging Face names their parameters.
//
//===----------------------------------------------------------------------===//

#include "dsc/Graph/ModelGen.h"
#include "dsc/Graph/OnnxWriter.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace dsc {

namespace {

class Builder : OnnxWriter {
public:
  explicit Builder(const TransformerSpec &S)
      : OnnxWriter(S.Arch == Architecture::GPT ? "gpt" : "llama",
                   "dsc-modelgen", S.BF16 ? BFloat16 : Float32,
                   S.WeightsFile),
        S(S) {}

  std::string linear(const std::string &Scope, const std::string &X,
                     int64_t In, int64_t Out, bool Bias,
                     const std::string &Name) {
    // GPT-2's Conv1D stores [in, out]; Llama's Linear [out, in] (used
    // through a Transpose, as the exporters write it).
    std::string Y;
    if (S.Arch == Architecture::GPT) {
      std::string W = weight(Name + ".weight", {In, Out});
      Y = node("MatMul", Scope, {X, W}, {"batch", "sequence", N(Out)});
    } else {
      std::string W = weight(Name + ".weight", {Out, In});
      std::string WT = node("Transpose", Scope, {W}, {N(In), N(Out)});
      intsAttr("perm", {1, 0});
      Y = node("MatMul", Scope, {X, WT}, {"batch", "sequence", N(Out)});
    }
    if (Bias)
      Y = node("Add", Scope, {Y, weight(Name + ".bias", {Out})},
               {"batch", "sequence", N(Out)});
    return Y;
  }

  std::string norm(const std::string &Scope, const std::string &X,
                   const std::string &Name) {
    std::vector<std::string> Shape = {"batch", "sequence", N(S.Hidden)};
    if (S.Arch == Architecture::GPT) {
      std::string Y = node("LayerNormalization", Scope,
                           {X, weight(Name + ".weight", {S.Hidden}),
                            weight(Name + ".bias", {S.Hidden})},
                           Shape);
      intAttr("axis", -1);
      return Y;
    }
    // RMSNorm: x / sqrt(mean(x^2) + eps) * weight.
    std::string Sq = node("Mul", Scope, {X, X}, Shape);
    std::string Mean = node("ReduceMean", Scope, {Sq},
                            {"batch", "sequence", "1"});
    intsAttr("axes", {-1});
    std::string Root = node("Sqrt", Scope, {Mean}, {"batch", "sequence", "1"});
    std::string Div = node("Div", Scope, {X, Root}, Shape);
    return node("Mul", Scope, {Div, weight(Name + ".weight", {S.Hidden})},
                Shape);
  }

  std::string attention(const std::string &Scope, const std::string &X,
                        const std::string &Prefix) {
    int64_t HeadDim = S.Hidden / S.Heads;
    int64_t KV = S.KVHeads ? S.KVHeads : S.Heads;
    std::string Q, K, V;
    if (S.Arch == Architecture::GPT) {
      std::string QKV = linear(Scope + "/c_attn", X, S.Hidden, 3 * S.Hidden,
                               true, Prefix + ".c_attn");
      std::string Split = node("Split", Scope, {QKV, ints({S.Hidden, S.Hidden,
                                                           S.Hidden})},
                               {"batch", "sequence", N(S.Hidden)});
      intAttr("axis", -1);
      Q = Split;
      K = extraOutput({"batch", "sequence", N(S.Hidden)});
      V = extraOutput({"batch", "sequence", N(S.Hidden)});
    } else {
      Q = linear(Scope + "/q_proj", X, S.Hidden, S.Hidden, false,
                 Prefix + ".q_proj");
      K = linear(Scope + "/k_proj", X, S.Hidden, KV * HeadDim, false,
                 Prefix + ".k_proj");
      V = linear(Scope + "/v_proj", X, S.Hidden, KV * HeadDim, false,
                 Prefix + ".v_proj");
    }
    auto Heads = [&](const std::string &T, int64_t H) {
      std::string R = node("Reshape", Scope, {T, ints({0, 0, H, HeadDim})},
                           {"batch", "sequence", N(H), N(HeadDim)});
      std::string Tr = node("Transpose", Scope, {R},
                            {"batch", N(H), "sequence", N(HeadDim)});
      intsAttr("perm", {0, 2, 1, 3});
      return Tr;
    };
    std::string Qh = Heads(Q, S.Heads), Kh = Heads(K, KV), Vh = Heads(V, KV);
    if (KV != S.Heads) { // Grouped-query attention: repeat K and V.
      auto Repeat = [&](const std::string &T) {
        std::string U = node("Unsqueeze", Scope, {T, ints({2})},
                             {"batch", N(KV), "1", "sequence", N(HeadDim)});
        std::string E = node("Expand", Scope,
                             {U, ints({1, 1, S.Heads / KV, 1, 1})},
                             {"batch", N(KV), N(S.Heads / KV), "sequence",
                              N(HeadDim)});
        return node("Reshape", Scope, {E, ints({0, S.Heads, -1, HeadDim})},
                    {"batch", N(S.Heads), "sequence", N(HeadDim)});
      };
      Kh = Repeat(Kh);
      Vh = Repeat(Vh);
    }
    std::string KT = node("Transpose", Scope, {Kh},
                          {"batch", N(S.Heads), N(HeadDim), "sequence"});
    intsAttr("perm", {0, 1, 3, 2});
    std::string Scores = node("MatMul", Scope, {Qh, KT},
                              {"batch", N(S.Heads), "sequence", "sequence"});
    std::string Probs = node("Softmax", Scope, {Scores},
                             {"batch", N(S.Heads), "sequence", "sequence"});
    intAttr("axis", -1);
    std::string Ctx = node("MatMul", Scope, {Probs, Vh},
                           {"batch", N(S.Heads), "sequence", N(HeadDim)});
    std::string CtxT = node("Transpose", Scope, {Ctx},
                            {"batch", "sequence", N(S.Heads), N(HeadDim)});
    intsAttr("perm", {0, 2, 1, 3});
    std::string Merged = node("Reshape", Scope,
                              {CtxT, ints({0, 0, S.Hidden})},
                              {"batch", "sequence", N(S.Hidden)});
    return S.Arch == Architecture::GPT
               ? linear(Scope + "/c_proj", Merged, S.Hidden, S.Hidden, true,
                        Prefix + ".c_proj")
               : linear(Scope + "/o_proj", Merged, S.Hidden, S.Hidden, false,
                        Prefix + ".o_proj");
  }

  std::string mlp(const std::string &Scope, const std::string &X,
                  const std::string &Prefix, int64_t FFN) {
    std::vector<std::string> Wide = {"batch", "sequence", N(FFN)};
    if (S.Arch == Architecture::GPT) {
      std::string Up = linear(Scope + "/c_fc", X, S.Hidden, FFN, true,
                              Prefix + ".c_fc");
      std::string Act = node("Gelu", Scope, {Up}, Wide);
      return linear(Scope + "/c_proj", Act, FFN, S.Hidden, true,
                    Prefix + ".c_proj");
    }
    std::string Gate = linear(Scope + "/gate_proj", X, S.Hidden, FFN, false,
                              Prefix + ".gate_proj");
    std::string Sig = node("Sigmoid", Scope, {Gate}, Wide);
    std::string Silu = node("Mul", Scope, {Gate, Sig}, Wide);
    std::string Up = linear(Scope + "/up_proj", X, S.Hidden, FFN, false,
                            Prefix + ".up_proj");
    std::string Prod = node("Mul", Scope, {Silu, Up}, Wide);
    return linear(Scope + "/down_proj", Prod, FFN, S.Hidden, false,
                  Prefix + ".down_proj");
  }

  Expected<std::string> build() {
    bool GPT = S.Arch == Architecture::GPT;
    int64_t FFN = S.FFN ? S.FFN
                  : GPT ? 4 * S.Hidden
                        : (8 * S.Hidden / 3 + 255) / 256 * 256;
    input("input_ids", {"batch", "sequence"});
    std::string Root = GPT ? "transformer" : "model";
    std::string Embed = weight(GPT ? "transformer.wte.weight"
                                   : "model.embed_tokens.weight",
                               {S.Vocab, S.Hidden});
    std::vector<std::string> Act = {"batch", "sequence", N(S.Hidden)};
    std::string X = node("Gather", Root + (GPT ? "/wte" : "/embed_tokens"),
                         {Embed, "input_ids"}, Act);
    if (GPT) {
      std::string Positions = weight("transformer.wpe.weight",
                                     {S.MaxPositions, S.Hidden});
      std::string Shape = node("Shape", Root, {"input_ids"}, {"2"}, Int64);
      std::string Seq = node("Gather", Root, {Shape, scalar(1)}, {}, Int64);
      std::string Zero = scalar(0);
      std::string One = scalar(1);
      std::string Ids = node("Range", Root, {Zero, Seq, One}, {"sequence"},
                             Int64);
      std::string Pos = node("Gather", Root + "/wpe", {Positions, Ids},
                             {"sequence", N(S.Hidden)});
      X = node("Add", Root, {X, Pos}, Act);
    }
    for (int64_t L = 0; L < S.Layers; ++L) {
      std::string Block = GPT ? formatv("transformer.h.{0}", L).str()
                              : formatv("model.layers.{0}", L).str();
      std::string Scope = GPT ? formatv("transformer/h.{0}", L).str()
                              : formatv("model/layers.{0}", L).str();
      std::string N1 = norm(Scope + (GPT ? "/ln_1" : "/input_layernorm"), X,
                            Block + (GPT ? ".ln_1" : ".input_layernorm"));
      std::string A = attention(Scope + (GPT ? "/attn" : "/self_attn"), N1,
                                Block + (GPT ? ".attn" : ".self_attn"));
      X = node("Add", Scope, {X, A}, Act);
      std::string N2 =
          norm(Scope + (GPT ? "/ln_2" : "/post_attention_layernorm"), X,
               Block + (GPT ? ".ln_2" : ".post_attention_layernorm"));
      X = node("Add", Scope, {X, mlp(Scope + "/mlp", N2, Block + ".mlp", FFN)},
               Act);
    }
    X = norm(Root + (GPT ? "/ln_f" : "/norm"), X,
             GPT ? "transformer.ln_f" : "model.norm");
    std::string Head;
    if (S.TiedEmbeddings) {
      Head = node("Transpose", "lm_head", {Embed}, {N(S.Hidden), N(S.Vocab)});
      intsAttr("perm", {1, 0});
    } else {
      std::string W = weight("lm_head.weight", {S.Vocab, S.Hidden});
      Head = node("Transpose", "lm_head", {W}, {N(S.Hidden), N(S.Vocab)});
      intsAttr("perm", {1, 0});
    }
    std::string Logits = node("MatMul", "lm_head", {X, Head},
                              {"batch", "sequence", N(S.Vocab)});
    output(Logits, {"batch", "sequence", N(S.Vocab)});
    return serialize();
  }

private:
  static std::string N(int64_t V) { return std::to_string(V); }

  const TransformerSpec &S;
};

} // namespace

uint64_t expectedParameters(const TransformerSpec &S) {
  bool GPT = S.Arch == Architecture::GPT;
  uint64_t H = S.Hidden, V = S.Vocab;
  uint64_t FFN = S.FFN ? S.FFN : GPT ? 4 * H : (8 * H / 3 + 255) / 256 * 256;
  uint64_t KV = S.KVHeads ? S.KVHeads : S.Heads;
  uint64_t HeadDim = H / S.Heads;
  uint64_t Total = V * H; // Embedding.
  uint64_t Layer;
  if (GPT) {
    Total += S.MaxPositions * H;
    Layer = 2 * 2 * H                  // ln_1, ln_2
            + H * 3 * H + 3 * H        // c_attn
            + H * H + H                // attn.c_proj
            + H * FFN + FFN + FFN * H + H; // c_fc, mlp.c_proj
    Total += 2 * H;                    // ln_f
  } else {
    Layer = 2 * H                      // two RMSNorms
            + H * H + 2 * H * KV * HeadDim + H * H // q, k, v, o
            + 3 * H * FFN;             // gate, up, down
    Total += H;                        // norm
  }
  Total += Layer * S.Layers;
  if (!S.TiedEmbeddings)
    Total += V * H;
  return Total;
}

Expected<std::string> generateTransformer(const TransformerSpec &S) {
  if (S.Layers < 1 || S.Hidden < 1 || S.Heads < 1 || S.Vocab < 1 ||
      S.Hidden % S.Heads != 0 ||
      (S.KVHeads && (S.KVHeads > S.Heads || S.Heads % S.KVHeads != 0)))
    return createStringError(inconvertibleErrorCode(),
                             "the spec is not a transformer: layers, hidden, "
                             "heads and vocab must be positive, hidden a "
                             "multiple of heads, heads a multiple of kv-heads");
  return Builder(S).build();
}

Expected<TransformerSpec> transformerPreset(StringRef Name) {
  TransformerSpec S;
  auto Llama = [&](int64_t L, int64_t H, int64_t A, int64_t KV, int64_t F,
                   int64_t V, bool Tied) {
    S.Arch = Architecture::Llama;
    S.Layers = L, S.Hidden = H, S.Heads = A, S.KVHeads = KV, S.FFN = F;
    S.Vocab = V, S.TiedEmbeddings = Tied, S.BF16 = true;
  };
  if (Name == "gpt2-small") {
    S.Layers = 12, S.Hidden = 768, S.Heads = 12, S.Vocab = 50257;
  } else if (Name == "gpt2-xl") {
    S.Layers = 48, S.Hidden = 1600, S.Heads = 25, S.Vocab = 50257;
  } else if (Name == "llama-1b") { // Llama 3.2 1B.
    Llama(16, 2048, 32, 8, 8192, 128256, true);
  } else if (Name == "llama-7b") { // Llama 2 7B.
    Llama(32, 4096, 32, 0, 11008, 32000, false);
  } else if (Name == "llama-70b") { // Llama 2/3 70B shape, Llama 2 vocab.
    Llama(80, 8192, 64, 8, 28672, 32000, false);
  } else if (Name == "llama-405b") { // Llama 3.1 405B.
    Llama(126, 16384, 128, 8, 53248, 128256, false);
  } else {
    return createStringError(inconvertibleErrorCode(),
                             "unknown preset '%s' (gpt2-small, gpt2-xl, "
                             "llama-1b, llama-7b, llama-70b, llama-405b)",
                             Name.str().c_str());
  }
  return S;
}

} // namespace dsc
