//===- MemFile.h - A fuzz input as a file dsrun can open --------*- C++ -*-===//
//
// dsrun's readers take paths. One in-memory file serves every input,
// rewritten each time: creating a file per input would cost more than
// the reading under test.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_FUZZ_MEMFILE_H
#define DSC_FUZZ_MEMFILE_H

#include <cstdint>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

/// The path of a file holding exactly Data, or "" when none can be made.
inline std::string memFileOf(const uint8_t *Data, size_t Size) {
  static const int Fd = memfd_create("fuzz-input", 0);
  if (Fd < 0 || ftruncate(Fd, 0) != 0)
    return "";
  for (size_t Done = 0; Done < Size;) {
    ssize_t N = pwrite(Fd, Data + Done, Size - Done, off_t(Done));
    if (N <= 0)
      return "";
    Done += size_t(N);
  }
  return "/proc/self/fd/" + std::to_string(Fd);
}

#endif
