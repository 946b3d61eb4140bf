//===- DLPackBindings.cpp - tensors shared with other libraries -----------===//
//
// The DLPack exchange protocol (Debian's dlpack.h, version 0.6, the one
// PyTorch and NumPy speak): Tensor.__dlpack__ hands a capsule named
// "dltensor" holding a DLManagedTensor over the tensor's realized buffer (no
// copy; the capsule, then its consumer, keeps the buffer alive), and
// harp.from_dlpack takes such a capsule, or any object with __dlpack__, and
// makes a tensor over the producer's memory (no copy; the producer's deleter
// runs when harp no longer needs the memory). A consumed capsule is renamed
// "used_dltensor" and cannot be consumed again.
//
// Writes are shared both ways: a leaf made by from_dlpack reads the
// producer's memory whenever it is computed with, and copy_ and the other
// in-place methods write into that memory; a tensor handed out by __dlpack__
// is read by the consumer from harp's buffer, which harp's in-place writes
// to the tensor update.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <dlpack/dlpack.h>

#include <memory>
#include <numeric>

using namespace harp;
using namespace harp::python;

namespace {

constexpr const char *kCapsuleName = "dltensor";
constexpr const char *kUsedCapsuleName = "used_dltensor";

/// What a DLManagedTensor handed out by __dlpack__ owns: the array (whose
/// copy keeps the buffer alive) and the shape and strides it points at.
struct Exported {
  Array array;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

void deleteExported(DLManagedTensor *managed) {
  delete static_cast<Exported *>(managed->manager_ctx);
}

/// The capsule's destructor: a capsule nobody consumed still owns its
/// tensor.
void destroyCapsule(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName))
    return; // consumed: the consumer owns it now
  auto *managed = static_cast<DLManagedTensor *>(
      PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed && managed->deleter)
    managed->deleter(managed);
}

DLDataType dlpackTypeOf(DType dtype) {
  DLDataType type{kDLFloat, 0, 1};
  switch (dtype) {
  case DType::Bool:
    // DLPack 0.6 has no boolean code; one byte per element, read as uint8
    // (what PyTorch exports its bool tensors as).
    type.code = kDLUInt;
    break;
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
    type.code = kDLInt;
    break;
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    type.code = kDLUInt;
    break;
  case DType::F32:
  case DType::F64:
    type.code = kDLFloat;
    break;
  case DType::C64:
  case DType::C128:
    type.code = kDLComplex;
    break;
  }
  type.bits = uint8_t(8 * elementSize(elementKindOf(dtype)));
  return type;
}

/// The harp dtype of a DLPack element type, or a BufferError naming it.
DType dtypeOfDLPack(DLDataType type) {
  if (type.lanes != 1)
    throw py::buffer_error("from_dlpack: vector element types (lanes = " +
                           std::to_string(type.lanes) + ") have no harp dtype");
  // kDLBool, added to DLPack after 0.6: one byte per element.
  constexpr uint8_t kBoolCode = 6;
  if (type.code == kBoolCode && type.bits == 8)
    return DType::Bool;
    // The inverse of dlpackTypeOf (whose bool is uint8's code: not read back).
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  if (DType::Enum != DType::Bool &&                                            \
      dlpackTypeOf(DType::Enum).code == type.code &&                           \
      dlpackTypeOf(DType::Enum).bits == type.bits)                             \
    return DType::Enum;
#include "harp/API/DTypes.def"
  static const char *codes[] = {"int",    "uint",    "float", "opaque",
                                "bfloat", "complex", "bool"};
  std::string code = type.code < std::size(codes) ? codes[type.code]
                                                  : std::to_string(type.code);
  throw py::buffer_error(
      "from_dlpack: element type " + code + std::to_string(type.bits) +
      " has no harp dtype (harp holds bool, int8..int64, uint8..uint64, "
      "float32, float64, complex64 and complex128)");
}

/// Tensor.__dlpack__: a capsule over the realized buffer. A computed
/// tensor becomes a leaf holding its values first (as a torch tensor is its
/// values): in-place writes through it are then the consumer's too.
py::capsule toDLPack(PyTensor &self, const py::object &stream,
                     const py::object &maxVersion, const py::object &device,
                     const py::object &copy) {
  (void)maxVersion; // version 0.6's capsule is what every consumer reads
  NodePtr node = self.node;
  if (detail::requiresGrad(node))
    throw Error("__dlpack__: cannot export a tensor that requires a "
                "gradient; export tensor.detach()");
  std::string where = detail::backendOf(node)->name();
  if (where != "cpu")
    throw py::buffer_error("__dlpack__: the tensor is on '" + where +
                           "'; only CPU tensors are exported (use .cpu())");
  if (!stream.is_none())
    throw py::buffer_error(
        "__dlpack__: stream must be None for a CPU tensor, got " +
        std::string(py::repr(stream)));
  if (!device.is_none()) {
    auto pair = device.cast<std::pair<int, int>>();
    if (pair.first != kDLCPU)
      throw py::buffer_error("__dlpack__: dl_device (" +
                             std::to_string(pair.first) + ", " +
                             std::to_string(pair.second) +
                             ") is not the CPU, where the tensor is");
  }
  if (!copy.is_none() && copy.cast<bool>())
    throw py::buffer_error(
        "__dlpack__: copy=True is not supported; export tensor.clone()");
  auto exported = std::make_unique<Exported>();
  exported->array = detail::realize(node);
  if (!detail::isLeaf(node))
    self.node = detail::fromArray(detail::dtypeOf(node), exported->array,
                                  detail::backendOf(node));
  // In-place writes into the tensor are done at once: the consumer reads
  // the memory without asking harp.
  detail::markExternal(self.node);
  exported->shape = detail::shapeOf(self.node);
  exported->strides.assign(exported->shape.size(), 1);
  for (size_t i = exported->shape.size(); i-- > 1;)
    exported->strides[i - 1] = exported->strides[i] * exported->shape[i];
  DLManagedTensor &managed = exported->managed;
  DLTensor &tensor = managed.dl_tensor;
  tensor.data = exported->array.data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = int32_t(exported->shape.size());
  tensor.dtype = dlpackTypeOf(detail::dtypeOf(self.node));
  tensor.shape = exported->shape.data();
  tensor.strides = exported->strides.data();
  tensor.byte_offset = 0;
  managed.manager_ctx = exported.get();
  managed.deleter = deleteExported;
  PyObject *capsule =
      PyCapsule_New(&exported->managed, kCapsuleName, destroyCapsule);
  if (!capsule)
    throw py::error_already_set();
  exported.release();
  return py::reinterpret_steal<py::capsule>(capsule);
}

/// Releases a consumed DLManagedTensor when harp drops the last array over
/// it. The producer's deleter may need the interpreter (NumPy's drops a
/// reference to its array): it runs holding the GIL, and not at all once the
/// interpreter has gone.
void releaseManaged(DLManagedTensor *managed) {
  if (!managed->deleter)
    return;
  if (!Py_IsInitialized() || _Py_IsFinalizing())
    return;
  PyGILState_STATE state = PyGILState_Ensure();
  managed->deleter(managed);
  PyGILState_Release(state);
}

/// harp.from_dlpack: a tensor over the memory of `source` (a DLPack capsule
/// or an object with __dlpack__).
NodePtr fromDLPack(const py::object &source) {
  py::object capsule = source;
  if (!PyCapsule_CheckExact(source.ptr())) {
    if (!py::hasattr(source, "__dlpack__"))
      throw py::type_error(
          "from_dlpack: expected a DLPack capsule or an "
          "object with __dlpack__ (a torch tensor, a NumPy "
          "array), got " +
          std::string(py::str(source.get_type().attr("__name__"))));
    if (py::hasattr(source, "__dlpack_device__")) {
      auto device =
          source.attr("__dlpack_device__")().cast<std::pair<int, int>>();
      if (device.first != kDLCPU)
        throw py::buffer_error(
            "from_dlpack: the tensor is on DLPack device (" +
            std::to_string(device.first) + ", " +
            std::to_string(device.second) +
            "); harp takes CPU memory only (move it to the CPU first)");
    }
    capsule = source.attr("__dlpack__")();
  }
  if (PyCapsule_IsValid(capsule.ptr(), kUsedCapsuleName))
    throw py::buffer_error("from_dlpack: this DLPack capsule was consumed "
                           "already (a capsule gives its tensor once)");
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsuleName))
    throw py::type_error("from_dlpack: expected a capsule named 'dltensor'");
  auto *managed = static_cast<DLManagedTensor *>(
      PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (!managed)
    throw py::error_already_set();
  const DLTensor &tensor = managed->dl_tensor;
  if (tensor.device.device_type != kDLCPU &&
      tensor.device.device_type != kDLCUDAHost)
    throw py::buffer_error("from_dlpack: the tensor is on DLPack device " +
                           std::to_string(tensor.device.device_type) +
                           "; harp takes CPU memory only");
  if (tensor.ndim < 0)
    throw py::buffer_error("from_dlpack: negative rank " +
                           std::to_string(tensor.ndim));
  DType dtype = dtypeOfDLPack(tensor.dtype);
  std::vector<int64_t> shape(tensor.shape, tensor.shape + tensor.ndim);
  int64_t elements = 1;
  for (int64_t size : shape) {
    if (size < 0)
      throw py::buffer_error("from_dlpack: negative size in shape");
    elements *= size;
  }
  // Strides (in elements): none means row-major. A row-major layout (sizes
  // of 1 take any stride) becomes a leaf over the memory; any other, with
  // nonnegative strides, a strided view of a leaf over the elements it
  // spans.
  std::vector<int64_t> strides(shape.size());
  bool rowMajor = true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = tensor.strides ? tensor.strides[i] : expected;
    if (shape[i] != 1 && strides[i] != expected)
      rowMajor = false;
    expected *= shape[i];
  }
  int64_t span = 1;
  if (elements != 0 && !rowMajor) {
    for (size_t i = 0; i < shape.size(); ++i) {
      if (strides[i] < 0)
        throw py::buffer_error(
            "from_dlpack: negative strides have no harp view (copy the "
            "tensor first, e.g. .contiguous())");
      span += (shape[i] - 1) * strides[i];
    }
  }
  // The capsule is consumed only when nothing above has failed; harp owns
  // the tensor from here, and releases it when its last array goes.
  if (PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName) != 0)
    throw py::error_already_set();
  std::shared_ptr<DLManagedTensor> owner(managed, releaseManaged);
  if (elements == 0) // nothing to share: harp's own (non-null) storage
    return detail::fromArray(
        dtype, Array::allocate(TensorType{elementKindOf(dtype), shape}));
  void *data = static_cast<char *>(tensor.data) + tensor.byte_offset;
  Array array = Array::adopt(
      TensorType{elementKindOf(dtype), rowMajor ? shape : std::vector{span}},
      data, std::move(owner));
  NodePtr leaf = detail::fromArray(dtype, std::move(array));
  detail::markExternal(leaf);
  if (rowMajor)
    return leaf;
  py::object harp = py::module_::import("harp");
  py::object view = harp.attr("as_strided")(PyTensor{leaf}, py::cast(shape),
                                            py::cast(strides));
  return view.cast<PyTensor &>().node;
}

} // namespace

void harp::python::bindDLPack(py::module_ &m) {
  py::object tensorClass = m.attr("Tensor");
  tensorClass.attr("__dlpack__") = py::cpp_function(
      toDLPack, py::is_method(tensorClass), py::name("__dlpack__"),
      py::arg("stream") = py::none(), py::kw_only(),
      py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
      py::arg("copy") = py::none(),
      "A DLPack capsule over the tensor's values, sharing its memory: "
      "torch.from_dlpack(t), numpy.from_dlpack(t). A computed tensor is "
      "computed and becomes a leaf holding its values. CPU tensors that "
      "do not require a gradient only; stream must be None.");
  tensorClass.attr("__dlpack_device__") = py::cpp_function(
      [](const NodePtr &node) {
        std::string where = detail::backendOf(node)->name();
        if (where != "cpu")
          throw py::buffer_error("__dlpack_device__: the tensor is on '" +
                                 where + "'; only CPU tensors are exported");
        return py::make_tuple(int(kDLCPU), 0);
      },
      py::is_method(tensorClass), py::name("__dlpack_device__"),
      "(device type, device id) of the DLPack export: (1, 0), the CPU.");
  m.def("from_dlpack", &fromDLPack, py::arg("ext_tensor"),
        "A tensor over the memory of `ext_tensor`, an object with "
        "__dlpack__ (a torch tensor, a NumPy array) or a DLPack capsule, "
        "without a copy: writes on either side are seen by the other.");
}
