//===- Array.cpp - dense host arrays passed to and from kernels -----------===//

#include "harp/Runtime/Array.h"

#include "BlockCache.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemAlloc.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace harp;

/// Kernels vectorise for AVX-512, so buffers start on a 64-byte boundary.
static constexpr size_t kArrayAlignment = 64;

size_t harp::elementSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::I1:
  case ElementKind::I8:
    return 1;
  case ElementKind::F16:
  case ElementKind::BF16:
  case ElementKind::I16:
    return 2;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
  case ElementKind::C64:
    return 8;
  case ElementKind::C128:
    return 16;
  }
  llvm_unreachable("unknown element kind");
}

std::string harp::elementName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::I1:
    return "i1";
  case ElementKind::I8:
    return "i8";
  case ElementKind::I16:
    return "i16";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  case ElementKind::C64:
    return "complex<f32>";
  case ElementKind::C128:
    return "complex<f64>";
  }
  llvm_unreachable("unknown element kind");
}

std::optional<ElementKind> harp::parseElementName(const std::string &name) {
  static constexpr ElementKind kinds[] = {
      ElementKind::F16, ElementKind::BF16, ElementKind::F32, ElementKind::F64,
      ElementKind::I1,  ElementKind::I8,   ElementKind::I16, ElementKind::I32,
      ElementKind::I64, ElementKind::C64,  ElementKind::C128};
  for (ElementKind kind : kinds)
    if (elementName(kind) == name)
      return kind;
  return std::nullopt;
}

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t dim : shape)
    n *= dim;
  return n;
}

std::string TensorType::str() const {
  std::string s = "tensor<";
  for (int64_t dim : shape) {
    // Shapes are static; '?' only keeps a malformed type printable.
    s += dim < 0 ? "?" : std::to_string(dim);
    s += 'x';
  }
  s += elementName(kind);
  s += '>';
  return s;
}

/// Storage of `bytes` bytes (a multiple of the alignment, never zero, so
/// that even an empty array has a unique, aligned pointer to hand to a
/// kernel), not written yet.
static std::shared_ptr<void> storageOf(size_t bytes) {
  // Large storage comes from the runtime's block cache (64-byte aligned,
  // huge pages advised from 4 MiB): a training step's results, gradients
  // and snapshots have the same sizes at every step, and fresh pages cost
  // a page fault each.
  if (bytes >= detail::kMinCachedBlock) {
    void *ptr = detail::allocateBlock(bytes);
    if (!ptr)
      llvm::report_bad_alloc_error("harp: array storage");
    return std::shared_ptr<void>(ptr, detail::releaseBlock);
  }
  void *ptr = llvm::allocate_buffer(bytes, kArrayAlignment);
  return std::shared_ptr<void>(ptr, [bytes](void *p) {
    llvm::deallocate_buffer(p, bytes, kArrayAlignment);
  });
}

Array Array::uninitialized(TensorType type) {
  static const bool poison = std::getenv("HARP_DEBUG_POISON") != nullptr;
  Array array;
  array.ty = std::move(type);
  size_t bytes =
      llvm::alignTo(std::max<size_t>(array.byteSize(), 1), kArrayAlignment);
  array.owner = storageOf(bytes);
  array.ptr = array.owner.get();
  if (poison)
    std::memset(array.ptr, 0xff, bytes);
  return array;
}

Array Array::allocate(TensorType type) {
  Array array = uninitialized(std::move(type));
  std::memset(array.ptr, 0, array.byteSize());
  return array;
}

Array Array::copyOf(const Array &from) {
  Array array = uninitialized(from.ty);
  std::memcpy(array.ptr, from.ptr, from.byteSize());
  return array;
}

Array Array::borrow(TensorType type, void *data) {
  Array array;
  array.ty = std::move(type);
  array.ptr = data;
  return array;
}

Array Array::adopt(TensorType type, void *data, std::shared_ptr<void> owner) {
  Array array;
  array.ty = std::move(type);
  array.ptr = data;
  array.owner = std::move(owner);
  array.foreign = true;
  return array;
}
