//===- Json.cpp - RapidJSON with positions --------------------------------===//
//
// RapidJSON's SAX reader does the parsing. Positions come from the stream:
// when a value's callback fires the stream stands just past its last byte,
// and the value began at the first byte after the previous token that is not
// blank, a comment or a separator. RapidJSON reads `//` and `/* */` comments
// itself; `#` comments (hjson) are blanked out of a copy of the text first so
// that offsets stay the same.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/Json.h"

#include "llvm/ADT/StringMap.h"

#include "rapidjson/error/en.h"
#include "rapidjson/reader.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

using namespace llvm;

namespace dsc {

StringRef describe(JsonKind Kind) {
  switch (Kind) {
  case JsonKind::Null:
    return "null";
  case JsonKind::Bool:
    return "a boolean";
  case JsonKind::Int:
    return "an integer";
  case JsonKind::Float:
    return "a float";
  case JsonKind::String:
    return "a string";
  case JsonKind::Array:
    return "an array";
  case JsonKind::Object:
    return "an object";
  }
  return "a value";
}

const JsonMember *JsonValue::member(StringRef Key) const {
  for (const JsonMember &M : Members)
    if (M.Key == Key)
      return &M;
  return nullptr;
}

const JsonValue *JsonValue::get(StringRef Key) const {
  const JsonMember *M = member(Key);
  return M ? &M->Value : nullptr;
}

static bool isBlank(char C) {
  return C == ' ' || C == '\t' || C == '\n' || C == '\r';
}

uint32_t skipJsonTrivia(StringRef Text, uint32_t Pos, bool *SawComma) {
  size_t N = Text.size();
  while (Pos < N) {
    char C = Text[Pos];
    if (isBlank(C) || C == ':') {
      ++Pos;
    } else if (C == ',') {
      if (SawComma)
        *SawComma = true;
      ++Pos;
    } else if (C == '/' && Pos + 1 < N && Text[Pos + 1] == '/') {
      while (Pos < N && Text[Pos] != '\n')
        ++Pos;
    } else if (C == '/' && Pos + 1 < N && Text[Pos + 1] == '*') {
      size_t Close = Text.find("*/", Pos + 2);
      Pos = Close == StringRef::npos ? N : Close + 2;
    } else if (C == '#') {
      while (Pos < N && Text[Pos] != '\n')
        ++Pos;
    } else {
      break;
    }
  }
  return static_cast<uint32_t>(Pos);
}

namespace {

/// Finds comments outside strings, and returns a copy of the text with `#`
/// comments blanked (RapidJSON knows only `//` and `/* */`).
std::string blankHashComments(StringRef Text,
                              std::vector<JsonExtensionUse> &Uses) {
  std::string Out = Text.str();
  size_t N = Text.size();
  size_t I = 0;
  while (I < N) {
    char C = Text[I];
    if (C == '"') {
      for (++I; I < N && Text[I] != '"'; ++I)
        if (Text[I] == '\\')
          ++I;
      ++I;
    } else if (C == '/' && I + 1 < N && Text[I + 1] == '/') {
      size_t B = I;
      while (I < N && Text[I] != '\n')
        ++I;
      Uses.push_back({JsonExtension::Comment, uint32_t(B), uint32_t(I)});
    } else if (C == '/' && I + 1 < N && Text[I + 1] == '*') {
      size_t B = I;
      size_t Close = Text.find("*/", I + 2);
      I = Close == StringRef::npos ? N : Close + 2;
      Uses.push_back({JsonExtension::Comment, uint32_t(B), uint32_t(I)});
    } else if (C == '#') {
      size_t B = I;
      while (I < N && Text[I] != '\n')
        Out[I++] = ' ';
      Uses.push_back({JsonExtension::Comment, uint32_t(B), uint32_t(I)});
    } else {
      ++I;
    }
  }
  return Out;
}

/// A read-only RapidJSON input stream over a buffer that may contain NULs.
class OffsetStream {
public:
  using Ch = char;
  OffsetStream(const char *Begin, size_t Size)
      : Begin(Begin), Cur(Begin), End(Begin + Size) {}
  Ch Peek() const { return Cur < End ? *Cur : '\0'; }
  Ch Take() { return Cur < End ? *Cur++ : '\0'; }
  size_t Tell() const { return static_cast<size_t>(Cur - Begin); }
  // Output half of the stream concept; never used without kParseInsituFlag.
  Ch *PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch *) { return 0; }

private:
  const char *Begin, *Cur, *End;
};

/// Builds the JsonValue tree from RapidJSON's events.
class TreeBuilder {
public:
  TreeBuilder(StringRef Text, uint32_t Start, const OffsetStream &Stream,
              JsonParseResult &R)
      : Text(Text), Stream(Stream), Result(R), PrevEnd(Start) {}

  bool Null() { return scalar(JsonKind::Null); }
  bool Bool(bool B) {
    JsonValue *V = open(JsonKind::Bool);
    if (!V)
      return false;
    V->Bool = B;
    return close(V);
  }
  // With kParseNumbersAsStringsFlag every number arrives as RawNumber.
  bool Int(int) { return false; }
  bool Uint(unsigned) { return false; }
  bool Int64(int64_t) { return false; }
  bool Uint64(uint64_t) { return false; }
  bool Double(double) { return false; }
  bool RawNumber(const char *S, rapidjson::SizeType Len, bool) {
    StringRef Lit(S, Len);
    bool IsFloat = Lit.find_first_of(".eEIN") != StringRef::npos;
    JsonValue *V = open(IsFloat ? JsonKind::Float : JsonKind::Int);
    if (!V)
      return false;
    V->Str = Lit.str();
    if (IsFloat) {
      V->Float = parseFloat(Lit);
      if (!std::isfinite(V->Float))
        Result.Extensions.push_back(
            {JsonExtension::NonFinite, V->Begin, uint32_t(Stream.Tell())});
    } else {
      auto [Ptr, Err] = std::from_chars(Lit.begin(), Lit.end(), V->Int);
      if (Err != std::errc()) {
        V->IntOverflow = true;
        V->Float = std::strtod(V->Str.c_str(), nullptr);
      }
    }
    return close(V);
  }
  bool String(const char *S, rapidjson::SizeType Len, bool) {
    JsonValue *V = open(JsonKind::String);
    if (!V)
      return false;
    V->Str.assign(S, Len);
    return close(V);
  }
  bool StartObject() { return push(JsonKind::Object); }
  bool Key(const char *S, rapidjson::SizeType Len, bool) {
    PendingKey.assign(S, Len);
    PendingKeyBegin = skipJsonTrivia(Text, PrevEnd);
    PendingKeyEnd = uint32_t(Stream.Tell());
    PrevEnd = PendingKeyEnd;
    return true;
  }
  bool EndObject(rapidjson::SizeType Count) { return pop(Count); }
  bool StartArray() { return push(JsonKind::Array); }
  bool EndArray(rapidjson::SizeType Count) { return pop(Count); }

  bool tooDeep() const { return TooDeep; }
  std::optional<JsonValue> takeRoot() { return std::move(Root); }

private:
  static double parseFloat(StringRef Lit) {
    bool Minus = Lit.consume_front("-");
    double D;
    if (Lit == "NaN")
      D = std::nan("");
    else if (Lit.startswith("Inf"))
      D = HUGE_VAL;
    else
      D = std::strtod(Lit.str().c_str(), nullptr);
    return Minus ? -D : D;
  }

  /// Places a new value in its parent (or as the root) and returns it.
  JsonValue *open(JsonKind Kind) {
    uint32_t Begin = skipJsonTrivia(Text, PrevEnd);
    JsonValue *V;
    if (Stack.empty()) {
      Root.emplace();
      V = &*Root;
    } else if (Stack.back()->Kind == JsonKind::Array) {
      V = &Stack.back()->Elements.emplace_back();
    } else {
      V = addMember(*Stack.back());
    }
    V->Kind = Kind;
    V->Begin = Begin;
    return V;
  }

  JsonValue *addMember(JsonValue &Object) {
    StringMap<unsigned> &Seen = Keys.back();
    auto [It, Inserted] =
        Seen.try_emplace(PendingKey, unsigned(Object.Members.size()));
    if (!Inserted) {
      // Python's dict keeps the first position and the last value.
      JsonMember &First = Object.Members[It->second];
      Result.Duplicates.push_back({PendingKey, First.KeyBegin, First.KeyEnd,
                                   PendingKeyBegin, PendingKeyEnd});
      First.KeyBegin = PendingKeyBegin;
      First.KeyEnd = PendingKeyEnd;
      First.Value = JsonValue();
      return &First.Value;
    }
    JsonMember &M = Object.Members.emplace_back();
    M.Key = PendingKey;
    M.KeyBegin = PendingKeyBegin;
    M.KeyEnd = PendingKeyEnd;
    return &M.Value;
  }

  bool close(JsonValue *V) {
    V->End = PrevEnd = uint32_t(Stream.Tell());
    return true;
  }

  bool scalar(JsonKind Kind) {
    JsonValue *V = open(Kind);
    return V && close(V);
  }

  bool push(JsonKind Kind) {
    if (Stack.size() >= MaxJsonDepth) {
      TooDeep = true;
      return false;
    }
    JsonValue *V = open(Kind);
    // The iterative reader reports a bracket before taking it, so measure
    // from the bracket itself rather than from the stream.
    PrevEnd = V->Begin + 1;
    Stack.push_back(V);
    if (Kind == JsonKind::Object)
      Keys.emplace_back();
    return true;
  }

  bool pop(rapidjson::SizeType Count) {
    JsonValue *V = Stack.back();
    bool SawComma = false;
    uint32_t Close = skipJsonTrivia(Text, PrevEnd, &SawComma);
    if (Count > 0 && SawComma) {
      uint32_t Comma = uint32_t(Text.rfind(',', Close));
      Result.Extensions.push_back(
          {JsonExtension::TrailingComma, Comma, Comma + 1});
    }
    if (V->Kind == JsonKind::Object)
      Keys.pop_back();
    Stack.pop_back();
    V->End = PrevEnd = Close + 1;
    return true;
  }

  StringRef Text;
  const OffsetStream &Stream;
  JsonParseResult &Result;
  std::optional<JsonValue> Root;
  std::vector<JsonValue *> Stack;
  std::vector<StringMap<unsigned>> Keys;
  std::string PendingKey;
  uint32_t PendingKeyBegin = 0, PendingKeyEnd = 0;
  uint32_t PrevEnd;
  bool TooDeep = false;
};

/// Explains an error at Offset in words a config author can act on.
JsonSyntaxError describeError(StringRef Text, rapidjson::ParseErrorCode Code,
                              size_t Offset) {
  JsonSyntaxError E;
  E.Offset = uint32_t(std::min(Offset, Text.size()));
  E.Message = rapidjson::GetParseError_En(Code);
  if (!E.Message.empty() && E.Message.back() == '.')
    E.Message.pop_back();
  E.Message[0] = char(std::tolower(E.Message[0]));
  char C = E.Offset < Text.size() ? Text[E.Offset] : '\0';
  bool ExpectsName = Code == rapidjson::kParseErrorObjectMissName;
  bool ExpectsValue = Code == rapidjson::kParseErrorValueInvalid;
  if ((ExpectsName || ExpectsValue) && (std::isalpha((unsigned char)C) ||
                                        C == '_' || C == '\'')) {
    E.Message = ExpectsName ? "unquoted or single-quoted key"
                            : "unquoted or single-quoted string";
    E.Hint = "DeepSpeed's hjson reader accepts this, but the HF Trainer, "
             "accelerate and dsc read JSON: put it in double quotes";
  } else if (Code == rapidjson::kParseErrorObjectMissCommaOrCurlyBracket ||
             Code == rapidjson::kParseErrorArrayMissCommaOrSquareBracket) {
    E.Hint = "a comma is probably missing after the previous value";
  } else if (Code == rapidjson::kParseErrorDocumentEmpty) {
    E.Message = "the file is empty";
    E.Hint = "a DeepSpeed config is a JSON object: {...}";
  }
  return E;
}

} // namespace

JsonParseResult parseJson(StringRef Text) {
  JsonParseResult Result;
  uint32_t Start = 0;
  if (Text.startswith("\xEF\xBB\xBF")) {
    Result.Extensions.push_back({JsonExtension::ByteOrderMark, 0, 3});
    Start = 3;
  }
  if (Text.size() > UINT32_MAX / 2) {
    Result.Error = JsonSyntaxError{0, "file too large for a configuration", ""};
    return Result;
  }
  std::string Blanked = blankHashComments(Text, Result.Extensions);
  // Parse from the blanked copy, but measure positions in the same offsets.
  OffsetStream Stream(Blanked.data(), Blanked.size());
  for (uint32_t I = 0; I < Start; ++I)
    Stream.Take();
  TreeBuilder Builder(Blanked, Start, Stream, Result);
  rapidjson::Reader Reader;
  constexpr unsigned Flags =
      rapidjson::kParseIterativeFlag | rapidjson::kParseCommentsFlag |
      rapidjson::kParseTrailingCommasFlag | rapidjson::kParseNanAndInfFlag |
      rapidjson::kParseNumbersAsStringsFlag |
      rapidjson::kParseValidateEncodingFlag;
  rapidjson::ParseResult PR = Reader.Parse<Flags>(Stream, Builder);
  if (!PR) {
    if (Builder.tooDeep())
      Result.Error = JsonSyntaxError{
          uint32_t(PR.Offset()),
          "nesting deeper than " + std::to_string(MaxJsonDepth) + " levels",
          "a DeepSpeed config nests a few levels at most"};
    else
      Result.Error = describeError(Text, PR.Code(), PR.Offset());
    return Result;
  }
  Result.Root = Builder.takeRoot();
  return Result;
}

} // namespace dsc
