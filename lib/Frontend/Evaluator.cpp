//===- Evaluator.cpp - graphs evaluated on Tensor API nodes ---------------===//

#include "Evaluator.h"

#include <cmath>
#include <cstdint>

using namespace harp;
using namespace harp::graph;
using detail::NodePtr;
using detail::shapeStr;

static std::string typeStr(DType d, const std::vector<int64_t> &shape) {
  return dtypeName(d) + shapeStr(shape);
}

Evaluator::Evaluator(const ProgramImpl &program, unsigned maxDepth)
    : program(program), maxDepth(maxDepth) {
  if (maxDepth > kMaxDepthLimit)
    throw Error("the depth limit of graph calls is at most " +
                std::to_string(kMaxDepthLimit) + ", got " +
                std::to_string(maxDepth));
}

std::string harp::graph::frameName(const std::string &graph,
                                   const Bindings &bindings) {
  std::string dims;
  for (const auto &[symbol, size] : bindings)
    dims += (dims.empty() ? "" : ", ") + symbol + "=" + std::to_string(size);
  return dims.empty() ? graph : graph + "(" + dims + ")";
}

std::vector<int64_t> Evaluator::shapeOf(const ParamSpec &p,
                                        const Bindings &bindings) {
  std::vector<int64_t> shape;
  for (const DimSpec &d : p.dims)
    shape.push_back(d.symbol.empty() ? d.size : bindings.at(d.symbol));
  return shape;
}

Bindings Evaluator::bind(const GraphDef &g, std::vector<Value> &args,
                         const SourceLoc &callLoc, Bindings given) const {
  const GraphSignature &sig = g.signature;
  if (args.size() != sig.inputs.size())
    throw GraphError(callLoc,
                     "graph '" + sig.name + "' takes " +
                         std::to_string(sig.inputs.size()) +
                         (sig.inputs.size() == 1 ? " input" : " inputs") +
                         ", got " + std::to_string(args.size()),
                     {{sig.loc, "'" + sig.name + "' is defined here"}});
  Bindings bindings = std::move(given);
  std::map<std::string, std::string> boundBy;
  for (const auto &[symbol, size] : bindings)
    boundBy[symbol] = "the bindings given";
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamSpec &p = sig.inputs[i];
    Value &arg = args[i];
    if (arg.isNumber() && p.dims.empty()) {
      // A number stands for a 0-d input when its kind fits the dtype; it
      // is never rounded or narrowed to bool.
      bool fits = isComplex(p.dtype) ? arg.kind != Value::Kind::Bool
                  : arg.kind == Value::Kind::Complex ? false
                  : isFloat(p.dtype)                 ? true
                  : p.dtype == DType::Bool ? arg.kind == Value::Kind::Bool
                                           : arg.kind != Value::Kind::Float;
      if (!fits)
        throw GraphError(callLoc, "graph '" + sig.name + "': input '" + p.name +
                                      "' is " + p.typeStr() + ", got " +
                                      arg.describe());
      arg = Value::ofTensor(asTensor(arg, p.dtype, callLoc, p.name));
    }
    if (!arg.isTensor())
      throw GraphError(callLoc, "graph '" + sig.name + "': input '" + p.name +
                                    "' must be a tensor " + p.typeStr() +
                                    ", got " + arg.describe());
    DType dtype = detail::dtypeOf(arg.tensor);
    const std::vector<int64_t> &shape = detail::shapeOf(arg.tensor);
    auto mismatch = [&](const std::string &why) {
      return GraphError(callLoc,
                        "graph '" + sig.name + "': input '" + p.name +
                            "' is declared " + p.typeStr() +
                            " but the argument is " + typeStr(dtype, shape) +
                            " (" + why + ")",
                        {{p.loc, "'" + p.name + "' is declared here"}});
    };
    if (dtype != p.dtype)
      throw mismatch("dtype " + dtypeName(dtype) + " is not " +
                     dtypeName(p.dtype) + "; convert it with cast");
    if (shape.size() != p.dims.size())
      throw mismatch("rank " + std::to_string(shape.size()) + " is not " +
                     std::to_string(p.dims.size()));
    for (size_t d = 0; d < shape.size(); ++d) {
      const DimSpec &spec = p.dims[d];
      if (spec.symbol.empty()) {
        if (spec.size != shape[d])
          throw mismatch("dim " + std::to_string(d) + " is " +
                         std::to_string(shape[d]) + ", not " +
                         std::to_string(spec.size));
        continue;
      }
      auto [it, fresh] = bindings.insert({spec.symbol, shape[d]});
      if (fresh) {
        boundBy[spec.symbol] = "input '" + p.name + "'";
      } else if (it->second != shape[d]) {
        throw mismatch("dim " + std::to_string(d) + " is " +
                       std::to_string(shape[d]) + ", but " + spec.symbol +
                       " = " + std::to_string(it->second) + " from " +
                       boundBy[spec.symbol]);
      }
    }
  }
  return bindings;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

struct Evaluator::Scope {
  const GraphDef &graph;
  const Bindings &bindings;
  std::vector<Frame> &chain;
  std::map<std::string, std::pair<Value, SourceLoc>> names;
  std::map<std::string, NodePtr> outputs;
  std::map<std::string, SourceLoc> assignedAt;
};

std::vector<NodePtr> Evaluator::execute(const GraphDef &g,
                                        const Bindings &bindings,
                                        const std::vector<NodePtr> &inputs,
                                        std::vector<Frame> &chain) {
  const GraphSignature &sig = g.signature;
  Scope scope{g, bindings, chain, {}, {}, {}};
  for (const auto &[symbol, size] : bindings)
    scope.names[symbol] = {Value::ofInt(size), sig.loc};
  for (size_t i = 0; i < inputs.size(); ++i)
    scope.names[sig.inputs[i].name] = {Value::ofTensor(inputs[i]),
                                       sig.inputs[i].loc};
  run(g.body, scope);
  std::vector<NodePtr> results;
  for (const ParamSpec &p : sig.outputs) {
    auto it = scope.outputs.find(p.name);
    if (it == scope.outputs.end())
      throw GraphError(p.loc, "graph '" + sig.name +
                                  "' never assigns its output '" + p.name +
                                  "'");
    results.push_back(it->second);
  }
  return results;
}

void Evaluator::run(const Block &block, Scope &scope) {
  const GraphSignature &sig = scope.graph.signature;
  auto define = [&](const std::string &name, const SourceLoc &loc,
                    Value value) {
    for (const ParamSpec &p : sig.outputs)
      if (p.name == name)
        throw GraphError(loc, "'" + name + "' is an output of graph '" +
                                  sig.name + "'; assign it with '" + name +
                                  " = ...', without let");
    auto it = scope.names.find(name);
    if (it != scope.names.end())
      throw GraphError(
          loc, "'" + name + "' is already defined in graph '" + sig.name + "'",
          {{it->second.second, "defined here"}});
    scope.names[name] = {std::move(value), loc};
  };
  for (const Stmt &s : block) {
    switch (s.kind) {
    case Stmt::Kind::Let: {
      Value v = eval(*s.value, scope);
      if (v.kind == Value::Kind::Tuple)
        throw GraphError(s.value->loc,
                         "'" + s.value->text + "' returns " +
                             std::to_string(v.items.size()) +
                             " values; unpack them with let (a, b, ...) = ...");
      define(s.names[0].first, s.names[0].second, std::move(v));
      break;
    }
    case Stmt::Kind::LetTuple: {
      Value v = eval(*s.value, scope);
      if (v.kind != Value::Kind::Tuple)
        throw GraphError(s.value->loc,
                         "let (...) unpacks the outputs of a graph call, got " +
                             v.describe() + "; bind one value with let " +
                             s.names[0].first + " = ...");
      size_t count = v.items.size();
      if (count != s.names.size())
        throw GraphError(s.loc, "cannot unpack " + std::to_string(count) +
                                    (count == 1 ? " value" : " values") +
                                    " into " + std::to_string(s.names.size()) +
                                    " names");
      for (size_t i = 0; i < s.names.size(); ++i)
        define(s.names[i].first, s.names[i].second, v.items[i]);
      break;
    }
    case Stmt::Kind::Assign: {
      const auto &[name, loc] = s.names[0];
      const ParamSpec *out = nullptr;
      for (const ParamSpec &p : sig.outputs)
        if (p.name == name)
          out = &p;
      if (!out)
        throw GraphError(loc, "'" + name + "' is not an output of graph '" +
                                  sig.name + "'; define a local with 'let " +
                                  name + " = ...'");
      if (auto it = scope.assignedAt.find(name); it != scope.assignedAt.end())
        throw GraphError(loc, "output '" + name + "' is assigned twice",
                         {{it->second, "first assigned here"}});
      Value v = eval(*s.value, scope);
      std::vector<int64_t> shape = shapeOf(*out, scope.bindings);
      NodePtr node;
      if (v.isNumber()) {
        // A number fills the output, as a scalar broadcasts.
        node = filled(out->dtype, shape, v, s.value->loc);
      } else if (v.isTensor()) {
        node = v.tensor;
      } else {
        throw GraphError(s.value->loc, "output '" + name +
                                           "' must be a "
                                           "tensor, got " +
                                           v.describe());
      }
      DType dtype = detail::dtypeOf(node);
      const std::vector<int64_t> &actual = detail::shapeOf(node);
      if (dtype != out->dtype || actual != shape)
        throw GraphError(loc,
                         "output '" + name + "' is declared " + out->typeStr() +
                             (out->typeStr() == typeStr(out->dtype, shape)
                                  ? std::string()
                                  : " = " + typeStr(out->dtype, shape)) +
                             " but is assigned " + typeStr(dtype, actual) +
                             (dtype != out->dtype
                                  ? " (convert with cast)"
                                  : " (shapes are explicit: reshape or "
                                    "expand it)"),
                         {{out->loc, "declared here"}});
      scope.outputs[name] = node;
      scope.assignedAt[name] = loc;
      scope.names[name] = {Value::ofTensor(node), loc};
      break;
    }
    case Stmt::Kind::If: {
      Value c = eval(*s.value, scope);
      if (c.kind != Value::Kind::Bool)
        throw GraphError(s.value->loc,
                         "the condition of 'if' must be known when the graph "
                         "is built (compare dims and numbers), got " +
                             c.describe());
      run(c.boolValue ? s.thenBlock : s.elseBlock, scope);
      break;
    }
    }
  }
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

namespace {
/// Counts the evaluator's recursion (expressions within expressions, graph
/// calls within calls) so that no program exhausts the stack.
struct DepthGuard {
  static constexpr unsigned kMaxEvalDepth = 2000;
  unsigned &depth;
  DepthGuard(unsigned &depth, const SourceLoc &loc) : depth(depth) {
    if (++depth > kMaxEvalDepth) {
      --depth;
      throw GraphError(loc, "the program nests too deeply to evaluate (more "
                            "than " +
                                std::to_string(kMaxEvalDepth) +
                                " levels of expressions and graph calls)");
    }
  }
  ~DepthGuard() { --depth; }
};
} // namespace

Value Evaluator::eval(const Expr &e, Scope &scope) {
  DepthGuard guard(evalDepth, e.loc);
  switch (e.kind) {
  case Expr::Kind::Int:
    return Value::ofInt(e.intValue);
  case Expr::Kind::Float:
    return Value::ofFloat(e.floatValue);
  case Expr::Kind::Imag:
    return Value::ofComplex({0.0, e.floatValue});
  case Expr::Kind::Bool:
    return Value::ofBool(e.boolValue);
  case Expr::Kind::String: {
    Value v;
    v.kind = Value::Kind::String;
    v.text = e.text;
    return v;
  }
  case Expr::Kind::Name: {
    auto it = scope.names.find(e.text);
    if (it != scope.names.end())
      return it->second.first;
    if (std::optional<DType> d = dtypeNamed(e.text)) {
      Value v;
      v.kind = Value::Kind::DType;
      v.dtype = *d;
      return v;
    }
    for (const ParamSpec &p : scope.graph.signature.outputs)
      if (p.name == e.text)
        throw GraphError(e.loc, "output '" + e.text +
                                    "' is read before it is assigned");
    throw GraphError(e.loc, "undefined name '" + e.text + "' in graph '" +
                                scope.graph.signature.name + "'");
  }
  case Expr::Kind::List: {
    Value v;
    v.kind = Value::Kind::List;
    for (const ExprPtr &item : e.operands) {
      Value x = eval(*item, scope);
      if (x.kind == Value::Kind::Tuple)
        throw GraphError(item->loc,
                         "a list item must be one value, got " + x.describe());
      v.items.push_back(std::move(x));
    }
    return v;
  }
  case Expr::Kind::Unary: {
    Value x = eval(*e.operands[0], scope);
    if (e.unOp == UnOp::Neg) {
      if (x.kind == Value::Kind::Int) {
        if (x.intValue == INT64_MIN)
          throw GraphError(e.loc, "integer overflow in '-'");
        return Value::ofInt(-x.intValue);
      }
      if (x.kind == Value::Kind::Float)
        return Value::ofFloat(-x.floatValue);
      if (x.kind == Value::Kind::Complex)
        return Value::ofComplex(-x.complexNumber());
      if (x.isTensor())
        return atLoc(e.loc, [&] {
          return Value::ofTensor(detail::unary(UnaryOp::Neg, x.tensor));
        });
      throw GraphError(e.loc, "cannot negate " + x.describe());
    }
    if (x.kind == Value::Kind::Bool)
      return Value::ofBool(!x.boolValue);
    if (x.isTensor() && detail::dtypeOf(x.tensor) == DType::Bool)
      return atLoc(e.loc, [&] {
        return Value::ofTensor(detail::unary(UnaryOp::Not, x.tensor));
      });
    throw GraphError(e.loc,
                     "'!' needs a bool or a bool tensor, got " + x.describe());
  }
  case Expr::Kind::Binary:
    return evalBinary(e, scope);
  case Expr::Kind::Call:
    return evalCall(e, scope);
  }
  return Value();
}

/// Python's floor division and modulo of integers.
static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// `x op y` of two numbers, one of them complex, computed while building.
static Value foldComplex(const Expr &e, const std::string &what,
                         std::complex<double> x, std::complex<double> y) {
  switch (e.binOp) {
  case BinOp::Eq:
    return Value::ofBool(x == y);
  case BinOp::Ne:
    return Value::ofBool(x != y);
  case BinOp::Add:
    return Value::ofComplex(x + y);
  case BinOp::Sub:
    return Value::ofComplex(x - y);
  case BinOp::Mul:
    return Value::ofComplex(x * y);
  case BinOp::Div:
    return Value::ofComplex(x / y);
  case BinOp::Pow:
    return Value::ofComplex(std::pow(x, y));
  default:
    throw GraphError(e.loc, what + " is not defined for complex numbers");
  }
}

Value Evaluator::evalBinary(const Expr &e, Scope &scope) {
  Value a = eval(*e.operands[0], scope);
  Value b = eval(*e.operands[1], scope);
  std::string what = std::string("'") + spelling(e.binOp) + "'";
  for (const Value *v : {&a, &b})
    if (!v->isTensor() && !v->isNumber())
      throw GraphError(e.loc, what + " cannot take " + v->describe());
  if (!a.isTensor() && !b.isTensor()) {
    // Numbers known while building: computed now.
    bool logical = e.binOp == BinOp::And || e.binOp == BinOp::Or;
    if (logical) {
      if (a.kind != Value::Kind::Bool || b.kind != Value::Kind::Bool)
        throw GraphError(e.loc, what + " needs bools, got " + a.describe() +
                                    " and " + b.describe());
      return Value::ofBool(e.binOp == BinOp::And ? a.boolValue && b.boolValue
                                                 : a.boolValue || b.boolValue);
    }
    if (a.kind == Value::Kind::Bool || b.kind == Value::Kind::Bool) {
      if (e.binOp == BinOp::Eq || e.binOp == BinOp::Ne)
        if (a.kind == b.kind)
          return Value::ofBool((a.boolValue == b.boolValue) ==
                               (e.binOp == BinOp::Eq));
      throw GraphError(e.loc, what + " cannot take a bool; use && and ||");
    }
    if (a.kind == Value::Kind::Complex || b.kind == Value::Kind::Complex)
      return foldComplex(e, what, a.complexNumber(), b.complexNumber());
    bool ints = a.kind == Value::Kind::Int && b.kind == Value::Kind::Int;
    double x = a.number(), y = b.number();
    int64_t i = a.intValue, j = b.intValue, r = 0;
    auto overflow = [&]() {
      return GraphError(e.loc, "integer overflow in " + what);
    };
    // Integers compare exactly (doubles lose them above 2^53).
    auto compare = [&](auto op) {
      return Value::ofBool(ints ? op(i, j) : op(x, y));
    };
    switch (e.binOp) {
    case BinOp::Eq:
      return compare([](auto p, auto q) { return p == q; });
    case BinOp::Ne:
      return compare([](auto p, auto q) { return p != q; });
    case BinOp::Lt:
      return compare([](auto p, auto q) { return p < q; });
    case BinOp::Le:
      return compare([](auto p, auto q) { return p <= q; });
    case BinOp::Gt:
      return compare([](auto p, auto q) { return p > q; });
    case BinOp::Ge:
      return compare([](auto p, auto q) { return p >= q; });
    case BinOp::Add:
      if (!ints)
        return Value::ofFloat(x + y);
      if (__builtin_add_overflow(i, j, &r))
        throw overflow();
      return Value::ofInt(r);
    case BinOp::Sub:
      if (!ints)
        return Value::ofFloat(x - y);
      if (__builtin_sub_overflow(i, j, &r))
        throw overflow();
      return Value::ofInt(r);
    case BinOp::Mul:
      if (!ints)
        return Value::ofFloat(x * y);
      if (__builtin_mul_overflow(i, j, &r))
        throw overflow();
      return Value::ofInt(r);
    case BinOp::Div:
    case BinOp::Mod:
      if (ints) {
        if (j == 0)
          throw GraphError(e.loc, e.binOp == BinOp::Div
                                      ? "integer division by zero"
                                      : "integer modulo by zero");
        if (i == INT64_MIN && j == -1)
          throw overflow();
        int64_t q = floorDiv(i, j);
        return Value::ofInt(e.binOp == BinOp::Div ? q : i - q * j);
      }
      return Value::ofFloat(e.binOp == BinOp::Div ? x / y
                                                  : x - std::floor(x / y) * y);
    case BinOp::Pow:
      if (ints && j >= 0) {
        // By squaring, each step checked.
        int64_t result = 1, base = i;
        for (int64_t k = j; k > 0; k >>= 1) {
          if ((k & 1) && __builtin_mul_overflow(result, base, &result))
            throw overflow();
          if (k > 1 && __builtin_mul_overflow(base, base, &base))
            throw overflow();
        }
        return Value::ofInt(result);
      }
      return Value::ofFloat(std::pow(x, y));
    case BinOp::MatMul:
      throw GraphError(e.loc, "'@' needs tensors, got " + a.describe() +
                                  " and " + b.describe());
    default:
      break;
    }
  }
  BinaryOp op = BinaryOp::Add;
  switch (e.binOp) {
  case BinOp::MatMul:
    if (!a.isTensor() || !b.isTensor())
      throw GraphError(e.loc, "'@' needs tensors, got " + a.describe() +
                                  " and " + b.describe());
    return atLoc(e.loc, [&] {
      return Value::ofTensor(detail::matmul(a.tensor, b.tensor));
    });
  case BinOp::Or:
  case BinOp::And:
    for (const Value *v : {&a, &b})
      if (!(v->isTensor() && detail::dtypeOf(v->tensor) == DType::Bool) &&
          v->kind != Value::Kind::Bool)
        throw GraphError(e.loc,
                         what + " needs bool operands, got " + v->describe());
    op = e.binOp == BinOp::And ? BinaryOp::BitAnd : BinaryOp::BitOr;
    break;
  case BinOp::Eq:
    op = BinaryOp::Eq;
    break;
  case BinOp::Ne:
    op = BinaryOp::Ne;
    break;
  case BinOp::Lt:
    op = BinaryOp::Lt;
    break;
  case BinOp::Le:
    op = BinaryOp::Le;
    break;
  case BinOp::Gt:
    op = BinaryOp::Gt;
    break;
  case BinOp::Ge:
    op = BinaryOp::Ge;
    break;
  case BinOp::Add:
    op = BinaryOp::Add;
    break;
  case BinOp::Sub:
    op = BinaryOp::Sub;
    break;
  case BinOp::Mul:
    op = BinaryOp::Mul;
    break;
  case BinOp::Div:
    op = BinaryOp::Div;
    break;
  case BinOp::Mod:
    op = BinaryOp::Mod;
    break;
  case BinOp::Pow:
    op = BinaryOp::Pow;
    break;
  }
  return elementwise(op, a, b, e.loc, what);
}

Value Evaluator::evalCall(const Expr &e, Scope &scope) {
  CallArgs call;
  call.name = e.text;
  call.loc = e.loc;
  for (const ExprPtr &arg : e.operands) {
    Value v = eval(*arg, scope);
    if (v.kind == Value::Kind::Tuple)
      throw GraphError(arg->loc, "an argument must be one value, got " +
                                     v.describe() + "; unpack them with let");
    call.positional.push_back(std::move(v));
    call.positionalLocs.push_back(arg->loc);
  }
  for (size_t i = 0; i < e.keywords.size(); ++i) {
    call.keywords.push_back(
        {e.keywords[i].first, eval(*e.keywords[i].second, scope)});
    call.keywordLocs.push_back(e.keywordLocs[i]);
  }
  const GraphDef *callee = program.find(e.text);
  if (!callee)
    return callBuiltin(call);

  // A subgraph: keywords name its inputs.
  const GraphSignature &sig = callee->signature;
  if (call.positional.size() > sig.inputs.size() ||
      call.positional.size() + call.keywords.size() < sig.inputs.size())
    throw GraphError(
        e.loc,
        "graph '" + sig.name + "' takes " + std::to_string(sig.inputs.size()) +
            (sig.inputs.size() == 1 ? " input" : " inputs") + ", got " +
            std::to_string(call.positional.size() + call.keywords.size()),
        {{sig.loc, "'" + sig.name + "' is defined here"}});
  std::vector<Value> args = call.positional;
  args.resize(sig.inputs.size()); // No more positional ones (checked above).
  std::vector<bool> given(args.size(), false);
  for (size_t i = 0; i < call.positional.size(); ++i)
    given[i] = true;
  for (size_t k = 0; k < call.keywords.size(); ++k) {
    const std::string &key = call.keywords[k].first;
    size_t i = 0;
    while (i < sig.inputs.size() && sig.inputs[i].name != key)
      ++i;
    if (i == sig.inputs.size())
      throw GraphError(call.keywordLocs[k],
                       "graph '" + sig.name + "' has no input '" + key + "'");
    if (given[i])
      throw GraphError(call.keywordLocs[k], "input '" + key + "' of graph '" +
                                                sig.name + "' is given twice");
    args[i] = call.keywords[k].second;
    given[i] = true;
  }
  Bindings bindings = bind(*callee, args, e.loc);

  std::string frame = frameName(sig.name, bindings);
  // The chain with this call, as the errors below name it.
  auto path = [&] {
    std::string text;
    for (const Frame &f : scope.chain)
      text += f.graph + " -> ";
    return text + frame;
  };
  for (const Frame &f : scope.chain)
    if (f.graph == frame)
      throw GraphError(e.loc,
                       "graph '" + sig.name +
                           "' calls itself with the same dims: " + path() +
                           " would never end (an if on the dims ends "
                           "a recursion)");
  // The chain starts with the graph evaluated first (depth 0).
  if (scope.chain.size() > maxDepth)
    throw GraphError(e.loc, "graph calls nest deeper than the limit of " +
                                std::to_string(maxDepth) + ": " + path() +
                                " (raise the limit with --max-depth or "
                                "max_depth=)");
  scope.chain.push_back({frame, e.loc});
  std::vector<NodePtr> inputs;
  for (const Value &v : args)
    inputs.push_back(v.tensor);
  std::vector<NodePtr> results =
      callGraph(*callee, bindings, inputs, scope.chain);
  scope.chain.pop_back();
  if (results.size() == 1)
    return Value::ofTensor(results[0]);
  Value tuple;
  tuple.kind = Value::Kind::Tuple;
  for (NodePtr &r : results)
    tuple.items.push_back(Value::ofTensor(std::move(r)));
  return tuple;
}

//===----------------------------------------------------------------------===//
// Program::call
//===----------------------------------------------------------------------===//

std::vector<NodePtr> Program::call(const std::string &graph,
                                   const std::vector<NodePtr> &args,
                                   const EvalOptions &options) const {
  const GraphDef *g = impl_->find(graph);
  if (!g)
    signature(graph); // throws, listing the graphs
  InlineEvaluator evaluator(*impl_, options.maxDepth);
  std::vector<Value> values;
  for (const NodePtr &a : args)
    values.push_back(Value::ofTensor(a));
  Bindings bindings = evaluator.bind(*g, values, g->signature.loc);
  std::vector<NodePtr> inputs;
  for (const Value &v : values)
    inputs.push_back(v.tensor);
  std::vector<Frame> chain = {{frameName(graph, bindings), g->signature.loc}};
  return evaluator.execute(*g, bindings, inputs, chain);
}
