//===- Npy.cpp - NumPy .npy files and NumPy-style printing ----------------===//
//
// The format: the magic "\x93NUMPY", a major and a minor version byte, the
// header length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), then
// the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw row-major data.
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

using namespace harp;
using llvm::StringRef;

static constexpr char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = sizeof(kMagic) - 1;

static llvm::Error fileError(StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (path + ": " + message).str());
}

//===----------------------------------------------------------------------===//
// dtypes
//===----------------------------------------------------------------------===//

/// The .npy descr of `kind`, or null for bf16.
static const char *npyDescr(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
    return "<f2";
  case ElementKind::BF16:
    return nullptr;
  case ElementKind::F32:
    return "<f4";
  case ElementKind::F64:
    return "<f8";
  case ElementKind::I1:
    return "|b1";
  case ElementKind::I8:
    return "|i1";
  case ElementKind::I16:
    return "<i2";
  case ElementKind::I32:
    return "<i4";
  case ElementKind::I64:
    return "<i8";
  case ElementKind::C64:
    return "<c8";
  case ElementKind::C128:
    return "<c16";
  }
  llvm_unreachable("unknown element kind");
}

/// Maps a descr such as "<f4" to an element kind, or explains why not.
static llvm::Expected<ElementKind> parseDescr(StringRef path, StringRef descr) {
  char order = '=';
  StringRef code = descr;
  if (!code.empty() && StringRef("<>|=").contains(code.front())) {
    order = code.front();
    code = code.drop_front();
  }
  std::optional<ElementKind> kind =
      llvm::StringSwitch<std::optional<ElementKind>>(code)
          .Case("f2", ElementKind::F16)
          .Case("f4", ElementKind::F32)
          .Case("f8", ElementKind::F64)
          .Case("b1", ElementKind::I1)
          .Case("i1", ElementKind::I8)
          .Case("i2", ElementKind::I16)
          .Case("i4", ElementKind::I32)
          .Case("i8", ElementKind::I64)
          .Case("c8", ElementKind::C64)
          .Case("c16", ElementKind::C128)
          .Default(std::nullopt);
  if (!kind) {
    if (code.starts_with("u"))
      return fileError(path, "unsigned dtype '" + descr +
                                 "' is not supported; convert it to a signed "
                                 "dtype with astype (e.g. np.int16)");
    return fileError(path, "unsupported dtype '" + descr + "'");
  }
  // harp only runs on little-endian hosts, where '=' means little-endian.
  bool bigEndian = order == '>' || (order == '=' && llvm::sys::IsBigEndianHost);
  if (bigEndian && elementSize(*kind) > 1)
    return fileError(path, "big-endian dtype '" + descr +
                               "' is not supported; convert it with "
                               "a.astype(a.dtype.newbyteorder('<'))");
  return *kind;
}

//===----------------------------------------------------------------------===//
// Header parsing
//===----------------------------------------------------------------------===//

namespace {
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// A parser for the small subset of Python literals that NumPy writes.
class HeaderParser {
public:
  HeaderParser(StringRef path, StringRef text) : path(path), rest(text) {}

  llvm::Expected<NpyHeader> parse() {
    NpyHeader header;
    bool seenDescr = false, seenOrder = false, seenShape = false;
    if (!consume('{'))
      return error("expected '{'");
    while (!consume('}')) {
      std::string key;
      if (!parseString(key))
        return error("expected a quoted key");
      if (!consume(':'))
        return error("expected ':' after '" + key + "'");
      if (key == "descr") {
        skipSpace();
        if (rest.starts_with("["))
          return fileError(path, "structured dtypes are not supported");
        if (!parseString(header.descr))
          return error("expected a string for 'descr'");
        seenDescr = true;
      } else if (key == "fortran_order") {
        if (consumeWord("True"))
          header.fortranOrder = true;
        else if (consumeWord("False"))
          header.fortranOrder = false;
        else
          return error("expected True or False for 'fortran_order'");
        seenOrder = true;
      } else if (key == "shape") {
        if (!parseShape(header.shape))
          return error("expected a tuple of non-negative integers for "
                       "'shape'");
        seenShape = true;
      } else {
        return error("unexpected key '" + key + "'");
      }
      // A trailing comma is allowed, as in Python.
      if (!consume(',')) {
        if (!consume('}'))
          return error("expected ',' or '}'");
        break;
      }
    }
    if (!seenDescr || !seenOrder || !seenShape)
      return error("missing 'descr', 'fortran_order' or 'shape'");
    skipSpace();
    if (!rest.empty())
      return error("unexpected text after the dict");
    return header;
  }

private:
  llvm::Error error(const llvm::Twine &message) {
    return fileError(path, "malformed .npy header: " + message);
  }

  void skipSpace() { rest = rest.ltrim(" \t\r\n"); }

  bool consume(char c) {
    skipSpace();
    if (!rest.starts_with(StringRef(&c, 1)))
      return false;
    rest = rest.drop_front();
    return true;
  }

  bool consumeWord(StringRef word) {
    skipSpace();
    if (!rest.starts_with(word))
      return false;
    rest = rest.drop_front(word.size());
    return true;
  }

  /// A quoted string without escapes, which is all NumPy writes here.
  bool parseString(std::string &out) {
    skipSpace();
    if (rest.empty() || (rest.front() != '\'' && rest.front() != '"'))
      return false;
    char quote = rest.front();
    size_t end = rest.find(quote, 1);
    if (end == StringRef::npos)
      return false;
    StringRef body = rest.slice(1, end);
    if (body.contains('\\'))
      return false;
    out = body.str();
    rest = rest.drop_front(end + 1);
    return true;
  }

  bool parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return false;
    while (!consume(')')) {
      skipSpace();
      size_t digits = 0;
      while (digits < rest.size() && llvm::isDigit(rest[digits]))
        ++digits;
      int64_t dim;
      if (digits == 0 || rest.take_front(digits).getAsInteger(10, dim))
        return false;
      rest = rest.drop_front(digits);
      // Python 2 wrote longs with an L suffix.
      if (rest.starts_with("L"))
        rest = rest.drop_front();
      shape.push_back(dim);
      if (!consume(',')) {
        if (!consume(')'))
          return false;
        break;
      }
    }
    return true;
  }

  StringRef path;
  StringRef rest;
};
} // namespace

static std::string shapeTuple(llvm::ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (int64_t dim : shape)
    s += std::to_string(dim) + (shape.size() == 1 ? "," : ", ");
  if (shape.size() > 1)
    s.resize(s.size() - 2);
  return s + ")";
}

//===----------------------------------------------------------------------===//
// Reading and writing
//===----------------------------------------------------------------------===//

llvm::Expected<Array> harp::readNpy(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!file)
    return fileError(path, "cannot read: " + file.getError().message());
  StringRef bytes = (*file)->getBuffer();

  StringRef magic = bytes.take_front(kMagicSize);
  if (!StringRef(kMagic).starts_with(magic) || magic.empty())
    return fileError(path, "not a .npy file (bad magic)");
  if (bytes.size() < kMagicSize + 2)
    return fileError(path, "truncated .npy file (incomplete preamble)");
  unsigned major = static_cast<uint8_t>(bytes[kMagicSize]);
  unsigned minor = static_cast<uint8_t>(bytes[kMagicSize + 1]);
  if (major < 1 || major > 3 || minor != 0)
    return fileError(path, "unsupported .npy format version " +
                               llvm::Twine(major) + "." + llvm::Twine(minor));
  size_t lengthSize = major == 1 ? 2 : 4;
  size_t headerStart = kMagicSize + 2 + lengthSize;
  if (bytes.size() < headerStart)
    return fileError(path, "truncated .npy file (incomplete preamble)");
  const char *lengthPtr = bytes.data() + kMagicSize + 2;
  uint64_t headerSize = major == 1 ? llvm::support::endian::read16le(lengthPtr)
                                   : llvm::support::endian::read32le(lengthPtr);
  if (bytes.size() - headerStart < headerSize)
    return fileError(path, "truncated .npy file (incomplete header)");

  HeaderParser parser(path, bytes.substr(headerStart, headerSize));
  llvm::Expected<NpyHeader> header = parser.parse();
  if (!header)
    return header.takeError();
  // Fortran order of a rank-0 or rank-1 array is row-major too, but NumPy
  // never writes it for those, so one rule keeps the message predictable.
  if (header->fortranOrder)
    return fileError(path, "fortran-ordered arrays are not supported; use "
                           "np.ascontiguousarray");
  llvm::Expected<ElementKind> kind = parseDescr(path, header->descr);
  if (!kind)
    return kind.takeError();

  // The product may overflow for a corrupt shape; compare it with the file
  // before allocating anything.
  uint64_t expected = elementSize(*kind);
  bool overflow = false;
  for (int64_t dim : header->shape) {
    uint64_t next = expected * static_cast<uint64_t>(dim);
    if (dim != 0 && next / static_cast<uint64_t>(dim) != expected)
      overflow = true;
    expected = next;
  }
  uint64_t available = bytes.size() - headerStart - headerSize;
  std::string what =
      "shape " + shapeTuple(header->shape) + " of '" + header->descr + "'";
  if (overflow)
    return fileError(path, what + " is too large");
  if (available < expected)
    return fileError(path, "truncated .npy file: " + what + " needs " +
                               llvm::Twine(expected) +
                               " bytes of data but the file holds " +
                               llvm::Twine(available));
  if (available > expected)
    return fileError(path, "size mismatch: " + what + " needs " +
                               llvm::Twine(expected) +
                               " bytes of data but the file holds " +
                               llvm::Twine(available));

  Array array = Array::allocate(TensorType{*kind, header->shape});
  std::memcpy(array.data(), bytes.data() + headerStart + headerSize, expected);
  // Kernels assume i1 bytes are exactly 0 or 1.
  if (*kind == ElementKind::I1) {
    uint8_t *bools = array.as<uint8_t>();
    for (int64_t i = 0, e = array.numElements(); i < e; ++i)
      bools[i] = bools[i] != 0;
  }
  return array;
}

llvm::Error harp::writeNpy(StringRef path, const Array &array) {
  const char *descr = npyDescr(array.kind());
  if (!descr)
    return fileError(path, "bf16 arrays have no .npy dtype; convert them to "
                           "f32 before writing");
  if (!array.data() && array.byteSize() != 0)
    return fileError(path, "cannot write an array without data");

  std::string dict =
      std::string("{'descr': '") + descr +
      "', 'fortran_order': False, 'shape': " + shapeTuple(array.shape()) +
      ", }";
  // NumPy pads the header with spaces and a newline so that the data starts
  // on a 64-byte boundary; version 2.0 only when 1.0's 16-bit length is short.
  unsigned major = 1;
  size_t preamble = kMagicSize + 2 + 2;
  size_t total = llvm::alignTo(preamble + dict.size() + 1, 64);
  if (total - preamble > 0xffff) {
    major = 2;
    preamble = kMagicSize + 2 + 4;
    total = llvm::alignTo(preamble + dict.size() + 1, 64);
  }
  size_t headerSize = total - preamble;
  dict.resize(headerSize - 1, ' ');
  dict += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fileError(path, "cannot open for writing: " + ec.message());
  os.write(kMagic, kMagicSize);
  os << static_cast<char>(major) << '\0';
  char length[4];
  if (major == 1)
    llvm::support::endian::write16le(length, headerSize);
  else
    llvm::support::endian::write32le(length, headerSize);
  os.write(length, major == 1 ? 2 : 4);
  os << dict;
  if (array.kind() == ElementKind::I1) {
    // NumPy's bool must be exactly 0 or 1.
    const uint8_t *bools = array.as<uint8_t>();
    for (int64_t i = 0, e = array.numElements(); i < e; ++i)
      os << static_cast<char>(bools[i] != 0);
  } else {
    os.write(static_cast<const char *>(array.data()), array.byteSize());
  }
  os.close();
  if (os.has_error()) {
    std::string message = os.error().message();
    os.clear_error();
    return fileError(path, "write failed: " + message);
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

static float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f)
    return llvm::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  return llvm::bit_cast<float>(sign | ((exponent + 112) << 23) |
                               (mantissa << 13));
}

static std::string formatFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%.6g", value);
  std::string s = buffer;
  // Like NumPy, "1." rather than "1", so floats read as floats.
  if (s.find_first_of(".e") == std::string::npos)
    s += '.';
  return s;
}

static std::string formatComplex(double re, double im) {
  std::string s = "(" + formatFloat(re);
  if (std::isnan(im))
    s += "+nan";
  else if (std::signbit(im))
    s += "-" + formatFloat(-im);
  else
    s += "+" + formatFloat(im);
  return s + "j)";
}

static std::string formatElement(const Array &array, int64_t index) {
  const char *data = static_cast<const char *>(array.data());
  auto load = [&](auto value, size_t offset = 0) {
    std::memcpy(&value, data + index * elementSize(array.kind()) + offset,
                sizeof(value));
    return value;
  };
  switch (array.kind()) {
  case ElementKind::F16:
    return formatFloat(halfToFloat(load(uint16_t())));
  case ElementKind::BF16:
    return formatFloat(
        llvm::bit_cast<float>(static_cast<uint32_t>(load(uint16_t())) << 16));
  case ElementKind::F32:
    return formatFloat(load(float()));
  case ElementKind::F64:
    return formatFloat(load(double()));
  case ElementKind::I1:
    return load(uint8_t()) ? "true" : "false";
  case ElementKind::I8:
    return std::to_string(load(int8_t()));
  case ElementKind::I16:
    return std::to_string(load(int16_t()));
  case ElementKind::I32:
    return std::to_string(load(int32_t()));
  case ElementKind::I64:
    return std::to_string(load(int64_t()));
  case ElementKind::C64:
    return formatComplex(load(float()), load(float(), 4));
  case ElementKind::C128:
    return formatComplex(load(double()), load(double(), 8));
  }
  llvm_unreachable("unknown element kind");
}

namespace {
/// Prints nested brackets the way NumPy's str() does: elements right-aligned
/// to a common width, rows wrapped at 75 columns, a blank line between
/// blocks of rank 3 and above, and "..." for summarised axes.
class ArrayPrinter {
public:
  explicit ArrayPrinter(const Array &array)
      : array(array), shape(array.shape()), rank(shape.size()),
        summarise(array.numElements() > kThreshold) {
    strides.assign(rank, 1);
    for (size_t d = rank; d-- > 1;)
      strides[d - 1] = strides[d] * shape[d];
  }

  std::string print() {
    collect(0, 0);
    std::string out;
    emit(0, 0, out);
    return out;
  }

private:
  static constexpr int64_t kThreshold = 1000;
  static constexpr int64_t kEdgeItems = 3;
  static constexpr size_t kLineWidth = 75;

  /// The indices printed along an axis of size `n`; -1 stands for "...".
  std::vector<int64_t> indices(int64_t n) const {
    std::vector<int64_t> result;
    if (summarise && n > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i)
        result.push_back(i);
      result.push_back(-1);
      for (int64_t i = n - kEdgeItems; i < n; ++i)
        result.push_back(i);
      return result;
    }
    for (int64_t i = 0; i < n; ++i)
      result.push_back(i);
    return result;
  }

  /// Formats every shown element once, to find the common width.
  void collect(size_t dim, int64_t offset) {
    if (dim == rank) {
      std::string s = formatElement(array, offset);
      width = std::max(width, s.size());
      formatted.push_back(std::move(s));
      return;
    }
    for (int64_t i : indices(shape[dim]))
      if (i >= 0)
        collect(dim + 1, offset + i * strides[dim]);
  }

  void emit(size_t dim, int64_t offset, std::string &out) {
    if (dim == rank) {
      std::string &s = formatted[next++];
      out.append(width - s.size(), ' ');
      out += s;
      return;
    }
    out += '[';
    std::vector<int64_t> shown = indices(shape[dim]);
    bool innermost = dim + 1 == rank;
    // Elements of the innermost axis start after `rank` brackets or spaces.
    size_t column = rank;
    for (size_t k = 0; k < shown.size(); ++k) {
      if (k != 0) {
        if (innermost) {
          out += ',';
          size_t nextWidth = shown[k] < 0 ? 3 : width;
          if (column + 2 + nextWidth > kLineWidth) {
            out += '\n';
            out.append(rank, ' ');
            column = rank;
          } else {
            out += ' ';
            column += 2;
          }
        } else {
          out += ',';
          out.append(rank - dim - 1, '\n');
          out.append(dim + 1, ' ');
        }
      }
      if (shown[k] < 0) {
        out += "...";
        column += 3;
        continue;
      }
      emit(dim + 1, offset + shown[k] * strides[dim], out);
      column += width;
    }
    out += ']';
  }

  const Array &array;
  llvm::ArrayRef<int64_t> shape;
  size_t rank;
  bool summarise;
  std::vector<int64_t> strides;
  std::vector<std::string> formatted;
  size_t width = 0;
  size_t next = 0;
};
} // namespace

std::string harp::formatArray(const Array &array) {
  std::string out = array.type().str() + "\n";
  if (!array.data() && array.numElements() != 0)
    return out + "<no data>";
  if (array.shape().empty())
    return out + formatElement(array, 0);
  return out + ArrayPrinter(array).print();
}
