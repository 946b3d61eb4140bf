//===- HarpPlugin.cpp - harp as a plugin of Debian's mlir-opt -------------===//
//
// libHarpPlugin.so: loaded by a stock mlir-opt (or any tool built on
// MlirOptMain) with --load-dialect-plugin, it registers the harp dialect and
// the dialects harp IR is written with; with --load-pass-plugin, harp's
// passes and pipelines (harp-fuse, harp-autodiff, harp-to-llvm, ...). The
// tool already has upstream's dialects, extensions and passes.
//
//===----------------------------------------------------------------------===//

#include "harp/InitAllHarp.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Harp", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::harp::registerHarpDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "HarpPasses", LLVM_VERSION_STRING,
          []() { mlir::harp::registerHarpPasses(); }};
}
