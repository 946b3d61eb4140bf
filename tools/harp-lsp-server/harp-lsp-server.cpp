//===- harp-lsp-server.cpp - harp's language server -----------------------===//
//
// The MLIR language server with the harp dialect registered: diagnostics,
// hover, go-to-definition, references and document symbols for .mlir files
// with harp IR, in any editor that speaks the Language Server Protocol.
//
//===----------------------------------------------------------------------===//

#include "harp/InitAllHarp.h"
#include "harp/Support/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-lsp-server/MlirLspServerMain.h"

int main(int argc, char **argv) {
  harp::addVersionPrinter();
  mlir::DialectRegistry registry;
  mlir::harp::registerAllHarpDialects(registry);
  return mlir::failed(mlir::MlirLspServerMain(argc, argv, registry));
}
