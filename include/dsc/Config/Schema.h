//===- Schema.h - The DeepSpeed configuration schema, as data ---*- C++ -*-===//
//
// One declarative table describes every key DeepSpeed reads: its type,
// default, range or allowed values, aliases, deprecated spellings, which
// integration fills an "auto" there, and a one-line doc. Validation,
// `dsc explain`, the JSON Schema and docs/config-keys.md are all derived from
// this table (lib/Config/Schema*.cpp); nothing about a key is written twice.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_SCHEMA_H
#define DSC_CONFIG_SCHEMA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <limits>

namespace dsc {

enum class ValueType : uint8_t {
  Bool,
  Int,
  Float,
  String,
  Object, ///< A section whose keys are in the table.
  Array,  ///< Elements of type KeySpec::Element.
  Dict,   ///< An object with free-form keys (not checked further).
  Any,
  /// Not a key: a spelling that looks right but that DeepSpeed never reads
  /// (documented but unimplemented, or a stale name). ReplacedBy names the
  /// real key when there is one.
  Misnomer,
};

/// How DeepSpeed reads a section. This decides what happens to an unknown
/// key, to an "auto" value, and whether values are coerced (docs/lint.md).
enum class SectionKind : uint8_t {
  None,
  /// A pydantic model: unknown keys are rejected, "auto" is dropped so the
  /// default applies silently, values are coerced in pydantic's lax mode.
  Model,
  /// A plain dict read with .get(): unknown keys are silently ignored and
  /// values are used as written, without any conversion.
  Dict,
  /// Keyword arguments of a constructor built at engine start: an unknown
  /// key is a TypeError there; values are used as written.
  Kwargs,
};

/// Which integration replaces an "auto" at a key (bit set).
enum AutoFill : uint8_t {
  AutoNone = 0,
  AutoTrainer = 1,    ///< transformers' Trainer (HfTrainerDeepSpeedConfig).
  AutoAccelerate = 2, ///< accelerate (DeepSpeedPlugin, _prepare_deepspeed).
  AutoBoth = AutoTrainer | AutoAccelerate,
};

/// What dsc's planner does with a key: the "plan" column of
/// docs/config-keys.md and what `dsc plan` says about a config.
enum class Treatment : uint8_t {
  /// The treatment of the key's section (the table's default).
  Inherit,
  /// A planner pass reads it; Effect names the pass and what it decides.
  Planned,
  /// dsc plan refuses a value other than the default, naming the key;
  /// Effect says what DeepSpeed would do that the plan cannot.
  Refused,
  /// Changes nothing DeepSpeed executes on the GPUs (logging, file names,
  /// checks at start-up); Effect says what it does instead.
  NoEffect,
  /// Takes effect only in training code that uses the feature (DeepSpeed's
  /// own checkpointing API, pipeline modules, data sampling): dsc plan
  /// warns that the plan does not contain it; Effect says what.
  ModelCode,
};

constexpr double NoBound = std::numeric_limits<double>::infinity();

/// A path segment that stands for any name: the children of a section whose
/// names the user chooses (compression groups, curriculum metrics).
constexpr const char *AnyName = "*";

struct KeySpec {
  /// Dotted path; `[]` stands for the elements of an array and AnyName for
  /// every child of its section written under a name no sibling entry has.
  const char *Path = "";
  ValueType Type = ValueType::Any;
  /// The default as JSON text; null when there is none (required, derived
  /// from other keys, or absent means off; Doc says which).
  const char *Default = nullptr;
  /// Allowed values, `|`-separated (strings, or integers for an Int).
  const char *OneOf = nullptr;
  bool CaseInsensitive = false;
  bool Nullable = false;
  double Min = -NoBound;
  double Max = NoBound;
  bool MinExclusive = false;
  /// Element type of an Array.
  ValueType Element = ValueType::Any;
  /// For Object entries: how DeepSpeed reads the section.
  SectionKind Section = SectionKind::None;
  /// Another spelling DeepSpeed accepts (pydantic alias); both together are
  /// rejected.
  const char *Alias = nullptr;
  /// Deprecated or misnamed: the path of the key that replaces it.
  const char *ReplacedBy = nullptr;
  /// Parsed but never used by current DeepSpeed: why.
  const char *Unused = nullptr;
  /// For keys of a section whose meaning depends on another key (optimizer
  /// params on optimizer.type): the values of that key this entry is for.
  const char *Variants = nullptr;
  /// For a section with variants: the key that selects them.
  const char *VariantKey = nullptr;
  /// Required whenever its section is present.
  bool Required = false;
  /// A number that must not be a boolean or NaN/infinity (fp16 loss-scale
  /// fields have validators that refuse what lax mode would accept).
  bool StrictNumber = false;
  /// DeepSpeed checks the Python type itself (isinstance): an integral
  /// float such as 1000.0 is no int and a number is no bool here, even in
  /// sections that otherwise pass values on unconverted.
  bool ExactType = false;
  /// Infinity is a meaningful value (accelerate writes steps_per_print =
  /// inf); elsewhere NaN and infinity are reported.
  bool AllowsInfinity = false;
  uint8_t AutoBy = AutoNone;
  /// What DeepSpeed itself does with an "auto" left here, when it is more
  /// specific than the section's rule (dropped in models, raw in dicts).
  const char *OnAuto = nullptr;
  const char *Doc = "";
  Treatment Treat = Treatment::Inherit;
  const char *Effect = nullptr;

  llvm::StringRef path() const { return Path; }
  /// The last path segment.
  llvm::StringRef name() const;
  /// Everything before the last segment ("" at the top level).
  llvm::StringRef parent() const;
  bool isSection() const { return Section != SectionKind::None; }
  /// Stands for every child its section does not name (path ends in `.*`).
  bool isAnyName() const { return name() == AnyName; }
  bool allows(llvm::StringRef Variant) const;
  /// The values of OneOf.
  llvm::SmallVector<llvm::StringRef, 8> choices() const;
};

/// The whole table, in the order it is written (sections before their keys).
llvm::ArrayRef<KeySpec> schemaKeys();

/// The entry at Path, preferring the one whose Variants include Variant.
/// Path is the table's path or one written in a config: any segment may be
/// an alias, and a user-chosen name resolves to its AnyName entry.
const KeySpec *findKey(llvm::StringRef Path, llvm::StringRef Variant = "");

/// Entries directly inside the section at Parent ("" = top level).
llvm::ArrayRef<const KeySpec *> keysIn(llvm::StringRef Parent);

/// The key inside Parent written as Name: by name, alias, deprecated or
/// misnamed spelling, else the section's AnyName entry. Null when nothing in
/// the section is spelled Name and the section names all its keys.
const KeySpec *lookupIn(llvm::StringRef Parent, llvm::StringRef Name,
                        llvm::StringRef Variant = "");

/// Every entry, anywhere, whose name or alias is Name (for "belongs
/// elsewhere" hints).
llvm::SmallVector<const KeySpec *, 4> keysNamed(llvm::StringRef Name);

/// A spelling (name or alias) of a key near a misspelled name.
struct NearKey {
  const KeySpec *Key;
  llvm::StringRef Spelling;
  unsigned Distance; ///< Edits, ignoring case.
};

/// The spellings of Parent's keys (of Variant, neither misnomers nor
/// replaced) within Limit edits of Name ignoring case, Name itself left
/// out; nearest first, in table order among equals.
llvm::SmallVector<NearKey, 4> keysNear(llvm::StringRef Parent,
                                       llvm::StringRef Name,
                                       llvm::StringRef Variant,
                                       unsigned Limit);

/// Spellings in Parent close to Name (edit distance), best first.
llvm::SmallVector<llvm::StringRef, 4> suggestionsIn(llvm::StringRef Parent,
                                                    llvm::StringRef Name,
                                                    llvm::StringRef Variant);

llvm::StringRef typeName(ValueType T);

/// A key's treatment, resolved: its own, else its replacement's for a
/// deprecated spelling, NoEffect for a misnomer or a key DeepSpeed never
/// uses, else its nearest section's unless that is Planned (each planned
/// key names its own reader). Inherit when nothing above says.
struct KeyTreatment {
  Treatment How = Treatment::Inherit;
  llvm::StringRef Effect;
  /// The entry the treatment was written on.
  const KeySpec *From = nullptr;
};
KeyTreatment treatmentOf(const KeySpec &K);
llvm::StringRef treatmentName(Treatment T);

} // namespace dsc

#endif
