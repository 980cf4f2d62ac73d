//===- Version.h - The version of dsc and dsrun -----------------*- C++ -*-===//
//
// One spelling for every tool and file that names it: dsc --version,
// dsrun --version, the SARIF log, the producer of a plan and of a
// generated model. Dependency-free, so the runtime builds with it alone.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_VERSION_H
#define DSC_VERSION_H

namespace dsc {

constexpr const char *Version = "0.1.0";

} // namespace dsc

#endif
