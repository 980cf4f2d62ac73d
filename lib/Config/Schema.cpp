//===- Schema.cpp - Lookups over the schema table -------------------------===//

#include "dsc/Config/Schema.h"

#include "Schema/SchemaParts.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>

using namespace llvm;

namespace dsc {

/// The parts of the table joined in one array, sections before their keys.
static ArrayRef<KeySpec> schemaTable() {
  static const std::vector<KeySpec> Table = [] {
    std::vector<KeySpec> All;
    for (ArrayRef<KeySpec> Part :
         {schema::topLevelKeys(), schema::zeroKeys(), schema::precisionKeys(),
          schema::optimizerKeys(), schema::featureKeys(),
          schema::dataEfficiencyKeys(), schema::compressionKeys(),
          schema::monitoringKeys()})
      All.insert(All.end(), Part.begin(), Part.end());
    return All;
  }();
  return Table;
}

StringRef KeySpec::name() const {
  StringRef P = Path;
  size_t Dot = P.rfind('.');
  return Dot == StringRef::npos ? P : P.drop_front(Dot + 1);
}

StringRef KeySpec::parent() const {
  StringRef P = Path;
  size_t Dot = P.rfind('.');
  return Dot == StringRef::npos ? StringRef() : P.take_front(Dot);
}

static bool listContains(StringRef List, StringRef Item, bool AnyCase) {
  SmallVector<StringRef, 16> Items;
  List.split(Items, '|');
  return llvm::any_of(Items, [&](StringRef S) {
    return AnyCase ? S.equals_insensitive(Item) : S == Item;
  });
}

bool KeySpec::allows(StringRef Variant) const {
  return !Variants || listContains(Variants, Variant, /*AnyCase=*/false);
}

SmallVector<StringRef, 8> KeySpec::choices() const {
  SmallVector<StringRef, 8> Out;
  if (OneOf)
    StringRef(OneOf).split(Out, '|');
  return Out;
}

KeyTreatment treatmentOf(const KeySpec &K) {
  if (K.Treat != Treatment::Inherit)
    return {K.Treat, K.Effect ? K.Effect : "", &K};
  if (K.Type == ValueType::Misnomer)
    return {Treatment::NoEffect, "DeepSpeed never reads this spelling", &K};
  if (K.Unused)
    return {Treatment::NoEffect, K.Unused, &K};
  if (K.ReplacedBy)
    if (const KeySpec *New = findKey(K.ReplacedBy); New && New != &K)
      return treatmentOf(*New);
  for (StringRef P = K.parent(); !P.empty();) {
    if (const KeySpec *Section = findKey(P)) {
      // "Planned" names what reads the key, so each key inside says its
      // own: a key added to a planned section is unclassified, not
      // planned by accident.
      if (Section->Treat == Treatment::Planned)
        return {};
      if (Section->Treat != Treatment::Inherit)
        return {Section->Treat, Section->Effect ? Section->Effect : "",
                Section};
    }
    size_t Dot = P.rfind('.');
    P = Dot == StringRef::npos ? StringRef() : P.take_front(Dot);
  }
  return {};
}

StringRef treatmentName(Treatment T) {
  switch (T) {
  case Treatment::Inherit:
    return "unclassified";
  case Treatment::Planned:
    return "planned";
  case Treatment::Refused:
    return "refused";
  case Treatment::NoEffect:
    return "no effect";
  case Treatment::ModelCode:
    return "model code";
  }
  return "?";
}

StringRef typeName(ValueType T) {
  switch (T) {
  case ValueType::Bool:
    return "bool";
  case ValueType::Int:
    return "int";
  case ValueType::Float:
    return "float";
  case ValueType::String:
    return "string";
  case ValueType::Object:
    return "object";
  case ValueType::Array:
    return "array";
  case ValueType::Dict:
    return "object (free-form)";
  case ValueType::Any:
    return "any";
  case ValueType::Misnomer:
    return "not a key";
  }
  return "?";
}

namespace {

struct SchemaIndex {
  StringMap<SmallVector<const KeySpec *, 1>> ByPath;
  StringMap<std::vector<const KeySpec *>> Children;
  StringMap<SmallVector<const KeySpec *, 2>> ByName;

  SchemaIndex() {
    for (const KeySpec &K : schemaTable()) {
      ByPath[K.Path].push_back(&K);
      Children[K.parent()].push_back(&K);
      ByName[K.name()].push_back(&K);
      if (K.Alias)
        ByName[K.Alias].push_back(&K);
    }
  }
};

const SchemaIndex &index() {
  static const SchemaIndex Index;
  return Index;
}

} // namespace

ArrayRef<KeySpec> schemaKeys() { return schemaTable(); }

const KeySpec *findKey(StringRef Path, StringRef Variant) {
  auto It = index().ByPath.find(Path);
  if (It != index().ByPath.end()) {
    for (const KeySpec *K : It->second)
      if (K->allows(Variant))
        return K;
    return It->second.front();
  }
  // A path as a config writes it: an alias (stage3_prefetch_bucket_size) or
  // a user-chosen name (a compression group) on the way. Walk it section by
  // section.
  const KeySpec *K = nullptr;
  StringRef Rest = Path;
  while (!Rest.empty()) {
    auto [Name, Tail] = Rest.split('.');
    if (K && !K->isSection())
      return nullptr;
    K = lookupIn(K ? StringRef(K->Path) : StringRef(), Name,
                 Tail.empty() ? Variant : StringRef());
    if (!K)
      return nullptr;
    Rest = Tail;
  }
  return K;
}

ArrayRef<const KeySpec *> keysIn(StringRef Parent) {
  auto It = index().Children.find(Parent);
  if (It == index().Children.end())
    return {};
  return It->second;
}

const KeySpec *lookupIn(StringRef Parent, StringRef Name, StringRef Variant) {
  const KeySpec *Other = nullptr, *Any = nullptr;
  for (const KeySpec *K : keysIn(Parent)) {
    if (K->isAnyName())
      Any = K;
    if (K->name() != Name && (!K->Alias || K->Alias != Name))
      continue;
    if (K->allows(Variant))
      return K;
    Other = K;
  }
  if (Variant.empty() && Other)
    return Other;
  return Any;
}

SmallVector<const KeySpec *, 4> keysNamed(StringRef Name) {
  SmallVector<const KeySpec *, 4> Out;
  auto It = index().ByName.find(Name);
  if (It != index().ByName.end())
    for (const KeySpec *K : It->second)
      if (!llvm::is_contained(Out, K))
        Out.push_back(K);
  return Out;
}

SmallVector<NearKey, 4> keysNear(StringRef Parent, StringRef Name,
                                 StringRef Variant, unsigned Limit) {
  SmallVector<NearKey, 4> Found;
  auto Consider = [&](const KeySpec *K, StringRef S) {
    if (S.empty() || S == Name)
      return;
    unsigned D = StringRef(Name.lower()).edit_distance(S.lower(), true, Limit);
    if (D <= Limit)
      Found.push_back({K, S, D});
  };
  for (const KeySpec *K : keysIn(Parent)) {
    if (K->Type == ValueType::Misnomer || K->ReplacedBy ||
        !K->allows(Variant) || K->isAnyName())
      continue;
    Consider(K, K->name());
    if (K->Alias)
      Consider(K, K->Alias);
  }
  std::stable_sort(Found.begin(), Found.end(),
                   [](const NearKey &A, const NearKey &B) {
                     return A.Distance < B.Distance;
                   });
  return Found;
}

SmallVector<StringRef, 4> suggestionsIn(StringRef Parent, StringRef Name,
                                        StringRef Variant) {
  // Allow roughly one typo per three characters, like clang's typo
  // correction; never suggest something unrelated to a short name.
  unsigned Limit = std::max<unsigned>(1, Name.size() / 3);
  SmallVector<StringRef, 4> Out;
  for (const NearKey &N : keysNear(Parent, Name, Variant, Limit))
    if (Out.size() < 3 && !llvm::is_contained(Out, N.Spelling))
      Out.push_back(N.Spelling);
  return Out;
}

} // namespace dsc
