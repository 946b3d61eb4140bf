//===- Builtins.cpp - the graph language's built-in functions -------------===//
//
// Each built-in binds its arguments by position or keyword (PyTorch's names
// and defaults) and calls the Tensor API, whose errors it reports at the
// call. The table below is the list docs/GraphDSL.md documents.
//
//===----------------------------------------------------------------------===//

#include "Builtins.h"

#include "harp/API/NN.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

using namespace harp;
using namespace harp::graph;
using detail::NodePtr;
using detail::shapeStr;

/// The shortest text that reads back as `value`, with a point.
static std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  for (int digits = 1; digits < 17; ++digits) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", digits, value);
    if (std::strtod(shorter, nullptr) == value) {
      std::snprintf(text, sizeof text, "%s", shorter);
      break;
    }
  }
  std::string spelled = text;
  if (spelled.find_first_of(".eni") == std::string::npos)
    spelled += ".0";
  return spelled;
}

std::string Value::describe() const {
  switch (kind) {
  case Kind::Tensor:
    return "tensor " + dtypeName(detail::dtypeOf(tensor)) +
           shapeStr(detail::shapeOf(tensor));
  case Kind::Int:
    return "integer " + std::to_string(intValue);
  case Kind::Float:
    return "float " + shortest(floatValue);
  case Kind::Complex:
    if (floatValue == 0)
      return "complex " + shortest(imagValue) + "j";
    return "complex " + shortest(floatValue) +
           (std::signbit(imagValue) ? "-" : "+") +
           shortest(std::abs(imagValue)) + "j";
  case Kind::Bool:
    return boolValue ? "bool true" : "bool false";
  case Kind::String:
    return "string \"" + text + "\"";
  case Kind::DType:
    return "dtype " + dtypeName(dtype);
  case Kind::List:
    return "list of " + std::to_string(items.size());
  case Kind::Tuple:
    return std::to_string(items.size()) + " results";
  }
  return "?";
}

DType harp::graph::scalarDType(const Value &number, DType other) {
  switch (number.kind) {
  case Value::Kind::Float:
    return isFloat(other) || isComplex(other) ? other : DType::F32;
  case Value::Kind::Complex:
    return isFloat(other) || isComplex(other) ? complexOf(other) : DType::C64;
  case Value::Kind::Int:
    return other == DType::Bool ? DType::I64 : other;
  default:
    return other;
  }
}

NodePtr harp::graph::asTensor(const Value &v, std::optional<DType> dtype,
                              const SourceLoc &loc, const std::string &what) {
  if (v.isTensor())
    return v.tensor;
  if (!v.isNumber())
    throw GraphError(loc, what + " must be a tensor or a number, got " +
                              v.describe());
  DType d = dtype                            ? *dtype
            : v.kind == Value::Kind::Float   ? DType::F32
            : v.kind == Value::Kind::Complex ? DType::C64
            : v.kind == Value::Kind::Bool    ? DType::Bool
                                             : DType::I64;
  return filled(d, {}, v, loc);
}

NodePtr harp::graph::filled(DType dtype, std::vector<int64_t> shape,
                            const Value &number, const SourceLoc &loc) {
  std::complex<double> c = number.complexNumber();
  if (c.imag() != 0 && !isComplex(dtype))
    throw GraphError(loc, number.describe() + " cannot be a " +
                              dtypeName(dtype) +
                              " value (cast to c64 or "
                              "c128 first)");
  return atLoc(loc, [&] {
    return detail::fullComplex(dtype, std::move(shape), c.real(), c.imag());
  });
}

Value harp::graph::elementwise(BinaryOp op, const Value &a, const Value &b,
                               const SourceLoc &loc, const std::string &what) {
  return atLoc(loc, [&] {
    std::optional<DType> da, db;
    if (a.isTensor())
      da = db = detail::dtypeOf(a.tensor);
    if (b.isTensor()) {
      db = detail::dtypeOf(b.tensor);
      if (!a.isTensor())
        da = db;
    }
    if (!a.isTensor() && da)
      da = scalarDType(a, *da);
    if (!b.isTensor() && db)
      db = scalarDType(b, *db);
    NodePtr x = asTensor(a, da, loc, "the left operand of " + what);
    NodePtr y = asTensor(b, db, loc, "the right operand of " + what);
    const auto &sx = detail::shapeOf(x), &sy = detail::shapeOf(y);
    if (sx != sy && !sx.empty() && !sy.empty())
      throw GraphError(loc, what + ": operand shapes " + shapeStr(sx) +
                                " and " + shapeStr(sy) +
                                " differ; only 0-d scalars broadcast (use "
                                "expand to broadcast others)");
    return Value::ofTensor(detail::binary(op, x, y));
  });
}

//===----------------------------------------------------------------------===//
// Binding arguments
//===----------------------------------------------------------------------===//

namespace {
/// A call's arguments bound to a built-in's parameter names.
class Bound {
public:
  Bound(const CallArgs &call, std::vector<std::string> names)
      : call(call), names(std::move(names)) {
    if (call.positional.size() > this->names.size())
      throw GraphError(call.positionalLocs[this->names.size()],
                       call.name + " takes at most " +
                           std::to_string(this->names.size()) + " arguments (" +
                           signature() + "), got " +
                           std::to_string(call.positional.size()));
    for (size_t i = 0; i < call.positional.size(); ++i)
      slots[this->names[i]] = {&call.positional[i], call.positionalLocs[i]};
    for (size_t i = 0; i < call.keywords.size(); ++i) {
      const auto &[key, value] = call.keywords[i];
      if (std::find(this->names.begin(), this->names.end(), key) ==
          this->names.end())
        throw GraphError(call.keywordLocs[i], call.name + " has no argument '" +
                                                  key + "' (" + signature() +
                                                  ")");
      if (slots.count(key))
        throw GraphError(call.keywordLocs[i],
                         call.name + ": argument '" + key +
                             "' is given by position and by keyword");
      slots[key] = {&value, call.keywordLocs[i]};
    }
  }

  std::string signature() const {
    std::string s = call.name + "(";
    for (size_t i = 0; i < names.size(); ++i)
      s += (i ? ", " : "") + names[i];
    return s + ")";
  }
  bool has(const std::string &name) const { return slots.count(name); }
  SourceLoc locOf(const std::string &name) const {
    auto it = slots.find(name);
    return it == slots.end() ? call.loc : it->second.second;
  }
  const Value &get(const std::string &name) const {
    auto it = slots.find(name);
    if (it == slots.end())
      throw GraphError(call.loc, call.name + ": missing argument '" + name +
                                     "' (" + signature() + ")");
    return *it->second.first;
  }
  [[noreturn]] void wrong(const std::string &name,
                          const std::string &want) const {
    throw GraphError(locOf(name), call.name + ": argument '" + name +
                                      "' must be " + want + ", got " +
                                      get(name).describe());
  }

  NodePtr tensor(const std::string &name,
                 std::optional<DType> numberType = std::nullopt) const {
    const Value &v = get(name);
    if (v.isTensor())
      return v.tensor;
    if (v.isNumber())
      return asTensor(v, numberType, locOf(name), name);
    wrong(name, "a tensor");
  }
  /// A tensor, or null when absent.
  NodePtr optTensor(const std::string &name) const {
    return has(name) ? tensor(name) : nullptr;
  }
  int64_t integer(const std::string &name,
                  std::optional<int64_t> fallback = std::nullopt) const {
    if (!has(name) && fallback)
      return *fallback;
    const Value &v = get(name);
    if (v.kind != Value::Kind::Int)
      wrong(name, "an integer");
    return v.intValue;
  }
  /// A list of integers, or one integer as a list of one.
  std::vector<int64_t>
  ints(const std::string &name,
       std::optional<std::vector<int64_t>> fallback = std::nullopt) const {
    if (!has(name) && fallback)
      return *fallback;
    const Value &v = get(name);
    if (v.kind == Value::Kind::Int)
      return {v.intValue};
    if (v.kind != Value::Kind::List)
      wrong(name, "an integer or a list of integers");
    std::vector<int64_t> out;
    for (const Value &item : v.items) {
      if (item.kind != Value::Kind::Int)
        wrong(name, "a list of integers");
      out.push_back(item.intValue);
    }
    return out;
  }
  double number(const std::string &name,
                std::optional<double> fallback = std::nullopt) const {
    if (!has(name) && fallback)
      return *fallback;
    const Value &v = get(name);
    if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Float)
      wrong(name, "a number");
    return v.number();
  }
  std::optional<double> optNumber(const std::string &name) const {
    if (!has(name))
      return std::nullopt;
    return number(name);
  }
  bool flag(const std::string &name, bool fallback) const {
    if (!has(name))
      return fallback;
    const Value &v = get(name);
    if (v.kind != Value::Kind::Bool)
      wrong(name, "true or false");
    return v.boolValue;
  }
  DType dtype(const std::string &name, DType fallback) const {
    if (!has(name))
      return fallback;
    const Value &v = get(name);
    if (v.kind != Value::Kind::DType)
      wrong(name, "a dtype (f32, i64, ...)");
    return v.dtype;
  }
  std::string str(const std::string &name, const std::string &fallback) const {
    if (!has(name))
      return fallback;
    const Value &v = get(name);
    if (v.kind != Value::Kind::String)
      wrong(name, "a string");
    return v.text;
  }
  std::vector<NodePtr> tensors(const std::string &name) const {
    const Value &v = get(name);
    if (v.kind != Value::Kind::List || v.items.empty())
      wrong(name, "a non-empty list of tensors");
    std::vector<NodePtr> out;
    for (const Value &item : v.items) {
      if (!item.isTensor())
        wrong(name, "a list of tensors");
      out.push_back(item.tensor);
    }
    return out;
  }
  /// An optional dim list: absent means every dim.
  std::vector<int64_t> dims(const std::string &name) const {
    return ints(name, std::vector<int64_t>{});
  }

  const CallArgs &call;

private:
  std::vector<std::string> names;
  std::map<std::string, std::pair<const Value *, SourceLoc>> slots;
};

using Fn = std::function<Value(const Bound &)>;
struct Builtin {
  std::vector<std::string> params;
  Fn fn;
};

Value tensorValue(NodePtr n) { return Value::ofTensor(std::move(n)); }

nn::Reduction reductionOf(const Bound &a) {
  std::string r = a.str("reduction", "mean");
  if (r == "mean")
    return nn::Reduction::Mean;
  if (r == "sum")
    return nn::Reduction::Sum;
  if (r == "none")
    return nn::Reduction::None;
  throw GraphError(a.locOf("reduction"), a.call.name +
                                             ": reduction must be \"mean\", "
                                             "\"sum\" or \"none\", got \"" +
                                             r + "\"");
}

/// A reduction: sum(x, dim=[..], keepdim=false).
Builtin reduction(ReduceOp op) {
  return {{"x", "dim", "keepdim"}, [op](const Bound &a) {
            return tensorValue(detail::reduce(op, a.tensor("x"), a.dims("dim"),
                                              a.flag("keepdim", false)));
          }};
}

/// max/min: of two operands element-wise, or a reduction of one.
Builtin extreme(bool isMax) {
  return {{"x", "other", "dim", "keepdim"}, [isMax](const Bound &a) {
            if (a.has("other")) {
              const Value &other = a.get("other");
              if (!other.isTensor() && !other.isNumber())
                a.wrong("other", "a tensor or a number");
              return elementwise(isMax ? BinaryOp::Maximum : BinaryOp::Minimum,
                                 a.get("x"), other, a.call.loc, a.call.name);
            }
            return tensorValue(detail::reduce(
                isMax ? ReduceOp::Max : ReduceOp::Min, a.tensor("x"),
                a.dims("dim"), a.flag("keepdim", false)));
          }};
}

int64_t single(const Bound &a, const std::string &name,
               std::optional<int64_t> fallback = std::nullopt) {
  return a.integer(name, fallback);
}

const std::map<std::string, Builtin> &table() {
  static const std::map<std::string, Builtin> builtins = [] {
    std::map<std::string, Builtin> t;
    // Element-wise ops of one operand, by the Tensor API's names.
    for (int i = 0; i <= int(UnaryOp::Angle); ++i) {
      UnaryOp op = static_cast<UnaryOp>(i);
      t[opName(op)] = {{"x"}, [op](const Bound &a) {
                         return tensorValue(detail::unary(op, a.tensor("x")));
                       }};
    }
    // ... and of two, under the shape rule.
    for (int i = 0; i <= int(BinaryOp::Complex); ++i) {
      BinaryOp op = static_cast<BinaryOp>(i);
      t[opName(op)] = {{"a", "b"}, [op](const Bound &a) {
                         return elementwise(op, a.get("a"), a.get("b"),
                                            a.call.loc, a.call.name);
                       }};
    }
    t["floordiv"] = t["idiv"];
    t["polar"] = {{"abs", "angle"}, [](const Bound &a) {
                    const SourceLoc &loc = a.call.loc;
                    const Value &r = a.get("abs"), &theta = a.get("angle");
                    auto part = [&](UnaryOp f) {
                      Value wave = tensorValue(atLoc(loc, [&] {
                        return detail::unary(
                            f, asTensor(theta, std::nullopt, loc, "angle"));
                      }));
                      return elementwise(BinaryOp::Mul, r, wave, loc, "polar");
                    };
                    return elementwise(BinaryOp::Complex, part(UnaryOp::Cos),
                                       part(UnaryOp::Sin), loc, "polar");
                  }};
    t["where"] = {
        {"condition", "a", "b"}, [](const Bound &a) {
          NodePtr c = a.tensor("condition");
          const Value &x = a.get("a"), &y = a.get("b");
          std::optional<DType> ref;
          if (x.isTensor())
            ref = detail::dtypeOf(x.tensor);
          else if (y.isTensor())
            ref = detail::dtypeOf(y.tensor);
          NodePtr tx =
              asTensor(x, ref ? std::optional(scalarDType(x, *ref)) : ref,
                       a.locOf("a"), "a");
          NodePtr ty =
              asTensor(y, ref ? std::optional(scalarDType(y, *ref)) : ref,
                       a.locOf("b"), "b");
          std::vector<int64_t> shape;
          for (const NodePtr &n : {c, tx, ty}) {
            const auto &s = detail::shapeOf(n);
            if (s.empty())
              continue;
            if (!shape.empty() && s != shape)
              throw GraphError(a.call.loc, "where: operand shapes " +
                                               shapeStr(shape) + " and " +
                                               shapeStr(s) +
                                               " differ; only 0-d scalars "
                                               "broadcast");
            shape = s;
          }
          return tensorValue(detail::where(c, tx, ty));
        }};
    t["cast"] = {{"x", "dtype"}, [](const Bound &a) {
                   return tensorValue(detail::cast(
                       a.tensor("x"), a.dtype("dtype", DType::F32)));
                 }};
    t["gelu"] = {{"x", "approximate"}, [](const Bound &a) {
                   std::string mode = a.str("approximate", "none");
                   if (mode != "none" && mode != "tanh")
                     throw GraphError(a.locOf("approximate"),
                                      "gelu: approximate must be \"none\" or "
                                      "\"tanh\", got \"" +
                                          mode + "\"");
                   return tensorValue(
                       detail::gelu(a.tensor("x"), mode == "tanh"));
                 }};
    t["silu"] = {{"x"}, [](const Bound &a) {
                   return tensorValue(detail::silu(a.tensor("x")));
                 }};
    t["elu"] = {{"x", "alpha"}, [](const Bound &a) {
                  return tensorValue(
                      detail::elu(a.tensor("x"), a.number("alpha", 1.0)));
                }};
    t["leaky_relu"] = {{"x", "negative_slope"}, [](const Bound &a) {
                         return tensorValue(detail::leakyRelu(
                             a.tensor("x"), a.number("negative_slope", 0.01)));
                       }};
    t["softplus"] = {{"x", "beta", "threshold"}, [](const Bound &a) {
                       return tensorValue(detail::softplus(
                           a.tensor("x"), a.number("beta", 1.0),
                           a.number("threshold", 20.0)));
                     }};
    t["clamp"] = {{"x", "min", "max"}, [](const Bound &a) {
                    return tensorValue(detail::clamp(
                        a.tensor("x"), a.optNumber("min"), a.optNumber("max")));
                  }};

    // Reductions.
    t["sum"] = reduction(ReduceOp::Sum);
    t["prod"] = reduction(ReduceOp::Prod);
    t["mean"] = reduction(ReduceOp::Mean);
    t["max"] = extreme(true);
    t["min"] = extreme(false);
    t["amax"] = reduction(ReduceOp::Max);
    t["amin"] = reduction(ReduceOp::Min);
    t["var"] = {{"x", "dim", "correction", "keepdim"}, [](const Bound &a) {
                  return tensorValue(detail::var(a.tensor("x"), a.dims("dim"),
                                                 a.integer("correction", 1),
                                                 a.flag("keepdim", false)));
                }};
    t["logsumexp"] = {{"x", "dim", "keepdim"}, [](const Bound &a) {
                        return tensorValue(
                            detail::logsumexp(a.tensor("x"), a.dims("dim"),
                                              a.flag("keepdim", false)));
                      }};
    t["softmax"] = {{"x", "dim"}, [](const Bound &a) {
                      return tensorValue(
                          detail::softmax(a.tensor("x"), single(a, "dim", -1)));
                    }};
    t["log_softmax"] = {{"x", "dim"}, [](const Bound &a) {
                          return tensorValue(detail::logSoftmax(
                              a.tensor("x"), single(a, "dim", -1)));
                        }};
    for (bool isMax : {true, false})
      t[isMax ? "argmax" : "argmin"] = {
          {"x", "dim", "keepdim"}, [isMax](const Bound &a) {
            return tensorValue(
                detail::argExtreme(a.tensor("x"), single(a, "dim"),
                                   a.flag("keepdim", false), isMax));
          }};
    t["norm"] = {{"x", "p", "dim", "keepdim"}, [](const Bound &a) {
                   return tensorValue(
                       detail::norm(a.tensor("x"), a.number("p", 2.0),
                                    a.dims("dim"), a.flag("keepdim", false)));
                 }};
    t["cumsum"] = {{"x", "dim"}, [](const Bound &a) {
                     return tensorValue(detail::scan(
                         ReduceOp::Sum, a.tensor("x"), single(a, "dim")));
                   }};
    t["cumprod"] = {{"x", "dim"}, [](const Bound &a) {
                      return tensorValue(detail::scan(
                          ReduceOp::Prod, a.tensor("x"), single(a, "dim")));
                    }};

    // Products.
    t["matmul"] = {{"a", "b"}, [](const Bound &a) {
                     return tensorValue(
                         detail::matmul(a.tensor("a"), a.tensor("b")));
                   }};
    t["dot"] = {{"a", "b"}, [](const Bound &a) {
                  return tensorValue(detail::dot(a.tensor("a"), a.tensor("b")));
                }};
    t["outer"] = {{"a", "b"}, [](const Bound &a) {
                    return tensorValue(
                        detail::outer(a.tensor("a"), a.tensor("b")));
                  }};

    // Views and data movement.
    t["reshape"] = {{"x", "shape"}, [](const Bound &a) {
                      return tensorValue(
                          detail::reshape(a.tensor("x"), a.ints("shape")));
                    }};
    t["permute"] = {{"x", "dims"}, [](const Bound &a) {
                      return tensorValue(
                          detail::permute(a.tensor("x"), a.ints("dims")));
                    }};
    t["transpose"] = {{"x", "dim0", "dim1"}, [](const Bound &a) {
                        NodePtr x = a.tensor("x");
                        int64_t rank = detail::shapeOf(x).size();
                        int64_t d0 = single(a, "dim0", rank - 2),
                                d1 = single(a, "dim1", rank - 1);
                        for (int64_t *d : {&d0, &d1}) {
                          if (*d < -rank || *d >= rank)
                            throw GraphError(a.call.loc,
                                             "transpose: dim " +
                                                 std::to_string(*d) +
                                                 " is out of range for rank " +
                                                 std::to_string(rank));
                          if (*d < 0)
                            *d += rank;
                        }
                        std::vector<int64_t> perm(rank);
                        for (int64_t i = 0; i < rank; ++i)
                          perm[i] = i;
                        std::swap(perm[d0], perm[d1]);
                        return tensorValue(detail::permute(x, perm));
                      }};
    t["expand"] = {{"x", "shape"}, [](const Bound &a) {
                     return tensorValue(
                         detail::expand(a.tensor("x"), a.ints("shape")));
                   }};
    t["broadcast_to"] = {{"x", "shape"}, [](const Bound &a) {
                           return tensorValue(detail::expand(
                               a.tensor("x"), a.ints("shape"), "broadcast_to"));
                         }};
    t["slice"] = {{"x", "dim", "start", "stop", "step"}, [](const Bound &a) {
                    NodePtr x = a.tensor("x");
                    int64_t dim = single(a, "dim");
                    int64_t rank = detail::shapeOf(x).size();
                    int64_t size =
                        dim >= -rank && dim < rank
                            ? detail::shapeOf(x)[dim < 0 ? dim + rank : dim]
                            : 0;
                    return tensorValue(detail::slice(
                        x, dim, single(a, "start", 0), single(a, "stop", size),
                        single(a, "step", 1)));
                  }};
    t["flip"] = {{"x", "dims"}, [](const Bound &a) {
                   return tensorValue(
                       detail::flip(a.tensor("x"), a.ints("dims")));
                 }};
    t["pad"] = {{"x", "before", "after", "value"}, [](const Bound &a) {
                  return tensorValue(
                      detail::pad(a.tensor("x"), a.ints("before"),
                                  a.ints("after"), a.number("value", 0.0)));
                }};
    t["concat"] = {{"tensors", "dim"}, [](const Bound &a) {
                     return tensorValue(detail::concat(a.tensors("tensors"),
                                                       single(a, "dim", 0)));
                   }};
    t["cat"] = t["concat"];
    t["stack"] = {{"tensors", "dim"}, [](const Bound &a) {
                    return tensorValue(detail::stack(a.tensors("tensors"),
                                                     single(a, "dim", 0)));
                  }};
    t["unsqueeze"] = {{"x", "dim"}, [](const Bound &a) {
                        NodePtr x = a.tensor("x");
                        std::vector<int64_t> shape = detail::shapeOf(x);
                        int64_t rank = shape.size(), dim = single(a, "dim");
                        if (dim < -rank - 1 || dim > rank)
                          throw GraphError(a.locOf("dim"),
                                           "unsqueeze: dim " +
                                               std::to_string(dim) +
                                               " is out of range for rank " +
                                               std::to_string(rank));
                        if (dim < 0)
                          dim += rank + 1;
                        shape.insert(shape.begin() + dim, 1);
                        return tensorValue(detail::reshape(x, shape));
                      }};
    t["squeeze"] = {{"x", "dim"}, [](const Bound &a) {
                      NodePtr x = a.tensor("x");
                      std::vector<int64_t> shape = detail::shapeOf(x), out;
                      int64_t rank = shape.size();
                      std::vector<int64_t> dims = a.dims("dim");
                      for (int64_t &d : dims) {
                        if (d < -rank || d >= rank)
                          throw GraphError(a.locOf("dim"),
                                           "squeeze: dim " + std::to_string(d) +
                                               " is out of range for rank " +
                                               std::to_string(rank));
                        if (d < 0)
                          d += rank;
                      }
                      for (int64_t i = 0; i < rank; ++i) {
                        bool listed = dims.empty() ||
                                      std::count(dims.begin(), dims.end(), i);
                        if (!(listed && shape[i] == 1))
                          out.push_back(shape[i]);
                      }
                      return tensorValue(detail::reshape(x, out));
                    }};
    t["flatten"] = {
        {"x", "start_dim", "end_dim"}, [](const Bound &a) {
          NodePtr x = a.tensor("x");
          std::vector<int64_t> shape = detail::shapeOf(x);
          int64_t rank = shape.size();
          if (rank == 0)
            return tensorValue(detail::reshape(x, {1}));
          int64_t s = single(a, "start_dim", 0), e = single(a, "end_dim", -1);
          if (s < 0)
            s += rank;
          if (e < 0)
            e += rank;
          if (s < 0 || e >= rank || s > e)
            throw GraphError(a.call.loc, "flatten: dims " + std::to_string(s) +
                                             " to " + std::to_string(e) +
                                             " are not a range of rank " +
                                             std::to_string(rank));
          std::vector<int64_t> out(shape.begin(), shape.begin() + s);
          int64_t merged = 1;
          for (int64_t i = s; i <= e; ++i)
            merged *= shape[i];
          out.push_back(merged);
          out.insert(out.end(), shape.begin() + e + 1, shape.end());
          return tensorValue(detail::reshape(x, out));
        }};
    t["contiguous"] = {{"x"}, [](const Bound &a) {
                         return tensorValue(detail::contiguous(a.tensor("x")));
                       }};
    t["tril"] = {{"x", "diagonal"}, [](const Bound &a) {
                   return tensorValue(detail::triangle(
                       a.tensor("x"), single(a, "diagonal", 0), true));
                 }};
    t["triu"] = {{"x", "diagonal"}, [](const Bound &a) {
                   return tensorValue(detail::triangle(
                       a.tensor("x"), single(a, "diagonal", 0), false));
                 }};
    t["roll"] = {{"x", "shifts", "dims"}, [](const Bound &a) {
                   return tensorValue(detail::roll(
                       a.tensor("x"), a.ints("shifts"), a.dims("dims")));
                 }};
    t["repeat"] = {{"x", "sizes"}, [](const Bound &a) {
                     return tensorValue(
                         detail::repeat(a.tensor("x"), a.ints("sizes")));
                   }};
    t["gather"] = {{"x", "dim", "index"}, [](const Bound &a) {
                     return tensorValue(detail::gather(
                         a.tensor("x"), a.tensor("index"), single(a, "dim")));
                   }};
    t["scatter_add"] = {{"x", "dim", "index", "src"}, [](const Bound &a) {
                          return tensorValue(detail::scatterAdd(
                              a.tensor("x"), a.tensor("index"), a.tensor("src"),
                              single(a, "dim")));
                        }};
    t["index_select"] = {
        {"x", "dim", "index"}, [](const Bound &a) {
          return tensorValue(detail::indexSelect(
              a.tensor("x"), single(a, "dim"), a.tensor("index")));
        }};
    t["unfold"] = {{"x", "kernel", "stride", "dilation"}, [](const Bound &a) {
                     std::vector<int64_t> kernel = a.ints("kernel");
                     std::vector<int64_t> ones(kernel.size(), 1);
                     auto spread = [&](std::vector<int64_t> v) {
                       return v.size() == 1 && kernel.size() > 1
                                  ? std::vector<int64_t>(kernel.size(), v[0])
                                  : v;
                     };
                     return tensorValue(detail::unfold(
                         a.tensor("x"), kernel, spread(a.ints("stride", ones)),
                         spread(a.ints("dilation", ones))));
                   }};
    t["fold"] = {
        {"x", "output_size", "stride", "dilation"}, [](const Bound &a) {
          std::vector<int64_t> size = a.ints("output_size");
          std::vector<int64_t> ones(size.size(), 1);
          auto spread = [&](std::vector<int64_t> v) {
            return v.size() == 1 && size.size() > 1
                       ? std::vector<int64_t>(size.size(), v[0])
                       : v;
          };
          return tensorValue(detail::fold(a.tensor("x"), size,
                                          spread(a.ints("stride", ones)),
                                          spread(a.ints("dilation", ones))));
        }};

    // Layers (torch.nn.functional's names and defaults).
    t["linear"] = {{"x", "weight", "bias"}, [](const Bound &a) {
                     return tensorValue(
                         detail::nn::linear(a.tensor("x"), a.tensor("weight"),
                                            a.optTensor("bias")));
                   }};
    t["conv"] = {
        {"x", "weight", "bias", "stride", "padding", "dilation", "groups"},
        [](const Bound &a) {
          nn::ConvOptions o;
          o.stride(a.ints("stride", {{1}}))
              .dilation(a.ints("dilation", {{1}}))
              .groups(a.integer("groups", 1));
          if (a.has("padding") &&
              a.get("padding").kind == Value::Kind::String) {
            std::string p = a.str("padding", "");
            if (p == "same")
              o.same();
            else if (p != "valid")
              throw GraphError(a.locOf("padding"),
                               "conv: padding must be integers, "
                               "\"same\" or \"valid\", got \"" +
                                   p + "\"");
          } else {
            o.padding(a.ints("padding", {{0}}));
          }
          return tensorValue(detail::nn::conv(a.tensor("x"), a.tensor("weight"),
                                              a.optTensor("bias"), o));
        }};
    t["conv_transpose"] = {
        {"x", "weight", "bias", "stride", "padding", "output_padding", "groups",
         "dilation"},
        [](const Bound &a) {
          nn::ConvTransposeOptions o;
          o.stride(a.ints("stride", {{1}}))
              .padding(a.ints("padding", {{0}}))
              .output_padding(a.ints("output_padding", {{0}}))
              .dilation(a.ints("dilation", {{1}}))
              .groups(a.integer("groups", 1));
          return tensorValue(detail::nn::convTranspose(
              a.tensor("x"), a.tensor("weight"), a.optTensor("bias"), o));
        }};
    auto pool = [](bool isMax) -> Builtin {
      return {
          {"x", "kernel_size", "stride", "padding", "dilation", "ceil_mode"},
          [isMax](const Bound &a) {
            nn::PoolOptions o(a.ints("kernel_size"));
            if (a.has("stride"))
              o.stride(a.ints("stride"));
            o.padding(a.ints("padding", {{0}}))
                .ceil_mode(a.flag("ceil_mode", false));
            if (isMax)
              o.dilation(a.ints("dilation", {{1}}));
            else if (a.has("dilation"))
              a.wrong("dilation", "absent (avg_pool has none)");
            return tensorValue(isMax ? detail::nn::maxPool(a.tensor("x"), o)
                                     : detail::nn::avgPool(a.tensor("x"), o));
          }};
    };
    t["max_pool"] = pool(true);
    t["avg_pool"] = pool(false);
    t["adaptive_avg_pool"] = {{"x", "output_size"}, [](const Bound &a) {
                                return tensorValue(detail::nn::adaptiveAvgPool(
                                    a.tensor("x"), a.ints("output_size")));
                              }};
    t["global_avg_pool"] = {{"x"}, [](const Bound &a) {
                              return tensorValue(
                                  detail::nn::globalAvgPool(a.tensor("x")));
                            }};
    t["layer_norm"] = {
        {"x", "normalized_shape", "weight", "bias", "eps"}, [](const Bound &a) {
          return tensorValue(detail::nn::layerNorm(
              a.tensor("x"), a.ints("normalized_shape"), a.optTensor("weight"),
              a.optTensor("bias"), a.number("eps", 1e-5)));
        }};
    t["group_norm"] = {
        {"x", "num_groups", "weight", "bias", "eps"}, [](const Bound &a) {
          return tensorValue(detail::nn::groupNorm(
              a.tensor("x"), a.integer("num_groups"), a.optTensor("weight"),
              a.optTensor("bias"), a.number("eps", 1e-5)));
        }};
    t["embedding"] = {{"indices", "weight"}, [](const Bound &a) {
                        return tensorValue(detail::nn::embedding(
                            a.tensor("indices"), a.tensor("weight")));
                      }};
    t["one_hot"] = {{"indices", "num_classes"}, [](const Bound &a) {
                      return tensorValue(detail::nn::oneHot(
                          a.tensor("indices"), a.integer("num_classes")));
                    }};
    t["cross_entropy"] = {{"input", "target", "reduction"}, [](const Bound &a) {
                            nn::CrossEntropyOptions o;
                            o.reduction(reductionOf(a));
                            return tensorValue(detail::nn::crossEntropy(
                                a.tensor("input"), a.tensor("target"), o));
                          }};
    t["mse_loss"] = {
        {"input", "target", "reduction"}, [](const Bound &a) {
          return tensorValue(detail::nn::mseLoss(
              a.tensor("input"), a.tensor("target"), reductionOf(a)));
        }};
    t["l1_loss"] = {{"input", "target", "reduction"}, [](const Bound &a) {
                      return tensorValue(detail::nn::l1Loss(a.tensor("input"),
                                                            a.tensor("target"),
                                                            reductionOf(a)));
                    }};

    // Sources.
    auto source = [](std::optional<double> value) -> Builtin {
      std::vector<std::string> params = {"shape"};
      if (!value)
        params.push_back("value");
      params.push_back("dtype");
      return {params, [value](const Bound &a) {
                if (!value && a.get("value").kind == Value::Kind::Complex)
                  return tensorValue(filled(a.dtype("dtype", DType::C64),
                                            a.ints("shape"), a.get("value"),
                                            a.locOf("value")));
                double v = value ? *value : a.number("value");
                DType fallback =
                    !value && a.get("value").kind == Value::Kind::Int
                        ? DType::I64
                        : DType::F32;
                return tensorValue(detail::full(a.dtype("dtype", fallback),
                                                a.ints("shape"), v));
              }};
    };
    t["zeros"] = source(0.0);
    t["ones"] = source(1.0);
    t["full"] = source(std::nullopt);
    t["arange"] = {
        {"start", "end", "step", "dtype"}, [](const Bound &a) {
          // arange(n) counts 0..n-1; arange(a, b, step) as torch.
          double start = 0, end, step = a.number("step", 1.0);
          if (a.has("end")) {
            start = a.number("start");
            end = a.number("end");
          } else {
            end = a.number("start");
          }
          if (step == 0)
            throw GraphError(a.locOf("step"), "arange: step must not be 0");
          bool integral = true;
          for (const char *n : {"start", "end", "step"})
            if (a.has(n) && a.get(n).kind == Value::Kind::Float)
              integral = false;
          double span = std::ceil((end - start) / step);
          if (!std::isfinite(span) || span > double(1LL << 40))
            throw GraphError(a.call.loc,
                             "arange: too many elements (from " +
                                 Value::ofFloat(start).describe() + " to " +
                                 Value::ofFloat(end).describe() + " by " +
                                 Value::ofFloat(step).describe() + ")");
          int64_t count = span > 0 ? int64_t(span) : 0;
          return tensorValue(detail::arange(
              a.dtype("dtype", integral ? DType::I64 : DType::F32), count,
              start, step));
        }};
    t["rand"] = {{"shape", "seed", "dtype"}, [](const Bound &a) {
                   return tensorValue(detail::rand(
                       a.dtype("dtype", DType::F32), a.ints("shape"),
                       uint64_t(a.integer("seed", 0))));
                 }};
    t["randn"] = {{"shape", "seed", "dtype"}, [](const Bound &a) {
                    return tensorValue(detail::randn(
                        a.dtype("dtype", DType::F32), a.ints("shape"),
                        uint64_t(a.integer("seed", 0))));
                  }};
    return t;
  }();
  return builtins;
}
} // namespace

bool harp::graph::isBuiltin(const std::string &name) {
  return table().count(name);
}

Value harp::graph::callBuiltin(const CallArgs &call) {
  const Builtin &builtin = table().at(call.name);
  Bound bound(call, builtin.params);
  return atLoc(call.loc, [&] { return builtin.fn(bound); });
}

std::vector<std::string> harp::graph::builtinNames() {
  std::vector<std::string> names;
  for (const auto &[name, builtin] : table())
    names.push_back(name);
  return names;
}
