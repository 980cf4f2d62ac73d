//===- Edits.cpp ----------------------------------------------------------===//

#include "Edits.h"

#include "dsc/Config/ConfigEdit.h"

#include "llvm/ADT/SmallVector.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dsc {

std::string quoteJson(StringRef S) {
  std::string Out = "\"";
  for (unsigned char C : S) {
    switch (C) {
    case '"':
      Out += "\\\"";
      break;
    case '\\':
      Out += "\\\\";
      break;
    case '\n':
      Out += "\\n";
      break;
    case '\t':
      Out += "\\t";
      break;
    default:
      if (C < 0x20) {
        raw_string_ostream OS(Out);
        OS << format("\\u%04x", C);
      } else {
        Out += char(C);
      }
    }
  }
  return Out + "\"";
}

TextEdit renameKey(const JsonMember &M, StringRef NewName) {
  return {M.KeyBegin, M.KeyEnd, quoteJson(NewName)};
}

TextEdit replaceValue(const JsonMember &M, StringRef NewValueText) {
  return {M.Value.Begin, M.Value.End, NewValueText.str()};
}

TextEdit removeMember(StringRef Text, const JsonValue &Object, size_t Index) {
  const JsonMember &M = Object.Members[Index];
  // Members are not in text order when a key repeats (the member keeps the
  // first position): M's neighbours are the members written around it.
  const JsonMember *Next = nullptr, *Prev = nullptr;
  for (const JsonMember &O : Object.Members) {
    if (O.KeyBegin > M.KeyBegin && (!Next || O.KeyBegin < Next->KeyBegin))
      Next = &O;
    if (O.KeyBegin < M.KeyBegin && (!Prev || O.KeyBegin > Prev->KeyBegin))
      Prev = &O;
  }
  if (Next)
    return {M.KeyBegin, Next->KeyBegin, ""};
  if (Prev)
    return {Prev->Value.End, M.Value.End, ""};
  bool Comma = false;
  uint32_t End = M.Value.End;
  uint32_t After = skipJsonTrivia(Text, End, &Comma);
  return {M.KeyBegin, Comma ? After : End, ""};
}

/// The blanks before Pos on its line, when only blanks precede it.
static std::optional<std::string> indentationAt(StringRef Text, uint32_t Pos) {
  size_t LineStart = Text.rfind('\n', Pos);
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  StringRef Prefix = Text.slice(LineStart, Pos);
  if (Prefix.find_first_not_of(" \t") != StringRef::npos)
    return std::nullopt;
  return Prefix.str();
}

TextEdit appendMember(StringRef Text, const JsonValue &Object, StringRef Key,
                      StringRef ValueText) {
  std::string Member = quoteJson(Key) + ": " + ValueText.str();
  if (Object.Members.empty())
    return {Object.Begin + 1, Object.Begin + 1, Member};
  // The member written last (a repeated key keeps its first position).
  const JsonMember &Last = *std::max_element(
      Object.Members.begin(), Object.Members.end(),
      [](const JsonMember &A, const JsonMember &B) {
        return A.Value.End < B.Value.End;
      });
  std::optional<std::string> Indent = indentationAt(Text, Last.KeyBegin);
  std::string Insert =
      Indent ? ",\n" + *Indent + Member : ", " + Member;
  return {Last.Value.End, Last.Value.End, Insert};
}

Expected<std::string> setConfigValue(StringRef Text, StringRef Path,
                                     StringRef ValueText) {
  JsonParseResult R = parseJson(Text);
  if (!R.Root || R.Root->Kind != JsonKind::Object)
    return createStringError(inconvertibleErrorCode(),
                             "the config is not a JSON object");
  SmallVector<StringRef, 4> Keys;
  Path.split(Keys, '.');
  // The members still missing from Keys[From] on, nested around the value.
  auto Nested = [&](size_t From) {
    std::string Value = ValueText.str();
    for (size_t J = Keys.size(); J-- > From;)
      Value = "{" + quoteJson(Keys[J]) + ": " + Value + "}";
    return Value;
  };
  const JsonValue *Object = &*R.Root;
  for (size_t I = 0; I < Keys.size(); ++I) {
    const JsonMember *M = Object->member(Keys[I]);
    if (!M)
      return applyEdits(Text, {appendMember(Text, *Object, Keys[I],
                                            Nested(I + 1))});
    if (I + 1 == Keys.size())
      return applyEdits(Text, {replaceValue(*M, ValueText)});
    if (M->Value.Kind == JsonKind::Null)
      return applyEdits(Text, {replaceValue(*M, Nested(I + 1))});
    if (M->Value.Kind != JsonKind::Object)
      return createStringError(
          inconvertibleErrorCode(), "%s is %s, not an object",
          Path.take_front(Keys[I].end() - Path.begin()).str().c_str(),
          describe(M->Value.Kind).str().c_str());
    Object = &M->Value;
  }
  return Text.str();
}

} // namespace dsc
