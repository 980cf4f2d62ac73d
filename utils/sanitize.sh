#!/bin/sh
# The host code built with AddressSanitizer and UndefinedBehaviorSanitizer
# (g++, the compiler CI uses), then every test that needs no GPU: unit,
# lit, runtime-host, runtime-plans, runtime-reshard, the fuzz seeds. A
# finding fails the test it happens in: both sanitizers stop at the first
# (halt_on_error), but for the third-party findings utils/ubsan.supp
# names. docs/testing.md has what it costs on the 2-core machine CI runs
# on.
#
#   utils/sanitize.sh [BUILD_DIR]    (default build-sanitize)
set -eu
build=${1:-build-sanitize}
flags="-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer"
start=$(date +%s)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
cmake --build "$build"
built=$(date +%s)
# LLVM's and protobuf's process-lifetime singletons are not leaks; the
# GPU tests skip here anyway.
ASAN_OPTIONS=detect_leaks=0 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$PWD/utils/ubsan.supp \
  ctest --test-dir "$build" --output-on-failure -j2 -LE gpu
done=$(date +%s)
echo "sanitize: built in $((built - start)) s, tested in $((done - built)) s"
