//===- PlanCodec.cpp - plan.bin, written and read -------------------------===//
//
// Every struct is encoded by walking its visit() list: integers and enums
// little-endian at their width (enums and bools one byte), doubles as their
// 64 bits, strings and lists as a u32 count and their elements.
//
//===----------------------------------------------------------------------===//

#include "dsc/PlanCodec.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <variant>

namespace dsc::plan {

namespace detail {

/// Stands for any field visitor when detecting visit().
struct AnyField {
  template <typename T> void operator()(const char *, T &) const;
};
template <typename T> struct IsVariant : std::false_type {};
template <typename... T>
struct IsVariant<std::variant<T...>> : std::true_type {};

/// Makes alternative Index of V current (default-constructed); false when
/// V has no such alternative.
template <typename Var, size_t I = 0> bool emplaceIndex(Var &V, size_t Index) {
  if constexpr (I < std::variant_size_v<Var>) {
    if (Index == I) {
      V.template emplace<I>();
      return true;
    }
    return emplaceIndex<Var, I + 1>(V, Index);
  }
  return false;
}

template <typename T, typename = void> struct HasVisit : std::false_type {};
template <typename T>
struct HasVisit<T, std::void_t<decltype(std::declval<T &>().visit(
                       std::declval<AnyField>()))>> : std::true_type {};

/// The fewest bytes an encoded T takes: a count in a damaged file larger
/// than the bytes left divided by this is refused before allocating.
template <typename T> size_t minEncodedBytes() {
  if constexpr (std::is_same_v<T, bool> || std::is_enum_v<T> ||
                IsVariant<T>::value)
    return 1; // A variant: its index, then the alternative's fields.
  else if constexpr (std::is_floating_point_v<T>)
    return 8;
  else if constexpr (std::is_integral_v<T>)
    return sizeof(T);
  else if constexpr (HasVisit<T>::value) {
    static const size_t Bytes = [] {
      T V;
      size_t Sum = 0;
      V.visit([&](const char *, auto &Field) {
        Sum += minEncodedBytes<std::decay_t<decltype(Field)>>();
      });
      return Sum;
    }();
    return Bytes;
  } else {
    return 4; // A string or a list: its count.
  }
}

class Writer {
public:
  std::vector<uint8_t> Out;

  void raw(const void *P, size_t N) {
    const uint8_t *B = static_cast<const uint8_t *>(P);
    Out.insert(Out.end(), B, B + N);
  }
  template <typename I> void integer(I V) {
    uint8_t B[sizeof(I)];
    for (size_t K = 0; K < sizeof(I); ++K)
      B[K] = uint8_t(uint64_t(V) >> (8 * K));
    raw(B, sizeof(I));
  }
  template <typename T> void value(const T &V) {
    if constexpr (std::is_same_v<T, bool>)
      integer(uint8_t(V));
    else if constexpr (std::is_floating_point_v<T>) {
      uint64_t Bits;
      double D = V;
      std::memcpy(&Bits, &D, 8);
      integer(Bits);
    }
    else if constexpr (std::is_enum_v<T>)
      integer(uint8_t(V));
    else if constexpr (std::is_integral_v<T>)
      integer(V);
    else if constexpr (std::is_same_v<T, std::string>) {
      integer(uint32_t(V.size()));
      raw(V.data(), V.size());
    } else if constexpr (IsVariant<T>::value) {
      integer(uint8_t(V.index()));
      std::visit([&](const auto &Alt) { this->value(Alt); }, V);
    } else if constexpr (HasVisit<T>::value) {
      const_cast<T &>(V).visit(
          [&](const char *, const auto &Field) { this->value(Field); });
    } else {
      integer(uint32_t(V.size()));
      for (const auto &E : V)
        value(E);
    }
  }
};

class Reader {
public:
  Reader(const uint8_t *Data, size_t Size) : P(Data), End(Data + Size) {}
  bool Failed = false;

  bool atEnd() const { return P == End; }
  template <typename I> I integer() {
    if (size_t(End - P) < sizeof(I)) {
      Failed = true;
      P = End;
      return I();
    }
    uint64_t V = 0;
    for (size_t K = 0; K < sizeof(I); ++K)
      V |= uint64_t(P[K]) << (8 * K);
    P += sizeof(I);
    return I(V);
  }
  template <typename T> void value(T &V) {
    if (Failed)
      return;
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t B = integer<uint8_t>();
      Failed |= B > 1;
      V = B;
    } else if constexpr (std::is_floating_point_v<T>) {
      uint64_t Bits = integer<uint64_t>();
      double D;
      std::memcpy(&D, &Bits, 8);
      V = T(D);
    } else if constexpr (std::is_enum_v<T>) {
      uint8_t B = integer<uint8_t>();
      Failed |= B >= EnumInfo<T>::Count;
      V = T(B);
    } else if constexpr (std::is_integral_v<T>) {
      V = integer<T>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      uint32_t N = integer<uint32_t>();
      if (N > size_t(End - P)) {
        Failed = true;
        return;
      }
      V.assign(reinterpret_cast<const char *>(P), N);
      P += N;
    } else if constexpr (IsVariant<T>::value) {
      if (!emplaceIndex(V, integer<uint8_t>())) {
        Failed = true;
        return;
      }
      std::visit([&](auto &Alt) { this->value(Alt); }, V);
    } else if constexpr (HasVisit<T>::value) {
      V.visit([&](const char *, auto &Field) { this->value(Field); });
    } else {
      uint32_t N = integer<uint32_t>();
      // A count beyond what the bytes left can hold is damage, refused
      // before allocating for it.
      using E = typename T::value_type;
      if (N > size_t(End - P) / std::max<size_t>(1, minEncodedBytes<E>())) {
        Failed = true;
        return;
      }
      V.clear();
      V.resize(N);
      for (auto &E : V)
        value(E);
    }
  }

private:
  const uint8_t *P;
  const uint8_t *End;
};

constexpr size_t HeaderBytes = 32;
constexpr size_t SectionEntryBytes = 24;

} // namespace detail

std::vector<uint8_t> writePlan(const Plan &Source) {
  Plan &P = const_cast<Plan &>(Source); // visit() is shared with the reader.
  std::vector<std::pair<SectionId, std::vector<uint8_t>>> Sections;
  visitSections(P, [&](SectionId Id, const char *, auto &Member) {
    detail::Writer W;
    W.value(Member);
    Sections.emplace_back(Id, std::move(W.Out));
  });
  detail::Writer Table;
  uint64_t Offset =
      detail::HeaderBytes + detail::SectionEntryBytes * Sections.size();
  for (auto &[Id, Bytes] : Sections) {
    Table.integer(uint32_t(Id));
    Table.integer(uint32_t(0));
    Table.integer(Offset);
    Table.integer(uint64_t(Bytes.size()));
    Offset += Bytes.size();
  }
  std::vector<uint8_t> Body = std::move(Table.Out);
  for (auto &S : Sections)
    Body.insert(Body.end(), S.second.begin(), S.second.end());
  detail::Writer Header;
  Header.raw(FileMagic, sizeof(FileMagic));
  Header.integer(FormatVersion);
  Header.integer(uint32_t(Sections.size()));
  Header.integer(uint64_t(detail::HeaderBytes + Body.size()));
  Header.integer(fnv1a(Body.data(), Body.size()));
  std::vector<uint8_t> File = std::move(Header.Out);
  File.insert(File.end(), Body.begin(), Body.end());
  return File;
}

std::optional<Plan> readPlan(const uint8_t *Data, size_t Size,
                                    std::string &Error) {
  if (Size < detail::HeaderBytes ||
      std::memcmp(Data, FileMagic, sizeof(FileMagic)) != 0) {
    Error = "not a dsc plan (no DSCPLAN header); make one with dsc plan";
    return std::nullopt;
  }
  detail::Reader H(Data + 8, detail::HeaderBytes - 8);
  uint32_t Version = H.integer<uint32_t>();
  uint32_t Count = H.integer<uint32_t>();
  uint64_t FileSize = H.integer<uint64_t>();
  uint64_t Checksum = H.integer<uint64_t>();
  if (Version != FormatVersion) {
    Error = "plan format version " + std::to_string(Version) +
            ", this build reads version " + std::to_string(FormatVersion) +
            "; make the plan again with this dsc";
    return std::nullopt;
  }
  if (FileSize != Size) {
    Error = "the file is " + std::to_string(Size) + " bytes but its header "
            "says " + std::to_string(FileSize) + ": truncated or appended to";
    return std::nullopt;
  }
  if (fnv1a(Data + detail::HeaderBytes, Size - detail::HeaderBytes) !=
      Checksum) {
    Error = "checksum mismatch: the file is damaged; make the plan again";
    return std::nullopt;
  }
  if (Count > (Size - detail::HeaderBytes) / detail::SectionEntryBytes) {
    Error = "the section table is larger than the file";
    return std::nullopt;
  }
  Plan P;
  detail::Reader Table(Data + detail::HeaderBytes,
                       Count * detail::SectionEntryBytes);
  std::vector<bool> Seen(LastSection + 1, false);
  for (uint32_t I = 0; I < Count; ++I) {
    uint32_t Id = Table.integer<uint32_t>();
    Table.integer<uint32_t>();
    uint64_t Offset = Table.integer<uint64_t>();
    uint64_t Bytes = Table.integer<uint64_t>();
    if (Offset < detail::HeaderBytes || Offset > Size ||
        Bytes > Size - Offset) {
      Error = "section " + std::to_string(Id) + " lies outside the file";
      return std::nullopt;
    }
    bool Known = false;
    visitSections(P, [&](SectionId S, const char *Name, auto &Member) {
      if (uint32_t(S) != Id || !Error.empty())
        return;
      Known = true;
      if (Seen[Id]) {
        Error = std::string("section '") + Name + "' appears twice";
        return;
      }
      Seen[Id] = true;
      detail::Reader R(Data + Offset, Bytes);
      R.value(Member);
      if (R.Failed || !R.atEnd())
        Error = std::string("section '") + Name +
                "' is malformed; make the plan again";
    });
    if (!Error.empty())
      return std::nullopt;
    (void)Known; // Unknown sections come from newer writers: skipped.
  }
  for (uint32_t Id = 1; Id <= LastSection; ++Id)
    if (!Seen[Id]) {
      Error = "section " + std::to_string(Id) + " is missing";
      return std::nullopt;
    }
  return P;
}


} // namespace dsc::plan
