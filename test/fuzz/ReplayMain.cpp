//===- ReplayMain.cpp - Run a fuzz target over files, without libFuzzer ---===//
//
// CI builds with g++ and has no libFuzzer; this main feeds every file named
// on the command line (or found in a named folder) to the target once, so
// the seed corpus and past crashers stay regression tests.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size);

static bool runOne(const std::string &Path) {
  auto Buffer = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!Buffer) {
    llvm::errs() << Path << ": " << Buffer.getError().message() << "\n";
    return false;
  }
  llvm::StringRef B = (*Buffer)->getBuffer();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(B.data()),
                         B.size());
  return true;
}

int main(int argc, char **argv) {
  unsigned Count = 0;
  bool OK = true;
  for (int I = 1; I < argc; ++I) {
    if (llvm::sys::fs::is_directory(argv[I])) {
      std::error_code EC;
      for (llvm::sys::fs::recursive_directory_iterator It(argv[I], EC), End;
           It != End && !EC; It.increment(EC))
        if (!llvm::sys::fs::is_directory(It->path())) {
          OK &= runOne(It->path());
          ++Count;
        }
    } else {
      OK &= runOne(argv[I]);
      ++Count;
    }
  }
  llvm::outs() << "replayed " << Count << " inputs\n";
  return OK ? 0 : 1;
}
