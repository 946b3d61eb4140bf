//===- TensorBindings.cpp - harp.Tensor -----------------------------------===//
//
// The Tensor class as a PyTorch user expects it: operators with NumPy
// broadcasting and PyTorch promotion (Python numbers become arguments of the
// compiled code), methods with keyword arguments and docstrings, shapes as
// `reshape(3, 4)` or `reshape([3, 4])`, indexing with ints, slices, None and
// `...`, 1-D operands of `@`, and realization on demand (`numpy()`,
// `item()`, `np.asarray(t)`).
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <cmath>
#include <cstring>

using namespace harp;
using namespace harp::python;

namespace {

std::vector<int64_t> axesOf(const py::object &axis) {
  if (axis.is_none())
    return {};
  if (py::isinstance<py::int_>(axis))
    return {axis.cast<int64_t>()};
  return axis.cast<std::vector<int64_t>>();
}

/// `axis`, or PyTorch's `dim` when given instead.
py::object axisOrDim(const py::object &axis, const py::object &dim) {
  if (!dim.is_none() && !axis.is_none())
    throw py::type_error("give axis or dim, not both");
  return dim.is_none() ? axis : dim;
}

int64_t normalized(int64_t axis, int64_t rank, const char *op) {
  if (axis < -rank || axis >= rank)
    throw Error(std::string(op) + ": dim " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// The number of elements of `n`.
int64_t numelOf(const NodePtr &n) {
  int64_t count = 1;
  for (int64_t s : detail::shapeOf(n))
    count *= s;
  return count;
}

std::vector<int64_t> shapeVector(const NodePtr &n) {
  const auto &s = detail::shapeOf(n);
  return std::vector<int64_t>(s.begin(), s.end());
}

NodePtr transpose(const NodePtr &n, int64_t a, int64_t b) {
  int64_t rank = detail::shapeOf(n).size();
  if (rank < 2 && a == -2 && b == -1)
    return n; // PyTorch's .T of a vector is the vector
  if (rank == 0) {
    normalized(a, 1, "transpose"); // a 0-d tensor's dim 0 or -1
    normalized(b, 1, "transpose");
    return n;
  }
  a = normalized(a, rank, "transpose");
  b = normalized(b, rank, "transpose");
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i)
    perm[i] = i == a ? b : i == b ? a : i;
  return detail::permute(n, perm);
}

NodePtr squeeze(const NodePtr &n, const py::object &dim) {
  std::vector<int64_t> shape = shapeVector(n), out;
  int64_t rank = shape.size();
  if (dim.is_none()) {
    for (int64_t s : shape)
      if (s != 1)
        out.push_back(s);
    return detail::reshape(n, out);
  }
  if (rank == 0) {
    normalized(dim.cast<int64_t>(), 1, "squeeze"); // dim 0 or -1
    return n;
  }
  int64_t d = normalized(dim.cast<int64_t>(), rank, "squeeze");
  if (shape[d] != 1)
    return n; // PyTorch leaves a dim that is not 1
  shape.erase(shape.begin() + d);
  return detail::reshape(n, shape);
}

NodePtr unsqueeze(const NodePtr &n, int64_t dim) {
  std::vector<int64_t> shape = shapeVector(n);
  int64_t d = normalized(dim, shape.size() + 1, "unsqueeze");
  shape.insert(shape.begin() + d, 1);
  return detail::reshape(n, shape);
}

NodePtr flatten(const NodePtr &n, int64_t start, int64_t end) {
  std::vector<int64_t> shape = shapeVector(n);
  int64_t rank = shape.size();
  if (rank == 0)
    return detail::reshape(n, {1});
  start = normalized(start, rank, "flatten");
  end = normalized(end, rank, "flatten");
  if (start > end)
    throw Error("flatten: start_dim " + std::to_string(start) +
                " comes after end_dim " + std::to_string(end));
  std::vector<int64_t> out(shape.begin(), shape.begin() + start);
  int64_t merged = 1;
  for (int64_t i = start; i <= end; ++i)
    merged *= shape[i];
  out.push_back(merged);
  out.insert(out.end(), shape.begin() + end + 1, shape.end());
  return detail::reshape(n, out);
}

/// NumPy's matmul: a 1-D left operand is a row, a 1-D right operand a
/// column, and the added dim is removed from the result.
NodePtr matmulOf(const NodePtr &a, const NodePtr &b) {
  size_t ra = detail::shapeOf(a).size(), rb = detail::shapeOf(b).size();
  if (ra == 0 || rb == 0)
    throw Error("matmul: operands need at least one dim, got shapes of rank " +
                std::to_string(ra) + " and " + std::to_string(rb));
  if (ra >= 2 && rb >= 2)
    return detail::matmul(a, b);
  NodePtr left = ra == 1 ? unsqueeze(a, 0) : a;
  NodePtr right = rb == 1 ? unsqueeze(b, 1) : b;
  NodePtr product = detail::matmul(left, right);
  std::vector<int64_t> shape = shapeVector(product);
  if (rb == 1)
    shape.pop_back();
  if (ra == 1)
    shape.erase(shape.end() - (rb == 1 ? 1 : 2));
  return detail::reshape(product, shape);
}

/// Tensor.var's arguments: `correction`, else 1 when unbiased, else 0.
NodePtr variance(const NodePtr &a, const py::object &axis, bool unbiased,
                 bool keepdim, const py::object &dim,
                 const py::object &correction) {
  int64_t c =
      correction.is_none() ? (unbiased ? 1 : 0) : correction.cast<int64_t>();
  return detail::var(a, axesOf(axisOrDim(axis, dim)), c, keepdim);
}

/// torch.linalg.vector_norm / Tensor.norm's p: a number, None or "fro"
/// (both 2).
double normOrder(const py::object &p) {
  if (py::isinstance<py::str>(p)) {
    if (p.cast<std::string>() != "fro")
      throw Error("norm: p must be a number or 'fro', got '" +
                  p.cast<std::string>() + "'");
    return 2;
  }
  return p.is_none() ? 2 : p.cast<double>();
}

/// t[key] with ints, slices (any step), None and one Ellipsis.
NodePtr getItem(const NodePtr &t, const py::object &key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>()
                                                   : py::make_tuple(key);
  std::vector<int64_t> shape = shapeVector(t);
  size_t rank = shape.size(), consumed = 0;
  bool ellipsis = false;
  for (py::handle k : items) {
    if (k.is(py::ellipsis())) {
      if (ellipsis)
        throw py::index_error(
            "an index can only have a single ellipsis ('...')");
      ellipsis = true;
    } else if (!k.is_none()) {
      ++consumed;
    }
  }
  if (consumed > rank)
    throw py::index_error("too many indices for a tensor of rank " +
                          std::to_string(rank));
  NodePtr out = t;
  std::vector<int64_t> result; // the shape after dropping and inserting
  size_t dim = 0;
  auto keepRest = [&](size_t until) {
    for (; dim < until; ++dim)
      result.push_back(shape[dim]);
  };
  for (py::handle k : items) {
    if (k.is(py::ellipsis())) {
      keepRest(dim + (rank - consumed));
    } else if (k.is_none()) {
      result.push_back(1);
    } else if (py::isinstance<py::slice>(k)) {
      py::ssize_t start, stop, step, length;
      if (!k.cast<py::slice>().compute(shape[dim], &start, &stop, &step,
                                       &length))
        throw py::error_already_set();
      if (step < 0) {
        out = detail::flip(out, {int64_t(dim)});
        start = shape[dim] - 1 - start;
        step = -step;
      }
      out = detail::slice(out, dim, start, start + length * step, step);
      result.push_back(length);
      ++dim;
    } else if (py::isinstance<py::int_>(k) && !py::isinstance<py::bool_>(k)) {
      int64_t i = k.cast<int64_t>(), size = shape[dim];
      if (i < -size || i >= size)
        throw py::index_error(
            "index " + std::to_string(i) + " is out of range for dim " +
            std::to_string(dim) + " of size " + std::to_string(size));
      i = i < 0 ? i + size : i;
      out = detail::slice(out, dim, i, i + 1, 1);
      ++dim;
    } else {
      throw py::index_error(
          "harp tensors take int, slice, None and ... indices, "
          "not " +
          std::string(py::str(py::type::of(k).attr("__name__"))));
    }
  }
  keepRest(rank);
  if (result != shapeVector(out))
    out = detail::reshape(out, result);
  return out;
}

/// The exponent of `a ** b`. A small integer or half-integer (x ** 2,
/// x ** -0.5) is structural, as PyTorch treats it: a constant of the code,
/// which harp's canonicalization turns into multiplies and square roots.
/// Other numbers are arguments like any number. An integer (or bool)
/// tensor to a Python int is an integer power, as in PyTorch: of the
/// tensor's integer dtype (int64 for bool), and a negative int raises.
NodePtr exponent(const NodePtr &a, const py::object &b) {
  if (!(py::isinstance<py::float_>(b) || py::isinstance<py::int_>(b)) ||
      py::isinstance<py::bool_>(b))
    return operand(a, b);
  DType d = detail::dtypeOf(a);
  bool integral = !isFloat(d) && !isComplex(d);
  if (integral && py::isinstance<py::int_>(b)) {
    int overflow = 0;
    int64_t e = PyLong_AsLongLongAndOverflow(b.ptr(), &overflow);
    if (overflow)
      throw py::value_error("pow: the integer exponent " +
                            std::string(py::str(b)) + " does not fit int64");
    if (e < 0)
      throw py::value_error(
          "pow: an integer tensor (" + std::string(dtypeName(d)) +
          ") to a negative integer power (" + std::to_string(e) +
          ") is not allowed, as in PyTorch; cast it to a "
          "float dtype first");
    if (d == DType::Bool)
      return detail::full(DType::I64, {}, static_cast<double>(e));
    return e <= 4 ? detail::full(d, {}, static_cast<double>(e)) : operand(a, b);
  }
  double e = b.cast<double>();
  if (std::abs(e) <= 4 && e * 2 == std::floor(e * 2))
    return detail::full(integral ? DType::F32 : d, {}, e);
  return operand(a, b);
}

std::string reprOf(const NodePtr &n) {
  std::string shape = py::str(py::tuple(py::cast(shapeVector(n))));
  std::string head = "harp.Tensor(";
  std::string tail =
      ", dtype=harp." +
      std::string(py::str(py::cast(detail::dtypeOf(n)).attr("name"))) +
      ", device='" + detail::backendOf(n)->name() + "'";
  if (detail::requiresGrad(n))
    tail += ", requires_grad=True";
  if (!detail::hasValue(n))
    return head + "shape=" + shape + tail + ", not computed yet)";
  py::array values = toNumpy(n);
  return head + std::string(py::repr(values)) + tail + ")";
}

const char *unaryDoc(UnaryOp op) {
  switch (op) {
  case UnaryOp::Recip:
    return "1 / x, element-wise (float tensors).";
  case UnaryOp::Sigmoid:
    return "1 / (1 + exp(-x)), element-wise (float tensors).";
  case UnaryOp::Relu:
    return "max(x, 0), element-wise.";
  case UnaryOp::Abs:
    return "|x|, element-wise (the modulus, a float, for complex x).";
  case UnaryOp::Floor:
    return "The largest integer not above x, element-wise (float tensors).";
  case UnaryOp::Ceil:
    return "The smallest integer not below x, element-wise (float tensors).";
  case UnaryOp::Round:
    return "x rounded to the nearest integer, halves to even (float tensors).";
  case UnaryOp::Trunc:
    return "x rounded toward zero (float tensors).";
  case UnaryOp::Sign:
    return "1, -1 or 0 by the sign of x (NaN stays NaN); a zero gradient.";
  case UnaryOp::Square:
    return "x * x, element-wise.";
  case UnaryOp::Erfc:
    return "1 - erf(x), accurate where erf(x) is near 1 (float tensors).";
  case UnaryOp::IsNan:
    return "Where x is NaN (a bool tensor; false for integers).";
  case UnaryOp::IsInf:
    return "Where x is +inf or -inf (a bool tensor; false for integers).";
  case UnaryOp::Rsqrt:
    return "1 / sqrt(x), element-wise (float tensors).";
  case UnaryOp::Log1p:
    return "log(1 + x), accurate near 0 (float tensors).";
  case UnaryOp::Expm1:
    return "exp(x) - 1, accurate near 0 (float tensors).";
  default:
    return "The function of the same name, element-wise (float tensors).";
  }
}

} // namespace

void harp::python::bindTensor(py::module_ &m) {
  py::class_<PyTensor> t(m, "Tensor", R"(A lazy tensor: a handle to a node of
harp's graph. Operations build harp IR; numpy(), item() or backward() compile
it (once per graph structure) and run it.)");

  auto bin = [](BinaryOp op) {
    return [op](const NodePtr &a, const py::object &b) {
      return detail::binary(op, a, operand(a, b));
    };
  };
  auto compare = [](BinaryOp op) {
    return [op](const NodePtr &a, const py::object &b) -> py::object {
      static py::handle numpyScalar = // kept for the process
          py::object(py::module_::import("numpy").attr("generic")).release();
      if (!py::isinstance<PyTensor>(b) && !py::isinstance<py::array>(b) &&
          !py::isinstance<py::float_>(b) && !py::isinstance<py::int_>(b) &&
          !PyComplex_Check(b.ptr()) && !py::isinstance(b, numpyScalar))
        return py::reinterpret_borrow<py::object>(Py_NotImplemented);
      return py::cast(detail::binary(op, a, operand(a, b)));
    };
  };
  auto rbin = [](BinaryOp op) {
    return [op](const NodePtr &a, const py::object &b) {
      return detail::binary(op, operand(a, b), a);
    };
  };
  // Properties.
  t.def_property_readonly(
       "shape",
       [](const NodePtr &n) { return py::tuple(py::cast(shapeVector(n))); },
       "The shape, a tuple of ints.")
      .def_property_readonly("dtype", &detail::dtypeOf, "The element type.")
      .def_property_readonly(
          "ndim", [](const NodePtr &n) { return detail::shapeOf(n).size(); },
          "The number of dims.")
      .def_property_readonly(
          "device",
          [](const NodePtr &n) { return detail::backendOf(n)->name(); },
          "Where the tensor is computed: 'cpu' or 'cuda'.")
      .def(
          "size",
          [](const NodePtr &n, const py::object &dim) -> py::object {
            std::vector<int64_t> shape = shapeVector(n);
            if (dim.is_none())
              return py::tuple(py::cast(shape));
            return py::cast(
                shape[normalized(dim.cast<int64_t>(), shape.size(), "size")]);
          },
          py::arg("dim") = py::none(),
          "The shape, or the size of dim `dim` (as torch.Tensor.size).")
      .def(
          "dim", [](const NodePtr &n) { return detail::shapeOf(n).size(); },
          "The number of dims.")
      .def("numel", &numelOf, "The number of elements.")
      .def("__len__",
           [](const NodePtr &n) {
             if (detail::shapeOf(n).empty())
               throw py::type_error("len() of a 0-d tensor");
             return detail::shapeOf(n)[0];
           })
      .def("__repr__", &reprOf);
  // NumPy's operators give way to the tensor's reflected ones, so
  // `array @ tensor` and `array + tensor` are tensors, as in PyTorch.
  t.attr("__array_ufunc__") = py::none();

  // Arithmetic: NumPy broadcasting, PyTorch promotion.
  t.def("__add__", bin(BinaryOp::Add))
      .def("__radd__", rbin(BinaryOp::Add))
      .def("__sub__", bin(BinaryOp::Sub))
      .def("__rsub__", rbin(BinaryOp::Sub))
      .def("__mul__", bin(BinaryOp::Mul))
      .def("__rmul__", rbin(BinaryOp::Mul))
      .def("__truediv__", bin(BinaryOp::Div))
      .def("__rtruediv__", rbin(BinaryOp::Div))
      .def("__floordiv__", bin(BinaryOp::FloorDiv))
      .def("__rfloordiv__", rbin(BinaryOp::FloorDiv))
      .def("__mod__", bin(BinaryOp::Mod))
      .def("__rmod__", rbin(BinaryOp::Mod))
      .def("remainder", bin(BinaryOp::Mod), py::arg("other"),
           "Python's %: the remainder with the divisor's sign "
           "(torch.remainder).")
      .def("fmod", bin(BinaryOp::Rem), py::arg("other"),
           "C's fmod: the remainder with the dividend's sign (torch.fmod).")
      .def("__pow__",
           [](const NodePtr &a, const py::object &b) {
             return detail::binary(BinaryOp::Pow, a, exponent(a, b));
           })
      .def("__rpow__", rbin(BinaryOp::Pow))
      .def(
          "pow",
          [](const NodePtr &a, const py::object &b) {
            return detail::binary(BinaryOp::Pow, a, exponent(a, b));
          },
          py::arg("exponent"), "self ** exponent (torch.pow).")
      .def("__lt__", bin(BinaryOp::Lt))
      .def("__le__", bin(BinaryOp::Le))
      .def("__gt__", bin(BinaryOp::Gt))
      .def("__ge__", bin(BinaryOp::Ge))
      .def("eq", bin(BinaryOp::Eq), py::arg("other"),
           "Element-wise ==, a bool tensor (torch.eq).")
      .def("ne", bin(BinaryOp::Ne), py::arg("other"),
           "Element-wise !=, a bool tensor (torch.ne).")
      // == and != are element-wise, as in PyTorch; an operand that is not
      // a tensor, an array or a number (None, a string) gives way to
      // Python's identity comparison. Tensors stay hashable by identity.
      .def("__eq__", compare(BinaryOp::Eq))
      .def("__ne__", compare(BinaryOp::Ne))
      .def("__hash__",
           [](const py::handle &self) {
             return static_cast<py::ssize_t>(
                 std::hash<const void *>()(self.ptr()));
           })
      .def(
          "__bool__",
          [](const NodePtr &n) {
            int64_t count = numelOf(n);
            if (count != 1)
              throw Error(
                  "bool: the truth value of a tensor of " +
                  std::to_string(count) +
                  " elements is ambiguous; use .any() or .all() (shape " +
                  detail::shapeStr(detail::shapeOf(n)) + ")");
            return toNumpy(n).attr("item")().cast<py::object>().attr(
                "__bool__")();
          },
          "The truth value of a one-element tensor.")
      .def("__and__", bin(BinaryOp::BitAnd))
      .def("__rand__", rbin(BinaryOp::BitAnd))
      .def("__or__", bin(BinaryOp::BitOr))
      .def("__ror__", rbin(BinaryOp::BitOr))
      .def("__xor__", bin(BinaryOp::BitXor))
      .def("__rxor__", rbin(BinaryOp::BitXor))
      .def("__lshift__", bin(BinaryOp::Shl))
      .def("__rshift__", bin(BinaryOp::Shr))
      .def("maximum", bin(BinaryOp::Maximum), py::arg("other"),
           "Element-wise maximum (NaN-propagating for floats).")
      .def("minimum", bin(BinaryOp::Minimum), py::arg("other"),
           "Element-wise minimum (NaN-propagating for floats).")
      .def("__neg__",
           [](const NodePtr &a) { return detail::unary(UnaryOp::Neg, a); })
      .def("__invert__",
           [](const NodePtr &a) { return detail::unary(UnaryOp::Not, a); })
      .def("__matmul__",
           [](const NodePtr &a, const py::object &b) {
             return matmulOf(a, operand(a, b));
           })
      .def("__rmatmul__",
           [](const NodePtr &a, const py::object &b) {
             return matmulOf(operand(a, b), a);
           })
      .def(
          "matmul",
          [](const NodePtr &a, const py::object &b) {
            return matmulOf(a, operand(a, b));
          },
          py::arg("other"),
          "Matrix product (NumPy's matmul: batch dims broadcast, 1-D "
          "operands are a row on the left and a column on the right).");

  // Element-wise functions.
  for (int i = 0; i <= static_cast<int>(UnaryOp::IsInf); ++i) {
    auto op = static_cast<UnaryOp>(i);
    if (op == UnaryOp::Neg || op == UnaryOp::Not)
      continue;
    t.def(
        opName(op), [op](const NodePtr &a) { return detail::unary(op, a); },
        unaryDoc(op));
  }
  t.def(
      "reciprocal",
      [](const NodePtr &a) { return detail::unary(UnaryOp::Recip, a); },
      "1 / x, element-wise (torch's name for recip).");
  for (const char *name : {"asin", "arcsin"})
    t.def(name, &detail::asin, "arcsin, element-wise (NaN outside [-1, 1]).");
  for (const char *name : {"acos", "arccos"})
    t.def(name, &detail::acos, "arccos, element-wise (NaN outside [-1, 1]).");
  for (const char *name : {"atan2", "arctan2"})
    t.def(
        name,
        [](const NodePtr &y, const py::object &x) {
          return detail::atan2(y, operand(y, x));
        },
        py::arg("other"),
        "The angle of the point (other, self) in (-pi, pi], element-wise "
        "with broadcasting (torch.atan2(self, other)).");
  t.def("frac", &detail::frac,
        "x - trunc(x): the fractional part, with x's sign.");
  t.def(
       "clamp",
       [](const NodePtr &x, std::optional<double> min,
          std::optional<double> max) { return detail::clamp(x, min, max); },
       py::arg("min") = py::none(), py::arg("max") = py::none(),
       "x limited to [min, max] (either may be None); the gradient is 1 "
       "inside and at the bounds.")
      .def(
          "clip",
          [](const NodePtr &x, std::optional<double> min,
             std::optional<double> max) { return detail::clamp(x, min, max); },
          py::arg("min") = py::none(), py::arg("max") = py::none(),
          "The same as clamp.")
      .def(
          "masked_fill",
          [](const NodePtr &x, const NodePtr &mask, const py::object &value) {
            return detail::where(mask, operand(x, value), x);
          },
          py::arg("mask"), py::arg("value"),
          "`value` where the bool `mask` holds (broadcast), else x: a select, "
          "so an infinite value is fine.");
  // Complex numbers (torch's names: real and imag are properties).
  t.def_property_readonly(
       "real", [](const NodePtr &a) { return detail::unary(UnaryOp::Real, a); },
       "The real part (the tensor itself for a real tensor).")
      .def_property_readonly(
          "imag",
          [](const NodePtr &a) { return detail::unary(UnaryOp::Imag, a); },
          "The imaginary part (complex tensors only).")
      .def(
          "conj",
          [](const NodePtr &a) { return detail::unary(UnaryOp::Conj, a); },
          "The complex conjugate (the tensor itself for a real tensor).")
      .def(
          "angle",
          [](const NodePtr &a) { return detail::unary(UnaryOp::Angle, a); },
          "The argument atan2(imag, real), element-wise: pi for negative "
          "reals, else 0 (a float result).")
      .def(
          "is_complex",
          [](const NodePtr &a) { return isComplex(detail::dtypeOf(a)); },
          "Whether the dtype is complex64 or complex128.")
      .def(
          "is_floating_point",
          [](const NodePtr &a) { return isFloat(detail::dtypeOf(a)); },
          "Whether the dtype is float32 or float64.");
  t.def(
      "unary",
      [](const NodePtr &a, const std::string &op) {
        std::optional<UnaryOp> unary = unaryOpNamed(op);
        if (!unary)
          throw Error("unary: unknown op '" + op + "'");
        return detail::unary(*unary, a);
      },
      py::arg("op"), "The element-wise function named `op` ('exp', ...).");

  // Reductions.
  for (int i = 0; i <= static_cast<int>(ReduceOp::Mean); ++i) {
    auto kind = static_cast<ReduceOp>(i);
    if (kind == ReduceOp::Max || kind == ReduceOp::Min)
      continue; // below, in torch's forms
    t.def(
        opName(kind),
        [kind](const NodePtr &a, const py::object &axis, bool keepdim,
               const py::object &dim) {
          return detail::reduce(kind, a, axesOf(axisOrDim(axis, dim)), keepdim);
        },
        py::arg("axis") = py::none(), py::arg("keepdim") = false, py::kw_only(),
        py::arg("dim") = py::none(),
        (std::string("The ") + opName(kind) +
         " over `axis` (an int or a list; None: all dims; `dim` is "
         "PyTorch's name for it), keeping reduced dims as size 1 with "
         "`keepdim`.")
            .c_str());
  }
  // max and min in torch's forms: of everything; with a dim, the values and
  // their indices (a named pair, as torch.return_types.max); with another
  // tensor, element-wise; with NumPy's `axis=`, the values alone.
  for (bool isMax : {true, false}) {
    const char *name = isMax ? "max" : "min";
    // Kept for the process, as the type objects of torch.return_types.
    py::handle pair =
        py::module_::import("collections")
            .attr("namedtuple")(name, py::make_tuple("values", "indices"))
            .release();
    pair.attr("__module__") = "harp.return_types";
    t.def(
        name,
        [isMax, pair](const NodePtr &a, const py::object &d, bool keepdim,
                      const py::object &axis) -> py::object {
          ReduceOp kind = isMax ? ReduceOp::Max : ReduceOp::Min;
          const char *op = isMax ? "max" : "min";
          if (py::isinstance<PyTensor>(d)) {
            if (!axis.is_none())
              throw py::type_error(std::string(op) +
                                   ": takes another tensor or a dim, not both");
            return py::cast(
                detail::binary(isMax ? BinaryOp::Maximum : BinaryOp::Minimum, a,
                               d.cast<NodePtr>()));
          }
          if (!axis.is_none()) {
            if (!d.is_none())
              throw py::type_error(std::string(op) +
                                   ": give axis or dim, not both");
            return py::cast(detail::reduce(kind, a, axesOf(axis), keepdim));
          }
          if (d.is_none()) // of everything (keepdim: as NumPy's keepdims)
            return py::cast(detail::reduce(kind, a, {}, keepdim));
          if (!py::isinstance<py::int_>(d))
            throw py::type_error(std::string(op) +
                                 ": dim must be an int (a tuple of dims is "
                                 "amax/amin's), got " +
                                 std::string(py::repr(d)));
          int64_t axisIndex = d.cast<int64_t>();
          return pair(detail::reduce(kind, a, {axisIndex}, keepdim),
                      detail::argExtreme(a, axisIndex, keepdim, isMax));
        },
        py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(),
        py::arg("axis") = py::none(),
        (std::string("torch.") + name +
         ": of every element; max(dim, keepdim=False) gives (values, "
         "indices) along dim; max(other) is element-wise; axis= (NumPy's "
         "name, an int or a tuple) gives the values alone.")
            .c_str());
  }
  t.def(
       "logsumexp",
       [](const NodePtr &a, const py::object &axis, bool keepdim,
          const py::object &dim) {
         return detail::logsumexp(a, axesOf(axisOrDim(axis, dim)), keepdim);
       },
       py::arg("axis") = py::none(), py::arg("keepdim") = false, py::kw_only(),
       py::arg("dim") = py::none(),
       "log(sum(exp(x))) over `axis` (None: all), computed around the "
       "maximum.")
      .def(
          "log_softmax",
          [](const NodePtr &a, const py::object &axis, const py::object &dim) {
            py::object d = axisOrDim(axis, dim);
            return detail::logSoftmax(a, d.is_none() ? -1 : d.cast<int64_t>());
          },
          py::arg("axis") = py::none(), py::kw_only(),
          py::arg("dim") = py::none(),
          "x - logsumexp(x) along `axis` (default the last).")
      .def("var", &variance, py::arg("axis") = py::none(),
           py::arg("unbiased") = true, py::arg("keepdim") = false,
           py::kw_only(), py::arg("dim") = py::none(),
           py::arg("correction") = py::none(),
           "The variance over `axis` (None: all), divided by n - 1 "
           "(unbiased) or n; `correction` sets the subtrahend.")
      .def(
          "std",
          [](const NodePtr &a, const py::object &axis, bool unbiased,
             bool keepdim, const py::object &dim,
             const py::object &correction) {
            return detail::sqrtOfVariance(
                variance(a, axis, unbiased, keepdim, dim, correction));
          },
          py::arg("axis") = py::none(), py::arg("unbiased") = true,
          py::arg("keepdim") = false, py::kw_only(),
          py::arg("dim") = py::none(), py::arg("correction") = py::none(),
          "The square root of var().");
  t.def(
      "norm",
      [](const NodePtr &x, const py::object &p, const py::object &dim,
         bool keepdim) {
        return detail::norm(x, normOrder(p), axesOf(dim), keepdim);
      },
      py::arg("p") = py::none(), py::arg("dim") = py::none(),
      py::arg("keepdim") = false,
      "The vector p-norm over `dim` (None: all elements): p = 2 or 'fro' "
      "(default), 1, inf, -inf, 0 (non-zeros) or any positive number.");
  for (bool max : {true, false})
    t.def(
        max ? "argmax" : "argmin",
        [max](const NodePtr &a, const py::object &axis, bool keepdim,
              const py::object &dim) {
          py::object d = axisOrDim(axis, dim);
          if (d.is_none()) // over all elements, as PyTorch
            return detail::argExtreme(detail::reshape(a, {-1}), 0, false, max);
          return detail::argExtreme(a, d.cast<int64_t>(), keepdim, max);
        },
        py::arg("axis") = py::none(), py::arg("keepdim") = false, py::kw_only(),
        py::arg("dim") = py::none(),
        max ? "The index (int64) of the first maximum along `axis` (None: of "
              "the flattened tensor); NaN counts as the maximum."
            : "The index (int64) of the first minimum along `axis` (None: of "
              "the flattened tensor); NaN counts as the minimum.");
  t.def(
       "reduce",
       [](const NodePtr &a, const std::string &kind, const py::object &axis,
          bool keepdim) {
         std::optional<ReduceOp> reduce = reduceOpNamed(kind);
         if (!reduce)
           throw Error("unknown reduction '" + kind + "'");
         return detail::reduce(*reduce, a, axesOf(axis), keepdim);
       },
       py::arg("kind"), py::arg("axis") = py::none(),
       py::arg("keepdim") = false,
       "The reduction named `kind` ('sum', 'prod', 'max', 'min', 'mean').")
      .def(
          "softmax",
          [](const NodePtr &a, const py::object &axis, const py::object &dim) {
            py::object d = axisOrDim(axis, dim);
            return detail::softmax(a, d.is_none() ? -1 : d.cast<int64_t>());
          },
          py::arg("axis") = py::none(), py::kw_only(),
          py::arg("dim") = py::none(),
          "exp(x - max) / sum(exp(x - max)) along `axis` (default the last).");

  // Types and devices.
  t.def("astype", &detail::cast, py::arg("dtype"),
        "The values converted to `dtype` (a new tensor).")
      .def("cast", &detail::cast, py::arg("dtype"), "The same as astype.")
      .def(
          "to",
          [](const NodePtr &n, const py::args &args, const py::kwargs &kwargs) {
            // As torch.Tensor.to: to(device), to(dtype), to(device, dtype),
            // and the keywords device= and dtype=.
            std::optional<DType> dtype;
            std::optional<std::string> device;
            auto take = [&](const py::handle &value, const char *keyword) {
              if (py::isinstance<DType>(value) &&
                  (!keyword || std::string(keyword) == "dtype") && !dtype)
                dtype = value.cast<DType>();
              else if (py::isinstance<py::str>(value) &&
                       (!keyword || std::string(keyword) == "device") &&
                       !device)
                device = value.cast<std::string>();
              else
                throw py::type_error(
                    "Tensor.to: takes a device ('cpu' or 'cuda') and a "
                    "dtype (harp.float32, ...), each at most once; got " +
                    std::string(py::repr(value)) +
                    (keyword ? std::string(" for ") + keyword : ""));
            };
            // Positionally, torch's (device, dtype, non_blocking, copy) or
            // (other, non_blocking, copy): the flags mean nothing here.
            size_t given = 0;
            for (const py::handle &arg : args) {
              if (py::isinstance<py::bool_>(arg))
                continue;
              if (++given > 2)
                throw py::type_error("Tensor.to: at most a device and a dtype");
              if (py::isinstance<PyTensor>(arg)) {
                NodePtr other = arg.cast<PyTensor &>().node;
                take(py::cast(detail::dtypeOf(other)), nullptr);
                take(py::str(detail::backendOf(other)->name()), nullptr);
                continue;
              }
              take(arg, nullptr);
            }
            for (auto [key, value] : kwargs) {
              std::string name = key.cast<std::string>();
              // torch's keywords without a meaning here: one memory layout,
              // synchronous copies, and a new node is a copy already.
              if (name == "memory_format" || name == "non_blocking" ||
                  name == "copy")
                continue;
              if (name != "device" && name != "dtype")
                throw py::type_error("Tensor.to: unexpected keyword " + name);
              if (!value.is_none())
                take(value, name == "device" ? "device" : "dtype");
            }
            NodePtr result = n;
            if (dtype && *dtype != detail::dtypeOf(result))
              result = detail::cast(result, *dtype);
            if (device)
              result = detail::to(result, backend::get(*device));
            return result;
          },
          "The value converted to `dtype` and/or on `device` ('cpu' or "
          "'cuda'; moved, it is cut from the graph), as torch.Tensor.to: "
          "to(device), to(dtype), to(device, dtype), to(other) (other's dtype "
          "and device); itself when nothing changes. memory_format, "
          "non_blocking and copy are accepted and ignored.")
      .def(
          "float", [](const NodePtr &n) { return detail::cast(n, DType::F32); },
          "astype(harp.float32), as torch.Tensor.float.")
      .def(
          "double",
          [](const NodePtr &n) { return detail::cast(n, DType::F64); },
          "astype(harp.float64), as torch.Tensor.double.")
      .def(
          "int", [](const NodePtr &n) { return detail::cast(n, DType::I32); },
          "astype(harp.int32), as torch.Tensor.int.")
      .def(
          "long", [](const NodePtr &n) { return detail::cast(n, DType::I64); },
          "astype(harp.int64), as torch.Tensor.long.")
      .def(
          "bool", [](const NodePtr &n) { return detail::cast(n, DType::Bool); },
          "astype(harp.bool_), as torch.Tensor.bool.");

  // Shapes and views (zero-copy).
  t.def(
       "reshape",
       [](const NodePtr &n, const py::args &shape) {
         return detail::reshape(n, intsOf(shape, "reshape"));
       },
       "The same elements in row-major order as `shape` (given as "
       "reshape(2, 3) or reshape([2, 3]); one -1 is inferred).")
      .def(
          "view",
          [](const NodePtr &n, const py::args &shape) {
            return detail::reshape(n, intsOf(shape, "view"));
          },
          "The same as reshape: harp's reshapes are always views.")
      .def(
          "permute",
          [](const NodePtr &n, const py::args &dims) {
            return detail::permute(n, intsOf(dims, "permute"));
          },
          "The dims reordered: result dim i is dim dims[i].")
      .def(
          "expand",
          [](const NodePtr &n, const py::args &sizes) {
            return detail::expand(n, intsOf(sizes, "expand"));
          },
          "Size-1 dims broadcast to `sizes` (-1 keeps a dim).")
      .def("transpose", &transpose, py::arg("dim0") = -2, py::arg("dim1") = -1,
           "Dims dim0 and dim1 swapped.")
      .def_property_readonly(
          "T", [](const NodePtr &n) { return transpose(n, -2, -1); },
          "The last two dims swapped (a vector is returned unchanged).")
      .def("squeeze", &squeeze, py::arg("dim") = py::none(),
           "Without `dim`, every size-1 dim removed; with it, that dim if "
           "its size is 1.")
      .def("unsqueeze", &unsqueeze, py::arg("dim"),
           "A size-1 dim inserted at `dim`.")
      .def("flatten", &flatten, py::arg("start_dim") = 0,
           py::arg("end_dim") = -1, "Dims start_dim..end_dim merged into one.")
      .def("slice", &detail::slice, py::arg("dim"), py::arg("start"),
           py::arg("stop"), py::arg("step") = 1,
           "Elements start, start + step, ... before stop along `dim`.")
      .def(
          "flip",
          [](const NodePtr &n, const py::args &dims) {
            return detail::flip(n, intsOf(dims, "flip"));
          },
          "The order of the given dims reversed.")
      .def("pad", &detail::pad, py::arg("before"), py::arg("after"),
           py::arg("value") = 0.0,
           "before[i] and after[i] elements of `value` around dim i.")
      .def("contiguous", &detail::contiguous,
           "The value computed into its own buffer (fusion stops here).")
      .def("__getitem__", &getItem)
      .def(
          "_rebind",
          [](PyTensor &self, const NodePtr &value) { self.node = value; },
          py::arg("value"),
          "Makes this tensor object stand for `value` (a computed tensor's "
          "in-place write, __setitem__: computed tensors have no storage of "
          "their own to write).");

  // Computing.
  t.def(
       "numpy",
       [](const NodePtr &n, const py::object &threads,
          const py::object &vectorize, const py::object &cpu) {
         return toNumpy(n, optionsOf(threads, vectorize, cpu));
       },
       py::kw_only(), py::arg("threads") = py::none(),
       py::arg("vectorize") = py::none(), py::arg("cpu") = py::none(),
       "The value as a NumPy array (computed once). Keyword arguments "
       "override harp.set_options for this computation.")
      .def(
          "realize",
          [](const NodePtr &n, const py::object &threads,
             const py::object &vectorize, const py::object &cpu) {
            detail::realize(n, optionsOf(threads, vectorize, cpu));
            return n;
          },
          py::kw_only(), py::arg("threads") = py::none(),
          py::arg("vectorize") = py::none(), py::arg("cpu") = py::none(),
          "Computes the value now; returns the tensor.")
      .def(
          "item",
          [](const NodePtr &n) -> py::object {
            py::array a = toNumpy(n);
            if (a.size() != 1)
              throw Error("item: the tensor has " + std::to_string(a.size()) +
                          " elements, not 1");
            return a.attr("item")();
          },
          "The single value as a Python number.")
      .def(
          "tolist",
          [](const NodePtr &n) { return toNumpy(n).attr("tolist")(); },
          "The values as nested Python lists.")
      .def(
          "__array__",
          [](const NodePtr &n, const py::object &dtype,
             const py::object &copy) -> py::object {
            py::array a = toNumpy(n);
            return dtype.is_none() ? py::object(a) : a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("mlir", &detail::moduleText, py::arg("debug_info") = false,
           "The harp IR realize() compiles; with debug_info, each op's "
           "location (the Python file and line that built it).");

  // Autograd.
  // Tensor.backward and harp.autograd.grad are written in Python
  // (harp/autograd.py) over these two.
  m.def(
      "_backward",
      [](const NodePtr &loss, const std::optional<std::vector<NodePtr>> &inputs,
         bool createGraph, const py::object &threads,
         const py::object &vectorize, const py::object &cpu) {
        detail::backward(loss, optionsOf(threads, vectorize, cpu),
                         inputs ? &*inputs : nullptr, createGraph);
      },
      py::arg("loss"), py::arg("inputs") = py::none(),
      py::arg("create_graph") = false, py::kw_only(),
      py::arg("threads") = py::none(), py::arg("vectorize") = py::none(),
      py::arg("cpu") = py::none(),
      "Accumulates d(loss)/d(leaf) into .grad of every leaf that requires "
      "a gradient, or of `inputs` only (loss: a 0-d float tensor).");
  m.def(
      "_gradients",
      [](const NodePtr &loss, const std::vector<NodePtr> &inputs,
         bool createGraph, const py::object &threads,
         const py::object &vectorize, const py::object &cpu) {
        std::vector<NodePtr> found = detail::gradients(
            loss, inputs, optionsOf(threads, vectorize, cpu), createGraph);
        py::list result;
        for (const NodePtr &g : found)
          result.append(g ? py::cast(g) : py::none());
        return result;
      },
      py::arg("loss"), py::arg("inputs"), py::arg("create_graph") = false,
      py::kw_only(), py::arg("threads") = py::none(),
      py::arg("vectorize") = py::none(), py::arg("cpu") = py::none(),
      "d(loss)/d(input) for each input, None where the loss does not "
      "depend on it; no .grad changes. With create_graph the gradients are "
      "computed tensors (differentiable again), not values.");
  t.def_property_readonly(
       "is_leaf", &detail::isLeaf,
       "Whether the tensor holds values of its own (from data, "
       "from_numpy, detach, a parameter) rather than being computed "
       "from others; only leaves are written in place (copy_).")
      .def_property("requires_grad", &detail::requiresGrad,
                    &detail::setRequiresGrad,
                    "Whether backward() accumulates a gradient here (float "
                    "leaves only).")
      .def(
          "requires_grad_",
          [](const NodePtr &n, bool value) {
            detail::setRequiresGrad(n, value);
            return n;
          },
          py::arg("requires_grad") = true,
          "Sets requires_grad in place and returns the tensor.")
      .def_property(
          "grad",
          [](const NodePtr &n) -> py::object {
            NodePtr g = detail::grad(n);
            return g ? py::cast(g) : py::none();
          },
          [](const NodePtr &n, const py::object &value) {
            // torch's `p.grad = None` (zero_grad(set_to_none=True)) and
            // `p.grad = t`: the next backward() starts from nothing / t.
            if (value.is_none()) {
              detail::zeroGrad(n);
              return;
            }
            if (!py::isinstance<PyTensor>(value))
              throw py::type_error(
                  "grad: takes a harp.Tensor or None, got " +
                  std::string(py::str(py::type::of(value).attr("__name__"))));
            const Array &a = detail::realize(value.cast<NodePtr>());
            Array copy = Array::uninitialized(a.type());
            std::memcpy(copy.data(), a.data(), a.byteSize());
            detail::setGradientArray(n, std::move(copy));
          },
          "The accumulated gradient, or None; assigning None forgets it, "
          "assigning a tensor (the leaf's dtype and shape) replaces it.")
      .def("zero_grad", &detail::zeroGrad, "Forgets the accumulated gradient.")
      .def("detach", &detail::detach,
           "The value as a new leaf, cut from the graph.")
      .def(
          "copy_",
          [](const NodePtr &dst, const py::object &src) {
            // Computed first (it may read dst), then written into dst.
            NodePtr value = detail::expand(
                detail::cast(operand(dst, src), detail::dtypeOf(dst)),
                shapeVector(dst));
            if (shapeVector(value) != shapeVector(dst))
              throw Error("copy_: cannot broadcast to the destination");
            // A computed value is written later, with the other deferred
            // writes (an optimizer's updates of every parameter: one
            // compiled call), before anything reads dst.
            if (!detail::isLeaf(value) && detail::isLeaf(dst)) {
              detail::deferOverwrite(dst, value);
              return dst;
            }
            const Array &data = detail::realize(value);
            detail::overwrite(dst, data.data());
            return dst;
          },
          py::arg("src"),
          "Writes `src` (a tensor, array or number, broadcast and cast to "
          "this tensor's shape and dtype) into this leaf in place, as an "
          "optimizer step does (torch.Tensor.copy_): tensors computed from it "
          "before keep the values they were computed from; tensors built on "
          "it afterwards see the new values. Returns the tensor.");

  // Shape and data-movement methods whose PyTorch argument forms are parsed
  // in Python (harp/_ops.py, also exported as functions, over the C++
  // composites): the method forwards to the function of the same name, with
  // the tensor first.
  struct Composed {
    const char *name, *doc;
  };
  for (Composed op : std::initializer_list<Composed>{
           {"broadcast_to", "The tensor broadcast to `shape` (NumPy's rules)."},
           {"chunk", "split() into `chunks` pieces along `dim`."},
           {"cumprod", "Running products along `dim` (a parallel scan)."},
           {"cumsum", "Running sums along `dim` (a parallel scan)."},
           {"index_select", "The entries at the 1-D `index` along `dim`."},
           {"repeat", "The tensor tiled sizes[i] times along dim i."},
           {"repeat_interleave",
            "Each element repeated `repeats` times along `dim`."},
           {"roll", "Elements shifted cyclically by `shifts` along `dims`."},
           {"split", "Views of consecutive pieces along `dim`."},
           {"take_along_dim", "gather() with broadcasting along `dim`."},
           {"tril", "The lower triangle of the last two dims."},
           {"triu", "The upper triangle of the last two dims."},
           {"unbind", "The slices along `dim`, that dim removed."}}) {
    std::string name = op.name;
    t.def(
        op.name,
        [name](const py::object &self, const py::args &args,
               const py::kwargs &kwargs) {
          py::object fn = py::module_::import("harp._ops").attr(name.c_str());
          return fn(self, *args, **kwargs);
        },
        op.doc);
  }
}
