//===- Expect.h - The plain checks dsrun's host tests use -------*- C++ -*-===//
//
// The GPU machines have no GoogleTest, so the runtime's host tests count
// failed expectations themselves and exit non-zero if any failed.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_TEST_EXPECT_H
#define DSRUN_TEST_EXPECT_H

#include <cstdio>

inline int Failures = 0;
#define EXPECT(Cond)                                                           \
  do {                                                                         \
    if (!(Cond)) {                                                             \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #Cond);      \
      ++Failures;                                                              \
    }                                                                          \
  } while (0)

#endif
