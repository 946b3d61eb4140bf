//===- HarpModule.cpp - the _harp Python extension ------------------------===//
//
// One PYBIND11_MODULE over harp's own C++ API: the untyped tensor graph
// (harp/API/Graph.h, dtype is a run-time value there as in Python), with
// the Tensor class in TensorBindings.cpp and, in the `ir` submodule
// (IrBindings.cpp), parsing, printing, pass pipelines and JIT calls on module
// text. This file: conversions, where ops come from, and the module's
// functions.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "harp/API/Random.h"
#include "harp/Runtime/Cuda.h"
#include "harp/Runtime/Export.h"
#include "harp/Runtime/Jit.h"
#include "harp/Runtime/Profile.h"

#include <cstring>
#include <limits>
#include <unordered_set>

using namespace harp;
using namespace harp::python;

/// A dtype's size in bytes, read through its Python attribute. pybind11
/// before 2.12 reads `itemsize()` from the descriptor struct with NumPy 1's
/// layout, where NumPy 2 keeps another field: the attribute is right with
/// both.
static ssize_t itemsizeOf(const py::dtype &d) {
  return d.attr("itemsize").cast<ssize_t>();
}

DType harp::python::dtypeOfNumpy(const py::dtype &d) {
  // NumPy's bool is kind 'b'; its integers 'i' and 'u', floats 'f',
  // complex numbers 'c'.
  ssize_t size = itemsizeOf(d);
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  if (d.kind() == py::dtype::of<CType>().kind() &&                             \
      size == static_cast<ssize_t>(sizeof(CType)))                             \
    return DType::Enum;
#include "harp/API/DTypes.def"
  throw py::type_error(
      "harp.tensor: unsupported NumPy dtype " +
      std::string(py::str(static_cast<py::handle>(d))) +
      "; use bool, int8..int64, uint8..uint64, float32, float64, complex64 "
      "or complex128");
}

py::dtype harp::python::numpyOf(DType d) {
  switch (d) {
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  case DType::Enum:                                                            \
    return py::dtype::of<CType>();
#include "harp/API/DTypes.def"
  }
  return py::dtype::of<float>();
}

NodePtr harp::python::fromNumpy(py::array array,
                                const std::optional<std::string> &device) {
  DType dtype = dtypeOfNumpy(array.dtype());
  py::array c =
      py::array::ensure(array, py::array::c_style | py::array::forcecast);
  std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
  return detail::fromData(dtype, shape, c.data(),
                          device ? backend::get(*device) : nullptr);
}

/// The NumPy dtype of a function result. Signature element types are
/// signless, so integers come back signed.
py::dtype harp::python::numpyOfKind(ElementKind kind) {
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
py::array harp::python::wrapArray(const Array &a, const py::dtype &dtype) {
  auto *keep = new Array(a);
  py::capsule owner(keep, [](void *p) { delete static_cast<Array *>(p); });
  std::vector<ssize_t> shape(a.shape().begin(), a.shape().end());
  // Row-major strides from the attribute's size (see itemsizeOf): given no
  // strides, pybind11 before 2.12 computes them from NumPy 1's layout.
  std::vector<ssize_t> strides(shape.size());
  ssize_t stride = itemsizeOf(dtype);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(dtype, shape, strides, a.data(), owner);
}

/// A compile option given as a bool (numpy's too); anything else raises
/// TypeError naming the option.
static bool boolOption(const py::object &value, const char *name) {
  if (!py::isinstance<py::bool_>(value) &&
      !py::isinstance(value, py::module_::import("numpy").attr("bool_")))
    throw py::type_error(
        std::string(name) + " must be a bool, got " +
        std::string(py::str(value.get_type().attr("__name__"))));
  return value.cast<bool>();
}

/// Keyword options of a realization (None: the process-wide setting).
CompileOptions harp::python::optionsOf(const py::object &threads,
                                       const py::object &vectorize,
                                       const py::object &cpu) {
  CompileOptions options;
  if (!threads.is_none())
    options.threads = boolOption(threads, "threads");
  if (!vectorize.is_none())
    options.vectorize = boolOption(vectorize, "vectorize");
  if (!cpu.is_none()) {
    if (!py::isinstance<py::str>(cpu))
      throw py::type_error(
          "cpu must be a str, got " +
          std::string(py::str(cpu.get_type().attr("__name__"))));
    options.cpu = cpu.cast<std::string>();
  }
  return options;
}

/// The realized value as a NumPy array sharing harp's buffer.
py::array harp::python::toNumpy(const NodePtr &node,
                                const CompileOptions &options) {
  return wrapArray(detail::realize(node, options),
                   numpyOf(detail::dtypeOf(node)));
}

/// The directory of the harp package: frames there are harp's own.
static std::string &packageDir() {
  static std::string dir;
  return dir;
}

/// One string per file name for the process (the locations point at them).
static const char *internFile(const char *name) {
  static std::unordered_set<std::string> *files =
      new std::unordered_set<std::string>();
  return files->insert(name).first->c_str();
}

/// The user's line: the innermost Python frame outside the harp package.
/// One op call builds several nodes from one frame and instruction; the
/// answer for those is remembered.
static bool pythonCaller(SourceLocation &where) {
  if (!PyGILState_Check())
    return false;
  PyFrameObject *current = PyEval_GetFrame(); // borrowed
  if (!current)
    return false;
  static thread_local const void *lastFrame = nullptr, *lastCode = nullptr;
  static thread_local int lastInstruction = -1;
  static thread_local SourceLocation last;
  PyCodeObject *currentCode = PyFrame_GetCode(current);
  int instruction = PyFrame_GetLasti(current);
  Py_DECREF(currentCode); // the frame keeps it alive
  if (current == lastFrame && currentCode == lastCode &&
      instruction == lastInstruction) {
    where = last;
    return where.file != nullptr;
  }
  SourceLocation found;
  PyFrameObject *frame = current;
  Py_INCREF(frame);
  while (frame && !found.file) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    const char *name = PyUnicode_AsUTF8(code->co_filename);
    if (name &&
        (packageDir().empty() ||
         std::strncmp(name, packageDir().c_str(), packageDir().size()) != 0))
      found = {internFile(name), unsigned(PyFrame_GetLineNumber(frame))};
    Py_DECREF(code);
    PyFrameObject *back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  if (PyErr_Occurred())
    PyErr_Clear();
  lastFrame = current;
  lastCode = currentCode;
  lastInstruction = instruction;
  last = found;
  where = found;
  return found.file != nullptr;
}

/// A Python number as a 0-d argument of dtype `d` (integers exactly).
static NodePtr scalarOf(DType d, const py::object &o) {
  if (!isFloat(d) && !isComplex(d) && d != DType::Bool &&
      !py::isinstance<py::float_>(o)) {
    if (isUnsigned(d) && o.cast<py::int_>() >= py::int_(0)) {
      uint64_t v = o.cast<uint64_t>();
      switch (d) {
      case DType::U8: {
        uint8_t x = v;
        return detail::scalar(d, &x);
      }
      case DType::U16: {
        uint16_t x = v;
        return detail::scalar(d, &x);
      }
      case DType::U32: {
        uint32_t x = v;
        return detail::scalar(d, &x);
      }
      default:
        return detail::scalar(d, &v);
      }
    }
    int64_t v = o.cast<int64_t>();
    switch (widthOf(d)) {
    case 8: {
      int8_t x = v;
      return detail::scalar(d, &x);
    }
    case 16: {
      int16_t x = v;
      return detail::scalar(d, &x);
    }
    case 32: {
      int32_t x = v;
      return detail::scalar(d, &x);
    }
    default:
      return detail::scalar(d, &v);
    }
  }
  return detail::scalar(d, o.cast<double>());
}

/// Operand coercion: tensors, NumPy arrays and Python scalars. A number
/// takes `self`'s dtype (float32 when a float meets an integer tensor; a
/// complex number gives the complex type of self's float, c64 for
/// integers, as PyTorch) and is an argument of the compiled code: changing
/// it compiles nothing.
NodePtr harp::python::operand(const NodePtr &self, const py::object &o) {
  // A NumPy scalar (np.float32(2), np.complex64(1j)) is the Python number
  // it holds, as in PyTorch.
  static py::handle numpyScalar = // kept for the process
      py::object(py::module_::import("numpy").attr("generic")).release();
  if (py::isinstance(o, numpyScalar))
    return operand(self, o.attr("item")());
  if (PyComplex_Check(o.ptr())) {
    DType d = detail::dtypeOf(self);
    d = isFloat(d) || isComplex(d) ? complexOf(d) : DType::C64;
    auto value = o.cast<std::complex<double>>();
    if (d == DType::C128)
      return detail::scalar(d, &value);
    std::complex<float> narrow(value);
    return detail::scalar(d, &narrow);
  }
  if (py::isinstance<py::float_>(o) || py::isinstance<py::int_>(o) ||
      py::isinstance<py::bool_>(o)) {
    DType d = detail::dtypeOf(self);
    if (py::isinstance<py::float_>(o) && !isFloat(d) && !isComplex(d))
      d = DType::F32;
    return scalarOf(d, o);
  }
  if (py::isinstance<py::array>(o))
    return fromNumpy(o.cast<py::array>(), std::nullopt); // follows `self`
  if (!py::isinstance<PyTensor>(o))
    throw py::type_error(
        "harp: an operand must be a harp.Tensor, a NumPy array or a number, "
        "not " +
        std::string(py::str(py::type::of(o).attr("__name__"))));
  return o.cast<NodePtr>();
}

std::vector<int64_t> harp::python::intsOf(const py::args &args,
                                          const char *what) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0]))
    return args[0].cast<std::vector<int64_t>>();
  std::vector<int64_t> ints;
  for (py::handle a : args) {
    if (!py::isinstance<py::int_>(a))
      throw py::type_error(std::string(what) +
                           ": takes ints or one sequence of ints");
    ints.push_back(a.cast<int64_t>());
  }
  return ints;
}

std::vector<int64_t> harp::python::expandInts(const py::object &value,
                                              size_t count, const char *what) {
  if (py::isinstance<py::int_>(value))
    return std::vector<int64_t>(count, value.cast<int64_t>());
  std::vector<int64_t> ints = value.cast<std::vector<int64_t>>();
  if (ints.size() != count)
    throw Error(std::string(what) + ": needs one value or " +
                std::to_string(count) + ", got " + std::to_string(ints.size()));
  return ints;
}

PYBIND11_MODULE(_harp, m) {
  m.doc() = "harp: an MLIR-based tensor compiler (native module)";
  // Ops built from Python carry the user's file and line: the first frame
  // outside the package directory harp/__init__.py names.
  harp::setLocationHook(&pythonCaller);
  m.def("_set_package_dir",
        [](const std::string &dir) { packageDir() = dir + "/"; });
  py::register_exception<Error>(m, "HarpError", PyExc_ValueError);
  // An index out of range: a HarpError and, as PyTorch raises for it, an
  // IndexError. Translators run newest first, so this one sees it before
  // HarpError's.
  static PyObject *indexError = PyErr_NewException(
      "harp.HarpIndexError",
      py::make_tuple(m.attr("HarpError"), py::handle(PyExc_IndexError)).ptr(),
      nullptr);
  m.attr("HarpIndexError") = py::handle(indexError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const harp::IndexError &e) {
      PyErr_SetString(indexError, e.what());
    }
  });

  py::enum_<DType> dtypes(m, "DType", "harp's element types.");
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  dtypes.value(#PyName, DType::Enum);
#include "harp/API/DTypes.def"

  bindTensor(m);

  // Sources and operations the package wraps (harp/__init__.py gives them
  // PyTorch's signatures and docstrings).
  m.def("from_numpy", &fromNumpy, py::arg("array"),
        py::arg("device") = py::none());
  m.def("full", &detail::full, py::arg("dtype"), py::arg("shape"),
        py::arg("value"));
  m.def("constant", &detail::full, py::arg("dtype"), py::arg("shape"),
        py::arg("value"));
  m.def("full_complex", &detail::fullComplex, py::arg("dtype"),
        py::arg("shape"), py::arg("real"), py::arg("imag"));
  m.def("arange", &detail::arange, py::arg("dtype"), py::arg("count"),
        py::arg("start"), py::arg("step"));
  m.def("rand",
        py::overload_cast<DType, std::vector<int64_t>, uint64_t>(&detail::rand),
        py::arg("dtype"), py::arg("shape"), py::arg("seed"));
  // The seed as a run-time argument: a new seed compiles nothing.
  m.def(
      "rand_seeded",
      [](DType dtype, std::vector<int64_t> shape, int64_t seed) {
        return detail::rand(dtype, std::move(shape), detail::seedLeaf(seed));
      },
      py::arg("dtype"), py::arg("shape"), py::arg("seed"));
  m.def(
      "randn_seeded",
      [](DType dtype, std::vector<int64_t> shape, int64_t seed) {
        return detail::randn(dtype, std::move(shape), detail::seedLeaf(seed));
      },
      py::arg("dtype"), py::arg("shape"), py::arg("seed"));
  // One seed stream for the C++ and the Python API (harp.Generator wraps it).
  py::class_<Generator>(m, "Generator",
                        "A stream of seeds, one per random draw.")
      .def(py::init<uint64_t>(), py::arg("seed") = Generator::kDefaultSeed)
      .def(
          "manual_seed",
          [](Generator &g, uint64_t seed) -> Generator & {
            return g.manual_seed(seed);
          },
          py::arg("seed"), py::return_value_policy::reference)
      .def("seed", &Generator::seed)
      .def("initial_seed", &Generator::initial_seed)
      .def("next_seed", &Generator::next_seed)
      .def("get_state",
           [](const Generator &g) {
             Generator::State st = g.get_state();
             return py::make_tuple(st.seed, st.offset);
           })
      .def(
          "set_state",
          [](Generator &g, std::pair<uint64_t, uint64_t> st) {
            g.set_state({st.first, st.second});
          },
          py::arg("state"));
  m.def("default_generator", &default_generator,
        py::return_value_policy::reference);
  m.def("concat", &detail::concat, py::arg("tensors"), py::arg("dim"));
  m.def("conv", &detail::conv, py::arg("input"), py::arg("weight"),
        py::arg("stride"), py::arg("padding"), py::arg("dilation"));
  // check=False: the index is in range by construction or was checked by
  // the caller (harp's own compositions).
  m.def(
      "gather",
      [](NodePtr input, NodePtr index, int64_t dim, bool check) {
        return check ? detail::gather(input, index, dim)
                     : detail::gatherUnchecked(input, index, dim);
      },
      py::arg("input"), py::arg("index"), py::arg("dim"),
      py::arg("check") = true);
  m.def(
      "scatter_add",
      [](NodePtr input, NodePtr index, NodePtr src, int64_t dim, bool check) {
        return check ? detail::scatterAdd(input, index, src, dim)
                     : detail::scatterAddUnchecked(input, index, src, dim);
      },
      py::arg("input"), py::arg("index"), py::arg("src"), py::arg("dim"),
      py::arg("check") = true);
  m.def(
      "_check_index",
      [](const std::string &op, const NodePtr &index, int64_t size,
         const std::string &what, std::optional<int64_t> ignore,
         bool wrapsNegative, const std::string &noun) -> py::object {
        detail::IndexCheckPtr check = detail::checkIndexRange(
            op, index, size, what, ignore, wrapsNegative, noun);
        if (!check)
          return py::none();
        return py::capsule(
            new detail::IndexCheckPtr(std::move(check)), "harp.IndexCheck",
            [](PyObject *capsule) {
              delete static_cast<detail::IndexCheckPtr *>(
                  PyCapsule_GetPointer(capsule, "harp.IndexCheck"));
            });
      },
      py::arg("op"), py::arg("index"), py::arg("size"), py::arg("what"),
      py::arg("ignore") = py::none(), py::arg("wraps_negative") = false,
      py::arg("noun") = "index",
      "Checks that the entries of `index` lie in [0, size) ([-size, size) "
      "with wraps_negative; entries equal to `ignore` skipped): read now, "
      "raising HarpIndexError, where its values are on the host; otherwise "
      "returns the check to attach to the op's result with _with_check.");
  m.def(
      "_with_check",
      [](NodePtr result, py::object check) {
        if (check.is_none())
          return result;
        auto *ptr = static_cast<detail::IndexCheckPtr *>(
            PyCapsule_GetPointer(check.ptr(), "harp.IndexCheck"));
        if (!ptr)
          throw py::error_already_set();
        return detail::withCheck(result, *ptr);
      },
      py::arg("result"), py::arg("check"),
      "`result`, checking the index of `check` whenever it is computed.");
  m.def("unfold", &detail::unfold, py::arg("input"), py::arg("kernel"),
        py::arg("stride"), py::arg("dilation"));
  m.def("fold", &detail::fold, py::arg("input"), py::arg("output_size"),
        py::arg("stride"), py::arg("dilation"));
  m.def("interpolate_nearest", &detail::interpolateNearest, py::arg("input"),
        py::arg("size"));
  m.def("interpolate_linear", &detail::interpolateLinear, py::arg("input"),
        py::arg("size"));
  // Composites (harp/_ops.py gives them PyTorch's argument forms).
  m.def(
      "broadcast_to",
      [](const NodePtr &a, std::vector<int64_t> shape) {
        return detail::expand(a, std::move(shape), "broadcast_to");
      },
      py::arg("input"), py::arg("shape"));
  m.def("stack", &detail::stack, py::arg("tensors"), py::arg("dim"));
  m.def("split", &detail::split, py::arg("input"), py::arg("size"),
        py::arg("dim"));
  m.def("split_sections", &detail::splitSections, py::arg("input"),
        py::arg("sizes"), py::arg("dim"));
  m.def("chunk", &detail::chunk, py::arg("input"), py::arg("chunks"),
        py::arg("dim"));
  m.def("unbind", &detail::unbind, py::arg("input"), py::arg("dim"));
  m.def("index_select", &detail::indexSelect, py::arg("input"), py::arg("dim"),
        py::arg("index"));
  m.def("take_along_dim", &detail::takeAlongDim, py::arg("input"),
        py::arg("indices"), py::arg("dim"));
  m.def("repeat", &detail::repeat, py::arg("input"), py::arg("sizes"));
  m.def("repeat_interleave",
        py::overload_cast<NodePtr, int64_t, std::optional<int64_t>>(
            &detail::repeatInterleave),
        py::arg("input"), py::arg("repeats"), py::arg("dim"));
  m.def(
      "repeat_interleave",
      py::overload_cast<NodePtr, std::vector<int64_t>, std::optional<int64_t>>(
          &detail::repeatInterleave),
      py::arg("input"), py::arg("repeats"), py::arg("dim"));
  m.def("triangle", &detail::triangle, py::arg("input"), py::arg("diagonal"),
        py::arg("lower"));
  m.def("roll", &detail::roll, py::arg("input"), py::arg("shifts"),
        py::arg("dims"));
  m.def(
      "cumsum",
      [](NodePtr a, int64_t dim) {
        return detail::scan(ReduceOp::Sum, std::move(a), dim);
      },
      py::arg("input"), py::arg("dim"));
  m.def(
      "cumprod",
      [](NodePtr a, int64_t dim) {
        return detail::scan(ReduceOp::Prod, std::move(a), dim);
      },
      py::arg("input"), py::arg("dim"));
  m.def("normalize", &detail::normalize, py::arg("input"), py::arg("p"),
        py::arg("dim"), py::arg("eps"));
  m.def(
      "randn",
      py::overload_cast<DType, std::vector<int64_t>, uint64_t>(&detail::randn),
      py::arg("dtype"), py::arg("shape"), py::arg("seed"));
  m.def(
      "complex",
      [](const NodePtr &re, const NodePtr &im) {
        return detail::binary(BinaryOp::Complex, re, im);
      },
      py::arg("real"), py::arg("imag"));
  m.def("dot", &detail::dot, py::arg("input"), py::arg("other"));
  m.def("outer", &detail::outer, py::arg("input"), py::arg("vec2"));
  m.def(
      "where",
      [](const NodePtr &condition, const py::object &a, const py::object &b) {
        NodePtr left, right;
        if (py::isinstance<PyTensor>(a)) {
          left = a.cast<NodePtr>();
          right = operand(left, b);
        } else if (py::isinstance<PyTensor>(b)) {
          right = b.cast<NodePtr>();
          left = operand(right, a);
        } else {
          NodePtr like = detail::scalar(DType::F32, 0.0);
          left = operand(like, a);
          right = operand(like, b);
        }
        return detail::where(condition, left, right);
      },
      py::arg("condition"), py::arg("input"), py::arg("other"),
      "`input` where the bool `condition` holds, else `other` (broadcast; "
      "numbers allowed): a select, as torch.where.");
  m.def("gelu", &detail::gelu, py::arg("input"), py::arg("tanh"));
  m.def("silu", &detail::silu, py::arg("input"));
  m.def("elu", &detail::elu, py::arg("input"), py::arg("alpha"));
  m.def("leaky_relu", &detail::leakyRelu, py::arg("input"),
        py::arg("negative_slope"));
  m.def("softplus", &detail::softplus, py::arg("input"), py::arg("beta"),
        py::arg("threshold"));
  m.def("promote", &harp::promote, py::arg("a"), py::arg("b"),
        "PyTorch's promotion of two dtypes.");
  m.def("set_cpu", &harp::set_cpu, py::arg("name"),
        "Generates code for the CPU `name`: 'native', 'x86-64-v2' (SSE4.2), "
        "'x86-64-v3' (AVX2), 'x86-64-v4' (AVX-512) or an LLVM CPU name; '' "
        "restores the default ($HARP_CPU, else native).");
  m.def("get_cpu", &harp::get_cpu,
        "The CPU code is generated for (see set_cpu).");
  m.def("_set_grad_enabled", &harp::set_grad_enabled, py::arg("mode"),
        "Turns the calling thread's gradient mode on or off (see "
        "harp.no_grad).");
  m.def("is_grad_enabled", &harp::is_grad_enabled,
        "Whether the calling thread builds tensors backward() "
        "differentiates through (torch.is_grad_enabled).");
  m.def(
      "set_options",
      [](const py::object &threads, const py::object &vectorize,
         const py::object &cpu, const py::object &profile) {
        CompileOptions options = optionsOf(threads, vectorize, cpu);
        if (!profile.is_none())
          options.profile = boolOption(profile, "profile");
        harp::set_options(options);
      },
      py::kw_only(), py::arg("threads") = py::none(),
      py::arg("vectorize") = py::none(), py::arg("cpu") = py::none(),
      py::arg("profile") = py::none(),
      "Sets how tensors are compiled from now on: `threads` (run parallel "
      "loops on get_num_threads() OpenMP threads; default: on when it is "
      "above 1), `vectorize` (tile and vectorize kernels), "
      "`cpu` (as set_cpu), `profile` (time every kernel into "
      "harp.profile(); default: whether $HARP_PROFILE is set). Arguments "
      "left out keep their value.");
  m.def(
      "set_num_threads",
      [](const py::object &count) {
        if (!py::isinstance<py::int_>(count))
          throw py::type_error(
              "set_num_threads(): argument 'int' must be int, not " +
              std::string(py::str(count.get_type().attr("__name__"))));
        // Beyond an int either way: harp::set_num_threads's error, with
        // the bound named.
        if (count < py::int_(std::numeric_limits<int>::min()) ||
            count > py::int_(std::numeric_limits<int>::max()))
          throw Error("set_num_threads: the count must be a positive "
                      "integer that fits an int, got " +
                      std::string(py::str(count)));
        harp::set_num_threads(count.cast<int>());
      },
      py::arg("int"),
      "Sets the threads compiled code's parallel loops run on "
      "(torch.set_num_threads); a count above 1 makes later realizations "
      "compile threaded code unless set_options(threads=...) chose. A count "
      "below 1 raises HarpError.");
  m.def("get_num_threads", &harp::get_num_threads,
        "The threads compiled code's parallel loops run on "
        "(torch.get_num_threads): what set_num_threads set, else the first "
        "number of $OMP_NUM_THREADS, else the physical cores this process "
        "may run on.");
  m.def(
      "get_options",
      [] {
        CompileOptions o = harp::get_options();
        py::dict d;
        d["threads"] = *o.threads;
        d["vectorize"] = *o.vectorize;
        d["cpu"] = *o.cpu;
        d["profile"] = *o.profile;
        return d;
      },
      "The compile options in force: {'threads', 'vectorize', 'cpu', "
      "'profile'}.");
  m.def(
      "profile",
      [] {
        py::list rows;
        for (const KernelProfile &k : profileReport()) {
          py::dict d;
          d["kernel"] = k.kernel;
          d["calls"] = k.calls;
          d["seconds"] = k.seconds;
          rows.append(d);
        }
        return rows;
      },
      "The time of every kernel compiled with profiling on (set_options("
      "profile=True) or $HARP_PROFILE) since the start or reset_profile(), "
      "the most first: [{'kernel', 'calls', 'seconds'}]. A kernel is named "
      "by its function and number, op, loop trip counts, buffers written "
      "and source line; '@main (whole call)' is each call of the program "
      "from entry to return.");
  m.def("reset_profile", &resetProfile,
        "Forgets the times harp.profile() reports.");
  m.def(
      "format_profile", [] { return formatProfile(profileReport()); },
      "harp.profile() as the table HARP_PROFILE prints at exit.");
  m.def(
      "realize",
      [](const py::args &tensors, const py::object &threads,
         const py::object &vectorize, const py::object &cpu) {
        std::vector<NodePtr> nodes;
        for (py::handle t : tensors) {
          if (!py::isinstance<PyTensor>(t))
            throw py::type_error(
                "realize: takes harp.Tensor arguments, got " +
                std::string(py::str(py::type::of(t).attr("__name__"))));
          nodes.push_back(t.cast<NodePtr>());
        }
        detail::realizeMany(nodes, optionsOf(threads, vectorize, cpu));
        return tensors;
      },
      py::kw_only(), py::arg("threads") = py::none(),
      py::arg("vectorize") = py::none(), py::arg("cpu") = py::none(),
      "Computes every tensor given in one compiled call (what their graphs "
      "share computed once), as calling realize() on each would; returns "
      "them as a tuple. Keyword arguments override harp.set_options for "
      "this computation.");
  m.def(
      "_export_library",
      [](const std::vector<NodePtr> &outputs,
         const std::vector<NodePtr> &inputs, const std::string &path,
         const std::string &name, const std::string &header,
         const std::string &prefix, const std::string &linker,
         const py::object &threads, const py::object &vectorize,
         const py::object &cpu, const std::vector<int64_t> &gradients) {
        ExportOptions exportOptions;
        exportOptions.headerPath = header;
        exportOptions.prefix = prefix;
        exportOptions.linker = linker;
        CompileOptions options = optionsOf(threads, vectorize, cpu);
        options.profile = false;
        py::gil_scoped_release release;
        detail::exportGraphLibrary(outputs, inputs, path, name, exportOptions,
                                   options, gradients);
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("path"), py::arg("name"),
      py::arg("header"), py::arg("prefix"), py::arg("linker"),
      py::arg("threads"), py::arg("vectorize"), py::arg("cpu"),
      py::arg("gradients"), "harp.export's compile (harp/Runtime/Export.h).");
  m.def(
      "_cuda_memory_stats",
      [] {
        cuda::MemoryStats stats = cuda::memoryStats();
        py::dict d;
        d["allocated_bytes"] = stats.allocated;
        d["peak_allocated_bytes"] = stats.peakAllocated;
        d["reserved_bytes"] = stats.reserved;
        d["device_allocations"] = stats.deviceAllocations;
        d["device_frees"] = stats.deviceFrees;
        return d;
      },
      "harp.cuda.memory_stats()'s numbers.");
  m.def("_cuda_reset_peak_memory", [] { cuda::resetPeakMemory(); });
  m.def("_cuda_empty_cache", [] {
    if (llvm::Error err = cuda::emptyCache())
      throw Error("harp.cuda.empty_cache: " + llvm::toString(std::move(err)));
  });
  m.def("_cuda_synchronize", [] {
    if (llvm::Error err = cuda::synchronize())
      throw Error("harp.cuda.synchronize: " + llvm::toString(std::move(err)));
  });
  m.def("_cuda_is_available", [] {
    if (llvm::Error err = cuda::initialize()) {
      llvm::consumeError(std::move(err));
      return false;
    }
    return true;
  });
  m.def(
      "compile_stats",
      [] {
        detail::CompileCounts c = detail::compileCounts();
        py::dict d;
        d["compiles"] = c.compilations;
        d["memory_hits"] = c.memoryHits;
        d["disk_hits"] = c.diskHits;
        d["ir_parses"] = detail::irParseCount();
        CompileTimes t = Jit::compileTimes();
        d["kernel_functions"] = t.kernelFunctions;
        d["kernels_reused"] = t.reusedKernels;
        d["lower_seconds"] = t.lowerSeconds;
        d["translate_seconds"] = t.translateSeconds;
        d["optimize_seconds"] = t.optimizeSeconds;
        d["codegen_seconds"] = t.codegenSeconds;
        return d;
      },
      "How tensors found their compiled code since the process started: "
      "{'compiles', 'memory_hits', 'disk_hits'}; 'ir_parses', how many "
      "modules the JIT parsed from text (harp.ir.call; tensors never "
      "parse); and what compiling cost, over every compile in the process: "
      "'kernel_functions' (the kernels LLVM compiled), 'kernels_reused' "
      "(kernels found compiled by an earlier module, in memory or on disk: "
      "each distinct kernel is compiled once), 'lower_seconds' (harp's and "
      "MLIR's passes), "
      "'translate_seconds' (to LLVM IR), 'optimize_seconds' (LLVM's "
      "optimizations) and 'codegen_seconds' (machine code).");

  bindIr(m);
  bindNN(m);
  bindOptim(m);
  bindDistributed(m);
  bindGraph(m);
  bindDLPack(m);
  bindSafetensors(m);
}
