//===- harp-reduce.cpp - harp's test-case reducer -------------------------===//
//
// mlir-reduce for harp: shrinks a .mlir file with the harp dialect while an
// "interestingness" script (exit status 1: still interesting) keeps holding,
// for bug reports that show a crash or a wrong result in a few lines.
//
//===----------------------------------------------------------------------===//

#include "harp/InitAllHarp.h"
#include "harp/Support/Version.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/mlir-reduce/MlirReduceMain.h"

int main(int argc, char **argv) {
  harp::addVersionPrinter();
  mlir::harp::registerAllHarpPasses();
  mlir::DialectRegistry registry;
  mlir::harp::registerAllHarpDialects(registry);
  mlir::MLIRContext context(registry);
  return mlir::failed(mlir::mlirReduceMain(argc, argv, context));
}
