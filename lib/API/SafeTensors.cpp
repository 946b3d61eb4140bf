//===- SafeTensors.cpp - weights in the safetensors format ----------------===//
//
// The format's reader and writer (see SafeTensors.h). The JSON header is
// parsed and written with nlohmann::json; every field is checked for its
// type before it is read, so that a malformed file gives an error naming the
// field rather than a JSON library exception.
//
//===----------------------------------------------------------------------===//

#include "harp/API/SafeTensors.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

using namespace harp;
using Json = nlohmann::ordered_json;

namespace {

/// The format's dtypes harp holds, by name.
constexpr std::pair<const char *, DType> kFormatDtypes[] = {
    {"BOOL", DType::Bool}, {"I8", DType::I8},   {"I16", DType::I16},
    {"I32", DType::I32},   {"I64", DType::I64}, {"U8", DType::U8},
    {"U16", DType::U16},   {"U32", DType::U32}, {"U64", DType::U64},
    {"F32", DType::F32},   {"F64", DType::F64}};

/// The format's name of a harp dtype, or null for one it cannot hold.
const char *formatDtypeOf(DType dtype) {
  for (const auto &[spelling, held] : kFormatDtypes)
    if (held == dtype)
      return spelling;
  return nullptr;
}

[[noreturn]] void fail(const std::string &what, const std::string &problem) {
  throw Error("safetensors: " + what + ": " + problem);
}

/// The harp dtype of a format dtype name; an error for the format's dtypes
/// harp has no tensors of and for names the format does not have.
DType dtypeOfFormat(const std::string &name, const std::string &what,
                    const std::string &where) {
  for (const auto &[spelling, dtype] : kFormatDtypes)
    if (name == spelling)
      return dtype;
  static const char *unsupported[] = {"F16",     "BF16",    "F8_E4M3",
                                      "F8_E5M2", "F8_E8M0", "F6_E2M3",
                                      "F6_E3M2", "F4",      "C64"};
  for (const char *spelling : unsupported)
    if (name == spelling)
      fail(what, where + " is " + name +
                     ", which harp tensors cannot hold yet (they hold BOOL, "
                     "I8..I64, U8..U64, F32 and F64)");
  fail(what,
       where + " has dtype \"" + name + "\", which is not a safetensors dtype");
}

/// The format requires the header be at most 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// One entry of a header, checked.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

/// A JSON value as a nonnegative integer, or an error naming `field`.
uint64_t unsignedOf(const Json &value, const std::string &what,
                    const std::string &field) {
  if (!value.is_number_unsigned() &&
      !(value.is_number_integer() && value.get<int64_t>() >= 0))
    fail(what, field + " must hold nonnegative integers, got " + value.dump());
  return value.get<uint64_t>();
}

Entry entryOf(const std::string &name, const Json &value,
              const std::string &what) {
  std::string where = "tensor '" + name + "'";
  if (!value.is_object())
    fail(what, where + " must be a JSON object, got " + value.dump());
  for (const char *field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field))
      fail(what, where + " has no \"" + field + "\"");
  Entry entry;
  entry.name = name;
  const Json &dtype = value["dtype"];
  if (!dtype.is_string())
    fail(what, where + ": \"dtype\" must be a string, got " + dtype.dump());
  entry.dtype = dtypeOfFormat(dtype.get<std::string>(), what, where);
  const Json &shape = value["shape"];
  if (!shape.is_array())
    fail(what, where + ": \"shape\" must be an array, got " + shape.dump());
  uint64_t elements = 1;
  bool overflow = false;
  for (const Json &dim : shape) {
    uint64_t size = unsignedOf(dim, what, where + ": \"shape\"");
    if (size > uint64_t(std::numeric_limits<int64_t>::max()) ||
        (size && elements > std::numeric_limits<uint64_t>::max() / size))
      overflow = true;
    elements *= size;
    entry.shape.push_back(int64_t(size));
  }
  const Json &offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail(what, where + ": \"data_offsets\" must be [begin, end], got " +
                   offsets.dump());
  entry.begin = unsignedOf(offsets[0], what, where + ": \"data_offsets\"");
  entry.end = unsignedOf(offsets[1], what, where + ": \"data_offsets\"");
  if (entry.end < entry.begin)
    fail(what, where + ": \"data_offsets\" [" + std::to_string(entry.begin) +
                   ", " + std::to_string(entry.end) +
                   "] end before they begin");
  uint64_t itemSize = elementSize(elementKindOf(entry.dtype));
  if (overflow || elements > std::numeric_limits<uint64_t>::max() / itemSize ||
      elements * itemSize != entry.end - entry.begin)
    fail(what, where + ": shape " + shape.dump() + " of " + dtype.dump() +
                   " needs " +
                   (overflow ? std::string("more bytes than a file holds")
                             : std::to_string(elements * itemSize) + " bytes") +
                   ", \"data_offsets\" give " +
                   std::to_string(entry.end - entry.begin));
  return entry;
}

} // namespace

std::string
harp::detail::serializeSafetensors(const NamedNodes &tensors,
                                   const SafetensorsMetadata &metadata) {
  std::set<std::string> names;
  std::vector<NodePtr> nodes;
  for (const auto &[name, node] : tensors) {
    if (!node)
      throw Error("save_safetensors: tensor '" + name + "' is null");
    if (name == "__metadata__")
      throw Error("save_safetensors: a tensor cannot be named "
                  "'__metadata__' (the format's metadata key)");
    if (!names.insert(name).second)
      throw Error("save_safetensors: two tensors are named '" + name + "'");
    if (!formatDtypeOf(dtypeOf(node)))
      throw Error("save_safetensors: tensor '" + name + "' is " +
                  dtypeName(dtypeOf(node)) +
                  ", which has no safetensors dtype");
    nodes.push_back(node);
  }
  realizeMany(nodes);

  Json header = Json::object();
  if (!metadata.empty()) {
    Json entries = Json::object();
    for (const auto &[key, value] : metadata)
      entries[key] = value;
    header["__metadata__"] = std::move(entries);
  }
  uint64_t offset = 0;
  std::vector<const Array *> arrays;
  for (const auto &[name, node] : tensors) {
    const Array &array = realize(node);
    arrays.push_back(&array);
    Json entry = Json::object();
    entry["dtype"] = formatDtypeOf(dtypeOf(node));
    entry["shape"] = shapeOf(node);
    entry["data_offsets"] = {offset, offset + array.byteSize()};
    offset += array.byteSize();
    header[name] = std::move(entry);
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception &) {
    throw Error("save_safetensors: a tensor name or metadata string is not "
                "valid UTF-8");
  }
  // The data starts 8-byte aligned: the header is padded with spaces, as the
  // format's own writer does.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string bytes(8, '\0');
  llvm::support::endian::write64le(bytes.data(), text.size());
  bytes.reserve(8 + text.size() + offset);
  bytes += text;
  for (const Array *array : arrays)
    bytes.append(static_cast<const char *>(array->data()), array->byteSize());
  return bytes;
}

NamedNodes harp::detail::parseSafetensors(std::string_view bytes,
                                          const std::string &what,
                                          SafetensorsMetadata *metadata) {
  if (bytes.size() < 8)
    fail(what,
         "the file has " + std::to_string(bytes.size()) +
             " bytes, fewer than the 8 of the header length (truncated?)");
  uint64_t headerBytes = llvm::support::endian::read64le(bytes.data());
  if (headerBytes > kMaxHeaderBytes)
    fail(what, "the header length " + std::to_string(headerBytes) +
                   " exceeds the format's 100 MB (not a safetensors file?)");
  if (headerBytes > bytes.size() - 8)
    fail(what, "the header length " + std::to_string(headerBytes) +
                   " runs past the end of the file (" +
                   std::to_string(bytes.size()) + " bytes; truncated?)");

  // A key repeated in an object is an error (the JSON library would keep
  // the last one): the parser's callback sees every object's keys.
  std::vector<std::set<std::string>> objects;
  std::string repeated;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event,
                      Json &parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start)
      objects.emplace_back();
    else if (event == Event::object_end && !objects.empty())
      objects.pop_back();
    else if (event == Event::key && !objects.empty() &&
             !objects.back().insert(parsed.get<std::string>()).second &&
             repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  Json header = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + headerBytes,
                            callback, /*allow_exceptions=*/false);
  if (header.is_discarded())
    fail(what, "the header is not valid JSON");
  if (!header.is_object())
    fail(what, "the header must be a JSON object, got " +
                   std::string(header.type_name()));
  if (!repeated.empty())
    fail(what, "the header names \"" + repeated + "\" twice in one object");

  SafetensorsMetadata found;
  std::vector<Entry> entries;
  for (const auto &item : header.items()) {
    if (item.key() == "__metadata__") {
      if (!item.value().is_object())
        fail(what, "\"__metadata__\" must be an object of strings, got " +
                       item.value().dump());
      for (const auto &field : item.value().items()) {
        if (!field.value().is_string())
          fail(what, "\"__metadata__\" entry \"" + field.key() +
                         "\" must be a string, got " + field.value().dump());
        found[field.key()] = field.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(entryOf(item.key(), item.value(), what));
  }

  // The tensors' byte ranges must cover the data exactly once.
  uint64_t dataBytes = bytes.size() - 8 - headerBytes;
  std::stable_sort(
      entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
        return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
      });
  uint64_t covered = 0;
  for (const Entry &entry : entries) {
    if (entry.begin != covered)
      fail(what, "tensor '" + entry.name + "' starts at data byte " +
                     std::to_string(entry.begin) + " where " +
                     std::to_string(covered) +
                     (entry.begin > covered ? " was expected (a hole)"
                                            : " was expected (an overlap)"));
    covered = entry.end;
  }
  if (covered != dataBytes)
    fail(what, "the tensors cover " + std::to_string(covered) +
                   " data bytes, the file holds " + std::to_string(dataBytes) +
                   (covered > dataBytes ? " (truncated?)" : ""));

  const char *data = bytes.data() + 8 + headerBytes;
  NamedNodes tensors;
  for (const Entry &entry : entries) {
    TensorType type{elementKindOf(entry.dtype), entry.shape};
    Array array = Array::uninitialized(type);
    std::memcpy(array.data(), data + entry.begin, entry.end - entry.begin);
    if (entry.dtype == DType::Bool) {
      auto *values = static_cast<const uint8_t *>(array.data());
      for (uint64_t i = 0, e = entry.end - entry.begin; i < e; ++i)
        if (values[i] > 1)
          fail(what, "tensor '" + entry.name + "' is BOOL but holds byte " +
                         std::to_string(values[i]) + " at element " +
                         std::to_string(i) + " (a bool is 0 or 1)");
    }
    tensors.emplace_back(entry.name, fromArray(entry.dtype, std::move(array)));
  }
  if (metadata)
    *metadata = std::move(found);
  return tensors;
}

void harp::detail::saveSafetensors(const std::string &path,
                                   const NamedNodes &tensors,
                                   const SafetensorsMetadata &metadata) {
  std::string bytes = serializeSafetensors(tensors, metadata);
  // Written beside `path` and renamed over it, so that a failed write
  // leaves no partial file.
  std::string temporary = path + ".partial";
  {
    std::error_code error;
    llvm::raw_fd_ostream out(temporary, error);
    if (error)
      throw Error("save_safetensors: cannot write '" + path +
                  "': " + error.message());
    out.write(bytes.data(), bytes.size());
    out.close();
    if (out.has_error()) {
      std::string message = out.error().message();
      out.clear_error();
      llvm::sys::fs::remove(temporary);
      throw Error("save_safetensors: writing '" + path +
                  "' failed: " + message);
    }
  }
  if (std::error_code error = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    throw Error("save_safetensors: cannot write '" + path +
                "': " + error.message());
  }
}

NamedNodes harp::detail::loadSafetensors(const std::string &path,
                                         SafetensorsMetadata *metadata) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    throw Error("load_safetensors: cannot read '" + path +
                "': " + file.getError().message());
  llvm::StringRef bytes = (*file)->getBuffer();
  return parseSafetensors(std::string_view(bytes.data(), bytes.size()), path,
                          metadata);
}
