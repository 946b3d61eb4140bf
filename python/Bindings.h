//===- Bindings.h - shared by the _harp extension's files -------*- C++ -*-===//
//
// The Python-visible tensor, conversions between NumPy and harp, and the
// entry points of the extension's parts: the module's functions
// (HarpModule.cpp), the Tensor class (TensorBindings.cpp) and harp.ir
// (IrBindings.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef HARP_PYTHON_BINDINGS_H
#define HARP_PYTHON_BINDINGS_H

#include "harp/API/Graph.h"

#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

namespace harp::python {

namespace py = pybind11;
using detail::NodePtr;

/// The Python-visible tensor: a handle to a graph node (whose type the
/// public header keeps opaque).
struct PyTensor {
  NodePtr node;
};

DType dtypeOfNumpy(const py::dtype &d);
py::dtype numpyOf(DType d);
/// The NumPy dtype of a JIT result's element kind (integers signed).
py::dtype numpyOfKind(ElementKind kind);
/// A leaf holding a copy of `array`, on `device` (none: follows its users).
NodePtr fromNumpy(py::array array, const std::optional<std::string> &device);
/// A NumPy array over `a`'s buffer (no copy) that keeps the buffer alive.
py::array wrapArray(const Array &a, const py::dtype &dtype);
/// The realized value as a NumPy array sharing harp's buffer.
py::array toNumpy(const NodePtr &node, const CompileOptions &options = {});
/// Keyword options of a realization (None: the process-wide setting).
CompileOptions optionsOf(const py::object &threads, const py::object &vectorize,
                         const py::object &cpu);
/// Operand coercion: tensors, NumPy arrays and Python numbers (0-d
/// arguments of `self`'s dtype, float32 when a float meets integers).
NodePtr operand(const NodePtr &self, const py::object &o);
/// Shape arguments given as `f(3, 4)` or `f([3, 4])` / `f((3, 4))`.
std::vector<int64_t> intsOf(const py::args &args, const char *what);
/// `value` (an int or a sequence of ints) as `count` ints.
std::vector<int64_t> expandInts(const py::object &value, size_t count,
                                const char *what);

void bindTensor(py::module_ &m);
void bindIr(py::module_ &m);
void bindNN(py::module_ &m);
void bindOptim(py::module_ &m);
void bindDistributed(py::module_ &m);
void bindGraph(py::module_ &m);
void bindDLPack(py::module_ &m);
void bindSafetensors(py::module_ &m);

} // namespace harp::python

namespace pybind11::detail {
/// Every NodePtr in a binding's signature travels as a harp.Tensor.
template <>
struct type_caster<harp::detail::NodePtr> {
  PYBIND11_TYPE_CASTER(harp::detail::NodePtr, const_name("Tensor"));
  bool load(handle src, bool) {
    if (!isinstance<harp::python::PyTensor>(src))
      return false;
    value = src.cast<harp::python::PyTensor &>().node;
    return true;
  }
  static handle cast(const harp::detail::NodePtr &node, return_value_policy,
                     handle) {
    if (!node)
      return none().release();
    return pybind11::cast(harp::python::PyTensor{node}).release();
  }
};
} // namespace pybind11::detail

#endif // HARP_PYTHON_BINDINGS_H
