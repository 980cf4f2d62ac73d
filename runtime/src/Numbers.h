//===- Numbers.h - Counts from flags, variables and files -----*- C++ -*-===//
//
// One reading of a count for every flag, launcher variable and hostfile
// field: decimal digits only (no sign, no spaces, no trailing text) and
// within [Min, Max], so that "4x", " 4", "+4" and "-1" are all refused
// the same way wherever they appear.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_NUMBERS_H
#define DSRUN_NUMBERS_H

#include <string>

namespace dsrun {

/// Text as a count in [Min, Max] (Min >= 0); false when it is not one.
inline bool parseCount(const std::string &Text, long Min, long Max,
                       long &Out) {
  if (Text.empty() || Text.size() > 18)
    return false;
  long V = 0;
  for (char C : Text) {
    if (C < '0' || C > '9')
      return false;
    V = V * 10 + (C - '0');
  }
  if (V < Min || V > Max)
    return false;
  Out = V;
  return true;
}

} // namespace dsrun

#endif
