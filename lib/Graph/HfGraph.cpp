//===- HfGraph.cpp - A Hugging Face causal LM written as its export -------===//
//
// Operators, their operand order and the module scopes follow the
// transformers modeling code as PyTorch's dynamo exporter records it:
// parameters in named_parameters() order (a tied embedding once, as
// lm_head.weight, where the head registers it), Linear as MatMul with the
// transposed weight (GPT-2's Conv1D as a 2-D MatMul and Add), RMSNorm as
// Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul, the rotary tables computed from
// the sequence (folded at import), the causal or sliding-window mask as an
// additive constant, softmax attention with grouped-query K/V repeated.
//
//===----------------------------------------------------------------------===//

#include "dsc/Graph/HfConfig.h"
#include "dsc/Graph/Model.h"
#include "dsc/Graph/OnnxWriter.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;

namespace dsc {

namespace {

using Dims = std::vector<std::string>;

std::string N(int64_t V) { return std::to_string(V); }

/// The rotary frequencies of transformers' rope initializers, in fp32 as
/// torch computes them.
std::vector<float> inverseFrequencies(const HfRope &R) {
  int64_t D = R.Dims;
  std::vector<float> F;
  for (int64_t K = 0; K < D; K += 2) {
    float E = float(K) / float(D);
    F.push_back(1.0f / std::pow(float(R.Theta), E));
  }
  if (R.Type == "linear") {
    for (float &X : F)
      X = float(X / R.Factor);
  } else if (R.Type == "llama3") {
    // Element by element in fp32, as transformers computes it on a float
    // tensor (Python scalars meet it as fp32).
    float Old = float(R.OriginalMaxPositions), Factor = float(R.Factor);
    float Low = float(R.LowFreqFactor);
    float LowWave = float(R.OriginalMaxPositions / R.LowFreqFactor);
    float HighWave = float(R.OriginalMaxPositions / R.HighFreqFactor);
    float Span = float(R.HighFreqFactor - R.LowFreqFactor);
    for (float &X : F) {
      float Wave = float(2 * M_PI) / X;
      float Scaled = Wave > LowWave ? X / Factor : X;
      if (!(Wave < HighWave) && !(Wave > LowWave)) {
        float Smooth = (Old / Wave - Low) / Span;
        Scaled = (1 - Smooth) * Scaled / Factor + Smooth * Scaled;
      }
      X = Scaled;
    }
  }
  return F;
}

class Builder : OnnxWriter {
public:
  explicit Builder(const HfModelSpec &S, StringRef WeightsFile)
      : OnnxWriter(S.ModelType, "dsc", S.WeightType, WeightsFile,
                   /*Opset=*/20),
        S(S), Gpt2(S.Family == HfFamily::GPT2),
        NeoX(S.Family == HfFamily::GPTNeoX),
        Gemma(S.Family == HfFamily::Gemma || S.Family == HfFamily::Gemma2),
        Phi3(S.Family == HfFamily::Phi3) {}

  Expected<std::string> build() {
    declareWeights();
    input("input_ids", {"batch", "sequence"});
    Act = {"batch", "sequence", N(S.Hidden)};
    std::string Root = Gpt2 ? "model/transformer"
                       : NeoX ? "model/gpt_neox"
                              : "model/model";
    std::string X = node("Gather", Root + (Gpt2 ? "/wte" : NeoX ? "/embed_in"
                                                                 : "/embed_tokens"),
                         {EmbedName, "input_ids"}, Act);
    InputShape = node("Shape", Root, {"input_ids"}, {"2"}, Int64);
    std::string Seq = node("Gather", Root, {InputShape, scalar(1)}, {}, Int64);
    Positions = node("Range", Root, {scalar(0), Seq, scalar(1)},
                     {"sequence"}, Int64);
    if (Gpt2) {
      std::string P = node("Unsqueeze", Root, {Positions, ints({0})},
                           {"1", "sequence"}, Int64);
      P = node("Gather", Root + "/wpe", {"transformer.wpe.weight", P},
               {"1", "sequence", N(S.Hidden)});
      X = node("Add", Root, {X, P}, Act);
      X = dropout(Root + "/drop", X, S.EmbedDropout, Act);
    } else {
      rotaryTables(Root + "/rotary_emb");
    }
    if (Gemma) // The embedding's scale, in the embedding module.
      X = node("Mul", Root + "/embed_tokens",
               {X, typed(Root + "/embed_tokens", std::sqrt(double(S.Hidden)))},
               Act);
    // The masks before the layers, as the model's forward makes them: the
    // causal one, then the sliding window's.
    mask(Root, 0);
    if (S.SlidingWindow &&
        std::find(S.SlidingLayers.begin(), S.SlidingLayers.end(), true) !=
            S.SlidingLayers.end())
      mask(Root, S.SlidingWindow);
    for (int64_t L = 0; L < S.Layers; ++L)
      X = layer(Root, L, X);
    X = norm(Root + (Gpt2 ? "/ln_f" : NeoX ? "/final_layer_norm" : "/norm"),
             X, FinalNorm);
    std::string Head = "model/lm_head";
    std::string Logits = node(
        "MatMul", Head,
        {X, transposed(Head, HeadName, S.Hidden, S.Vocab)},
        {"batch", "sequence", N(S.Vocab)});
    if (S.FinalSoftcap)
      Logits = softcap("model", Logits, S.FinalSoftcap,
                       {"batch", "sequence", N(S.Vocab)});
    output(Logits, {"batch", "sequence", N(S.Vocab)});
    return serialize();
  }

private:
  //===--------------------------------------------------------------------===//
  // Parameters, in named_parameters() order
  //===--------------------------------------------------------------------===//

  void linearWeight(const std::string &Name, int64_t In, int64_t Out,
                    bool Bias) {
    if (Gpt2)
      weight(Name + ".weight", {In, Out}); // Conv1D: [in, out].
    else
      weight(Name + ".weight", {Out, In});
    if (Bias)
      weight(Name + ".bias", {Out});
  }

  void normWeight(const std::string &Name) {
    weight(Name + ".weight", {S.Hidden});
    if (Gpt2 || NeoX)
      weight(Name + ".bias", {S.Hidden});
  }

  void declareWeights() {
    int64_t H = S.Hidden, Q = S.Heads * S.HeadDim, KV = S.KVHeads * S.HeadDim;
    EmbedName = S.Tied ? HeadName
                : Gpt2 ? "transformer.wte.weight"
                : NeoX ? "gpt_neox.embed_in.weight"
                       : "model.embed_tokens.weight";
    if (!S.Tied)
      weight(EmbedName, {S.Vocab, H});
    if (Gpt2)
      weight("transformer.wpe.weight", {S.MaxPositions, H});
    for (int64_t L = 0; L < S.Layers; ++L) {
      if (Gpt2) {
        std::string B = formatv("transformer.h.{0}", L);
        normWeight(B + ".ln_1");
        linearWeight(B + ".attn.c_attn", H, 3 * H, true);
        linearWeight(B + ".attn.c_proj", H, H, true);
        normWeight(B + ".ln_2");
        linearWeight(B + ".mlp.c_fc", H, S.FFN, true);
        linearWeight(B + ".mlp.c_proj", S.FFN, H, true);
        continue;
      }
      if (NeoX) {
        std::string B = formatv("gpt_neox.layers.{0}", L);
        normWeight(B + ".input_layernorm");
        normWeight(B + ".post_attention_layernorm");
        linearWeight(B + ".attention.query_key_value", H, 3 * H, S.QKVBias);
        linearWeight(B + ".attention.dense", H, H, S.OutBias);
        linearWeight(B + ".mlp.dense_h_to_4h", H, S.FFN, true);
        linearWeight(B + ".mlp.dense_4h_to_h", S.FFN, H, true);
        continue;
      }
      std::string B = formatv("model.layers.{0}", L);
      if (Phi3) {
        linearWeight(B + ".self_attn.o_proj", Q, H, false);
        linearWeight(B + ".self_attn.qkv_proj", H, Q + 2 * KV, false);
        linearWeight(B + ".mlp.gate_up_proj", H, 2 * S.FFN, false);
        linearWeight(B + ".mlp.down_proj", S.FFN, H, false);
      } else {
        linearWeight(B + ".self_attn.q_proj", H, Q, S.QKVBias);
        linearWeight(B + ".self_attn.k_proj", H, KV, S.QKVBias);
        linearWeight(B + ".self_attn.v_proj", H, KV, S.QKVBias);
        linearWeight(B + ".self_attn.o_proj", Q, H, S.OutBias);
        linearWeight(B + ".mlp.gate_proj", H, S.FFN, S.MLPBias);
        linearWeight(B + ".mlp.up_proj", H, S.FFN, S.MLPBias);
        linearWeight(B + ".mlp.down_proj", S.FFN, H, S.MLPBias);
      }
      normWeight(B + ".input_layernorm");
      normWeight(B + ".post_attention_layernorm");
      if (S.Family == HfFamily::Gemma2) {
        normWeight(B + ".pre_feedforward_layernorm");
        normWeight(B + ".post_feedforward_layernorm");
      }
    }
    normWeight(FinalNorm);
    weight(HeadName, {S.Vocab, H});
  }

  //===--------------------------------------------------------------------===//
  // Blocks
  //===--------------------------------------------------------------------===//

  std::string transposed(const std::string &Scope, const std::string &W,
                         int64_t In, int64_t Out) {
    std::string T = node("Transpose", Scope, {W}, {N(In), N(Out)});
    intsAttr("perm", {1, 0});
    return T;
  }

  /// A scalar of the weights' type (an fp32 constant cast, as torch's
  /// scalars meet a tensor of that type).
  std::string typed(const std::string &Scope, double V) {
    std::string C = floats({float(V)}, {});
    if (WeightType == Float32)
      return C;
    C = node("Cast", Scope, {C}, {});
    intAttr("to", WeightType);
    return C;
  }

  /// torch's split or chunk into Count pieces of Size along Axis, as
  /// dynamo writes it (a sequence, then each element).
  std::vector<std::string> chunks(const std::string &Scope,
                                  const std::string &X, int64_t Size,
                                  int64_t Axis, int64_t Count,
                                  const Dims &Shape) {
    std::string Seq = node("SplitToSequence", Scope, {X, scalar(Size)}, {},
                           Undeclared);
    intAttr("axis", Axis);
    std::vector<std::string> Parts;
    for (int64_t I = 0; I < Count; ++I)
      Parts.push_back(node("SequenceAt", Scope, {Seq, scalar(I)}, Shape));
    return Parts;
  }

  /// nn.Dropout in training mode; nothing for a probability of 0.
  std::string dropout(const std::string &Scope, const std::string &X,
                      double P, const Dims &Shape) {
    if (P == 0)
      return X;
    return node("Dropout", Scope, {X, floats({float(P)}, {}), boolean(true)},
                Shape);
  }

  /// X reshaped to the first Keep dims of From (rank Rank) and then Tail,
  /// the target computed from From's shape as torch's view records it
  /// (allowzero, no 0 dims).
  std::string reshape(const std::string &Scope, const std::string &X,
                      const std::string &From, int64_t Rank, int64_t Keep,
                      const std::vector<int64_t> &Tail, const Dims &Shape) {
    std::string Kept = node(
        "Slice", Scope,
        {node("Shape", Scope, {From}, {N(Rank)}, Int64), ints({0}),
         ints({Keep})},
        {N(Keep)}, Int64);
    std::string To = node("Concat", Scope, {Kept, ints(Tail)},
                          {N(Keep + int64_t(Tail.size()))}, Int64);
    intAttr("axis", 0);
    std::string Y = node("Reshape", Scope, {X, To}, Shape);
    intAttr("allowzero", 1);
    return Y;
  }

  /// nn.Linear (x @ W^T + b) or GPT-2's Conv1D (x as 2-D, @ W + b).
  std::string linear(const std::string &Scope, const std::string &X,
                     const std::string &Name, int64_t In, int64_t Out,
                     bool Bias) {
    Dims Shape = {"batch", "sequence", N(Out)};
    if (Gpt2) {
      std::string X2 = node("Reshape", Scope, {X, ints({-1, In})},
                            {"rows", N(In)});
      intAttr("allowzero", 1);
      std::string Y = node("MatMul", Scope, {X2, Name + ".weight"},
                           {"rows", N(Out)});
      Y = node("Add", Scope, {Y, Name + ".bias"}, {"rows", N(Out)});
      // Back to [batch, sequence, out], the two dims taken from X.
      return reshape(Scope, Y, X, 3, 2, {Out}, Shape);
    }
    std::string Y = node("MatMul", Scope,
                         {X, transposed(Scope, Name + ".weight", In, Out)},
                         Shape);
    if (Bias)
      Y = node("Add", Scope, {Y, Name + ".bias"}, Shape);
    return Y;
  }

  std::string norm(const std::string &Scope, const std::string &X,
                   const std::string &Name) {
    if (Gpt2 || NeoX) {
      std::string Y = node("LayerNormalization", Scope,
                           {X, Name + ".weight", Name + ".bias"}, Act);
      intAttr("axis", -1);
      floatAttr("epsilon", float(S.NormEps));
      intAttr("stash_type", 1);
      return Y;
    }
    Dims Row = {"batch", "sequence", "1"};
    std::string Sq = node("Pow", Scope, {X, floats({2}, {})}, Act);
    std::string Mean = node("ReduceMean", Scope, {Sq, ints({-1})}, Row);
    intAttr("keepdims", 1);
    intAttr("noop_with_empty_axes", 0);
    std::string Eps = node("Add", Scope, {Mean, floats({float(S.NormEps)}, {})},
                           Row);
    std::string R = node("Reciprocal", Scope,
                         {node("Sqrt", Scope, {Eps}, Row)}, Row);
    std::string Normed = node("Mul", Scope, {X, R}, Act);
    if (Gemma) // Gemma scales by 1 + weight.
      return node("Mul", Scope,
                  {Normed, node("Add", Scope, {Name + ".weight",
                                               floats({1}, {})},
                                {N(S.Hidden)})},
                  Act);
    return node("Mul", Scope, {Name + ".weight", Normed}, Act);
  }

  /// cos and sin of the rotary embedding, [1, sequence, rotated dims].
  void rotaryTables(const std::string &Scope) {
    int64_t D = S.Rope.Dims;
    std::vector<float> Inv = inverseFrequencies(S.Rope);
    std::string Pos = node("Cast", Scope, {Positions}, {"sequence"}, Float32);
    intAttr("to", Float32);
    Pos = node("Unsqueeze", Scope, {Pos, ints({1})}, {"sequence", "1"},
               Float32);
    std::string Freqs = node(
        "Mul", Scope, {Pos, floats(Inv, {int64_t(Inv.size())})},
        {"sequence", N(D / 2)}, Float32);
    std::string Emb = node("Concat", Scope, {Freqs, Freqs}, {"sequence", N(D)},
                           Float32);
    intAttr("axis", -1);
    auto Table = [&](StringRef Op) {
      std::string T = node(Op, Scope, {Emb}, {"sequence", N(D)}, Float32);
      T = node("Mul", Scope, {T, floats({1}, {})}, {"sequence", N(D)},
               Float32);
      if (WeightType != Float32) {
        T = node("Cast", Scope, {T}, {"sequence", N(D)});
        intAttr("to", WeightType);
      }
      return node("Unsqueeze", Scope, {T, ints({0})}, {"1", "sequence", N(D)});
    };
    Cos = Table("Cos");
    Sin = Table("Sin");
  }

  /// q and k rotated: x * cos + rotate_half(x) * sin on the first
  /// Rope.Dims of each head, in the order transformers computes them.
  std::pair<std::string, std::string> rotary(const std::string &Scope,
                                             const std::string &Q,
                                             const std::string &K,
                                             const std::string &C,
                                             const std::string &Sn) {
    int64_t D = S.Rope.Dims, Half = D / 2;
    auto Shape = [&](int64_t Heads, int64_t Dim) -> Dims {
      return {"batch", N(Heads), "sequence", N(Dim)};
    };
    auto Slice = [&](const std::string &T, int64_t From, int64_t To,
                     const Dims &Out) {
      return node("Slice", Scope, {T, ints({From}), ints({To}), ints({3}),
                                   ints({1})},
                  Out);
    };
    auto Embed = [&](const std::string &X, int64_t Heads) {
      Dims Rot = Shape(Heads, D), Halves = Shape(Heads, Half);
      std::string Cosine = node("Mul", Scope, {X, C}, Rot);
      std::string First = Slice(X, 0, Half, Halves);
      std::string Second =
          node("Neg", Scope, {Slice(X, Half, INT64_MAX, Halves)}, Halves);
      std::string Rotated = node("Concat", Scope, {Second, First}, Rot);
      intAttr("axis", -1);
      return node("Add", Scope,
                  {Cosine, node("Mul", Scope, {Rotated, Sn}, Rot)}, Rot);
    };
    // Phi-3 and GPT-NeoX split off the rotated dims (even when that is all
    // of them) of q and k first, then join each to the rest.
    if (D == S.HeadDim && !Phi3 && !NeoX) {
      std::string QE = Embed(Q, S.Heads);
      return {QE, Embed(K, S.KVHeads)};
    }
    int64_t Rest = S.HeadDim - D;
    std::string QRot = Slice(Q, 0, D, Shape(S.Heads, D));
    std::string QPass = Slice(Q, D, INT64_MAX, Shape(S.Heads, Rest));
    std::string KRot = Slice(K, 0, D, Shape(S.KVHeads, D));
    std::string KPass = Slice(K, D, INT64_MAX, Shape(S.KVHeads, Rest));
    auto Join = [&](const std::string &E, const std::string &Pass,
                    int64_t Heads) {
      std::string Y = node("Concat", Scope, {E, Pass}, Shape(Heads, S.HeadDim));
      intAttr("axis", -1);
      return Y;
    };
    if (Phi3) { // Each joined as soon as it is rotated.
      std::string QE = Join(Embed(QRot, S.Heads), QPass, S.Heads);
      return {QE, Join(Embed(KRot, S.KVHeads), KPass, S.KVHeads)};
    }
    std::string QE = Embed(QRot, S.Heads), KE = Embed(KRot, S.KVHeads);
    return {Join(QE, QPass, S.Heads), Join(KE, KPass, S.KVHeads)};
  }

  /// The additive mask [batch, 1, sequence, sequence]: 0 where a query sees a
  /// key (causal, and within the window when Window), the dtype's lowest
  /// value elsewhere.
  std::string mask(const std::string &Scope, int64_t Window) {
    std::string &M = Window ? WindowMask : CausalMask;
    if (!M.empty())
      return M;
    Dims Square = {"sequence", "sequence"};
    // sdpa's boolean mask becomes -inf; eager attention (Gemma 2) adds
    // torch.finfo(dtype).min, exact in the weights' type.
    double Lowest = !S.AttnSoftcap            ? -INFINITY
                    : WeightType == Float16    ? -65504.0
                    : WeightType == BFloat16   ? -3.3895313892515355e38
                                               : -3.4028234663852886e38;
    // The same values the exporter's mask folds to, written as Trilu of a
    // broadcast value: one pass over [sequence, sequence] to fold, where
    // comparisons and Where take several (a long sequence's mask is
    // hundreds of MB).
    std::string Length = node("Shape", Scope, {Positions}, {"1"}, Int64);
    std::string SquareShape = node("Concat", Scope, {Length, Length}, {"2"},
                                   Int64);
    intAttr("axis", 0);
    std::string Full = node("Expand", Scope,
                            {typed(Scope, Lowest), SquareShape}, Square);
    // Lowest where a key is after its query...
    std::string Add = node("Trilu", Scope, {Full, scalar(1)}, Square);
    intAttr("upper", 1);
    if (Window) { // ...or Window or more before it.
      std::string Far = node("Trilu", Scope, {Full, scalar(-Window)}, Square);
      intAttr("upper", 0);
      Add = node("Add", Scope, {Add, Far}, Square);
    }
    M = node("Unsqueeze", Scope, {Add, ints({0, 1})},
             {"1", "1", "sequence", "sequence"});
    // [batch, 1, sequence, sequence], as transformers makes its masks.
    std::string Batch = node("Slice", Scope, {InputShape, ints({0}), ints({1})},
                             {"1"}, Int64);
    std::string To = node("Concat", Scope, {Batch, ints({1, 1, 1})}, {"4"},
                          Int64);
    intAttr("axis", 0);
    M = node("Expand", Scope, {M, To}, {"batch", "1", "sequence", "sequence"});
    return M;
  }

  std::string softcap(const std::string &Scope, const std::string &X,
                      double Cap, const Dims &Shape) {
    std::string Y = node("Div", Scope, {X, typed(Scope, Cap)},
                         Shape);
    Y = node("Tanh", Scope, {Y}, Shape);
    return node("Mul", Scope, {Y, typed(Scope, Cap)}, Shape);
  }

  /// [batch, sequence, heads * head_dim] -> [batch, heads, sequence, head_dim].
  std::string splitHeads(const std::string &Scope, const std::string &X,
                         int64_t Heads) {
    std::string R = reshape(Scope, X, X, 3, 2, {Heads, S.HeadDim},
                            {"batch", "sequence", N(Heads), N(S.HeadDim)});
    std::string T = node("Transpose", Scope, {R},
                         {"batch", N(Heads), "sequence", N(S.HeadDim)});
    intsAttr("perm", {0, 2, 1, 3});
    return T;
  }

  std::string attention(const std::string &Scope, const std::string &Prefix,
                        const std::string &X, int64_t L) {
    int64_t H = S.Hidden, D = S.HeadDim, Q = S.Heads * D, KV = S.KVHeads * D;
    std::string Qh, Kh, Vh;
    if (Gpt2) {
      std::string QKV = linear(Scope + "/c_attn", X, Prefix + ".c_attn", H,
                               3 * H, true);
      // Key, value, then query heads, in the order GPT-2 views them.
      std::vector<std::string> Parts = chunks(Scope, QKV, H, 2, 3, Act);
      std::string Q = Parts[0], K = Parts[1], V = Parts[2];
      Kh = splitHeads(Scope, K, S.Heads);
      Vh = splitHeads(Scope, V, S.Heads);
      Qh = splitHeads(Scope, Q, S.Heads);
    } else if (NeoX) {
      // [batch, sequence, heads, 3 * head_dim], heads first, then thirds.
      std::string QKV = linear(Scope + "/query_key_value", X,
                               Prefix + ".query_key_value", H, 3 * H,
                               S.QKVBias);
      std::string R = reshape(Scope, QKV, QKV, 3, 2, {S.Heads, 3 * D},
                              {"batch", "sequence", N(S.Heads), N(3 * D)});
      std::string T = node("Transpose", Scope, {R},
                           {"batch", N(S.Heads), "sequence", N(3 * D)});
      intsAttr("perm", {0, 2, 1, 3});
      Dims Head = {"batch", N(S.Heads), "sequence", N(D)};
      std::vector<std::string> QKVs = chunks(Scope, T, D, 3, 3, Head);
      Qh = QKVs[0], Kh = QKVs[1], Vh = QKVs[2];
    } else if (Phi3) {
      std::string QKV = linear(Scope + "/qkv_proj", X, Prefix + ".qkv_proj", H,
                               Q + 2 * KV, false);
      // qkv[..., :q], qkv[..., q:q + kv], qkv[..., q + kv:].
      auto Part = [&](int64_t From, int64_t Width, bool Last) {
        return node("Slice", Scope,
                    {QKV, ints({From}), ints({Last ? INT64_MAX : From + Width}),
                     ints({2}), ints({1})},
                    {"batch", "sequence", N(Width)});
      };
      std::string QS = Part(0, Q, false), KS = Part(Q, KV, false),
                  VS = Part(Q + KV, KV, true);
      Qh = splitHeads(Scope, QS, S.Heads);
      Kh = splitHeads(Scope, KS, S.KVHeads);
      Vh = splitHeads(Scope, VS, S.KVHeads);
    } else {
      Qh = splitHeads(Scope, linear(Scope + "/q_proj", X, Prefix + ".q_proj",
                                    H, Q, S.QKVBias),
                      S.Heads);
      Kh = splitHeads(Scope, linear(Scope + "/k_proj", X, Prefix + ".k_proj",
                                    H, KV, S.QKVBias),
                      S.KVHeads);
      Vh = splitHeads(Scope, linear(Scope + "/v_proj", X, Prefix + ".v_proj",
                                    H, KV, S.QKVBias),
                      S.KVHeads);
    }
    if (!Gpt2) {
      Dims Table = {"1", "1", "sequence", N(S.Rope.Dims)};
      std::string C = node("Unsqueeze", Scope, {Cos, ints({1})}, Table);
      std::string Sn = node("Unsqueeze", Scope, {Sin, ints({1})}, Table);
      std::tie(Qh, Kh) = rotary(Scope, Qh, Kh, C, Sn);
    }
    if (S.KVHeads != S.Heads) { // repeat_kv.
      int64_t Rep = S.Heads / S.KVHeads;
      auto Repeat = [&](const std::string &T) {
        std::string U = node("Unsqueeze", Scope, {T, ints({2})},
                             {"batch", N(S.KVHeads), "1", "sequence", N(D)});
        std::string E = node("Expand", Scope, {U, ints({1, 1, Rep, 1, 1})},
                             {"batch", N(S.KVHeads), N(Rep), "sequence", N(D)});
        return reshape(Scope, E, E, 5, 1, {S.Heads, -1, D},
                       {"batch", N(S.Heads), "sequence", N(D)});
      };
      Kh = Repeat(Kh);
      Vh = Repeat(Vh);
    }
    Dims Scores = {"batch", N(S.Heads), "sequence", "sequence"};
    std::string KT = node("Transpose", Scope, {Kh},
                          {"batch", N(S.Heads), N(D), "sequence"});
    intsAttr("perm", {0, 1, 3, 2});
    std::string W = node("MatMul", Scope, {Qh, KT}, Scores);
    double Scale = S.AttnScale / (S.ScaleAttnByLayer ? double(L + 1) : 1.0);
    W = node("Mul", Scope, {W, typed(Scope, Scale)}, Scores);
    if (S.AttnSoftcap)
      W = softcap(Scope, W, S.AttnSoftcap, Scores);
    bool Sliding = S.SlidingWindow && S.SlidingLayers[L];
    W = node("Add", Scope, {W, mask(Scope, Sliding ? S.SlidingWindow : 0)},
             Scores);
    std::string P = node("Softmax", Scope, {W}, Scores);
    intAttr("axis", -1);
    // Where(IsNaN(p), 0, p): sdpa's guard for fully masked rows (Gemma 2's
    // soft-capping runs in eager attention, which has none).
    if (!S.AttnSoftcap)
      P = node("Where", Scope,
               {node("IsNaN", Scope, {P}, Scores, Bool), typed(Scope, 0), P},
               Scores);
    P = dropout(Scope + (Gpt2 ? "/attn_dropout" : ""), P, S.AttnDropout,
                Scores);
    std::string O = node("MatMul", Scope, {P, Vh},
                         {"batch", N(S.Heads), "sequence", N(D)});
    O = node("Transpose", Scope, {O}, {"batch", "sequence", N(S.Heads), N(D)});
    intsAttr("perm", {0, 2, 1, 3});
    O = reshape(Scope, O, O, 4, 2, {Q}, {"batch", "sequence", N(Q)});
    if (Gpt2)
      return dropout(Scope + "/resid_dropout",
                     linear(Scope + "/c_proj", O, Prefix + ".c_proj", H, H,
                            true),
                     S.ResidDropout, Act);
    if (NeoX)
      return linear(Scope + "/dense", O, Prefix + ".dense", H, H, S.OutBias);
    return linear(Scope + "/o_proj", O, Prefix + ".o_proj", Q, H, S.OutBias);
  }

  std::string activation(const std::string &Scope, const std::string &X,
                         const Dims &Shape) {
    if (S.Act == HfActivation::SiLU)
      return node("Mul", Scope, {X, node("Sigmoid", Scope, {X}, Shape)}, Shape);
    std::string Y = node("Gelu", Scope, {X}, Shape);
    stringAttr("approximate",
               S.Act == HfActivation::GeluTanh ? "tanh" : "none");
    return Y;
  }

  std::string mlp(const std::string &Scope, const std::string &Prefix,
                  const std::string &X) {
    int64_t H = S.Hidden, F = S.FFN;
    Dims Wide = {"batch", "sequence", N(F)};
    if (Gpt2 || NeoX) {
      std::string Up = Gpt2 ? linear(Scope + "/c_fc", X, Prefix + ".c_fc", H,
                                     F, true)
                            : linear(Scope + "/dense_h_to_4h", X,
                                     Prefix + ".dense_h_to_4h", H, F, true);
      std::string A = activation(Scope + "/act", Up, Wide);
      if (NeoX)
        return linear(Scope + "/dense_4h_to_h", A, Prefix + ".dense_4h_to_h",
                      F, H, true);
      return dropout(Scope + "/dropout",
                     linear(Scope + "/c_proj", A, Prefix + ".c_proj", F, H,
                            true),
                     S.ResidDropout, Act);
    }
    std::string Gate, Up;
    if (Phi3) {
      std::string GU = linear(Scope + "/gate_up_proj", X,
                              Prefix + ".gate_up_proj", H, 2 * F, false);
      std::vector<std::string> Halves = chunks(Scope, GU, F, 2, 2, Wide);
      Gate = Halves[0], Up = Halves[1];
      return linear(Scope + "/down_proj",
                    node("Mul", Scope,
                         {Up, activation(Scope + "/activation_fn", Gate, Wide)},
                         Wide),
                    Prefix + ".down_proj", F, H, false);
    }
    Gate = linear(Scope + "/gate_proj", X, Prefix + ".gate_proj", H, F,
                  S.MLPBias);
    std::string A = activation(Scope + "/act_fn", Gate, Wide);
    Up = linear(Scope + "/up_proj", X, Prefix + ".up_proj", H, F, S.MLPBias);
    return linear(Scope + "/down_proj", node("Mul", Scope, {A, Up}, Wide),
                  Prefix + ".down_proj", F, H, S.MLPBias);
  }

  std::string layer(const std::string &Root, int64_t L, const std::string &X) {
    if (Gpt2) {
      std::string Scope = formatv("{0}/h.{1}", Root, L);
      std::string Prefix = formatv("transformer.h.{0}", L);
      std::string A = attention(Scope + "/attn", Prefix + ".attn",
                                norm(Scope + "/ln_1", X, Prefix + ".ln_1"), L);
      std::string Y = node("Add", Scope, {A, X}, Act);
      std::string M = mlp(Scope + "/mlp", Prefix + ".mlp",
                          norm(Scope + "/ln_2", Y, Prefix + ".ln_2"));
      return node("Add", Scope, {Y, M}, Act);
    }
    std::string Scope = formatv("{0}/layers.{1}", Root, L);
    std::string Prefix = NeoX ? formatv("gpt_neox.layers.{0}", L).str()
                              : formatv("model.layers.{0}", L).str();
    std::string Attn = NeoX ? "attention" : "self_attn";
    std::string A = attention(Scope + "/" + Attn, Prefix + "." + Attn,
                              norm(Scope + "/input_layernorm", X,
                                   Prefix + ".input_layernorm"),
                              L);
    if (NeoX) {
      A = dropout(Scope + "/post_attention_dropout", A, S.ResidDropout, Act);
      auto Mlp = [&](const std::string &In) {
        return dropout(Scope + "/post_mlp_dropout",
                       mlp(Scope + "/mlp", Prefix + ".mlp",
                           norm(Scope + "/post_attention_layernorm", In,
                                Prefix + ".post_attention_layernorm")),
                       S.ResidDropout, Act);
      };
      if (S.ParallelResidual) // mlp(ln2(x)) + attn(ln1(x)) + x.
        return node("Add", Scope, {node("Add", Scope, {Mlp(X), A}, Act), X},
                    Act);
      std::string Y = node("Add", Scope, {A, X}, Act);
      return node("Add", Scope, {Mlp(Y), Y}, Act);
    }
    bool Two = S.Family == HfFamily::Gemma2;
    if (Two)
      A = norm(Scope + "/post_attention_layernorm", A,
               Prefix + ".post_attention_layernorm");
    if (Phi3)
      A = dropout(Scope + "/resid_attn_dropout", A, S.ResidDropout, Act);
    std::string Y = node("Add", Scope, {X, A}, Act);
    std::string PreMlp = Two ? "pre_feedforward_layernorm"
                             : "post_attention_layernorm";
    std::string M = mlp(Scope + "/mlp", Prefix + ".mlp",
                        norm(Scope + "/" + PreMlp, Y, Prefix + "." + PreMlp));
    if (Two)
      M = norm(Scope + "/post_feedforward_layernorm", M,
               Prefix + ".post_feedforward_layernorm");
    if (Phi3)
      M = dropout(Scope + "/resid_mlp_dropout", M, S.ResidDropout, Act);
    return node("Add", Scope, {Y, M}, Act);
  }

  const HfModelSpec &S;
  bool Gpt2, NeoX, Gemma, Phi3;
  /// The final norm's parameter prefix.
  std::string FinalNorm = Gpt2   ? "transformer.ln_f"
                          : NeoX ? "gpt_neox.final_layer_norm"
                                 : "model.norm";
  Dims Act;
  std::string EmbedName, InputShape, Positions, Cos, Sin, CausalMask,
      WindowMask;
  /// Where the head's weight is, tied or not (GPT-NeoX's embed_out in
  /// transformers 4).
  static constexpr const char *HeadName = "lm_head.weight";
};

} // namespace

Expected<std::string> buildHfGraph(const HfModelSpec &S,
                                   StringRef WeightsFile) {
  return Builder(S, WeightsFile).build();
}

Expected<Model> importModel(StringRef Path) {
  if (!isHfConfigPath(Path))
    return importOnnx(Path);
  Expected<HfModelSpec> S = readHfConfig(Path);
  if (!S)
    return S.takeError();
  // The weights stay in the folder's safetensors (dsrun --init reads
  // them); the graph names a file that is never there.
  Expected<std::string> Bytes =
      buildHfGraph(*S, "(weights: the model folder's safetensors)");
  if (!Bytes)
    return Bytes.takeError();
  return importOnnxBuffer(*Bytes, Path);
}

} // namespace dsc
