//===- Coercion.h - What a written value means to DeepSpeed -----*- C++ -*-===//
//
// The same JSON value means different things in different sections. Inside a
// pydantic model DeepSpeed coerces in pydantic's lax mode (`5e8` is a fine
// int, `"true"` a fine bool, `15099494.4` is rejected); inside a plain dict
// the value is used exactly as Python's json.load produced it (`"false"` is a
// truthy string, `1e6` stays a float). One function answers both, for the
// validator and for every later reader of a config.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_COERCION_H
#define DSC_CONFIG_COERCION_H

#include "dsc/Config/Json.h"
#include "dsc/Config/Schema.h"

#include <optional>
#include <string>

namespace dsc {

/// A value after DeepSpeed's conversion for a key of a known type.
struct Scalar {
  enum Kind : uint8_t { Null, Bool, Int, Float, String, Other } K = Null;
  bool B = false;
  int64_t I = 0;
  double F = 0;
  std::string S;

  double number() const { return K == Int ? double(I) : K == Bool ? B : F; }

  static Scalar of(Kind K) {
    Scalar S;
    S.K = K;
    return S;
  }
  static Scalar ofBool(bool B) {
    Scalar S = of(Bool);
    S.B = B;
    return S;
  }
  static Scalar ofInt(int64_t I) {
    Scalar S = of(Int);
    S.I = I;
    return S;
  }
  static Scalar ofFloat(double F) {
    Scalar S = of(Float);
    S.F = F;
    return S;
  }
  static Scalar ofString(llvm::StringRef Str) {
    Scalar S = of(String);
    S.S = Str.str();
    return S;
  }
};

enum class CoercionProblem : uint8_t {
  None,
  /// Rejected (pydantic) or wrong in a way that changes behaviour (raw).
  WrongType,
  /// A float with a fractional part where an int is required.
  FractionalInt,
  /// Raw sections: an integral float where an int is expected. DeepSpeed
  /// passes it on as a float; often harmless, sometimes a TypeError later.
  IntegralFloat,
  /// Raw sections: a number used as a boolean; works by truthiness.
  NumberAsBool,
  /// NaN or infinity where a finite number is needed.
  NotFinite,
};

struct Coercion {
  CoercionProblem Problem = CoercionProblem::None;
  /// The value DeepSpeed ends up with; set unless Problem makes it
  /// meaningless (WrongType, FractionalInt).
  std::optional<Scalar> Value;
};

/// Converts V as DeepSpeed would for key K inside a section read as How
/// (Model: pydantic lax mode; Dict/Kwargs: raw Python values).
Coercion coerce(const JsonValue &V, const KeySpec &K, SectionKind How);

/// Whether S names a value in K's OneOf (case rules included).
bool isAllowedChoice(const KeySpec &K, const Scalar &S);

/// Pydantic's string-to-bool table (case-insensitive), or nullopt.
std::optional<bool> parseBoolWord(llvm::StringRef S);

/// The value as JSON text, for messages ("5e8", "\"auto\"").
std::string spelling(const JsonValue &V, llvm::StringRef Source);

} // namespace dsc

#endif
