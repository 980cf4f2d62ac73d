//===- Coercion.cpp - pydantic lax mode and raw Python values -------------===//
//
// The pydantic rules were checked against pydantic 2.x (docs/lint.md): an int
// accepts an integral float, a bool and a numeric string ("500", " 500 ",
// "1_000", "12.0") but not "5e8"; a float accepts numeric strings including
// "1e-3" and "inf"; a bool accepts 0/1 and the words true/false/yes/no/on/
// off/t/f/y/n/1/0 in any case; strings and enums of strings are exact.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Coercion.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace llvm;

namespace dsc {

std::optional<bool> parseBoolWord(StringRef S) {
  std::string L = S.lower();
  for (StringRef T : {"1", "on", "t", "true", "y", "yes"})
    if (L == T)
      return true;
  for (StringRef F : {"0", "off", "f", "false", "n", "no"})
    if (L == F)
      return false;
  return std::nullopt;
}

std::string spelling(const JsonValue &V, StringRef Source) {
  if (V.End > V.Begin && V.End <= Source.size())
    return Source.slice(V.Begin, V.End).str();
  return "?";
}

/// Python's int() of a string, as pydantic applies it: surrounding blanks,
/// one sign, digits with single underscores between them; pydantic also takes
/// a decimal with a zero fraction ("12.0").
static std::optional<int64_t> parseIntString(StringRef S) {
  S = S.trim();
  std::string Digits;
  bool Minus = false;
  if (S.consume_front("-"))
    Minus = true;
  else
    S.consume_front("+");
  StringRef Frac;
  if (size_t Dot = S.find('.'); Dot != StringRef::npos) {
    Frac = S.drop_front(Dot + 1);
    S = S.take_front(Dot);
    if (Frac.find_first_not_of('0') != StringRef::npos)
      return std::nullopt;
  }
  if (S.empty() || S.front() == '_' || S.back() == '_' || S.contains("__"))
    return std::nullopt;
  for (char C : S) {
    if (C == '_')
      continue;
    if (!isDigit(C))
      return std::nullopt;
    Digits += C;
  }
  int64_t Value;
  if (StringRef(Digits).getAsInteger(10, Value))
    return std::nullopt;
  return Minus ? -Value : Value;
}

static std::optional<double> parseFloatString(StringRef S) {
  S = S.trim();
  std::string L = S.lower();
  StringRef T = L;
  bool Minus = T.consume_front("-");
  if (!Minus)
    T.consume_front("+");
  if (T == "inf" || T == "infinity")
    return Minus ? -HUGE_VAL : HUGE_VAL;
  if (T == "nan")
    return std::nan("");
  std::string Clean;
  for (char C : S)
    if (C != '_')
      Clean += C;
  double D;
  if (StringRef(Clean).getAsDouble(D))
    return std::nullopt;
  return D;
}

static Coercion ok(Scalar S) {
  Coercion C;
  C.Value = std::move(S);
  return C;
}

static Coercion fail(CoercionProblem P) {
  Coercion C;
  C.Problem = P;
  return C;
}

/// pydantic lax mode.
static Coercion coerceModel(const JsonValue &V, const KeySpec &K) {
  switch (K.Type) {
  case ValueType::Bool:
    if (V.Kind == JsonKind::Bool)
      return ok(Scalar::ofBool(V.Bool));
    if (V.isNumber() && (V.number() == 0 || V.number() == 1))
      return ok(Scalar::ofBool(V.number() == 1));
    if (V.Kind == JsonKind::String)
      if (std::optional<bool> B = parseBoolWord(V.Str))
        return ok(Scalar::ofBool(*B));
    return fail(CoercionProblem::WrongType);
  case ValueType::Int:
    if (V.Kind == JsonKind::Int && !V.IntOverflow)
      return ok(Scalar::ofInt(V.Int));
    if (V.Kind == JsonKind::Int)
      return ok(Scalar::ofInt(INT64_MAX)); // Python keeps big ints; saturate.
    if (V.Kind == JsonKind::Bool)
      return ok(Scalar::ofInt(V.Bool));
    if (V.Kind == JsonKind::Float) {
      if (!std::isfinite(V.Float))
        return fail(CoercionProblem::NotFinite);
      if (V.Float != std::trunc(V.Float))
        return fail(CoercionProblem::FractionalInt);
      if (std::fabs(V.Float) >= 9.2e18)
        return ok(Scalar::ofInt(V.Float > 0 ? INT64_MAX : INT64_MIN));
      return ok(Scalar::ofInt(int64_t(V.Float)));
    }
    if (V.Kind == JsonKind::String)
      if (std::optional<int64_t> I = parseIntString(V.Str))
        return ok(Scalar::ofInt(*I));
    return fail(CoercionProblem::WrongType);
  case ValueType::Float:
    if (V.isNumber())
      return ok(Scalar::ofFloat(V.number()));
    if (V.Kind == JsonKind::Bool)
      return ok(Scalar::ofFloat(V.Bool));
    if (V.Kind == JsonKind::String)
      if (std::optional<double> D = parseFloatString(V.Str))
        return ok(Scalar::ofFloat(*D));
    return fail(CoercionProblem::WrongType);
  case ValueType::String:
    if (V.Kind == JsonKind::String)
      return ok(Scalar::ofString(V.Str));
    return fail(CoercionProblem::WrongType);
  default:
    break;
  }
  return fail(CoercionProblem::WrongType);
}

/// Raw Python values: nothing is converted; report what misbehaves.
static Coercion coerceRaw(const JsonValue &V, const KeySpec &K) {
  switch (K.Type) {
  case ValueType::Bool:
    if (V.Kind == JsonKind::Bool)
      return ok(Scalar::ofBool(V.Bool));
    if (V.isNumber() && !K.ExactType) {
      Coercion C = ok(Scalar::ofBool(V.number() != 0));
      C.Problem = CoercionProblem::NumberAsBool;
      return C;
    }
    return fail(CoercionProblem::WrongType);
  case ValueType::Int:
    if (V.Kind == JsonKind::Int)
      return ok(Scalar::ofInt(V.IntOverflow ? INT64_MAX : V.Int));
    if (V.Kind == JsonKind::Float) {
      if (std::isinf(V.Float) && K.AllowsInfinity)
        return ok(Scalar::ofFloat(V.Float));
      if (!std::isfinite(V.Float))
        return fail(CoercionProblem::NotFinite);
      if (V.Float != std::trunc(V.Float))
        return fail(CoercionProblem::FractionalInt);
      if (K.ExactType)
        return fail(CoercionProblem::WrongType);
      Coercion C = ok(Scalar::ofInt(std::fabs(V.Float) < 9.2e18 ? int64_t(V.Float)
                                                           : INT64_MAX));
      C.Problem = CoercionProblem::IntegralFloat;
      return C;
    }
    return fail(CoercionProblem::WrongType);
  case ValueType::Float:
    if (V.isNumber())
      return ok(Scalar::ofFloat(V.number()));
    return fail(CoercionProblem::WrongType);
  case ValueType::String:
    if (V.Kind == JsonKind::String)
      return ok(Scalar::ofString(V.Str));
    return fail(CoercionProblem::WrongType);
  default:
    break;
  }
  return fail(CoercionProblem::WrongType);
}

Coercion coerce(const JsonValue &V, const KeySpec &K, SectionKind How) {
  if (V.Kind == JsonKind::Null) {
    if (K.Nullable || K.Type == ValueType::Any)
      return ok(Scalar());
    return fail(CoercionProblem::WrongType);
  }
  switch (K.Type) {
  case ValueType::Any:
  case ValueType::Misnomer:
    return ok(Scalar::of(Scalar::Other));
  case ValueType::Object:
  case ValueType::Dict:
    if (V.Kind == JsonKind::Object)
      return ok(Scalar::of(Scalar::Other));
    return fail(CoercionProblem::WrongType);
  case ValueType::Array:
    if (V.Kind == JsonKind::Array)
      return ok(Scalar::of(Scalar::Other));
    return fail(CoercionProblem::WrongType);
  default:
    break;
  }
  if (K.StrictNumber && V.Kind == JsonKind::Bool)
    return fail(CoercionProblem::WrongType);
  Coercion C = How == SectionKind::Model ? coerceModel(V, K) : coerceRaw(V, K);
  // NaN or infinity in a number field: pydantic takes it, but no DeepSpeed
  // setting means anything with it (steps_per_print = inf aside).
  if (C.Value && C.Value->K == Scalar::Float && !std::isfinite(C.Value->F) &&
      !(K.AllowsInfinity && std::isinf(C.Value->F)))
    return fail(CoercionProblem::NotFinite);
  return C;
}

bool isAllowedChoice(const KeySpec &K, const Scalar &S) {
  if (!K.OneOf || S.K == Scalar::Null)
    return true;
  for (StringRef Choice : K.choices()) {
    if (S.K == Scalar::String &&
        (K.CaseInsensitive ? Choice.equals_insensitive(S.S) : Choice == S.S))
      return true;
    int64_t N;
    if (S.K == Scalar::Int && !Choice.getAsInteger(10, N) && N == S.I)
      return true;
  }
  return false;
}

} // namespace dsc
