//===- Version.h - harp's version for --version -----------------*- C++ -*-===//

#ifndef HARP_SUPPORT_VERSION_H
#define HARP_SUPPORT_VERSION_H

namespace harp {
/// "harp <commit> (LLVM <version>)", from the build.
const char *version();
/// Makes every LLVM command line's --version print version() after LLVM's
/// own lines.
void addVersionPrinter();
} // namespace harp

#endif // HARP_SUPPORT_VERSION_H
