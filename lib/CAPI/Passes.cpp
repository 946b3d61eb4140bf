//===- Passes.cpp - C API for harp's passes and pipelines -----------------===//

#include "harp-c/Passes.h"

#include "harp/InitAllHarp.h"
#include "harp/Pipelines/Pipelines.h"

#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Support.h"

#include <mutex>

void mlirRegisterHarpPasses(void) {
  static std::once_flag once;
  std::call_once(once, [] { mlir::harp::registerHarpPasses(); });
}

MlirLogicalResult harpBuildHarpToLLVMPipeline(MlirOpPassManager pm,
                                              MlirStringRef options,
                                              MlirStringCallback errorCallback,
                                              void *userData) {
  auto report = [&](const llvm::Twine &message) {
    if (errorCallback) {
      std::string text = message.str();
      errorCallback(mlirStringRefCreate(text.data(), text.size()), userData);
    }
    return mlir::failure();
  };
  auto parsed =
      mlir::harp::HarpToLLVMOptions::createFromString(unwrap(options));
  if (!parsed)
    return wrap(
        report("harp-to-llvm: invalid options '" + unwrap(options) + "'"));
  return wrap(
      mlir::harp::buildHarpToLLVMPipeline(*unwrap(pm), *parsed, report));
}
