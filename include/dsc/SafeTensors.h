//===- SafeTensors.h - The safetensors format, read and written -*- C++ -*-===//
//
// Weights travel between dsc, dsrun and Hugging Face transformers as
// safetensors (huggingface/safetensors): an 8-byte little-endian header
// length, a JSON header {"name": {"dtype", "shape", "data_offsets"}, ...,
// "__metadata__": {...}}, then the tensors' bytes. This header is shared by
// the compiler and the runtime, so it depends on the standard library
// alone, with the small JSON reader the header needs.
//
// A damaged file gives an error that says what is wrong, never a read
// outside the buffer: offsets must lie in the data, in order, without
// overlap, and match each tensor's shape and type.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_SAFETENSORS_H
#define DSC_SAFETENSORS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace dsc::safetensors {

struct TensorInfo {
  std::string Name;
  std::string DType; ///< "F32", "BF16", "I64", ...
  std::vector<int64_t> Shape;
  uint64_t Begin = 0, End = 0; ///< Byte range, relative to the data.
};

struct Header {
  std::vector<TensorInfo> Tensors; ///< In file order.
  std::map<std::string, std::string> Metadata;
  uint64_t DataStart = 0; ///< Where the data begins in the file.

  const TensorInfo *find(const std::string &Name) const {
    for (const TensorInfo &T : Tensors)
      if (T.Name == Name)
        return &T;
    return nullptr;
  }
};

/// Bytes per element of a safetensors dtype, 0 if unknown.
inline unsigned dtypeBytes(const std::string &D) {
  if (D == "F64" || D == "I64" || D == "U64")
    return 8;
  if (D == "F32" || D == "I32" || D == "U32")
    return 4;
  if (D == "F16" || D == "BF16" || D == "I16" || D == "U16")
    return 2;
  if (D == "I8" || D == "U8" || D == "BOOL" || D == "F8_E4M3" ||
      D == "F8_E5M2")
    return 1;
  return 0;
}

namespace detail {

/// Just enough JSON for a safetensors header.
class Json {
public:
  Json(const char *P, const char *End) : P(P), End(End) {}
  std::string Error;

  void space() {
    while (P < End && (*P == ' ' || *P == '\n' || *P == '\r' || *P == '\t'))
      ++P;
  }
  bool eat(char C) {
    space();
    if (P < End && *P == C) {
      ++P;
      return true;
    }
    return false;
  }
  /// The next character past white space, not consumed; 0 at the end.
  char next() {
    space();
    return P < End ? *P : 0;
  }
  bool fail(const std::string &What) {
    if (Error.empty())
      Error = What;
    return false;
  }
  bool string(std::string &Out) {
    if (!eat('"'))
      return fail("expected a string");
    Out.clear();
    while (P < End && *P != '"') {
      char C = *P++;
      if (C != '\\') {
        Out += C;
        continue;
      }
      if (P >= End)
        break;
      char E = *P++;
      switch (E) {
      case 'n':
        Out += '\n';
        break;
      case 't':
        Out += '\t';
        break;
      case 'r':
        Out += '\r';
        break;
      case 'b':
        Out += '\b';
        break;
      case 'f':
        Out += '\f';
        break;
      case 'u': {
        if (End - P < 4)
          return fail("a truncated \\u escape");
        unsigned V = 0;
        for (int K = 0; K < 4; ++K) {
          char H = *P++;
          V = V * 16 + unsigned(H >= '0' && H <= '9'   ? H - '0'
                                : H >= 'a' && H <= 'f' ? H - 'a' + 10
                                : H >= 'A' && H <= 'F' ? H - 'A' + 10
                                                       : 0);
        }
        // UTF-8 of a code unit (surrogate pairs stay as two units).
        if (V < 0x80) {
          Out += char(V);
        } else if (V < 0x800) {
          Out += char(0xc0 | (V >> 6));
          Out += char(0x80 | (V & 0x3f));
        } else {
          Out += char(0xe0 | (V >> 12));
          Out += char(0x80 | ((V >> 6) & 0x3f));
          Out += char(0x80 | (V & 0x3f));
        }
        break;
      }
      default:
        Out += E;
      }
    }
    if (P >= End)
      return fail("an unterminated string");
    ++P;
    return true;
  }
  bool integer(int64_t &Out) {
    space();
    bool Neg = eat('-');
    if (P >= End || *P < '0' || *P > '9')
      return fail("expected a number");
    uint64_t V = 0;
    while (P < End && *P >= '0' && *P <= '9') {
      if (V > (UINT64_MAX - 9) / 10)
        return fail("a number too large");
      V = V * 10 + uint64_t(*P++ - '0');
    }
    if (V > uint64_t(INT64_MAX))
      return fail("a number too large");
    Out = Neg ? -int64_t(V) : int64_t(V);
    return true;
  }
  bool integers(std::vector<int64_t> &Out) {
    if (!eat('['))
      return fail("expected a list");
    Out.clear();
    if (eat(']'))
      return true;
    do {
      int64_t V;
      if (!integer(V))
        return false;
      Out.push_back(V);
    } while (eat(','));
    return eat(']') || fail("expected ']'");
  }
  /// An object, each member's key given to Member, which reads the value
  /// and returns false to stop. Fails "<What> is not an object" or "<What>
  /// is not closed"; a key without its colon ends the members, so the
  /// close then fails. False once an error is set.
  template <class F> bool object(const std::string &What, F &&Member) {
    if (!eat('{'))
      return fail(What + " is not an object");
    if (eat('}'))
      return true;
    do {
      std::string Key;
      if (!string(Key) || !eat(':') || !Member(Key))
        break;
    } while (Error.empty() && eat(','));
    if (Error.empty() && !eat('}'))
      fail(What + " is not closed");
    return Error.empty();
  }
  /// Skips any value (unknown keys of a tensor entry).
  bool skip(int Depth = 0) {
    space();
    if (Depth > 32 || P >= End)
      return fail("a value nested too deep or missing");
    if (*P == '"') {
      std::string S;
      return string(S);
    }
    if (*P == '{' || *P == '[') {
      char Close = *P == '{' ? '}' : ']';
      ++P;
      if (eat(Close))
        return true;
      do {
        if (Close == '}') {
          std::string K;
          if (!string(K) || !eat(':'))
            return fail("expected a key");
        }
        if (!skip(Depth + 1))
          return false;
      } while (eat(','));
      return eat(Close) || fail("an unclosed list or object");
    }
    while (P < End && *P != ',' && *P != '}' && *P != ']')
      ++P;
    return true;
  }

private:
  const char *P, *End;
};

} // namespace detail

/// Reads the header of a safetensors file whose first Size bytes (at
/// least the header; FileSize the whole file's) are at Data.
inline bool readHeader(const char *Data, uint64_t Size, uint64_t FileSize,
                       Header &Out, std::string &Error) {
  if (Size < 8 || FileSize < 8) {
    Error = "not a safetensors file: shorter than its 8-byte header length";
    return false;
  }
  uint64_t Length = 0;
  for (int K = 0; K < 8; ++K)
    Length |= uint64_t(uint8_t(Data[K])) << (8 * K);
  if (Length > FileSize - 8 || Length > Size - 8 || Length > (100u << 20)) {
    Error = "not a safetensors file: its header length (" +
            std::to_string(Length) + " bytes) exceeds the file";
    return false;
  }
  detail::Json J(Data + 8, Data + 8 + Length);
  Out = Header();
  Out.DataStart = 8 + Length;
  uint64_t DataBytes = FileSize - Out.DataStart;
  if (J.next() != '{') {
    Error = "not a safetensors file: its header is not a JSON object";
    return false;
  }
  J.object("the header", [&](const std::string &Key) {
    if (Key == "__metadata__")
      return J.object("__metadata__", [&](const std::string &K) {
        std::string V;
        return J.string(V) && (Out.Metadata[K] = V, true);
      });
    TensorInfo T;
    T.Name = Key;
    std::vector<int64_t> Offsets;
    bool HasOffsets = false;
    if (!J.object("tensor '" + Key + "'", [&](const std::string &Field) {
          if (Field == "dtype")
            J.string(T.DType);
          else if (Field == "shape")
            J.integers(T.Shape);
          else if (Field == "data_offsets")
            HasOffsets = J.integers(Offsets);
          else
            J.skip();
          return true;
        }))
      return false;
    unsigned Width = dtypeBytes(T.DType);
    if (!Width)
      return J.fail("tensor '" + Key + "' has dtype '" + T.DType +
                    "', which dsc does not read");
    if (!HasOffsets || Offsets.size() != 2 || Offsets[0] < 0 ||
        Offsets[1] < Offsets[0] || uint64_t(Offsets[1]) > DataBytes)
      return J.fail("tensor '" + Key + "' has data offsets outside the file");
    uint64_t Elems = 1;
    for (int64_t D : T.Shape) {
      if (D < 0 || (D && Elems > UINT64_MAX / 16 / uint64_t(D)))
        return J.fail("tensor '" + Key + "' has a bad dimension");
      Elems *= uint64_t(D);
    }
    T.Begin = uint64_t(Offsets[0]);
    T.End = uint64_t(Offsets[1]);
    if (Elems * Width != T.End - T.Begin)
      return J.fail("tensor '" + Key + "' has " +
                    std::to_string(T.End - T.Begin) +
                    " bytes of data where its shape and dtype need " +
                    std::to_string(Elems * Width));
    Out.Tensors.push_back(std::move(T));
    return true;
  });
  if (!J.Error.empty()) {
    Error = "malformed safetensors header: " + J.Error;
    return false;
  }
  // Tensors may not share bytes.
  std::vector<std::pair<uint64_t, uint64_t>> Ranges;
  for (const TensorInfo &T : Out.Tensors)
    if (T.End > T.Begin)
      Ranges.push_back({T.Begin, T.End});
  std::sort(Ranges.begin(), Ranges.end());
  for (size_t K = 1; K < Ranges.size(); ++K)
    if (Ranges[K].first < Ranges[K - 1].second) {
      Error = "malformed safetensors header: two tensors share bytes";
      return false;
    }
  return true;
}

/// S as a JSON string, quotes included: the header's names, and any other
/// JSON dsrun writes.
inline std::string quote(const std::string &S) {
  std::string Out = "\"";
  for (char C : S) {
    if (C == '"' || C == '\\')
      Out += '\\';
    if (uint8_t(C) < 0x20) {
      char Buf[8];
      std::snprintf(Buf, sizeof(Buf), "\\u%04x", unsigned(uint8_t(C)));
      Out += Buf;
      continue;
    }
    Out += C;
  }
  return Out + "\"";
}

/// A sharded checkpoint's index (model.safetensors.index.json, as
/// transformers' save_pretrained writes it): which file holds each tensor.
struct Index {
  std::map<std::string, std::string> WeightMap; ///< Tensor -> file name.
  uint64_t TotalSize = 0; ///< metadata.total_size where given.
};

/// Reads an index's JSON. A file name must be a plain name in the index's
/// folder: no path separator, not "." or "..".
inline bool readIndex(const char *Text, uint64_t Size, Index &Out,
                      std::string &Error) {
  detail::Json J(Text, Text + Size);
  Out = Index();
  bool HasMap = false;
  if (J.next() != '{') {
    Error = "not a safetensors index: not a JSON object";
    return false;
  }
  J.object("the index", [&](const std::string &Key) {
    if (Key == "weight_map") {
      HasMap = true;
      return J.object("weight_map", [&](const std::string &Tensor) {
        std::string File;
        if (!J.string(File))
          return false;
        if (File.empty() || File == "." || File == ".." ||
            File.find('/') != std::string::npos ||
            File.find('\\') != std::string::npos)
          return J.fail("weight_map puts '" + Tensor + "' in '" + File +
                        "', which is not a file name in the index's folder");
        if (!Out.WeightMap.emplace(Tensor, File).second)
          return J.fail("weight_map names '" + Tensor + "' twice");
        return true;
      });
    }
    if (Key != "metadata" || J.next() != '{')
      return J.skip();
    // Read for total_size alone; transformers reads only weight_map.
    return J.object("metadata", [&](const std::string &K) {
      int64_t V = 0;
      char C = J.next();
      if (K != "total_size" || C < '0' || C > '9') {
        J.skip();
      } else if (J.integer(V)) {
        C = J.next();
        if (C == '.' || C == 'e' || C == 'E')
          J.skip(); // Not a count of bytes: the rest of the number.
        else
          Out.TotalSize = uint64_t(V);
      }
      return true;
    });
  });
  if (J.Error.empty() && !HasMap)
    J.fail("it has no weight_map");
  if (!J.Error.empty()) {
    Error = "malformed safetensors index: " + J.Error;
    return false;
  }
  return true;
}

/// The index's JSON: total_size, then the tensors in name order.
inline std::string indexJson(const Index &I) {
  std::string Out = "{\n  \"metadata\": {\n    \"total_size\": " +
                    std::to_string(I.TotalSize) +
                    "\n  },\n  \"weight_map\": {";
  bool First = true;
  for (const auto &[Tensor, File] : I.WeightMap) {
    Out += (First ? "\n    " : ",\n    ") + quote(Tensor) + ": " + quote(File);
    First = false;
  }
  return Out + "\n  }\n}\n";
}

/// Builds a safetensors file in memory, tensors in the order added.
class Writer {
public:
  void add(const std::string &Name, const std::string &DType,
           const std::vector<int64_t> &Shape, const void *Bytes,
           size_t Size) {
    TensorInfo T{Name, DType, Shape, Data.size(), Data.size() + Size};
    const char *B = static_cast<const char *>(Bytes);
    Data.insert(Data.end(), B, B + Size);
    Tensors.push_back(std::move(T));
  }
  void metadata(const std::string &K, const std::string &V) { Meta[K] = V; }

  /// The whole file.
  std::vector<char> bytes() const {
    std::string H = "{";
    bool First = true;
    if (!Meta.empty()) {
      H += "\"__metadata__\":{";
      for (auto It = Meta.begin(); It != Meta.end(); ++It)
        H += (It == Meta.begin() ? "" : ",") + quote(It->first) + ":" +
             quote(It->second);
      H += "}";
      First = false;
    }
    for (const TensorInfo &T : Tensors) {
      H += (First ? "" : ",") + quote(T.Name) + ":{\"dtype\":\"" + T.DType +
           "\",\"shape\":[";
      for (size_t K = 0; K < T.Shape.size(); ++K)
        H += (K ? "," : "") + std::to_string(T.Shape[K]);
      H += "],\"data_offsets\":[" + std::to_string(T.Begin) + "," +
           std::to_string(T.End) + "]}";
      First = false;
    }
    H += "}";
    while ((8 + H.size()) % 8) // The data starts aligned, as the library does.
      H += ' ';
    std::vector<char> Out(8 + H.size() + Data.size());
    uint64_t L = H.size();
    for (int K = 0; K < 8; ++K)
      Out[size_t(K)] = char(L >> (8 * K));
    std::copy(H.begin(), H.end(), Out.begin() + 8);
    std::copy(Data.begin(), Data.end(), Out.begin() + 8 + ptrdiff_t(H.size()));
    return Out;
  }

private:
  std::vector<TensorInfo> Tensors;
  std::map<std::string, std::string> Meta;
  std::vector<char> Data;
};

} // namespace dsc::safetensors

#endif
