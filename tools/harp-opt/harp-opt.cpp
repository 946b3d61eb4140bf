//===- harp-opt.cpp - harp's optimizer driver -----------------------------===//
//
// mlir-opt for harp: parses, verifies, transforms and prints .mlir files with
// the harp dialect and its passes registered.
//
//===----------------------------------------------------------------------===//

#include "harp/InitAllHarp.h"
#include "harp/Support/Version.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  harp::addVersionPrinter();
  mlir::harp::registerAllHarpPasses();
  mlir::DialectRegistry registry;
  mlir::harp::registerAllHarpDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "harp optimizer driver\n", registry));
}
