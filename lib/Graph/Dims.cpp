//===- Dims.cpp - Symbolic dimensions -------------------------------------===//

#include "dsc/Graph/Dims.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dsc {

//===----------------------------------------------------------------------===//
// Dimension expressions
//===----------------------------------------------------------------------===//

namespace {

/// Recursive descent over + - * / // ( ) integers and identifiers.
class DimExpr {
public:
  DimExpr(StringRef Text, const DimBindings &B) : Text(Text), B(B) {}

  std::optional<int64_t> parse() {
    std::optional<int64_t> V = sum();
    skip();
    if (Pos != Text.size())
      return std::nullopt;
    return V;
  }

private:
  void skip() {
    while (Pos < Text.size() && Text[Pos] == ' ')
      ++Pos;
  }
  bool eat(StringRef S) {
    skip();
    if (!Text.substr(Pos).startswith(S))
      return false;
    Pos += S.size();
    return true;
  }
  std::optional<int64_t> sum() {
    std::optional<int64_t> V = product();
    while (V) {
      if (eat("+")) {
        std::optional<int64_t> R = product();
        V = R ? std::optional<int64_t>(*V + *R) : std::nullopt;
      } else if (eat("-")) {
        std::optional<int64_t> R = product();
        V = R ? std::optional<int64_t>(*V - *R) : std::nullopt;
      } else {
        break;
      }
    }
    return V;
  }
  std::optional<int64_t> product() {
    std::optional<int64_t> V = atom();
    while (V) {
      if (eat("//") || eat("/")) {
        std::optional<int64_t> R = atom();
        V = R && *R ? std::optional<int64_t>(*V / *R) : std::nullopt;
      } else if (eat("*")) {
        std::optional<int64_t> R = atom();
        V = R ? std::optional<int64_t>(*V * *R) : std::nullopt;
      } else {
        break;
      }
    }
    return V;
  }
  std::optional<int64_t> atom() {
    skip();
    if (eat("(")) {
      std::optional<int64_t> V = sum();
      return eat(")") ? V : std::nullopt;
    }
    size_t Start = Pos;
    if (Pos < Text.size() && isDigit(Text[Pos])) {
      while (Pos < Text.size() && isDigit(Text[Pos]))
        ++Pos;
      int64_t V;
      if (Text.slice(Start, Pos).getAsInteger(10, V))
        return std::nullopt;
      return V;
    }
    while (Pos < Text.size() && (isAlnum(Text[Pos]) || Text[Pos] == '_'))
      ++Pos;
    if (Start == Pos)
      return std::nullopt;
    auto It = B.find(Text.slice(Start, Pos).str());
    if (It == B.end())
      return std::nullopt;
    return It->second;
  }

  StringRef Text;
  const DimBindings &B;
  size_t Pos = 0;
};

} // namespace

std::optional<int64_t> evaluateDim(StringRef Expression,
                                   const DimBindings &Bindings) {
  return DimExpr(Expression, Bindings).parse();
}

InputSymbols classifyInputSymbols(const Model &M) {
  InputSymbols Out;
  auto Add = [](std::vector<std::string> &V, const std::string &S) {
    if (!is_contained(V, S))
      V.push_back(S);
  };
  for (const ValueInfo &In : M.Inputs)
    for (size_t I = 0; I < In.Type.Shape.size(); ++I) {
      const std::string &S = In.Type.Shape[I].Symbol;
      if (S.empty() || In.Type.Shape[I].known())
        continue;
      std::string L = StringRef(S).lower();
      bool LooksBatch = StringRef(L).contains("batch") || L == "n" ||
                        L == "bs" || L == "b";
      bool LooksSeq = StringRef(L).contains("seq") || StringRef(L).contains("len") ||
                      L == "t" || L == "s" || StringRef(L).contains("token");
      if (LooksBatch || (I == 0 && !LooksSeq))
        Add(Out.Batch, S);
      else if (LooksSeq || I == 1)
        Add(Out.Sequence, S);
      else
        Add(Out.Other, S);
    }
  return Out;
}

} // namespace dsc
