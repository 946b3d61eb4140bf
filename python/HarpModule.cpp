//===- HarpModule.cpp - the _harp Python extension ------------------------===//
//
// One PYBIND11_MODULE over harp's own C++ API: the untyped tensor graph
// (harp/API/Graph.h, dtype is a run-time value there as in Python) and, in
// the `ir` submodule, parsing, printing, pass pipelines and JIT calls on
// module text. No MLIR object crosses the boundary: modules are text.
//
//===----------------------------------------------------------------------===//

#include "harp/API/Graph.h"
#include "harp/InitAllHarp.h"
#include "harp/Runtime/Jit.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include <cstring>

namespace py = pybind11;
using namespace harp;
using detail::NodePtr;

/// The Python-visible tensor: a handle to a graph node (whose type the
/// public header keeps opaque).
struct PyTensor {
  NodePtr node;
};

namespace pybind11::detail {
/// Every NodePtr in a binding's signature travels as a harp.Tensor.
template <>
struct type_caster<NodePtr> {
  PYBIND11_TYPE_CASTER(NodePtr, const_name("Tensor"));
  bool load(handle src, bool) {
    if (!isinstance<PyTensor>(src))
      return false;
    value = src.cast<PyTensor &>().node;
    return true;
  }
  static handle cast(const NodePtr &node, return_value_policy, handle) {
    if (!node)
      return none().release();
    return pybind11::cast(PyTensor{node}).release();
  }
};
} // namespace pybind11::detail

namespace {

DType dtypeOfNumpy(const py::dtype &d) {
  char kind = d.kind();
  size_t size = d.itemsize();
  if (kind == 'b')
    return DType::Bool;
  if (kind == 'f' && size == 4)
    return DType::F32;
  if (kind == 'f' && size == 8)
    return DType::F64;
  if (kind == 'i')
    return size == 1   ? DType::I8
           : size == 2 ? DType::I16
           : size == 4 ? DType::I32
                       : DType::I64;
  if (kind == 'u')
    return size == 1   ? DType::U8
           : size == 2 ? DType::U16
           : size == 4 ? DType::U32
                       : DType::U64;
  throw py::type_error(
      "harp.tensor: unsupported NumPy dtype " +
      std::string(py::str(static_cast<py::handle>(d))) +
      "; use bool, int8..int64, uint8..uint64, float32 or float64");
}

py::dtype numpyOf(DType d) {
  switch (d) {
  case DType::Bool:
    return py::dtype::of<bool>();
  case DType::I8:
    return py::dtype::of<int8_t>();
  case DType::I16:
    return py::dtype::of<int16_t>();
  case DType::I32:
    return py::dtype::of<int32_t>();
  case DType::I64:
    return py::dtype::of<int64_t>();
  case DType::U8:
    return py::dtype::of<uint8_t>();
  case DType::U16:
    return py::dtype::of<uint16_t>();
  case DType::U32:
    return py::dtype::of<uint32_t>();
  case DType::U64:
    return py::dtype::of<uint64_t>();
  case DType::F32:
    return py::dtype::of<float>();
  case DType::F64:
    return py::dtype::of<double>();
  }
  return py::dtype::of<float>();
}

NodePtr fromNumpy(py::array array, const std::optional<std::string> &device) {
  DType dtype = dtypeOfNumpy(array.dtype());
  py::array c =
      py::array::ensure(array, py::array::c_style | py::array::forcecast);
  std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
  return detail::fromData(dtype, shape, c.data(),
                          device ? backend::get(*device) : nullptr);
}

/// The NumPy dtype of a function result. Signature element types are
/// signless, so integers come back signed.
py::dtype numpyOfKind(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return py::dtype("float16");
  case ElementKind::BF16:
    throw py::type_error("harp.ir.call: bf16 results have no NumPy dtype");
  case ElementKind::F32:
    return numpyOf(DType::F32);
  case ElementKind::F64:
    return numpyOf(DType::F64);
  case ElementKind::I1:
    return numpyOf(DType::Bool);
  case ElementKind::I8:
    return numpyOf(DType::I8);
  case ElementKind::I16:
    return numpyOf(DType::I16);
  case ElementKind::I32:
    return numpyOf(DType::I32);
  case ElementKind::I64:
    return numpyOf(DType::I64);
  case ElementKind::C64:
    return py::dtype("complex64");
  case ElementKind::C128:
    return py::dtype("complex128");
  }
  throw py::type_error("harp.ir.call: unknown result element kind");
}

/// A NumPy array over `a`'s buffer (no copy) that keeps the buffer alive.
py::array wrapArray(const Array &a, const py::dtype &dtype) {
  auto *keep = new Array(a);
  py::capsule owner(keep, [](void *p) { delete static_cast<Array *>(p); });
  std::vector<ssize_t> shape(a.shape().begin(), a.shape().end());
  return py::array(dtype, shape, a.data(), owner);
}

/// The realized value as a NumPy array sharing harp's buffer.
py::array toNumpy(const NodePtr &node) {
  return wrapArray(detail::realize(node), numpyOf(detail::dtypeOf(node)));
}

NodePtr scalarLike(const NodePtr &like, double value) {
  return detail::full(detail::dtypeOf(like), {}, value);
}

/// Operand coercion: tensors, NumPy arrays and Python scalars.
NodePtr operand(const NodePtr &self, const py::object &o) {
  if (py::isinstance<py::float_>(o) || py::isinstance<py::int_>(o) ||
      py::isinstance<py::bool_>(o)) {
    DType d = detail::dtypeOf(self);
    if (py::isinstance<py::float_>(o) && !isFloat(d))
      return detail::full(DType::F32, {}, o.cast<double>());
    return scalarLike(self, o.cast<double>());
  }
  if (py::isinstance<py::array>(o))
    return fromNumpy(o.cast<py::array>(), std::nullopt); // follows `self`
  return o.cast<NodePtr>();
}

std::vector<int64_t> axesOf(const py::object &axis) {
  if (axis.is_none())
    return {};
  if (py::isinstance<py::int_>(axis))
    return {axis.cast<int64_t>()};
  return axis.cast<std::vector<int64_t>>();
}

//===--- harp.ir ----------------------------------------------------------===//

struct IrContext {
  mlir::MLIRContext context;
  IrContext() {
    mlir::DialectRegistry registry;
    mlir::harp::registerAllHarpDialects(registry);
    context.appendDialectRegistry(registry);
    static bool registered = [] {
      mlir::harp::registerAllHarpPasses();
      return true;
    }();
    (void)registered;
  }
  static IrContext &get() {
    static IrContext instance;
    return instance;
  }
};

mlir::OwningOpRef<mlir::ModuleOp> parseModule(const std::string &text) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "<harp.ir>"), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &IrContext::get().context,
                                           os);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(
      sourceMgr, &IrContext::get().context);
  if (!module)
    throw py::value_error("invalid IR:\n" + diagnostics);
  return module;
}

std::string printModule(mlir::ModuleOp module) {
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  return s;
}

std::string runPipeline(const std::string &text, const std::string &pipeline) {
  auto module = parseModule(text);
  mlir::MLIRContext &ctx = IrContext::get().context;
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    d.getLocation().print(os);
    os << ": " << d << "\n";
    return mlir::success();
  });
  std::string error;
  llvm::raw_string_ostream es(error);
  // The anchored form, `builtin.module(cse)`, as harp-opt --pass-pipeline.
  mlir::FailureOr<mlir::OpPassManager> parsed =
      mlir::parsePassPipeline(pipeline, es);
  if (mlir::failed(parsed))
    throw py::value_error("invalid pass pipeline '" + pipeline + "': " + error);
  if (parsed->getOpAnchorName() != mlir::ModuleOp::getOperationName())
    throw py::value_error("pass pipeline '" + pipeline +
                          "' must be anchored on builtin.module, e.g. "
                          "'builtin.module(canonicalize)'");
  mlir::PassManager pm(&ctx, mlir::ModuleOp::getOperationName());
  static_cast<mlir::OpPassManager &>(pm) = std::move(*parsed);
  if (mlir::failed(pm.run(*module)))
    throw py::value_error("pass pipeline '" + pipeline + "' failed:\n" +
                          diagnostics);
  return printModule(*module);
}

py::list call(const std::string &text, const std::string &name,
              const std::vector<py::array> &args, const std::string &device,
              const std::optional<std::string> &cpu) {
  llvm::Expected<Device> where = parseDevice(device);
  if (!where)
    throw py::value_error("harp.ir.call: " + llvm::toString(where.takeError()));
  llvm::Expected<std::shared_ptr<Executable>> exe =
      Jit::shared(*where, cpu ? *cpu : harp::get_cpu()).compile(text);
  if (!exe)
    throw py::value_error(llvm::toString(exe.takeError()));
  std::vector<Array> inputs;
  std::vector<py::array> keep;
  for (const py::array &a : args) {
    py::array c = py::array::ensure(a, py::array::c_style);
    keep.push_back(c);
    inputs.push_back(Array::borrow(
        TensorType{elementKindOf(dtypeOfNumpy(c.dtype())),
                   std::vector<int64_t>(c.shape(), c.shape() + c.ndim())},
        const_cast<void *>(c.data())));
  }
  llvm::Expected<std::vector<Array>> out = (*exe)->call(name, inputs);
  if (!out)
    throw py::value_error(llvm::toString(out.takeError()));
  py::list results;
  for (const Array &a : *out) {
    results.append(wrapArray(a, numpyOfKind(a.kind())));
  }
  return results;
}

} // namespace

PYBIND11_MODULE(_harp, m) {
  m.doc() = "harp: an MLIR-based tensor compiler (native module)";
  py::register_exception<Error>(m, "HarpError", PyExc_ValueError);

  py::enum_<DType>(m, "DType")
      .value("bool", DType::Bool)
      .value("int8", DType::I8)
      .value("int16", DType::I16)
      .value("int32", DType::I32)
      .value("int64", DType::I64)
      .value("uint8", DType::U8)
      .value("uint16", DType::U16)
      .value("uint32", DType::U32)
      .value("uint64", DType::U64)
      .value("float32", DType::F32)
      .value("float64", DType::F64);

  py::class_<PyTensor> node(m, "Tensor");
  auto bin = [](const char *op) {
    return [op](const NodePtr &a, const py::object &b) {
      return detail::binary(op, a, operand(a, b));
    };
  };
  auto rbin = [](const char *op) {
    return [op](const NodePtr &a, const py::object &b) {
      return detail::binary(op, operand(a, b), a);
    };
  };
  node.def_property_readonly("shape",
                             [](const NodePtr &n) {
                               const auto &s = detail::shapeOf(n);
                               return py::tuple(py::cast(
                                   std::vector<int64_t>(s.begin(), s.end())));
                             })
      .def_property_readonly("dtype", &detail::dtypeOf)
      .def("__add__", bin("add"))
      .def("__radd__", rbin("add"))
      .def("__sub__", bin("sub"))
      .def("__rsub__", rbin("sub"))
      .def("__mul__", bin("mul"))
      .def("__rmul__", rbin("mul"))
      .def("__truediv__", bin("div"))
      .def("__rtruediv__", rbin("div"))
      .def("__floordiv__", bin("idiv"))
      .def("__mod__", bin("rem"))
      .def("__pow__", bin("pow"))
      .def("__lt__", bin("lt"))
      .def("__le__", bin("le"))
      .def("__gt__", bin("gt"))
      .def("__ge__", bin("ge"))
      .def("eq", bin("eq"))
      .def("ne", bin("ne"))
      .def("__and__", bin("bitand"))
      .def("__or__", bin("bitor"))
      .def("__xor__", bin("bitxor"))
      .def("__lshift__", bin("shl"))
      .def("__rshift__", bin("shr"))
      .def("maximum", bin("maximum"))
      .def("minimum", bin("minimum"))
      .def("__neg__", [](const NodePtr &a) { return detail::unary("neg", a); })
      .def("__invert__",
           [](const NodePtr &a) { return detail::unary("not", a); })
      .def("__matmul__", [](const NodePtr &a,
                            const NodePtr &b) { return detail::matmul(a, b); })
      .def("unary", [](const NodePtr &a,
                       const std::string &op) { return detail::unary(op, a); })
      .def(
          "reduce",
          [](const NodePtr &a, const std::string &kind, const py::object &axis,
             bool keepdim) {
            return detail::reduce(kind, a, axesOf(axis), keepdim);
          },
          py::arg("kind"), py::arg("axis") = py::none(),
          py::arg("keepdim") = false)
      .def("softmax", &detail::softmax)
      .def("astype", &detail::cast)
      .def("reshape", &detail::reshape)
      .def("permute", &detail::permute)
      .def("expand", &detail::expand)
      .def("slice", &detail::slice)
      .def("flip", &detail::flip)
      .def("pad", &detail::pad)
      .def("contiguous", &detail::contiguous)
      .def("numpy", &toNumpy)
      .def("realize",
           [](const NodePtr &n) {
             detail::realize(n);
             return n;
           })
      .def("backward", &detail::backward)
      .def_property("requires_grad", &detail::requiresGrad,
                    &detail::setRequiresGrad)
      .def_property_readonly("grad",
                             [](const NodePtr &n) -> py::object {
                               NodePtr g = detail::grad(n);
                               return g ? py::cast(g) : py::none();
                             })
      .def("zero_grad", &detail::zeroGrad)
      .def("detach", &detail::detach)
      .def_property_readonly(
          "device",
          [](const NodePtr &n) { return detail::backendOf(n)->name(); })
      .def(
          "to",
          [](const NodePtr &n, const std::string &device) {
            return detail::to(n, backend::get(device));
          },
          py::arg("device"))
      .def("mlir", &detail::moduleText);

  m.def("from_numpy", &fromNumpy, py::arg("array"),
        py::arg("device") = py::none());
  m.def("full", &detail::full);
  m.def("arange", &detail::arange);
  m.def("rand", &detail::rand);
  m.def("concat", &detail::concat);
  m.def("conv", &detail::conv);
  m.def("gather", &detail::gather);
  m.def("scatter_add", &detail::scatterAdd);
  m.def("unfold", &detail::unfold);
  m.def("fold", &detail::fold);
  m.def("interpolate_nearest", &detail::interpolateNearest);
  m.def("interpolate_linear", &detail::interpolateLinear);
  m.def("promote", &harp::promote);
  m.def("set_cpu", &harp::set_cpu, py::arg("name"),
        "Generates code for the CPU `name`: 'native', 'x86-64-v2' (SSE4.2), "
        "'x86-64-v3' (AVX2), 'x86-64-v4' (AVX-512) or an LLVM CPU name; '' "
        "restores the default ($HARP_CPU, else native).");
  m.def("get_cpu", &harp::get_cpu,
        "The CPU code is generated for (see set_cpu).");

  py::module_ ir = m.def_submodule("ir", "harp IR as text: parse, passes, JIT");
  ir.def(
      "parse",
      [](const std::string &text) { return printModule(*parseModule(text)); },
      "Parses and verifies a module; returns its canonical text.");
  ir.def("run_pipeline", &runPipeline,
         "Runs a textual pass pipeline, e.g. "
         "'builtin.module(canonicalize)', and returns the resulting module.");
  ir.def("call", &call, py::arg("text"), py::arg("name"), py::arg("args"),
         py::arg("device") = "cpu", py::arg("cpu") = py::none(),
         "Compiles a module with harp's JIT for `device` ('cpu' or 'cuda') "
         "and calls a function on NumPy arrays; returns the results. `cpu` "
         "names the CPU code is generated for (default: harp.get_cpu()).");
}
