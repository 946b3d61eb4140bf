//===- Executable.cpp - calling compiled functions ------------------------===//
//
// Function signatures read from a module, devices, and the executable the
// JIT loads: argument checks, memref descriptors, CUDA transfers.
//
//===----------------------------------------------------------------------===//

#include "JitInternal.h"

#include "harp/Runtime/Cuda.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"

#include <optional>

using namespace harp;
using harp::jit::InitFn;
using harp::jit::makeError;
using harp::jit::PackedFn;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

static std::optional<ElementKind> elementKindOf(mlir::Type type) {
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isInteger(1))
    return ElementKind::I1;
  if (type.isInteger(8))
    return ElementKind::I8;
  if (type.isInteger(16))
    return ElementKind::I16;
  if (type.isInteger(32))
    return ElementKind::I32;
  if (type.isInteger(64))
    return ElementKind::I64;
  if (auto complex = llvm::dyn_cast<mlir::ComplexType>(type)) {
    if (complex.getElementType().isF32())
      return ElementKind::C64;
    if (complex.getElementType().isF64())
      return ElementKind::C128;
  }
  return std::nullopt;
}

static Expected<TensorType> tensorTypeOf(mlir::Type type,
                                         const llvm::Twine &what) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  std::optional<ElementKind> kind =
      tensor ? elementKindOf(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !kind) {
    std::string text;
    llvm::raw_string_ostream os(text);
    type.print(os);
    return makeError(what + " has type " + text +
                     "; the JIT calls functions on statically shaped "
                     "tensors of harp element types");
  }
  return TensorType{*kind, std::vector<int64_t>(tensor.getShape().begin(),
                                                tensor.getShape().end())};
}

Expected<std::vector<FunctionSignature>>
harp::jit::signaturesOf(mlir::ModuleOp module) {
  std::vector<FunctionSignature> result;
  for (auto func : module.getOps<mlir::func::FuncOp>()) {
    if (func.isExternal() || !func.isPublic())
      continue;
    FunctionSignature sig;
    sig.name = func.getSymName().str();
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      auto t = tensorTypeOf(type,
                            "argument #" + llvm::Twine(i) + " of @" + sig.name);
      if (!t)
        return t.takeError();
      sig.inputs.push_back(*t);
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      auto t =
          tensorTypeOf(type, "result #" + llvm::Twine(i) + " of @" + sig.name);
      if (!t)
        return t.takeError();
      sig.results.push_back(*t);
    }
    result.push_back(std::move(sig));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

Expected<Device> harp::parseDevice(StringRef name) {
  if (name.equals_insensitive("cpu"))
    return Device::CPU;
  if (name.equals_insensitive("cuda"))
    return Device::CUDA;
  return makeError("unknown device '" + name + "' (expected cpu or cuda)");
}

const char *harp::deviceName(Device device) {
  return device == Device::CUDA ? "cuda" : "cpu";
}

//===----------------------------------------------------------------------===//
// Executable
//===----------------------------------------------------------------------===//

Executable::~Executable() = default;

const FunctionSignature *Executable::lookup(StringRef name) const {
  for (const FunctionSignature &sig : functions())
    if (sig.name == name)
      return &sig;
  return nullptr;
}

Error Executable::callDevice(StringRef name, llvm::ArrayRef<void *>,
                             llvm::ArrayRef<void *>) const {
  return makeError("callDevice(@" + name +
                   "): not a cuda executable (compile with "
                   "JitOptions::device = Device::CUDA)");
}

Expected<std::vector<Array>>
Executable::call(StringRef name, llvm::ArrayRef<Array> inputs) const {
  const FunctionSignature *sig = lookup(name);
  if (!sig)
    return makeError("no public function @" + name + " in the module");
  // A function writes every element of its results.
  std::vector<Array> results;
  for (const TensorType &type : sig->results)
    results.push_back(Array::uninitialized(type));
  if (Error err = callInto(name, inputs, results))
    return std::move(err);
  return results;
}

namespace {
class JitExecutable : public Executable {
public:
  JitExecutable(std::unique_ptr<llvm::orc::LLJIT> jit,
                std::vector<FunctionSignature> sigs,
                std::vector<PackedFn> entries, Device device, InitFn fini,
                std::shared_ptr<const void> kernels)
      : kernels(std::move(kernels)), jit(std::move(jit)), sigs(std::move(sigs)),
        entries(std::move(entries)), device(device), fini(fini) {}
  ~JitExecutable() override {
    // Unloads the GPU kernels (the module's destructors).
    if (fini)
      fini();
  }

  llvm::ArrayRef<FunctionSignature> functions() const override { return sigs; }

  Error callInto(StringRef name, llvm::ArrayRef<Array> inputs,
                 llvm::ArrayRef<Array> results) const override;
  Error callDevice(StringRef name, llvm::ArrayRef<void *> inputs,
                   llvm::ArrayRef<void *> results) const override;

private:
  Error callOnDevice(PackedFn entry, llvm::ArrayRef<Array> inputs,
                     llvm::ArrayRef<Array> results) const;

  /// The kernel store the code calls into, unloaded after `jit`.
  std::shared_ptr<const void> kernels;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<FunctionSignature> sigs;
  std::vector<PackedFn> entries;
  Device device;
  InitFn fini;
};
} // namespace

/// A memref descriptor for a contiguous row-major array at `data`:
/// {allocated, aligned, offset, sizes..., strides...}.
static std::vector<int64_t> descriptorOf(const Array &array, const void *data) {
  const std::vector<int64_t> &shape = array.shape();
  std::vector<int64_t> d;
  auto ptr = reinterpret_cast<int64_t>(data);
  d.push_back(ptr);
  d.push_back(ptr);
  d.push_back(0);
  d.insert(d.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}

Error JitExecutable::callInto(StringRef name, llvm::ArrayRef<Array> inputs,
                              llvm::ArrayRef<Array> results) const {
  const FunctionSignature *found = lookup(name);
  if (!found)
    return makeError("no public function @" + name + " in the module");
  const FunctionSignature &sig = *found;
  size_t at = found - sigs.data();
  if (inputs.size() != sig.inputs.size())
    return makeError("@" + name + " takes " + llvm::Twine(sig.inputs.size()) +
                     " inputs but " + llvm::Twine(inputs.size()) +
                     " were given");
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (!(input.type() == sig.inputs[i]))
      return makeError("input #" + llvm::Twine(i) + " of @" + name +
                       " has type " + input.type().str() + " but " +
                       sig.inputs[i].str() + " is expected");
    if (!input.data() && input.numElements() != 0)
      return makeError("input #" + llvm::Twine(i) + " of @" + name +
                       " has no data");
  }
  if (results.size() != sig.results.size())
    return makeError("@" + name + " has " + llvm::Twine(sig.results.size()) +
                     " results but " + llvm::Twine(results.size()) +
                     " buffers were given");
  auto overlap = [](const Array &a, const Array &b) {
    auto *a0 = static_cast<const char *>(a.data());
    auto *b0 = static_cast<const char *>(b.data());
    return a.byteSize() && b.byteSize() && a0 < b0 + b.byteSize() &&
           b0 < a0 + a.byteSize();
  };
  for (auto [i, result] : llvm::enumerate(results)) {
    if (!(result.type() == sig.results[i]))
      return makeError("result #" + llvm::Twine(i) + " of @" + name +
                       " has type " + sig.results[i].str() + " but the " +
                       "buffer given is " + result.type().str());
    if (!result.data() && result.numElements() != 0)
      return makeError("result buffer #" + llvm::Twine(i) + " of @" + name +
                       " has no data");
    for (const Array &input : inputs)
      if (overlap(result, input))
        return makeError("result buffer #" + llvm::Twine(i) + " of @" + name +
                         " overlaps an input");
    for (const Array &other : results.take_front(i))
      if (overlap(result, other))
        return makeError("result buffer #" + llvm::Twine(i) + " of @" + name +
                         " overlaps another result buffer");
  }

  if (device == Device::CUDA)
    return callOnDevice(entries[at], inputs, results);
  std::vector<std::vector<int64_t>> descriptors;
  for (const Array &input : inputs)
    descriptors.push_back(descriptorOf(input, input.data()));
  for (const Array &result : results)
    descriptors.push_back(descriptorOf(result, result.data()));
  std::vector<void *> args;
  for (std::vector<int64_t> &d : descriptors)
    args.push_back(d.data());
  jit::applyThreadCount();
  entries[at](args.data());
  return Error::success();
}

Error JitExecutable::callDevice(StringRef name, llvm::ArrayRef<void *> inputs,
                                llvm::ArrayRef<void *> results) const {
  if (device != Device::CUDA)
    return Executable::callDevice(name, inputs, results);
  const FunctionSignature *found = lookup(name);
  if (!found)
    return makeError("no public function @" + name + " in the module");
  const FunctionSignature &sig = *found;
  size_t at = found - sigs.data();
  if (inputs.size() != sig.inputs.size() ||
      results.size() != sig.results.size())
    return makeError("@" + name + " takes " + llvm::Twine(sig.inputs.size()) +
                     " inputs and " + llvm::Twine(sig.results.size()) +
                     " results but " + llvm::Twine(inputs.size()) + " and " +
                     llvm::Twine(results.size()) + " buffers were given");
  std::vector<std::vector<int64_t>> descriptors;
  for (auto [type, buffer] : llvm::zip(sig.inputs, inputs))
    descriptors.push_back(descriptorOf(Array::borrow(type, buffer), buffer));
  for (auto [type, buffer] : llvm::zip(sig.results, results))
    descriptors.push_back(descriptorOf(Array::borrow(type, buffer), buffer));
  std::vector<void *> args;
  for (std::vector<int64_t> &d : descriptors)
    args.push_back(d.data());
  entries[at](args.data());
  return cuda::takeError();
}

/// Copies the inputs to device buffers, runs the host function (which
/// launches the kernels and waits for them), copies the results back.
Error JitExecutable::callOnDevice(PackedFn entry, llvm::ArrayRef<Array> inputs,
                                  llvm::ArrayRef<Array> results) const {
  std::vector<void *> buffers;
  llvm::scope_exit releaseAll([&] {
    for (void *buffer : buffers)
      cuda::release(buffer);
  });
  std::vector<std::vector<int64_t>> descriptors;
  for (const Array &input : inputs) {
    Expected<void *> buffer = cuda::allocate(input.byteSize());
    if (!buffer)
      return buffer.takeError();
    buffers.push_back(*buffer);
    if (Error err = cuda::copyToDevice(*buffer, input.data(), input.byteSize()))
      return err;
    descriptors.push_back(descriptorOf(input, *buffer));
  }
  for (const Array &result : results) {
    Expected<void *> buffer = cuda::allocate(result.byteSize());
    if (!buffer)
      return buffer.takeError();
    buffers.push_back(*buffer);
    descriptors.push_back(descriptorOf(result, *buffer));
  }
  std::vector<void *> args;
  for (std::vector<int64_t> &d : descriptors)
    args.push_back(d.data());
  entry(args.data());
  if (Error err = cuda::takeError())
    return err;
  for (auto [i, result] : llvm::enumerate(results))
    if (Error err =
            cuda::copyToHost(const_cast<void *>(result.data()),
                             buffers[inputs.size() + i], result.byteSize()))
      return err;
  return Error::success();
}

std::shared_ptr<Executable>
harp::jit::makeExecutable(std::unique_ptr<llvm::orc::LLJIT> jit,
                          std::vector<FunctionSignature> sigs,
                          std::vector<PackedFn> entries, Device device,
                          InitFn fini, std::shared_ptr<const void> kernels) {
  return std::make_shared<JitExecutable>(std::move(jit), std::move(sigs),
                                         std::move(entries), device, fini,
                                         std::move(kernels));
}
