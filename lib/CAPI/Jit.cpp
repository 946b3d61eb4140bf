//===- Jit.cpp - C API for harp's JIT -------------------------------------===//

#include "harp-c/Jit.h"

#include "harp/Runtime/Jit.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

using harp::Array;
using harp::ElementKind;

namespace {

struct HeldExecutable {
  std::shared_ptr<harp::Executable> executable;
};

harp::Jit *unwrapJit(HarpJit jit) { return static_cast<harp::Jit *>(jit.ptr); }

void report(MlirStringCallback callback, void *userData,
            const std::string &text) {
  if (callback)
    callback(mlirStringRefCreate(text.data(), text.size()), userData);
}

/// `buffer` as an Array over the caller's memory (no copy).
Array borrow(const HarpBuffer &buffer) {
  harp::TensorType type{
      static_cast<ElementKind>(buffer.kind),
      std::vector<int64_t>(buffer.shape, buffer.shape + buffer.rank)};
  return Array::borrow(std::move(type), buffer.data);
}

} // namespace

static_assert(static_cast<int>(HarpC128) == static_cast<int>(ElementKind::C128),
              "HarpElementKind follows harp::ElementKind");

HarpJit harpJitCreate(MlirStringRef cpu) {
  harp::JitOptions options;
  options.cpu = unwrap(cpu).str();
  return {new harp::Jit(std::move(options))};
}

void harpJitDestroy(HarpJit jit) { delete unwrapJit(jit); }

HarpExecutable harpJitCompile(HarpJit jit, MlirStringRef source,
                              MlirStringCallback errorCallback,
                              void *userData) {
  llvm::Expected<std::shared_ptr<harp::Executable>> executable =
      unwrapJit(jit)->compile(unwrap(source));
  if (!executable) {
    report(errorCallback, userData, llvm::toString(executable.takeError()));
    return {nullptr};
  }
  return {new HeldExecutable{std::move(*executable)}};
}

HarpExecutable harpJitCompileModule(HarpJit jit, MlirModule module,
                                    MlirStringCallback errorCallback,
                                    void *userData) {
  std::string text;
  llvm::raw_string_ostream os(text);
  unwrap(module)->print(os);
  return harpJitCompile(jit, mlirStringRefCreate(text.data(), text.size()),
                        errorCallback, userData);
}

void harpExecutableDestroy(HarpExecutable executable) {
  delete static_cast<HeldExecutable *>(executable.ptr);
}

MlirLogicalResult
harpExecutableCall(HarpExecutable executable, MlirStringRef name,
                   const HarpBuffer *inputs, intptr_t numInputs,
                   const HarpBuffer *results, intptr_t numResults,
                   MlirStringCallback errorCallback, void *userData) {
  auto *held = static_cast<HeldExecutable *>(executable.ptr);
  if (!held) {
    report(errorCallback, userData, "harpExecutableCall: no executable");
    return mlirLogicalResultFailure();
  }
  std::vector<Array> ins, outs;
  for (intptr_t i = 0; i < numInputs; ++i)
    ins.push_back(borrow(inputs[i]));
  for (intptr_t i = 0; i < numResults; ++i)
    outs.push_back(borrow(results[i]));
  if (llvm::Error error = held->executable->callInto(unwrap(name), ins, outs)) {
    report(errorCallback, userData, llvm::toString(std::move(error)));
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}
