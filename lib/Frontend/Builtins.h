//===- Builtins.h - values and built-in functions of graphs -----*- C++ -*-===//
//
// Private to lib/Frontend. A Value is what an expression evaluates to: a
// tensor (a Tensor API node), or a number, bool, string, dtype or list
// known while the graph is built (dims, literals, `let h = N / 2`).
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_FRONTEND_BUILTINS_H
#define HARP_LIB_FRONTEND_BUILTINS_H

#include "harp/Frontend/GraphDSL.h"

#include <complex>
#include <string>
#include <utility>
#include <vector>

namespace harp::graph {

struct Value {
  enum class Kind {
    Tensor,
    Int,
    Float,
    Complex, // floatValue + imagValue i
    Bool,
    String,
    DType,
    List,
    Tuple
  };
  Kind kind = Kind::Int;
  detail::NodePtr tensor;
  int64_t intValue = 0;
  double floatValue = 0;
  double imagValue = 0; // Complex
  bool boolValue = false;
  std::string text;
  DType dtype = DType::F32;
  std::vector<Value> items; // List, Tuple

  static Value ofTensor(detail::NodePtr n) {
    Value v;
    v.kind = Kind::Tensor;
    v.tensor = std::move(n);
    return v;
  }
  static Value ofInt(int64_t i) {
    Value v;
    v.kind = Kind::Int;
    v.intValue = i;
    return v;
  }
  static Value ofFloat(double f) {
    Value v;
    v.kind = Kind::Float;
    v.floatValue = f;
    return v;
  }
  static Value ofComplex(std::complex<double> c) {
    Value v;
    v.kind = Kind::Complex;
    v.floatValue = c.real();
    v.imagValue = c.imag();
    return v;
  }
  static Value ofBool(bool b) {
    Value v;
    v.kind = Kind::Bool;
    v.boolValue = b;
    return v;
  }
  bool isTensor() const { return kind == Kind::Tensor; }
  /// Numbers, complex ones included.
  bool isNumber() const {
    return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool ||
           kind == Kind::Complex;
  }
  /// The value of a real number (the real part of a complex one: callers
  /// that accept complex numbers read complexNumber()).
  double number() const {
    return kind == Kind::Float || kind == Kind::Complex ? floatValue
           : kind == Kind::Bool                         ? double(boolValue)
                                                        : double(intValue);
  }
  std::complex<double> complexNumber() const {
    return {number(), kind == Kind::Complex ? imagValue : 0.0};
  }
  /// "tensor f32[3, 4]", "integer 3", ...
  std::string describe() const;
};

/// Runs `body` with the nodes it builds placed at `loc`, reporting the
/// Tensor API's errors there.
template <typename F>
auto atLoc(const SourceLoc &loc, F &&body) -> decltype(body()) {
  LocationScope scope(SourceLocation{loc.file ? loc.file->c_str() : nullptr,
                                     loc.line, loc.column});
  try {
    return body();
  } catch (const GraphError &) {
    throw;
  } catch (const Error &e) {
    throw GraphError(loc, e.what());
  }
}

/// The dtype a number takes next to a tensor of `other` (PyTorch's weak
/// scalars: a float next to an integer tensor is f32; a complex number
/// next to a float tensor is its complex type, c64 next to integers).
DType scalarDType(const Value &number, DType other);
/// `v` as a tensor: a number becomes a 0-d constant of `dtype` (or its own
/// default: f32, i64, bool).
detail::NodePtr asTensor(const Value &v, std::optional<DType> dtype,
                         const SourceLoc &loc, const std::string &what);
/// A constant of `dtype` and `shape` holding `number` (a complex number
/// needs a complex dtype unless its imaginary part is 0).
detail::NodePtr filled(DType dtype, std::vector<int64_t> shape,
                       const Value &number, const SourceLoc &loc);

/// An element-wise op of two operands under the language's shape rule:
/// equal shapes, or one of them 0-d.
Value elementwise(BinaryOp op, const Value &a, const Value &b,
                  const SourceLoc &loc, const std::string &what);

/// A call's evaluated arguments.
struct CallArgs {
  std::string name;
  SourceLoc loc;
  std::vector<Value> positional;
  std::vector<SourceLoc> positionalLocs;
  std::vector<std::pair<std::string, Value>> keywords;
  std::vector<SourceLoc> keywordLocs;
};

bool isBuiltin(const std::string &name);
/// Runs built-in `call.name`; throws GraphError at the call.
Value callBuiltin(const CallArgs &call);

} // namespace harp::graph

#endif // HARP_LIB_FRONTEND_BUILTINS_H
