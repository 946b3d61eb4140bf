//===- Array.h - dense host arrays passed to and from kernels ---*- C++ -*-===//

#ifndef HARP_RUNTIME_ARRAY_H
#define HARP_RUNTIME_ARRAY_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace harp {

/// The element types harp tensors hold.
enum class ElementKind {
  F16,
  BF16,
  F32,
  F64,
  I1,
  I8,
  I16,
  I32,
  I64,
  C64,
  C128
};

/// Bytes per element (i1 is stored as one byte, like NumPy's bool).
size_t elementSize(ElementKind kind);
/// "f32", "i1", "complex<f32>"...: the MLIR spelling.
std::string elementName(ElementKind kind);
/// The inverse of elementName, for MLIR element type spellings.
std::optional<ElementKind> parseElementName(const std::string &name);

struct TensorType {
  ElementKind kind;
  std::vector<int64_t> shape;
  int64_t numElements() const;
  /// "tensor<2x3xf32>".
  std::string str() const;
  bool operator==(const TensorType &other) const {
    return kind == other.kind && shape == other.shape;
  }
};

/// A dense, row-major host array. Copies share the data.
class Array {
public:
  Array() = default;
  /// Allocates zero-initialised storage (64-byte aligned).
  static Array allocate(TensorType type);
  /// Allocates storage whose bytes are not written yet, for a caller that
  /// writes every one of them (a kernel's results). With $HARP_DEBUG_POISON
  /// set they are 0xff bytes (NaN in a float array), so that a reader of
  /// bytes nobody wrote shows in tests.
  static Array uninitialized(TensorType type);
  /// New storage holding a copy of `from`'s values (not shared with it).
  static Array copyOf(const Array &from);
  /// Borrows `data`, which must outlive every copy of the array.
  static Array borrow(TensorType type, void *data);
  /// Shares `data` with another library: `owner` keeps it alive, and its
  /// last copy (the array's and its copies') releases it. Such storage is
  /// never unshared(): harp writes into it rather than replacing it, so
  /// that the other library sees the writes.
  static Array adopt(TensorType type, void *data, std::shared_ptr<void> owner);

  const TensorType &type() const { return ty; }
  ElementKind kind() const { return ty.kind; }
  const std::vector<int64_t> &shape() const { return ty.shape; }
  int64_t numElements() const { return ty.numElements(); }
  size_t byteSize() const { return numElements() * elementSize(ty.kind); }
  void *data() const { return ptr; }
  /// Whether this array alone holds its storage, which harp allocated: no
  /// copy of it (a tensor sharing it, a NumPy view) and no borrowed memory.
  /// Such storage can change hands instead of being copied.
  bool unshared() const { return owner && owner.use_count() == 1 && !foreign; }
  template <typename T>
  T *as() const {
    return static_cast<T *>(ptr);
  }

private:
  TensorType ty{ElementKind::F32, {}};
  void *ptr = nullptr;
  std::shared_ptr<void> owner;
  /// The storage belongs to another library (adopt).
  bool foreign = false;
};

} // namespace harp

#endif // HARP_RUNTIME_ARRAY_H
