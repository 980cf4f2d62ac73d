//===- HfConfig.cpp - Reading a Hugging Face config.json ------------------===//
//
// Each family's keys and defaults are those of its transformers config
// class (5.x, which also reads the 4.x spellings of rope settings).
//
//===----------------------------------------------------------------------===//

#include "dsc/Graph/HfConfig.h"
#include "dsc/Config/Json.h"
#include "dsc/Support/Diagnostic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <functional>

using namespace llvm;

namespace dsc {

namespace {

/// "line:column" of Offset in Text, both from 1, the column in code points
/// as lint counts them.
std::string where(StringRef Text, uint32_t Offset) {
  LineColumn LC = lineColumn(Text, Offset);
  return formatv("{0}:{1}", LC.Line, LC.Column);
}

/// The largest dimension dsc reads (a vocabulary, a width, a count of
/// heads or positions): products of two cannot overflow. The model as a
/// whole is bounded by MaxParameters.
constexpr int64_t MaxDim = int64_t(1) << 31;
constexpr int64_t MaxLayers = int64_t(1) << 16;
constexpr uint64_t MaxParameters = uint64_t(1) << 50;

/// Keys of one JSON object, read with transformers' defaults; the first
/// problem is kept, with where it was written.
class Reader {
public:
  Reader(StringRef Text, StringRef Path, const JsonValue &Root)
      : Text(Text), Path(Path), Root(Root) {}

  const JsonValue *get(StringRef Key, const JsonValue *In = nullptr) const {
    const JsonValue *V = (In ? In : &Root)->get(Key);
    return V && V->Kind != JsonKind::Null ? V : nullptr;
  }

  /// Whether Key is written as null: transformers' "none" (no window, no
  /// capping, derived from other keys), not its default.
  bool isNull(StringRef Key, const JsonValue *In = nullptr) const {
    const JsonValue *V = (In ? In : &Root)->get(Key);
    return V && V->Kind == JsonKind::Null;
  }

  /// An integer from Min to MaxDim: any model's dimension fits, and
  /// products of two never overflow.
  int64_t integer(StringRef Key, int64_t Default, int64_t Min = 1,
                  const JsonValue *In = nullptr) {
    const JsonValue *V = get(Key, In);
    if (!V)
      return Default;
    if (V->Kind != JsonKind::Int || V->IntOverflow || V->Int < Min ||
        V->Int > MaxDim) {
      fail(*V, formatv("'{0}' is {1}; it must be an integer from {2} to {3}",
                       Key, text(*V), Min, MaxDim));
      return Default;
    }
    return V->Int;
  }

  /// A number above 0 (or from 0 with Zero).
  double positive(StringRef Key, double Default, bool Zero = false,
                  const JsonValue *In = nullptr) {
    double X = number(Key, Default, In);
    if (!(X > 0 || (Zero && X == 0)))
      refuse(Key, Zero ? "it must be 0 or more" : "it must be above 0", In);
    return X;
  }

  /// A dropout probability, in [0, 1).
  double probability(StringRef Key, double Default) {
    double P = number(Key, Default);
    if (P < 0 || P >= 1)
      refuse(Key, "a dropout probability is in [0, 1)");
    return P;
  }

  double number(StringRef Key, double Default, const JsonValue *In = nullptr) {
    const JsonValue *V = get(Key, In);
    if (!V)
      return Default;
    if (!V->isNumber() || !std::isfinite(V->number())) {
      fail(*V, formatv("'{0}' is {1}; it must be a number", Key, text(*V)));
      return Default;
    }
    return V->number();
  }

  bool boolean(StringRef Key, bool Default) {
    const JsonValue *V = get(Key);
    if (!V)
      return Default;
    if (V->Kind != JsonKind::Bool) {
      fail(*V, formatv("'{0}' is {1}; it must be true or false", Key,
                       text(*V)));
      return Default;
    }
    return V->Bool;
  }

  std::string string(StringRef Key, StringRef Default,
                     const JsonValue *In = nullptr) {
    const JsonValue *V = get(Key, In);
    if (!V)
      return Default.str();
    if (V->Kind != JsonKind::String) {
      fail(*V, formatv("'{0}' is {1}; it must be a string", Key, text(*V)));
      return Default.str();
    }
    return V->Str;
  }

  /// Refuses Key's value, saying why dsc does not build it.
  void refuse(StringRef Key, StringRef Why, const JsonValue *In = nullptr) {
    const JsonValue *V = get(Key, In);
    fail(V ? *V : Root, formatv("'{0}' is {1}: {2}", Key,
                                V ? text(*V) : std::string("missing"), Why));
  }

  void fail(const JsonValue &At, const Twine &Message) {
    if (Problem.empty())
      Problem =
          formatv("{0}:{1}: {2}", Path, where(Text, At.Begin), Message).str();
  }

  Error take() {
    if (Problem.empty())
      return Error::success();
    return createStringError(inconvertibleErrorCode(), Problem);
  }

  bool failed() const { return !Problem.empty(); }

  /// The value as written.
  std::string text(const JsonValue &V) const {
    std::string S = Text.slice(V.Begin, V.End).str();
    return S.size() > 60 ? S.substr(0, 57) + "..." : S;
  }

private:
  StringRef Text, Path;
  const JsonValue &Root;
  std::string Problem;
};

std::optional<HfFamily> familyOf(StringRef ModelType) {
  return StringSwitch<std::optional<HfFamily>>(ModelType)
      .Case("llama", HfFamily::Llama)
      .Case("mistral", HfFamily::Mistral)
      .Case("qwen2", HfFamily::Qwen2)
      .Case("gemma", HfFamily::Gemma)
      .Case("gemma2", HfFamily::Gemma2)
      .Case("phi3", HfFamily::Phi3)
      .Case("gpt2", HfFamily::GPT2)
      .Case("gpt_neox", HfFamily::GPTNeoX)
      .Default(std::nullopt);
}

void readActivation(Reader &R, StringRef Key, StringRef Default,
                    HfModelSpec &S) {
  std::string A = R.string(Key, Default);
  if (A == "silu" || A == "swish")
    S.Act = HfActivation::SiLU;
  else if (A == "gelu_pytorch_tanh" || A == "gelu_new")
    S.Act = HfActivation::GeluTanh;
  else if (A == "gelu")
    S.Act = HfActivation::GeluErf;
  else
    R.refuse(Key, "dsc builds silu, gelu, gelu_new and gelu_pytorch_tanh");
}

/// The count of layers, under Key, up to MaxLayers.
int64_t readLayers(Reader &R, StringRef Key, int64_t Default) {
  int64_t Layers = R.integer(Key, Default);
  if (Layers > MaxLayers)
    R.refuse(Key, formatv("dsc builds up to {0} layers", MaxLayers).str());
  return Layers;
}

/// rope_parameters (transformers 5) or rope_theta and rope_scaling (4.x).
void readRope(Reader &R, HfModelSpec &S, double DefaultTheta) {
  const JsonValue *P = R.get("rope_parameters");
  StringRef Key = "rope_parameters";
  if (!P) {
    P = R.get("rope_scaling");
    Key = "rope_scaling";
  }
  if (P && P->Kind != JsonKind::Object) {
    R.fail(*P, formatv("'{0}' is {1}; it must be an object or null", Key,
                       R.text(*P)));
    return;
  }
  S.Rope.Theta = R.positive("rope_theta", DefaultTheta);
  if (!P)
    return;
  static const char *Known[] = {"rope_type", "type", "rope_theta", "factor",
                                "low_freq_factor", "high_freq_factor",
                                "original_max_position_embeddings",
                                "partial_rotary_factor"};
  for (const JsonMember &M : P->Members)
    if (!is_contained(Known, StringRef(M.Key)))
      R.refuse(M.Key, formatv("dsc does not build this setting of '{0}'",
                              Key).str(), P);
  if (R.get("rope_theta", P))
    S.Rope.Theta = R.positive("rope_theta", S.Rope.Theta, false, P);
  std::string Type = R.string("rope_type", R.string("type", "default", P), P);
  S.Rope.Type = Type;
  if (Type == "default")
    return;
  if (Type != "linear" && Type != "llama3") {
    R.refuse(R.get("rope_type", P) ? "rope_type" : "type",
             "dsc builds the rope types default, linear and llama3", P);
    return;
  }
  S.Rope.Factor = R.positive("factor", 1, false, P);
  if (Type == "llama3") {
    S.Rope.LowFreqFactor = R.positive("low_freq_factor", 1, false, P);
    S.Rope.HighFreqFactor = R.positive("high_freq_factor", 4, false, P);
    S.Rope.OriginalMaxPositions =
        R.integer("original_max_position_embeddings", 8192, 1, P);
    if (S.Rope.HighFreqFactor <= S.Rope.LowFreqFactor)
      R.refuse("high_freq_factor",
               "llama3's high_freq_factor must be above low_freq_factor", P);
  }
}

/// The share of each head's dims that rotates: partial_rotary_factor, in
/// rope_parameters (transformers 5) or at the top (or rotary_pct).
void readPartialRotary(Reader &R, HfModelSpec &S, StringRef TopKey,
                       double Default) {
  const JsonValue *P = R.get("rope_parameters");
  bool Inside = P && P->Kind == JsonKind::Object &&
                R.get("partial_rotary_factor", P);
  StringRef Key = Inside ? StringRef("partial_rotary_factor") : TopKey;
  double F = R.number(Key, Default, Inside ? P : nullptr);
  if (!(F > 0 && F <= 1)) {
    R.refuse(Key, "the rotated share of a head is above 0 and at most 1",
             Inside ? P : nullptr);
    return;
  }
  S.Rope.Dims = int64_t(double(S.HeadDim) * F);
  if (S.Rope.Dims < 2 || S.Rope.Dims % 2)
    R.refuse(Key, formatv("it rotates {0} of head_dim {1}; dsc rotates an "
                          "even number of dims, 2 or more",
                          S.Rope.Dims, S.HeadDim)
                      .str(),
             Inside ? P : nullptr);
}

/// The decoder families' shared keys (Llama's names).
void readDecoder(Reader &R, HfModelSpec &S, int64_t Vocab, int64_t Hidden,
                 int64_t FFN, int64_t Layers, int64_t Heads, int64_t KV,
                 int64_t MaxPos, double Eps, bool Tied, int64_t HeadDim = 0) {
  S.Vocab = R.integer("vocab_size", Vocab);
  S.Hidden = R.integer("hidden_size", Hidden);
  S.FFN = R.integer("intermediate_size", FFN);
  S.Layers = readLayers(R, "num_hidden_layers", Layers);
  S.Heads = R.integer("num_attention_heads", Heads);
  S.KVHeads = R.integer("num_key_value_heads",
                        KV && !R.isNull("num_key_value_heads") ? KV : S.Heads);
  S.MaxPositions = R.integer("max_position_embeddings", MaxPos);
  S.NormEps = R.positive("rms_norm_eps", Eps, true);
  S.Tied = R.boolean("tie_word_embeddings", Tied);
  S.HeadDim = R.integer("head_dim", R.isNull("head_dim") ? 0 : HeadDim, 1);
  if (!S.HeadDim) {
    if (S.Hidden % S.Heads)
      R.refuse("num_attention_heads",
               "hidden_size is not a multiple of it and no head_dim is set");
    S.HeadDim = S.Hidden / S.Heads;
  }
  if (S.Heads % S.KVHeads)
    R.refuse("num_key_value_heads",
             "num_attention_heads must be a multiple of it");
}

/// Layers under a sliding window, from layer_types (transformers 5) or
/// the family's rule.
void readLayerTypes(Reader &R, HfModelSpec &S,
                    std::function<bool(int64_t)> Rule) {
  S.SlidingLayers.assign(S.Layers, false);
  if (!S.SlidingWindow)
    return;
  if (const JsonValue *T = R.get("layer_types")) {
    if (T->Kind != JsonKind::Array || int64_t(T->Elements.size()) != S.Layers) {
      R.refuse("layer_types", "it must list one type for each layer");
      return;
    }
    for (int64_t L = 0; L < S.Layers; ++L) {
      const JsonValue &E = T->Elements[L];
      if (E.isString("sliding_attention"))
        S.SlidingLayers[L] = true;
      else if (!E.isString("full_attention"))
        R.fail(E, formatv("layer_types[{0}] is {1}; dsc builds "
                          "\"full_attention\" and \"sliding_attention\"",
                          L, R.text(E)));
    }
    return;
  }
  for (int64_t L = 0; L < S.Layers; ++L)
    S.SlidingLayers[L] = Rule(L);
}

void readFamily(Reader &R, HfModelSpec &S) {
  switch (S.Family) {
  case HfFamily::Llama:
    readDecoder(R, S, 32000, 4096, 11008, 32, 32, 0, 2048, 1e-6, false);
    readActivation(R, "hidden_act", "silu", S);
    S.QKVBias = S.OutBias = R.boolean("attention_bias", false);
    S.MLPBias = R.boolean("mlp_bias", false);
    readRope(R, S, 10000);
    S.AttnDropout = R.probability("attention_dropout", 0);
    break;
  case HfFamily::Mistral:
    readDecoder(R, S, 32000, 4096, 14336, 32, 32, 8, 4096 * 32, 1e-6, false);
    readActivation(R, "hidden_act", "silu", S);
    readRope(R, S, 10000);
    S.SlidingWindow = R.integer("sliding_window", 4096);
    readLayerTypes(R, S, [](int64_t) { return true; });
    S.AttnDropout = R.probability("attention_dropout", 0);
    break;
  case HfFamily::Qwen2: {
    readDecoder(R, S, 151936, 4096, 22016, 32, 32, 32, 32768, 1e-6, false);
    readActivation(R, "hidden_act", "silu", S);
    S.QKVBias = true;
    readRope(R, S, 10000);
    int64_t MaxWindowLayers = R.integer("max_window_layers", 28, 0);
    if (R.boolean("use_sliding_window", false))
      S.SlidingWindow = R.integer("sliding_window", 4096);
    readLayerTypes(R, S, [&](int64_t L) { return L >= MaxWindowLayers; });
    S.AttnDropout = R.probability("attention_dropout", 0);
    break;
  }
  case HfFamily::Gemma:
  case HfFamily::Gemma2: {
    bool Two = S.Family == HfFamily::Gemma2;
    readDecoder(R, S, 256000, Two ? 2304 : 3072, Two ? 9216 : 24576,
                Two ? 26 : 28, Two ? 8 : 16, Two ? 4 : 16, 8192, 1e-6, true,
                /*HeadDim=*/256);
    if (R.get("hidden_activation"))
      readActivation(R, "hidden_activation", "gelu_pytorch_tanh", S);
    else
      S.Act = HfActivation::GeluTanh; // transformers ignores hidden_act.
    S.QKVBias = S.OutBias = R.boolean("attention_bias", false);
    readRope(R, S, 10000);
    S.AttnDropout = R.probability("attention_dropout", 0);
    if (Two) {
      S.AttnScale = std::pow(R.positive("query_pre_attn_scalar", 256), -0.5);
      // null turns capping and the window off.
      S.AttnSoftcap = R.isNull("attn_logit_softcapping")
                          ? 0
                          : R.positive("attn_logit_softcapping", 50);
      S.FinalSoftcap = R.isNull("final_logit_softcapping")
                           ? 0
                           : R.positive("final_logit_softcapping", 30);
      S.SlidingWindow = R.integer("sliding_window", 4096);
      readLayerTypes(R, S, [](int64_t L) { return (L + 1) % 2 != 0; });
    }
    break;
  }
  case HfFamily::Phi3: {
    readDecoder(R, S, 32064, 3072, 8192, 32, 32, 0, 4096, 1e-5, false);
    readActivation(R, "hidden_act", "silu", S);
    readRope(R, S, 10000);
    readPartialRotary(R, S, "partial_rotary_factor", 1);
    S.SlidingWindow = R.integer("sliding_window", 0);
    readLayerTypes(R, S, [](int64_t) { return true; });
    S.AttnDropout = R.probability("attention_dropout", 0);
    S.ResidDropout = R.probability("resid_pdrop", 0);
    if (R.probability("embd_pdrop", 0) != 0)
      R.refuse("embd_pdrop", "Phi-3 defines an embedding dropout that "
                             "transformers' versions apply differently; set "
                             "it to 0");
    break;
  }
  case HfFamily::GPT2: {
    S.Vocab = R.integer("vocab_size", 50257);
    S.MaxPositions = R.integer("n_positions", 1024);
    S.Hidden = R.integer("n_embd", 768);
    S.Layers = readLayers(R, "n_layer", 12);
    S.Heads = R.integer("n_head", 12);
    S.KVHeads = S.Heads;
    S.FFN = R.integer("n_inner", 4 * S.Hidden);
    S.NormEps = R.positive("layer_norm_epsilon", 1e-5, true);
    readActivation(R, "activation_function", "gelu_new", S);
    S.QKVBias = S.OutBias = S.MLPBias = true;
    S.Tied = R.boolean("tie_word_embeddings", true);
    if (R.boolean("add_cross_attention", false))
      R.refuse("add_cross_attention", "dsc builds decoder-only GPT-2");
    if (!R.boolean("scale_attn_weights", true))
      R.refuse("scale_attn_weights", "dsc builds scaled attention only");
    S.ScaleAttnByLayer = R.boolean("scale_attn_by_inverse_layer_idx", false);
    S.EmbedDropout = R.probability("embd_pdrop", 0.1);
    S.AttnDropout = R.probability("attn_pdrop", 0.1);
    S.ResidDropout = R.probability("resid_pdrop", 0.1);
    if (S.Hidden % S.Heads)
      R.refuse("n_head", "n_embd must be a multiple of it");
    S.HeadDim = S.Hidden / S.Heads;
    break;
  }
  case HfFamily::GPTNeoX: {
    S.Vocab = R.integer("vocab_size", 50432);
    S.Hidden = R.integer("hidden_size", 6144);
    S.Layers = readLayers(R, "num_hidden_layers", 44);
    S.Heads = R.integer("num_attention_heads", 64);
    S.KVHeads = S.Heads;
    S.FFN = R.integer("intermediate_size", 24576);
    S.MaxPositions = R.integer("max_position_embeddings", 2048);
    S.NormEps = R.positive("layer_norm_eps", 1e-5, true);
    readActivation(R, "hidden_act", "gelu", S);
    S.Tied = R.boolean("tie_word_embeddings", false);
    S.ParallelResidual = R.boolean("use_parallel_residual", true);
    S.QKVBias = S.OutBias = R.boolean("attention_bias", true);
    S.MLPBias = true;
    readRope(R, S, R.positive("rotary_emb_base", 10000));
    S.AttnDropout = R.probability("attention_dropout", 0);
    S.ResidDropout = R.probability("hidden_dropout", 0);
    if (S.Hidden % S.Heads)
      R.refuse("num_attention_heads", "hidden_size must be a multiple of it");
    S.HeadDim = S.Hidden / S.Heads;
    readPartialRotary(R, S,
                      R.get("partial_rotary_factor") ? "partial_rotary_factor"
                                                     : "rotary_pct",
                      0.25);
    break;
  }
  }
}

} // namespace

bool isHfConfigPath(StringRef Path) {
  return sys::fs::is_directory(Path) || Path.endswith(".json");
}

std::string modelFile(StringRef Path) {
  SmallString<256> File(Path);
  if (sys::fs::is_directory(Path))
    sys::path::append(File, "config.json");
  return File.str().str();
}

Expected<HfModelSpec> readHfConfig(StringRef Path) {
  std::string File = modelFile(Path);
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFile(File, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!Buffer)
    return createStringError(Buffer.getError(), "%s: %s%s", File.c_str(),
                             Buffer.getError().message().c_str(),
                             sys::fs::is_directory(Path)
                                 ? " (a model folder holds config.json)"
                                 : "");
  return parseHfConfig((*Buffer)->getBuffer(), File);
}

Expected<HfModelSpec> parseHfConfig(StringRef Text, StringRef Path) {
  JsonParseResult P = parseJson(Text);
  if (P.Error)
    return createStringError(inconvertibleErrorCode(),
                             "%s:%s: %s", Path.str().c_str(),
                             where(Text, P.Error->Offset).c_str(),
                             P.Error->Message.c_str());
  if (P.Root->Kind != JsonKind::Object)
    return createStringError(inconvertibleErrorCode(),
                             "%s: a config.json is a JSON object",
                             Path.str().c_str());
  Reader R(Text, Path, *P.Root);
  HfModelSpec S;
  S.ModelType = R.string("model_type", "");
  std::optional<HfFamily> F = familyOf(S.ModelType);
  if (!F) {
    R.refuse("model_type", "dsc builds llama, mistral, qwen2, gemma, gemma2, "
                           "phi3, gpt2 and gpt_neox from a config; export "
                           "other models to ONNX");
    return R.take();
  }
  S.Family = *F;
  StringRef DTypeKey = R.get("torch_dtype") ? "torch_dtype" : "dtype";
  std::string DType = R.string(DTypeKey, "float32");
  S.WeightType = StringSwitch<int>(DType)
                     .Case("float32", 1)
                     .Case("float16", 10)
                     .Case("bfloat16", 16)
                     .Default(0);
  if (!S.WeightType)
    R.refuse(DTypeKey, "dsc writes weights of float32, float16 or bfloat16");
  readFamily(R, S);
  if (R.failed())
    return R.take();
  if (!S.Rope.Dims && S.Family != HfFamily::GPT2) {
    S.Rope.Dims = S.HeadDim;
    if (S.HeadDim % 2)
      R.refuse("head_dim", "rotary embeddings rotate pairs of dims; dsc "
                           "builds an even head_dim");
  }
  if (!S.AttnScale)
    S.AttnScale = 1 / std::sqrt(double(S.HeadDim));
  if (S.HeadDim > (int64_t(1) << 16))
    R.refuse("head_dim", "dsc builds heads of up to 65536 dims");
  if (R.failed())
    return R.take();
  // Every product the graph's shapes take, without overflow.
  uint64_t Total = 0;
  auto Add = [&](std::initializer_list<uint64_t> Factors) {
    uint64_t P = 1;
    for (uint64_t F : Factors)
      if (__builtin_mul_overflow(P, F, &P))
        P = MaxParameters + 1;
    if (__builtin_add_overflow(Total, P, &Total))
      Total = MaxParameters + 1;
  };
  uint64_t Q = uint64_t(S.Heads) * uint64_t(S.HeadDim),
           KV = uint64_t(S.KVHeads) * uint64_t(S.HeadDim);
  Add({uint64_t(S.Vocab), uint64_t(S.Hidden), 2});
  Add({uint64_t(S.MaxPositions), uint64_t(S.Hidden)});
  Add({uint64_t(S.Layers), uint64_t(S.Hidden), Q + 2 * KV});
  Add({uint64_t(S.Layers), uint64_t(S.Hidden), Q});
  Add({uint64_t(S.Layers), uint64_t(S.Hidden), uint64_t(S.FFN), 3});
  if (Total > MaxParameters)
    return createStringError(inconvertibleErrorCode(),
                             "%s: the model this config describes has more "
                             "than 2^50 parameters; check its sizes",
                             Path.str().c_str());
  if (R.get("quantization_config"))
    R.refuse("quantization_config",
             "dsc plans the dense weights of a model, not quantized ones");
  if (const JsonValue *V = R.get("pruned_heads"))
    if (!(V->Kind == JsonKind::Object && V->Members.empty()))
      R.refuse("pruned_heads", "dsc builds every head");
  if (R.failed())
    return R.take();
  return S;
}

} // namespace dsc
