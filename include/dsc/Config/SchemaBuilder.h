//===- SchemaBuilder.h - Notation for writing the schema table --*- C++ -*-===//
//
// Lets the table read as data: key("fp16.loss_scale", Float).def("0").min(0)
// .doc("..."). Only the table's source files include this.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_SCHEMABUILDER_H
#define DSC_CONFIG_SCHEMABUILDER_H

#include "dsc/Config/Schema.h"

namespace dsc::schema {

struct Entry : KeySpec {
  constexpr Entry(const char *P, ValueType T) {
    Path = P;
    Type = T;
  }
  constexpr Entry def(const char *V) const { return with(&KeySpec::Default, V); }
  constexpr Entry oneOf(const char *V) const { return with(&KeySpec::OneOf, V); }
  constexpr Entry anyCase() const { return with(&KeySpec::CaseInsensitive, true); }
  constexpr Entry nullable() const { return with(&KeySpec::Nullable, true); }
  constexpr Entry min(double V) const { return with(&KeySpec::Min, V); }
  constexpr Entry max(double V) const { return with(&KeySpec::Max, V); }
  constexpr Entry range(double Lo, double Hi) const { return min(Lo).max(Hi); }
  /// Strictly greater than V.
  constexpr Entry above(double V) const {
    return with(&KeySpec::Min, V).with(&KeySpec::MinExclusive, true);
  }
  constexpr Entry of(ValueType T) const { return with(&KeySpec::Element, T); }
  constexpr Entry alias(const char *V) const { return with(&KeySpec::Alias, V); }
  constexpr Entry replacedBy(const char *V) const {
    return with(&KeySpec::ReplacedBy, V);
  }
  constexpr Entry unused(const char *Why) const {
    return with(&KeySpec::Unused, Why);
  }
  constexpr Entry variants(const char *V) const {
    return with(&KeySpec::Variants, V);
  }
  constexpr Entry variantKey(const char *V) const {
    return with(&KeySpec::VariantKey, V);
  }
  constexpr Entry required() const { return with(&KeySpec::Required, true); }
  constexpr Entry exactType() const { return with(&KeySpec::ExactType, true); }
  constexpr Entry allowsInfinity() const {
    return with(&KeySpec::AllowsInfinity, true);
  }
  constexpr Entry strictNumber() const {
    return with(&KeySpec::StrictNumber, true);
  }
  constexpr Entry autoBy(AutoFill A) const {
    return with(&KeySpec::AutoBy, uint8_t(A));
  }
  constexpr Entry onAuto(const char *V) const { return with(&KeySpec::OnAuto, V); }
  constexpr Entry doc(const char *V) const { return with(&KeySpec::Doc, V); }
  /// docs: Treatment. What the planner does with the key (a section's
  /// treatment holds for the keys inside that do not say their own).
  constexpr Entry planned(const char *How) const {
    return treat(Treatment::Planned, How);
  }
  constexpr Entry refused(const char *Why) const {
    return treat(Treatment::Refused, Why);
  }
  constexpr Entry noEffect(const char *What) const {
    return treat(Treatment::NoEffect, What);
  }
  constexpr Entry modelCode(const char *What) const {
    return treat(Treatment::ModelCode, What);
  }

private:
  constexpr Entry treat(Treatment T, const char *Effect) const {
    return with(&KeySpec::Treat, T).with(&KeySpec::Effect, Effect);
  }
  template <typename F, typename V>
  constexpr Entry with(F KeySpec::*Field, V Value) const {
    Entry E = *this;
    E.*Field = Value;
    return E;
  }
};

constexpr Entry key(const char *Path, ValueType Type) { return {Path, Type}; }

/// A section: an object whose keys follow in the table.
constexpr Entry section(const char *Path, SectionKind Kind) {
  Entry E(Path, ValueType::Object);
  E.Section = Kind;
  return E;
}

/// A spelling DeepSpeed never reads; Real is the key that is read, if any.
constexpr Entry misnomer(const char *Path, const char *Real) {
  return Entry(Path, ValueType::Misnomer).replacedBy(Real);
}

constexpr ValueType Bool = ValueType::Bool, Int = ValueType::Int,
                    Float = ValueType::Float, String = ValueType::String,
                    Array = ValueType::Array, Dict = ValueType::Dict,
                    Any = ValueType::Any;
constexpr SectionKind Model = SectionKind::Model, DictSection = SectionKind::Dict,
                      Kwargs = SectionKind::Kwargs;

} // namespace dsc::schema

#endif
