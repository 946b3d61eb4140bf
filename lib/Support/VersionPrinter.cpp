//===- VersionPrinter.cpp - harp's line in every tool's --version ---------===//

#include "harp/Support/Version.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

void harp::addVersionPrinter() {
  llvm::cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { os << version() << "\n"; });
}
