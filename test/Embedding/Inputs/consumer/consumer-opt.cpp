// A driver of another project: its own name, harp's dialect and passes.
#include "harp/InitAllHarp.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::harp::registerAllHarpPasses();
  mlir::DialectRegistry registry;
  mlir::harp::registerAllHarpDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "a compiler embedding harp\n", registry));
}
