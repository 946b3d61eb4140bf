//===- SafeTensors.h - weights in the safetensors format --------*- C++ -*-===//
//
// Named tensors read from and written to safetensors files, the format
// PyTorch, JAX and Hugging Face share for weights: an 8-byte little-endian
// header length N, N bytes of JSON naming each tensor's dtype, shape and byte
// range ("data_offsets", relative to the end of the header) plus an optional
// "__metadata__" object of strings, then the tensors' bytes, row-major and
// little-endian. The dtypes and harp's:
//
//   BOOL bool   U8 u8   I8 i8   U16 u16   I16 i16   U32 u32   I32 i32
//   U64 u64     I64 i64   F32 f32   F64 f64
//
// F16, BF16 and the 8-bit floats have no harp dtype yet and complex tensors no
// safetensors dtype: reading or writing one is an error naming the tensor.
//
// A file is checked whole before anything is made of it: its length, the
// header's JSON and every entry's fields, that each tensor's byte range holds
// exactly its elements and that the ranges tile the data without holes or
// overlaps, as the format requires. An error (harp::Error) names the file and
// the problem; no tensor is returned then. Writing goes to a temporary file
// renamed over `path` at the end, so a failed write leaves no partial file.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_SAFETENSORS_H
#define HARP_API_SAFETENSORS_H

#include "harp/API/Tensor.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace harp {

/// Tensors by name, in a file's order.
using NamedNodes = std::vector<std::pair<std::string, detail::NodePtr>>;
/// A safetensors file's "__metadata__": strings by name.
using SafetensorsMetadata = std::map<std::string, std::string>;

namespace detail {
/// The bytes of a safetensors file holding `tensors` (realized) in the given
/// order, with `metadata` (omitted when empty).
std::string serializeSafetensors(const NamedNodes &tensors,
                                 const SafetensorsMetadata &metadata = {});
/// The tensors of a safetensors file's `bytes`, as new leaves (on the CPU
/// backend), in the order of their data; `what` names the source in errors.
/// The file's metadata goes to `metadata` when given.
NamedNodes parseSafetensors(std::string_view bytes, const std::string &what,
                            SafetensorsMetadata *metadata = nullptr);
/// serializeSafetensors written to `path`.
void saveSafetensors(const std::string &path, const NamedNodes &tensors,
                     const SafetensorsMetadata &metadata = {});
/// parseSafetensors of the file at `path`.
NamedNodes loadSafetensors(const std::string &path,
                           SafetensorsMetadata *metadata = nullptr);
} // namespace detail

/// Writes `tensors` (a module's state_dict(), any named tensors of one
/// element type) to the safetensors file `path`.
template <typename T, typename D>
void save_safetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, Tensor<T, D>>> &tensors,
    const SafetensorsMetadata &metadata = {}) {
  NamedNodes nodes;
  for (const auto &[name, tensor] : tensors)
    nodes.emplace_back(name, tensor.graphNode());
  detail::saveSafetensors(path, nodes, metadata);
}

/// The tensors of the safetensors file `path`, in file order; every one must
/// hold T (an error names the first that does not). The result feeds a
/// module's load_state_dict().
template <typename T>
std::vector<std::pair<std::string, Tensor<T>>>
load_safetensors(const std::string &path,
                 SafetensorsMetadata *metadata = nullptr) {
  NamedNodes nodes = detail::loadSafetensors(path, metadata);
  std::vector<std::pair<std::string, Tensor<T>>> tensors;
  for (auto &[name, node] : nodes) {
    DType held = detail::dtypeOf(node);
    if (held != DTypeTraits<T>::value)
      throw Error("load_safetensors: " + path + ": tensor '" + name +
                  "' holds " + dtypeName(held) + ", not " +
                  dtypeName(DTypeTraits<T>::value));
    tensors.emplace_back(std::move(name), Tensor<T>(std::move(node)));
  }
  return tensors;
}

} // namespace harp

#endif // HARP_API_SAFETENSORS_H
