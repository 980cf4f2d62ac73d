//===- Json.h - JSON values that remember where they were written -*- C++ -*-===//
//
// A small JSON tree for configuration files. Every value and every key keeps
// the byte range it was written at, so a diagnostic can point at it and a
// fix-it can rewrite exactly that text. Parsing is RapidJSON's; this layer
// adds positions, Python's int/float distinction (`5e8` is a float, `500` an
// int), duplicate-key detection and a record of the non-JSON syntax DeepSpeed's
// hjson reader tolerates but Python's json.load refuses.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_JSON_H
#define DSC_CONFIG_JSON_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsc {

enum class JsonKind : uint8_t { Null, Bool, Int, Float, String, Array, Object };

/// "null", "a boolean", "an integer", ... for messages.
llvm::StringRef describe(JsonKind Kind);

struct JsonMember;

struct JsonValue {
  JsonKind Kind = JsonKind::Null;
  /// Byte range [Begin, End) of the value's text in the parsed buffer.
  uint32_t Begin = 0, End = 0;
  bool Bool = false;
  /// An integer literal beyond int64 (Python keeps it exact; Float holds it).
  bool IntOverflow = false;
  int64_t Int = 0;
  double Float = 0;
  /// String: the unescaped text. Numbers: the literal as written.
  std::string Str;
  std::vector<JsonValue> Elements;
  std::vector<JsonMember> Members;

  bool isNumber() const {
    return Kind == JsonKind::Int || Kind == JsonKind::Float;
  }
  /// Int or Float as a double.
  double number() const {
    return Kind == JsonKind::Int && !IntOverflow ? double(Int) : Float;
  }
  bool isString(llvm::StringRef S) const {
    return Kind == JsonKind::String && Str == S;
  }
  /// The member named Key (the last one when the key is repeated, as Python's
  /// json.load keeps it), or null.
  const JsonMember *member(llvm::StringRef Key) const;
  const JsonValue *get(llvm::StringRef Key) const;
};

struct JsonMember {
  std::string Key;
  /// Byte range of the key including its quotes.
  uint32_t KeyBegin = 0, KeyEnd = 0;
  JsonValue Value;
};

/// Syntax that is not strict JSON but that some reader accepts.
enum class JsonExtension : uint8_t {
  Comment,       ///< `//`, `/* */` or `#`: hjson yes, json.load no.
  TrailingComma, ///< hjson yes, json.load no.
  NonFinite,     ///< NaN, Infinity: hjson and json.load yes, strict JSON no.
  ByteOrderMark, ///< json.load (utf-8) no.
};

struct JsonExtensionUse {
  JsonExtension Kind;
  uint32_t Begin, End;
};

struct JsonDuplicateKey {
  std::string Key;
  uint32_t FirstBegin, FirstEnd; ///< The earlier occurrence.
  uint32_t Begin, End;           ///< The repeated one.
};

struct JsonSyntaxError {
  uint32_t Offset = 0;
  std::string Message;
  std::string Hint; ///< What to do, when we can tell.
};

struct JsonParseResult {
  std::optional<JsonValue> Root;
  std::optional<JsonSyntaxError> Error;
  std::vector<JsonExtensionUse> Extensions;
  std::vector<JsonDuplicateKey> Duplicates;
};

/// Deeper nesting is refused; keeps every recursive walk over a tree bounded.
constexpr unsigned MaxJsonDepth = 200;

/// Parses Text. Comments (`//`, `/* */`, `#`), trailing commas, NaN and
/// Infinity are accepted and recorded. Never throws, never crashes on any
/// input: malformed text yields Error.
JsonParseResult parseJson(llvm::StringRef Text);

/// The first non-blank, non-comment offset at or after Pos that is not a `,`
/// or `:` separator. Sets SawComma when a comma was skipped.
uint32_t skipJsonTrivia(llvm::StringRef Text, uint32_t Pos,
                        bool *SawComma = nullptr);

} // namespace dsc

#endif
