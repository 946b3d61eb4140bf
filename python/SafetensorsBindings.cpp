//===- SafetensorsBindings.cpp - safetensors files from Python ------------===//
//
// The reader and writer of harp/API/SafeTensors.h for harp.safetensors and
// harp.save / harp.load of ".safetensors" paths (which give them torch's
// signatures): tensors travel as (name, Tensor) lists in file order, the
// metadata as a dict of strings, whole files as bytes.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "harp/API/SafeTensors.h"

using namespace harp;
using namespace harp::python;

namespace {

py::list listOf(const NamedNodes &tensors) {
  py::list result;
  for (const auto &[name, node] : tensors)
    result.append(py::make_tuple(name, PyTensor{node}));
  return result;
}

} // namespace

void harp::python::bindSafetensors(py::module_ &m) {
  m.def(
      "_safetensors_save",
      [](const std::string &path, const NamedNodes &tensors,
         const SafetensorsMetadata &metadata) {
        detail::saveSafetensors(path, tensors, metadata);
      },
      py::arg("path"), py::arg("tensors"), py::arg("metadata"),
      "Writes (name, tensor) pairs and string metadata to a safetensors "
      "file.");
  m.def(
      "_safetensors_serialize",
      [](const NamedNodes &tensors, const SafetensorsMetadata &metadata) {
        return py::bytes(detail::serializeSafetensors(tensors, metadata));
      },
      py::arg("tensors"), py::arg("metadata"),
      "The bytes of a safetensors file holding (name, tensor) pairs.");
  m.def(
      "_safetensors_load",
      [](const std::string &path) {
        SafetensorsMetadata metadata;
        NamedNodes tensors = detail::loadSafetensors(path, &metadata);
        return py::make_tuple(listOf(tensors), py::cast(metadata));
      },
      py::arg("path"),
      "((name, tensor) pairs in file order, metadata) of a safetensors "
      "file.");
  m.def(
      "_safetensors_parse",
      [](const py::bytes &data, const std::string &what) {
        std::string_view bytes = data;
        SafetensorsMetadata metadata;
        NamedNodes tensors = detail::parseSafetensors(bytes, what, &metadata);
        return py::make_tuple(listOf(tensors), py::cast(metadata));
      },
      py::arg("data"), py::arg("what"),
      "_safetensors_load of a file's bytes; `what` names them in errors.");
}
