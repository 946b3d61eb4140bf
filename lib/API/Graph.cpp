//===- Graph.cpp - the lazy graph behind harp::Tensor ---------------------===//

#include "harp/API/Graph.h"

#include "harp/Runtime/Cuda.h"
#include "harp/Runtime/Jit.h"
#include "harp/Target/CPU.h"

#include "llvm/Support/Error.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

using namespace harp;
using namespace harp::detail;

//===----------------------------------------------------------------------===//
// DTypes
//===----------------------------------------------------------------------===//

std::string harp::dtypeName(DType d) {
  static const char *names[] = {"bool", "i8",  "i16", "i32", "i64", "u8",
                                "u16",  "u32", "u64", "f32", "f64"};
  return names[static_cast<int>(d)];
}

ElementKind harp::elementKindOf(DType d) {
  switch (d) {
  case DType::Bool:
    return ElementKind::I1;
  case DType::I8:
  case DType::U8:
    return ElementKind::I8;
  case DType::I16:
  case DType::U16:
    return ElementKind::I16;
  case DType::I32:
  case DType::U32:
    return ElementKind::I32;
  case DType::I64:
  case DType::U64:
    return ElementKind::I64;
  case DType::F32:
    return ElementKind::F32;
  case DType::F64:
    return ElementKind::F64;
  }
  return ElementKind::F32;
}

/// The MLIR element type (signless for unsigned dtypes).
static std::string elt(DType d) {
  if (isFloat(d))
    return dtypeName(d);
  return "i" + std::to_string(widthOf(d));
}

static std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

static std::string tensorType(const std::vector<int64_t> &shape, DType d) {
  std::string s = "tensor<";
  for (int64_t n : shape)
    s += std::to_string(n) + "x";
  return s + elt(d) + ">";
}

static int64_t numElements(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

struct harp::detail::Node {
  enum class Kind {
    Leaf,
    Full,
    Arange,
    Rand,
    Map,
    Reduce,
    View,
    Concat,
    Contiguous,
    Gather,
    ScatterAdd
  };
  Kind kind;
  std::vector<NodePtr> inputs;
  std::vector<int64_t> shape;
  DType dtype;
  std::string body;       // Map: region text over %a0.., defining %r
  std::string reduceKind; // Reduce
  std::vector<int64_t> dims;
  bool keepdim = false;
  std::string layout; // View: "<map, ...>"
  double value = 0, step = 0;
  uint64_t seed = 0;
  int64_t dim = 0;
  std::optional<Array> data; // a leaf's data, or the realized value
  /// When `data` was set: a leaf's values, or a realization. A realized
  /// value is fresh while no leaf below it has newer values.
  uint64_t epoch = 0;
  bool hasValues = true; // false for an input() before setData()
  std::string name;      // an input's name
  bool requiresGrad = false;
  std::optional<Array> gradient;
  /// Where the node is computed; null for a node that follows its users
  /// (constants, coerced scalars).
  BackendPtr backend;
};

using Kind = Node::Kind;

/// Orders data changes and realizations.
static uint64_t nextEpoch() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

/// The newest leaf values `n` depends on.
static uint64_t newestLeaf(const Node *n,
                           std::map<const Node *, uint64_t> &memo) {
  if (n->kind == Node::Kind::Leaf)
    return n->epoch;
  if (auto it = memo.find(n); it != memo.end())
    return it->second;
  uint64_t newest = 0;
  for (const NodePtr &in : n->inputs)
    newest = std::max(newest, newestLeaf(in.get(), memo));
  return memo[n] = newest;
}

/// Whether `n` holds a value computed from its leaves' current values.
static bool isFresh(const Node *n, std::map<const Node *, uint64_t> &memo) {
  if (!n->data)
    return false;
  return n->kind == Node::Kind::Leaf || n->epoch >= newestLeaf(n, memo);
}

/// The backend shared by `inputs` (null if none has one); `op` names the
/// operation in the error when they are on different devices.
static BackendPtr commonBackend(const std::string &op,
                                const std::vector<NodePtr> &inputs) {
  BackendPtr common;
  for (const NodePtr &in : inputs) {
    if (!in->backend || in->backend == common)
      continue;
    if (common)
      throw Error(op + ": operands are on different devices (" +
                  common->name() + " and " + in->backend->name() +
                  "); move one with to()");
    common = in->backend;
  }
  return common;
}

static NodePtr make(Kind kind, std::vector<int64_t> shape, DType dtype,
                    std::vector<NodePtr> inputs = {}) {
  auto n = std::make_shared<Node>();
  n->kind = kind;
  n->shape = std::move(shape);
  n->dtype = dtype;
  n->backend = commonBackend("harp", inputs);
  n->inputs = std::move(inputs);
  return n;
}

const std::vector<int64_t> &harp::detail::shapeOf(const NodePtr &n) {
  return n->shape;
}
DType harp::detail::dtypeOf(const NodePtr &n) { return n->dtype; }

static void checkShape(const std::string &op,
                       const std::vector<int64_t> &shape) {
  for (int64_t n : shape)
    if (n < 0)
      throw Error(op + ": negative size in shape " + shapeStr(shape));
}

NodePtr harp::detail::fromData(DType dtype, std::vector<int64_t> shape,
                               const void *data, BackendPtr backend) {
  checkShape("from_data", shape);
  auto n = make(Kind::Leaf, shape, dtype);
  n->backend = std::move(backend);
  Array array = Array::allocate(TensorType{elementKindOf(dtype), shape});
  if (data)
    std::memcpy(array.data(), data, array.byteSize());
  n->data = array;
  n->epoch = nextEpoch();
  return n;
}

NodePtr harp::detail::input(DType dtype, std::vector<int64_t> shape,
                            std::string name) {
  NodePtr n = fromData(dtype, std::move(shape), nullptr);
  n->hasValues = false;
  n->name = std::move(name);
  return n;
}

void harp::detail::setData(const NodePtr &leaf, const void *data) {
  if (leaf->kind != Kind::Leaf)
    throw Error("set_data: only leaves (from_data, input) take new values");
  std::memcpy(leaf->data->data(), data, leaf->data->byteSize());
  leaf->hasValues = true;
  leaf->epoch = nextEpoch();
}

NodePtr harp::detail::full(DType dtype, std::vector<int64_t> shape,
                           double value) {
  checkShape("full", shape);
  auto n = make(Kind::Full, std::move(shape), dtype);
  n->value = value;
  return n;
}

NodePtr harp::detail::arange(DType dtype, int64_t count, double start,
                             double step) {
  if (count < 0)
    throw Error("arange: negative count " + std::to_string(count));
  if (dtype == DType::Bool)
    throw Error("arange: bool is not a numeric dtype");
  if (step == 0)
    throw Error("arange: step must be non-zero");
  auto n = make(Kind::Arange, {count}, dtype);
  n->value = start;
  n->step = step;
  return n;
}

NodePtr harp::detail::rand(DType dtype, std::vector<int64_t> shape,
                           uint64_t seed) {
  checkShape("rand", shape);
  if (!isFloat(dtype))
    throw Error("rand: needs a float dtype, got " + dtypeName(dtype));
  auto n = make(Kind::Rand, std::move(shape), dtype);
  n->seed = seed;
  return n;
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

/// A map over `inputs` (same shape) with `body`.
static NodePtr map(std::vector<NodePtr> inputs, DType out,
                   const std::string &body) {
  auto n = make(Kind::Map, inputs.front()->shape, out, inputs);
  n->body = body;
  return n;
}

static std::string viewLayout(const std::vector<std::string> &exprs,
                              size_t rank, const std::string &mask = "",
                              const std::string &pad = "",
                              const std::string &maskEq = "") {
  std::string dims;
  for (size_t i = 0; i < rank; ++i)
    dims += (i ? ", " : "") + std::string("d") + std::to_string(i);
  std::string s = "<(" + dims + ") -> (";
  for (size_t i = 0; i < exprs.size(); ++i)
    s += (i ? ", " : "") + exprs[i];
  s += ")";
  if (!mask.empty())
    s += ", mask_ge = (" + dims + ") -> (" + mask + ")";
  if (!maskEq.empty())
    s += ", mask_eq = (" + dims + ") -> (" + maskEq + ")";
  if (!pad.empty())
    s += ", pad = " + pad;
  return s + ">";
}

static NodePtr view(NodePtr a, std::vector<int64_t> shape, std::string layout) {
  auto n = make(Kind::View, std::move(shape), a->dtype, {a});
  n->layout = std::move(layout);
  return n;
}

/// NumPy broadcasting of `shapes`, or an error naming `op`.
static std::vector<int64_t>
broadcastShape(const std::string &op,
               const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[rank - s.size() + i];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o != 1) {
        std::string all;
        for (const auto &t : shapes)
          all += (all.empty() ? "" : " and ") + shapeStr(t);
        throw Error(op + ": shapes " + all + " cannot be broadcast together");
      }
      o = s[i];
    }
  return out;
}

static NodePtr broadcastTo(NodePtr a, const std::vector<int64_t> &shape) {
  if (a->shape == shape)
    return a;
  size_t rank = shape.size(), offset = rank - a->shape.size();
  std::vector<std::string> exprs;
  for (size_t i = 0; i < a->shape.size(); ++i)
    exprs.push_back(a->shape[i] == 1 && shape[offset + i] != 1
                        ? "0"
                        : "d" + std::to_string(offset + i));
  return view(a, shape, viewLayout(exprs, rank));
}

NodePtr harp::detail::cast(NodePtr a, DType to) {
  DType from = a->dtype;
  if (from == to)
    return a;
  std::string e = elt(from), t = elt(to), op;
  if (to == DType::Bool) {
    std::string zero =
        isFloat(from) ? "arith.constant 0.0 : " + e : "arith.constant 0 : " + e;
    std::string cmp = isFloat(from) ? "arith.cmpf une" : "arith.cmpi ne";
    return map({a}, to, "%z = " + zero + "\n%r = " + cmp + ", %a0, %z : " + e);
  }
  if (isFloat(from) && isFloat(to))
    op = widthOf(to) > widthOf(from) ? "arith.extf" : "arith.truncf";
  else if (isFloat(to))
    op = isUnsigned(from) || from == DType::Bool ? "arith.uitofp"
                                                 : "arith.sitofp";
  else if (isFloat(from))
    op = isUnsigned(to) ? "arith.fptoui" : "arith.fptosi";
  else if (widthOf(to) == widthOf(from))
    // Signed and unsigned of one width share the signless IR type.
    return map({a}, to,
               "%z = arith.constant 0 : " + e +
                   "\n%r = arith.addi %a0, %z : " + e);
  else if (widthOf(to) > widthOf(from))
    op =
        isUnsigned(from) || from == DType::Bool ? "arith.extui" : "arith.extsi";
  else
    op = "arith.trunci";
  return map({a}, to, "%r = " + op + " %a0 : " + e + " to " + t);
}

namespace {
/// The arith/math op implementing `op` on `d`, or "" if undefined there.
struct ScalarOp {
  std::string name;      // arith.addf...
  std::string predicate; // for comparisons
};
} // namespace

static std::optional<ScalarOp> binaryOp(const std::string &op, DType d) {
  bool f = isFloat(d), u = isUnsigned(d), b = d == DType::Bool;
  auto pick = [&](const char *fl, const char *si,
                  const char *ui) -> std::optional<ScalarOp> {
    const char *name = f ? fl : u ? ui : si;
    if (!name)
      return std::nullopt;
    return ScalarOp{name, ""};
  };
  if (op == "add" && !b)
    return pick("arith.addf", "arith.addi", "arith.addi");
  if (op == "sub" && !b)
    return pick("arith.subf", "arith.subi", "arith.subi");
  if (op == "mul" && !b)
    return pick("arith.mulf", "arith.muli", "arith.muli");
  if (op == "div" && f)
    return ScalarOp{"arith.divf", ""};
  if (op == "idiv" && !f && !b)
    return pick(nullptr, "arith.floordivsi", "arith.divui");
  if (op == "rem" && !b)
    return pick("arith.remf", "arith.remsi", "arith.remui");
  if (op == "pow" && f)
    return ScalarOp{"math.powf", ""};
  if (op == "maximum" && !b)
    return pick("arith.maximumf", "arith.maxsi", "arith.maxui");
  if (op == "minimum" && !b)
    return pick("arith.minimumf", "arith.minsi", "arith.minui");
  if ((op == "bitand" || op == "bitor" || op == "bitxor") && !f)
    return ScalarOp{op == "bitand"  ? "arith.andi"
                    : op == "bitor" ? "arith.ori"
                                    : "arith.xori",
                    ""};
  if ((op == "shl" || op == "shr") && !f && !b)
    return ScalarOp{op == "shl" ? "arith.shli"
                    : u         ? "arith.shrui"
                                : "arith.shrsi",
                    ""};
  static const std::map<std::string, std::pair<const char *, const char *>>
      cmp = {{"lt", {"olt", "lt"}}, {"le", {"ole", "le"}},
             {"gt", {"ogt", "gt"}}, {"ge", {"oge", "ge"}},
             {"eq", {"oeq", "eq"}}, {"ne", {"une", "ne"}}};
  if (auto it = cmp.find(op); it != cmp.end()) {
    if (f)
      return ScalarOp{"arith.cmpf", it->second.first};
    std::string p = it->second.second;
    if (p != "eq" && p != "ne")
      p = (u || b ? "u" : "s") + p;
    return ScalarOp{"arith.cmpi", p};
  }
  return std::nullopt;
}

NodePtr harp::detail::binary(const std::string &op, NodePtr a, NodePtr b) {
  commonBackend(op, {a, b});
  std::vector<int64_t> shape = broadcastShape(op, {a->shape, b->shape});
  DType common = promote(a->dtype, b->dtype);
  // True division of integers is a float division, as in PyTorch.
  if ((op == "div" || op == "pow") && !isFloat(common))
    common = DType::F32;
  std::optional<ScalarOp> scalar = binaryOp(op, common);
  if (!scalar)
    throw Error(op + ": not defined for " + dtypeName(a->dtype) + " and " +
                dtypeName(b->dtype) + " operands (shapes " +
                shapeStr(a->shape) + " and " + shapeStr(b->shape) + ")");
  a = broadcastTo(cast(a, common), shape);
  b = broadcastTo(cast(b, common), shape);
  bool compare = !scalar->predicate.empty();
  std::string body = "%r = " + scalar->name + " " +
                     (compare ? scalar->predicate + ", " : "") +
                     "%a0, %a1 : " + elt(common);
  return map({a, b}, compare ? DType::Bool : common, body);
}

NodePtr harp::detail::unary(const std::string &op, NodePtr a) {
  DType d = a->dtype;
  std::string e = elt(d);
  static const std::map<std::string, const char *> floatOnly = {
      {"sqrt", "math.sqrt"}, {"log", "math.log"},   {"log2", "math.log2"},
      {"exp", "math.exp"},   {"exp2", "math.exp2"}, {"sin", "math.sin"},
      {"cos", "math.cos"},   {"tanh", "math.tanh"}, {"floor", "math.floor"}};
  if (auto it = floatOnly.find(op); it != floatOnly.end()) {
    if (!isFloat(d))
      throw Error(op + ": needs a float tensor, got " + dtypeName(d) + " " +
                  shapeStr(a->shape));
    return map({a}, d, "%r = " + std::string(it->second) + " %a0 : " + e);
  }
  if (op == "recip" || op == "sigmoid") {
    if (!isFloat(d))
      throw Error(op + ": needs a float tensor, got " + dtypeName(d) + " " +
                  shapeStr(a->shape));
    std::string one = "%one = arith.constant 1.0 : " + e + "\n";
    if (op == "recip")
      return map({a}, d, one + "%r = arith.divf %one, %a0 : " + e);
    return map({a}, d,
               one + "%n = arith.negf %a0 : " + e + "\n%x = math.exp %n : " +
                   e + "\n%s = arith.addf %one, %x : " + e +
                   "\n%r = arith.divf %one, %s : " + e);
  }
  if (d == DType::Bool && op != "not")
    throw Error(op + ": not defined for bool " + shapeStr(a->shape));
  if (op == "neg")
    return isFloat(d) ? map({a}, d, "%r = arith.negf %a0 : " + e)
                      : map({a}, d,
                            "%z = arith.constant 0 : " + e +
                                "\n%r = arith.subi %z, %a0 : " + e);
  if (op == "relu")
    return isFloat(d)
               ? map({a}, d,
                     "%z = arith.constant 0.0 : " + e +
                         "\n%r = arith.maximumf %a0, %z : " + e)
               : map({a}, d,
                     "%z = arith.constant 0 : " + e + "\n%r = " +
                         (isUnsigned(d) ? "arith.maxui" : "arith.maxsi") +
                         " %a0, %z : " + e);
  if (op == "abs")
    return isFloat(d)      ? map({a}, d, "%r = math.absf %a0 : " + e)
           : isUnsigned(d) ? a
                           : map({a}, d, "%r = math.absi %a0 : " + e);
  if (op == "not") {
    if (isFloat(d))
      throw Error("not: needs a bool or integer tensor, got " + dtypeName(d));
    return map({a}, d,
               "%m = arith.constant " +
                   std::string(d == DType::Bool ? "true" : "-1") + " : " + e +
                   "\n%r = arith.xori %a0, %m : " + e);
  }
  throw Error("unknown unary op '" + op + "'");
}

//===----------------------------------------------------------------------===//
// Reductions, matmul
//===----------------------------------------------------------------------===//

static int64_t normalizeAxis(const std::string &op, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    throw Error(op + ": axis " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

NodePtr harp::detail::reduce(const std::string &kind, NodePtr a,
                             std::vector<int64_t> axes, bool keepdim) {
  size_t rank = a->shape.size();
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(i);
  for (int64_t &axis : axes)
    axis = normalizeAxis(kind, axis, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    throw Error(kind + ": repeated axis in " + shapeStr(axes));
  DType d = a->dtype;
  if (kind == "mean") {
    if (!isFloat(d))
      throw Error("mean: needs a float tensor, got " + dtypeName(d));
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= a->shape[axis];
    NodePtr sum = reduce("sum", a, axes, keepdim);
    return binary("mul", sum,
                  full(d, {}, count ? 1.0 / static_cast<double>(count) : NAN));
  }
  std::string irKind = kind;
  if ((kind == "max" || kind == "min") && isUnsigned(d))
    irKind = "u" + kind;
  if ((kind == "sum" || kind == "prod") && d == DType::Bool)
    throw Error(kind + ": not defined for bool; cast first");
  if (kind != "sum" && kind != "prod" && kind != "max" && kind != "min")
    throw Error("unknown reduction '" + kind + "'");
  if (rank == 0)
    return a;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < rank; ++i) {
    bool reduced = std::count(axes.begin(), axes.end(), int64_t(i));
    if (!reduced)
      shape.push_back(a->shape[i]);
    else if (keepdim)
      shape.push_back(1);
  }
  auto n = make(Kind::Reduce, shape, d, {a});
  n->reduceKind = irKind;
  n->dims = axes;
  n->keepdim = keepdim;
  return n;
}

NodePtr harp::detail::softmax(NodePtr a, int64_t axis) {
  if (!isFloat(a->dtype))
    throw Error("softmax: needs a float tensor, got " + dtypeName(a->dtype));
  axis = normalizeAxis("softmax", axis, a->shape.size());
  NodePtr m = reduce("max", a, {axis}, true);
  NodePtr e = unary("exp", binary("sub", a, m));
  return binary("div", e, reduce("sum", e, {axis}, true));
}

NodePtr harp::detail::matmul(NodePtr a, NodePtr b) {
  commonBackend("matmul", {a, b});
  size_t ra = a->shape.size(), rb = b->shape.size();
  if (ra < 2 || rb < 2)
    throw Error("matmul: operands need rank >= 2, got " + shapeStr(a->shape) +
                " and " + shapeStr(b->shape) + "; unsqueeze vectors first");
  int64_t m = a->shape[ra - 2], k = a->shape[ra - 1];
  int64_t k2 = b->shape[rb - 2], n = b->shape[rb - 1];
  if (k != k2)
    throw Error("matmul: inner dims differ: " + shapeStr(a->shape) + " @ " +
                shapeStr(b->shape));
  std::vector<int64_t> batchA(a->shape.begin(), a->shape.end() - 2);
  std::vector<int64_t> batchB(b->shape.begin(), b->shape.end() - 2);
  std::vector<int64_t> batch = broadcastShape("matmul", {batchA, batchB});
  DType d = promote(a->dtype, b->dtype);
  if (d == DType::Bool)
    throw Error("matmul: not defined for bool");
  a = cast(a, d);
  b = cast(b, d);
  // Domain (batch..., m, n, k).
  size_t nb = batch.size(), rank = nb + 3;
  std::vector<int64_t> domain(batch);
  domain.insert(domain.end(), {m, n, k});
  auto operand = [&](NodePtr x, const std::vector<int64_t> &xb, bool left) {
    std::vector<std::string> exprs;
    size_t off = nb - xb.size();
    for (size_t i = 0; i < xb.size(); ++i)
      exprs.push_back(xb[i] == 1 && batch[off + i] != 1
                          ? "0"
                          : "d" + std::to_string(off + i));
    std::string dm = "d" + std::to_string(nb),
                dn = "d" + std::to_string(nb + 1),
                dk = "d" + std::to_string(nb + 2);
    if (left)
      exprs.insert(exprs.end(), {dm, dk});
    else
      exprs.insert(exprs.end(), {dk, dn});
    return view(x, domain, viewLayout(exprs, rank));
  };
  NodePtr prod =
      map({operand(a, batchA, true), operand(b, batchB, false)}, d,
          "%r = " + std::string(isFloat(d) ? "arith.mulf" : "arith.muli") +
              " %a0, %a1 : " + elt(d));
  return reduce("sum", prod, {static_cast<int64_t>(rank - 1)}, false);
}

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

NodePtr harp::detail::reshape(NodePtr a, std::vector<int64_t> shape) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0)
        throw Error("reshape: more than one -1 in " + shapeStr(shape));
      infer = i;
    } else if (shape[i] < 0) {
      throw Error("reshape: negative size in " + shapeStr(shape));
    } else {
      known *= shape[i];
    }
  }
  int64_t total = numElements(a->shape);
  if (infer >= 0 && known != 0 && total % known == 0)
    shape[infer] = total / known;
  if (numElements(shape) != total || (infer >= 0 && known == 0))
    throw Error("reshape: cannot view " + shapeStr(a->shape) + " (" +
                std::to_string(total) + " elements) as " + shapeStr(shape));
  if (shape == a->shape)
    return a;
  // Result index -> row-major position -> source index.
  std::string lin = "0";
  for (size_t i = 0; i < shape.size(); ++i)
    lin = "(" + lin + ") * " + std::to_string(shape[i]) + " + d" +
          std::to_string(i);
  std::vector<std::string> exprs;
  int64_t stride = total;
  for (size_t j = 0; j < a->shape.size(); ++j) {
    int64_t size = a->shape[j];
    stride = size ? stride / size : stride;
    std::string q = "(" + lin + ") floordiv " +
                    std::to_string(std::max<int64_t>(stride, 1));
    exprs.push_back(j == 0 ? q
                           : "(" + q + ") mod " +
                                 std::to_string(std::max<int64_t>(size, 1)));
  }
  return view(a, shape, viewLayout(exprs, shape.size()));
}

NodePtr harp::detail::permute(NodePtr a, std::vector<int64_t> perm) {
  size_t rank = a->shape.size();
  if (perm.size() != rank)
    throw Error("permute: " + shapeStr(perm) + " is not a permutation of " +
                std::to_string(rank) + " dims");
  std::vector<int64_t> inverse(rank, -1), shape(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t p = normalizeAxis("permute", perm[k], rank);
    if (inverse[p] >= 0)
      throw Error("permute: " + shapeStr(perm) + " repeats dim " +
                  std::to_string(p));
    inverse[p] = k;
    shape[k] = a->shape[p];
  }
  std::vector<std::string> exprs;
  for (size_t j = 0; j < rank; ++j)
    exprs.push_back("d" + std::to_string(inverse[j]));
  return view(a, shape, viewLayout(exprs, rank));
}

NodePtr harp::detail::expand(NodePtr a, std::vector<int64_t> shape) {
  if (shape.size() < a->shape.size())
    throw Error("expand: cannot expand " + shapeStr(a->shape) +
                " to fewer dims " + shapeStr(shape));
  size_t off = shape.size() - a->shape.size();
  for (size_t i = 0; i < a->shape.size(); ++i) {
    int64_t &s = shape[off + i];
    if (s == -1)
      s = a->shape[i];
    if (a->shape[i] != 1 && a->shape[i] != s)
      throw Error("expand: dim " + std::to_string(i) + " of " +
                  shapeStr(a->shape) + " cannot expand to " + shapeStr(shape));
  }
  return broadcastTo(a, shape);
}

NodePtr harp::detail::slice(NodePtr a, int64_t dim, int64_t start, int64_t stop,
                            int64_t step) {
  size_t rank = a->shape.size();
  dim = normalizeAxis("slice", dim, rank);
  if (step <= 0)
    throw Error("slice: step must be positive, got " + std::to_string(step) +
                "; use flip for reversed order");
  int64_t n = a->shape[dim];
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += n;
    return std::clamp<int64_t>(i, 0, n);
  };
  start = clampIndex(start);
  stop = clampIndex(stop);
  int64_t count = stop > start ? (stop - start + step - 1) / step : 0;
  std::vector<int64_t> shape = a->shape;
  shape[dim] = count;
  std::vector<std::string> exprs;
  for (size_t i = 0; i < rank; ++i)
    exprs.push_back(i == static_cast<size_t>(dim)
                        ? "d" + std::to_string(i) + " * " +
                              std::to_string(step) + " + " +
                              std::to_string(start)
                        : "d" + std::to_string(i));
  return view(a, shape, viewLayout(exprs, rank));
}

NodePtr harp::detail::flip(NodePtr a, std::vector<int64_t> dims) {
  size_t rank = a->shape.size();
  std::vector<bool> flipped(rank, false);
  for (int64_t d : dims)
    flipped[normalizeAxis("flip", d, rank)] = true;
  std::vector<std::string> exprs;
  for (size_t i = 0; i < rank; ++i)
    exprs.push_back(flipped[i] ? std::to_string(a->shape[i] - 1) + " - d" +
                                     std::to_string(i)
                               : "d" + std::to_string(i));
  return view(a, a->shape, viewLayout(exprs, rank));
}

static std::string padLiteral(double value, DType d) {
  if (value == 0)
    return "";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "+inf";
  if (!isFloat(d) || value == std::floor(value)) {
    if (!isFloat(d))
      return std::to_string(static_cast<int64_t>(value));
  }
  std::ostringstream os;
  os.precision(17);
  os << value;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

NodePtr harp::detail::pad(NodePtr a, std::vector<int64_t> before,
                          std::vector<int64_t> after, double value) {
  size_t rank = a->shape.size();
  if (before.size() != rank || after.size() != rank)
    throw Error("pad: needs one before and one after per dim of " +
                shapeStr(a->shape) + ", got " + shapeStr(before) + " and " +
                shapeStr(after));
  if (!isFloat(a->dtype) && value != std::floor(value))
    throw Error("pad: value " + std::to_string(value) + " is not an " +
                dtypeName(a->dtype));
  std::vector<int64_t> shape(rank);
  std::vector<std::string> exprs, mask;
  for (size_t i = 0; i < rank; ++i) {
    if (before[i] < 0 || after[i] < 0)
      throw Error("pad: negative padding " + shapeStr(before) + ", " +
                  shapeStr(after));
    shape[i] = a->shape[i] + before[i] + after[i];
    std::string d = "d" + std::to_string(i), b = std::to_string(before[i]);
    exprs.push_back(d + " - " + b);
    if (before[i])
      mask.push_back(d + " - " + b);
    if (after[i])
      mask.push_back(std::to_string(a->shape[i] - 1 + before[i]) + " - " + d);
  }
  std::string joined;
  for (const std::string &m : mask)
    joined += (joined.empty() ? "" : ", ") + m;
  if (joined.empty())
    return a;
  return view(a, shape,
              viewLayout(exprs, rank, joined, padLiteral(value, a->dtype)));
}

NodePtr harp::detail::concat(std::vector<NodePtr> inputs, int64_t dim) {
  commonBackend("concat", inputs);
  if (inputs.empty())
    throw Error("concat: needs at least one tensor");
  size_t rank = inputs.front()->shape.size();
  dim = normalizeAxis("concat", dim, rank);
  DType d = inputs.front()->dtype;
  for (const NodePtr &x : inputs)
    d = promote(d, x->dtype);
  std::vector<int64_t> shape = inputs.front()->shape;
  shape[dim] = 0;
  for (NodePtr &x : inputs) {
    if (x->shape.size() != rank)
      throw Error("concat: ranks differ: " + shapeStr(inputs.front()->shape) +
                  " and " + shapeStr(x->shape));
    for (size_t i = 0; i < rank; ++i)
      if (i != static_cast<size_t>(dim) && x->shape[i] != shape[i])
        throw Error("concat: shapes " + shapeStr(inputs.front()->shape) +
                    " and " + shapeStr(x->shape) + " differ outside dim " +
                    std::to_string(dim));
    shape[dim] += x->shape[dim];
    x = cast(x, d);
  }
  auto n = make(Kind::Concat, shape, d, inputs);
  n->dim = dim;
  return n;
}

NodePtr harp::detail::contiguous(NodePtr a) {
  return make(Kind::Contiguous, a->shape, a->dtype, {a});
}

NodePtr harp::detail::unfold(NodePtr a, std::vector<int64_t> kernel,
                             std::vector<int64_t> stride,
                             std::vector<int64_t> dilation) {
  size_t k = kernel.size(), rank = a->shape.size();
  if (k == 0 || k > 3 || k > rank || stride.size() != k || dilation.size() != k)
    throw Error("unfold: needs 1 to 3 kernel dims with one stride and one "
                "dilation each, within rank " +
                std::to_string(rank) + "; got kernel " + shapeStr(kernel) +
                ", stride " + shapeStr(stride) + ", dilation " +
                shapeStr(dilation));
  size_t lead = rank - k;
  std::vector<int64_t> shape(a->shape.begin(), a->shape.begin() + lead);
  std::vector<int64_t> outs;
  for (size_t i = 0; i < k; ++i) {
    if (kernel[i] <= 0 || stride[i] <= 0 || dilation[i] <= 0)
      throw Error("unfold: kernel, stride and dilation must be positive");
    int64_t span = dilation[i] * (kernel[i] - 1) + 1;
    int64_t n = a->shape[lead + i];
    if (span > n)
      throw Error("unfold: a window of " + std::to_string(span) +
                  " elements does not fit dim " + std::to_string(lead + i) +
                  " of size " + std::to_string(n) + " in " +
                  shapeStr(a->shape));
    outs.push_back((n - span) / stride[i] + 1);
  }
  shape.insert(shape.end(), outs.begin(), outs.end());
  shape.insert(shape.end(), kernel.begin(), kernel.end());
  std::vector<std::string> exprs;
  for (size_t i = 0; i < lead; ++i)
    exprs.push_back("d" + std::to_string(i));
  for (size_t i = 0; i < k; ++i)
    exprs.push_back("d" + std::to_string(lead + i) + " * " +
                    std::to_string(stride[i]) + " + d" +
                    std::to_string(lead + k + i) + " * " +
                    std::to_string(dilation[i]));
  return view(a, shape, viewLayout(exprs, shape.size()));
}

NodePtr harp::detail::fold(NodePtr cols, std::vector<int64_t> outputSize,
                           std::vector<int64_t> stride,
                           std::vector<int64_t> dilation) {
  size_t k = outputSize.size(), rank = cols->shape.size();
  if (k == 0 || k > 3 || rank < 2 * k || stride.size() != k ||
      dilation.size() != k)
    throw Error("fold: needs 1 to 3 spatial dims with one stride and one "
                "dilation each; got " +
                shapeStr(cols->shape) + " to size " + shapeStr(outputSize));
  size_t lead = rank - 2 * k;
  std::vector<int64_t> outs(cols->shape.begin() + lead,
                            cols->shape.begin() + lead + k);
  std::vector<int64_t> kernel(cols->shape.begin() + lead + k,
                              cols->shape.end());
  for (size_t i = 0; i < k; ++i) {
    if (stride[i] <= 0 || dilation[i] <= 0)
      throw Error("fold: stride and dilation must be positive");
    int64_t span = dilation[i] * (kernel[i] - 1) + 1;
    if ((outputSize[i] - span) / stride[i] + 1 != outs[i] ||
        outputSize[i] < span)
      throw Error("fold: " + std::to_string(outs[i]) + " windows of " +
                  std::to_string(kernel[i]) + " do not tile size " +
                  std::to_string(outputSize[i]) + " with stride " +
                  std::to_string(stride[i]) + " and dilation " +
                  std::to_string(dilation[i]));
  }
  // Domain [lead..., size..., kernel...]: position s takes window
  // (s - k * dilation) / stride where that is an integer in range.
  std::vector<int64_t> domain(cols->shape.begin(), cols->shape.begin() + lead);
  domain.insert(domain.end(), outputSize.begin(), outputSize.end());
  domain.insert(domain.end(), kernel.begin(), kernel.end());
  auto dn = [](size_t i) { return "d" + std::to_string(i); };
  std::vector<std::string> exprs;
  std::string ge, eq;
  for (size_t i = 0; i < lead; ++i)
    exprs.push_back(dn(i));
  for (size_t i = 0; i < k; ++i) {
    std::string num = "(" + dn(lead + i) + " - " + dn(lead + k + i) + " * " +
                      std::to_string(dilation[i]) + ")";
    std::string window = num + " floordiv " + std::to_string(stride[i]);
    exprs.push_back(window);
    ge += (ge.empty() ? "" : ", ") + num + ", " + std::to_string(outs[i] - 1) +
          " - " + window;
    if (stride[i] > 1)
      eq +=
          (eq.empty() ? "" : ", ") + num + " mod " + std::to_string(stride[i]);
  }
  for (size_t i = 0; i < k; ++i)
    exprs.push_back(dn(lead + k + i));
  NodePtr read =
      view(cols, domain, viewLayout(exprs, domain.size(), ge, "", eq));
  std::vector<int64_t> dims;
  for (size_t i = lead + k; i < domain.size(); ++i)
    dims.push_back(i);
  return reduce("sum", read, dims, false);
}

NodePtr harp::detail::interpolateNearest(NodePtr a, std::vector<int64_t> size) {
  size_t k = size.size(), rank = a->shape.size();
  if (k == 0 || k > 3 || k > rank)
    throw Error("interpolate: resizes 1 to 3 trailing dims of " +
                shapeStr(a->shape) + ", got size " + shapeStr(size));
  std::vector<int64_t> shape(a->shape);
  std::vector<std::string> exprs;
  for (size_t i = 0; i < rank; ++i)
    exprs.push_back("d" + std::to_string(i));
  for (size_t i = 0; i < k; ++i) {
    size_t d = rank - k + i;
    if (size[i] <= 0)
      throw Error("interpolate: sizes must be positive, got " + shapeStr(size));
    shape[d] = size[i];
    // floor(dst * in / out), as PyTorch's "nearest".
    exprs[d] = "(d" + std::to_string(d) + " * " + std::to_string(a->shape[d]) +
               ") floordiv " + std::to_string(size[i]);
  }
  return view(a, shape, viewLayout(exprs, rank));
}

/// Linear resampling of dim `d` of `a` to `out` elements.
static NodePtr linearAlong(NodePtr a, size_t d, int64_t out) {
  DType f = a->dtype;
  int64_t in = a->shape[d];
  // Source coordinate of each output element, clamped at 0 as PyTorch does.
  NodePtr x = binary(
      "maximum",
      binary("sub",
             binary("mul",
                    binary("add", arange(f, out, 0, 1), full(f, {}, 0.5)),
                    full(f, {}, double(in) / double(out))),
             full(f, {}, 0.5)),
      full(f, {}, 0.0));
  NodePtr lo = unary("floor", x);
  NodePtr weight = binary("sub", x, lo);
  NodePtr i0 = cast(lo, DType::I64);
  NodePtr i1 = binary("minimum", binary("add", i0, full(DType::I64, {}, 1)),
                      full(DType::I64, {}, double(in - 1)));
  // Laid out along dim d and expanded to the result's shape.
  std::vector<int64_t> line(a->shape.size(), 1), shape = a->shape;
  line[d] = out;
  shape[d] = out;
  auto spread = [&](NodePtr v) { return expand(reshape(v, line), shape); };
  NodePtr g0 = gather(a, spread(i0), d), g1 = gather(a, spread(i1), d);
  NodePtr w = spread(weight);
  return binary("add", g0,
                binary("mul", binary("sub", g1, g0), w)); // g0 + (g1-g0) w
}

NodePtr harp::detail::interpolateLinear(NodePtr a, std::vector<int64_t> size) {
  size_t k = size.size(), rank = a->shape.size();
  if (k == 0 || k > 3 || k > rank)
    throw Error("interpolate: resizes 1 to 3 trailing dims of " +
                shapeStr(a->shape) + ", got size " + shapeStr(size));
  if (!isFloat(a->dtype))
    throw Error("interpolate: linear modes need a float tensor, got " +
                dtypeName(a->dtype));
  for (int64_t n : size)
    if (n <= 0)
      throw Error("interpolate: sizes must be positive, got " + shapeStr(size));
  // Separable: one linear pass per dim gives (bi/tri)linear.
  for (size_t i = 0; i < k; ++i)
    a = linearAlong(a, rank - k + i, size[i]);
  return a;
}

NodePtr harp::detail::conv(NodePtr x, NodePtr w, std::vector<int64_t> stride,
                           std::vector<int64_t> padding,
                           std::vector<int64_t> dilation) {
  commonBackend("conv", {x, w});
  size_t rx = x->shape.size(), rw = w->shape.size();
  if (rx < 3 || rx > 5 || rw != rx)
    throw Error("conv: input [N, C, spatial...] and weight [F, C, kernel...] "
                "must both have rank 3 to 5, got " +
                shapeStr(x->shape) + " and " + shapeStr(w->shape));
  size_t k = rx - 2;
  if (x->shape[1] != w->shape[1])
    throw Error("conv: input has " + std::to_string(x->shape[1]) +
                " channels but the weight expects " +
                std::to_string(w->shape[1]) + " (" + shapeStr(x->shape) + ", " +
                shapeStr(w->shape) + ")");
  if (stride.size() != k || padding.size() != k || dilation.size() != k)
    throw Error("conv: needs " + std::to_string(k) +
                " strides, paddings and dilations");
  DType d = promote(x->dtype, w->dtype);
  if (!isFloat(d))
    throw Error("conv: needs float tensors");
  x = cast(x, d);
  w = cast(w, d);
  std::vector<int64_t> before(2, 0), after(2, 0);
  before.insert(before.end(), padding.begin(), padding.end());
  after.insert(after.end(), padding.begin(), padding.end());
  NodePtr padded = pad(x, before, after, 0.0);
  std::vector<int64_t> kernel(w->shape.begin() + 2, w->shape.end());
  NodePtr windows = unfold(padded, kernel, stride, dilation);
  // windows: [N, C, out..., kernel...]; domain [N, F, out..., C, kernel...].
  int64_t n = x->shape[0], c = x->shape[1], f = w->shape[0];
  std::vector<int64_t> outs(windows->shape.begin() + 2,
                            windows->shape.begin() + 2 + k);
  std::vector<int64_t> domain = {n, f};
  domain.insert(domain.end(), outs.begin(), outs.end());
  domain.push_back(c);
  domain.insert(domain.end(), kernel.begin(), kernel.end());
  size_t rank = domain.size();
  auto dn = [](size_t i) { return "d" + std::to_string(i); };
  std::vector<std::string> xe = {dn(0), dn(2 + k)}, we = {dn(1), dn(2 + k)};
  for (size_t i = 0; i < k; ++i)
    xe.push_back(dn(2 + i));
  for (size_t i = 0; i < k; ++i) {
    xe.push_back(dn(3 + k + i));
    we.push_back(dn(3 + k + i));
  }
  NodePtr xb = view(windows, domain, viewLayout(xe, rank));
  NodePtr wb = view(w, domain, viewLayout(we, rank));
  NodePtr prod = map({xb, wb}, d, "%r = arith.mulf %a0, %a1 : " + elt(d));
  std::vector<int64_t> dims;
  for (size_t i = 2 + k; i < rank; ++i)
    dims.push_back(i);
  return reduce("sum", prod, dims, false);
}

static void checkIndex(const std::string &op, const NodePtr &index) {
  if (index->dtype != DType::I32 && index->dtype != DType::I64)
    throw Error(op + ": index must be an i32 or i64 tensor, got " +
                dtypeName(index->dtype));
}

NodePtr harp::detail::gather(NodePtr input, NodePtr index, int64_t dim) {
  commonBackend("gather", {input, index});
  checkIndex("gather", index);
  size_t rank = input->shape.size();
  dim = normalizeAxis("gather", dim, rank);
  if (index->shape.size() != rank)
    throw Error("gather: index " + shapeStr(index->shape) +
                " must have the rank of the input " + shapeStr(input->shape));
  for (size_t i = 0; i < rank; ++i)
    if (i != static_cast<size_t>(dim) && index->shape[i] > input->shape[i])
      throw Error("gather: index " + shapeStr(index->shape) +
                  " is larger than the input " + shapeStr(input->shape) +
                  " in dim " + std::to_string(i));
  auto n = make(Kind::Gather, index->shape, input->dtype, {input, index});
  n->dim = dim;
  return n;
}

NodePtr harp::detail::scatterAdd(NodePtr dest, NodePtr index, NodePtr src,
                                 int64_t dim) {
  commonBackend("scatter_add", {dest, index, src});
  checkIndex("scatter_add", index);
  size_t rank = dest->shape.size();
  dim = normalizeAxis("scatter_add", dim, rank);
  if (dest->dtype == DType::Bool)
    throw Error("scatter_add: not defined for bool");
  if (index->shape.size() != rank || src->shape.size() != rank)
    throw Error("scatter_add: dest " + shapeStr(dest->shape) + ", index " +
                shapeStr(index->shape) + " and src " + shapeStr(src->shape) +
                " must have one rank");
  for (size_t i = 0; i < rank; ++i)
    if (index->shape[i] > src->shape[i] ||
        (i != static_cast<size_t>(dim) && index->shape[i] > dest->shape[i]))
      throw Error("scatter_add: index " + shapeStr(index->shape) +
                  " is larger than src " + shapeStr(src->shape) + " or dest " +
                  shapeStr(dest->shape) + " in dim " + std::to_string(i));
  src = cast(src, dest->dtype);
  auto n = make(Kind::ScatterAdd, dest->shape, dest->dtype, {dest, index, src});
  n->dim = dim;
  return n;
}

//===----------------------------------------------------------------------===//
// harp IR
//===----------------------------------------------------------------------===//

static std::string floatLiteral(double v) {
  if (std::isinf(v))
    return v < 0 ? "0xFFF0000000000000" : "0x7FF0000000000000";
  if (std::isnan(v))
    return "0x7FF8000000000000";
  std::ostringstream os;
  os.precision(17);
  os << std::scientific << v;
  return os.str();
}

static std::string literal(double v, DType d) {
  if (isFloat(d)) {
    if (std::isinf(v) || std::isnan(v)) {
      // Hexadecimal literals must match the type's width.
      if (d == DType::F32)
        return std::isnan(v) ? "0x7FC00000"
               : v < 0       ? "0xFF800000"
                             : "0x7F800000";
      return floatLiteral(v);
    }
    return floatLiteral(v);
  }
  if (d == DType::Bool)
    return v != 0 ? "true" : "false";
  return std::to_string(static_cast<int64_t>(v));
}

namespace {
/// Emits the function computing a node from its leaves.
class Emitter {
public:
  /// With `cutAtValues`, nodes that already have a value are arguments
  /// (realize); otherwise only leaves are (autodiff must see the graph).
  explicit Emitter(bool cutAtValues) : cutAtValues(cutAtValues) {}

  std::string emit(const NodePtr &n) {
    if (auto it = names.find(n.get()); it != names.end())
      return it->second;
    std::string name;
    if (n->kind == Kind::Leaf || (cutAtValues && isFresh(n.get(), memo))) {
      if (!n->hasValues)
        throw Error("input '" + n->name + "' " + shapeStr(n->shape) +
                    " has no values yet; give it some with set_data");
      name = "%arg" + std::to_string(args.size());
      args.push_back(n);
    } else {
      std::vector<std::string> ins;
      for (const NodePtr &in : n->inputs)
        ins.push_back(emit(in));
      name = "%v" + std::to_string(counter++);
      body << "  " << name << " = " << op(*n, ins) << "\n";
    }
    names[n.get()] = name;
    return name;
  }

  std::string function(const std::string &fname, const NodePtr &root,
                       bool isPrivate = false) {
    std::string result = emit(root);
    std::ostringstream os;
    os << "func.func " << (isPrivate ? "private " : "") << "@" << fname << "(";
    for (size_t i = 0; i < args.size(); ++i)
      os << (i ? ", " : "") << "%arg" << i << ": "
         << tensorType(args[i]->shape, args[i]->dtype);
    os << ") -> " << tensorType(root->shape, root->dtype) << " {\n"
       << body.str() << "  return " << result << " : "
       << tensorType(root->shape, root->dtype) << "\n}\n";
    return os.str();
  }

  std::vector<NodePtr> args;

private:
  static std::string op(const Node &n, const std::vector<std::string> &ins) {
    std::string type = tensorType(n.shape, n.dtype), e = elt(n.dtype);
    auto inType = [&](size_t i) {
      return tensorType(n.inputs[i]->shape, n.inputs[i]->dtype);
    };
    std::ostringstream os;
    switch (n.kind) {
    case Kind::Full:
      os << "arith.constant dense<" << literal(n.value, n.dtype)
         << "> : " << type;
      break;
    case Kind::Arange:
      os << "harp.arange start(" << literal(n.value, n.dtype) << " : " << e
         << ") step(" << literal(n.step, n.dtype) << " : " << e
         << ") : " << type;
      break;
    case Kind::Rand:
      os << "harp.rand seed(" << static_cast<int64_t>(n.seed) << ") : " << type;
      break;
    case Kind::View:
      os << "harp.view " << ins[0] << " " << n.layout << " : " << inType(0)
         << " -> " << type;
      break;
    case Kind::Contiguous:
      os << "harp.contiguous " << ins[0] << " : " << type;
      break;
    case Kind::Gather:
      os << "harp.gather " << ins[0] << "[" << ins[1] << "] dim(" << n.dim
         << ") : (" << inType(0) << ", " << inType(1) << ") -> " << type;
      break;
    case Kind::ScatterAdd:
      os << "harp.scatter_add " << ins[2] << " into " << ins[0] << "[" << ins[1]
         << "] dim(" << n.dim << ") : " << inType(2) << " into " << inType(0)
         << "[" << inType(1) << "]";
      break;
    case Kind::Concat: {
      os << "harp.concat dim(" << n.dim << ") ";
      for (size_t i = 0; i < ins.size(); ++i)
        os << (i ? ", " : "") << ins[i];
      os << " : (";
      for (size_t i = 0; i < ins.size(); ++i)
        os << (i ? ", " : "") << inType(i);
      os << ") -> " << type;
      break;
    }
    case Kind::Map:
    case Kind::Reduce: {
      os << "harp.map_reduce ins(";
      for (size_t i = 0; i < ins.size(); ++i)
        os << (i ? ", " : "") << ins[i];
      os << " : ";
      for (size_t i = 0; i < ins.size(); ++i)
        os << (i ? ", " : "") << inType(i);
      os << ") {\n  ^bb0(";
      for (size_t i = 0; i < ins.size(); ++i)
        os << (i ? ", " : "") << "%a" << i << ": " << elt(n.inputs[i]->dtype);
      os << "):\n";
      if (n.kind == Kind::Map) {
        std::istringstream lines(n.body);
        for (std::string line; std::getline(lines, line);)
          os << "    " << line << "\n";
        os << "    harp.yield %r : " << e << "\n  }";
      } else {
        os << "    harp.yield %a0 : " << e << "\n  } reduce(" << n.reduceKind
           << ", dims = " << shapeStr(n.dims) << (n.keepdim ? ", keepdim" : "")
           << ")";
      }
      os << " : " << type;
      break;
    }
    case Kind::Leaf:
      break;
    }
    return os.str();
  }

  bool cutAtValues;
  std::map<const Node *, uint64_t> memo;
  std::map<const Node *, std::string> names;
  std::ostringstream body;
  int counter = 0;
};

/// set_cpu's name; empty: the default.
std::string &cpuName() {
  static std::string name;
  return name;
}

Device deviceOf(const BackendPtr &backend) {
  return backend && backend->name() == "cuda" ? Device::CUDA : Device::CPU;
}

/// Compiles and runs `module`; `what` names the request in errors
/// ("for realizing a f32 [3, 4] tensor"), with the inputs' types and shapes.
std::vector<Array> run(const std::string &module, const std::string &entry,
                       const std::vector<NodePtr> &args,
                       const std::string &what, Device device = Device::CPU) {
  llvm::Expected<std::shared_ptr<Executable>> exe =
      Jit::shared(device, cpuName()).compile(module);
  if (!exe) {
    std::string inputs;
    for (const NodePtr &a : args)
      inputs += (inputs.empty() ? "" : ", ") + dtypeName(a->dtype) + " " +
                shapeStr(a->shape);
    throw Error("harp could not compile the graph " + what +
                " (inputs: " + (inputs.empty() ? std::string("none") : inputs) +
                "): " + llvm::toString(exe.takeError()));
  }
  std::vector<Array> inputs;
  for (const NodePtr &a : args)
    inputs.push_back(*a->data);
  llvm::Expected<std::vector<Array>> out = (*exe)->call(entry, inputs);
  if (!out)
    throw Error("harp could not run the graph: " +
                llvm::toString(out.takeError()));
  return std::move(*out);
}
} // namespace

std::string harp::detail::moduleText(const NodePtr &node) {
  Emitter emitter(/*cutAtValues=*/true);
  return emitter.function("main", node);
}

void harp::set_cpu(const std::string &name) {
  if (!name.empty())
    if (llvm::Expected<CpuTarget> target = resolveCpuTarget(name); !target)
      throw Error("set_cpu: " + llvm::toString(target.takeError()));
  cpuName() = name;
}

std::string harp::get_cpu() {
  return cpuName().empty() ? defaultCpuName() : cpuName();
}

const Array &harp::detail::realize(const NodePtr &node) {
  std::map<const Node *, uint64_t> memo;
  if (isFresh(node.get(), memo)) {
    if (!node->hasValues)
      throw Error("input '" + node->name + "' " + shapeStr(node->shape) +
                  " has no values yet; give it some with set_data");
    return *node->data;
  }
  Emitter emitter(/*cutAtValues=*/true);
  std::string module = emitter.function("main", node);
  node->data = run(module, "main", emitter.args,
                   "for realizing a " + dtypeName(node->dtype) + " " +
                       shapeStr(node->shape) + " tensor",
                   deviceOf(node->backend))
                   .front();
  node->epoch = nextEpoch();
  return *node->data;
}

harp::detail::CompileCounts harp::detail::compileCounts() {
  const JitStats &s = Jit::shared(Device::CPU, cpuName()).stats();
  return {s.compilations, s.memoryHits, s.diskHits};
}

//===----------------------------------------------------------------------===//
// Autograd through harp-autodiff
//===----------------------------------------------------------------------===//

void harp::detail::setRequiresGrad(const NodePtr &node, bool value) {
  if (node->kind != Kind::Leaf)
    throw Error("set_requires_grad: only leaf tensors (from_data, input, "
                "detach) hold gradients");
  if (value && !isFloat(node->dtype))
    throw Error("set_requires_grad: needs a float tensor, got " +
                dtypeName(node->dtype));
  node->requiresGrad = value;
}

bool harp::detail::requiresGrad(const NodePtr &node) {
  return node->requiresGrad;
}

static void accumulate(Array &into, const Array &add) {
  if (into.kind() == ElementKind::F32) {
    for (int64_t i = 0; i < into.numElements(); ++i)
      into.as<float>()[i] += add.as<float>()[i];
  } else {
    for (int64_t i = 0; i < into.numElements(); ++i)
      into.as<double>()[i] += add.as<double>()[i];
  }
}

void harp::detail::backward(const NodePtr &loss) {
  if (!loss->shape.empty() || !isFloat(loss->dtype))
    throw Error("backward: the loss must be a 0-d float tensor, got " +
                dtypeName(loss->dtype) + " " + shapeStr(loss->shape));
  Emitter emitter(/*cutAtValues=*/false);
  std::string f = emitter.function("loss", loss, /*isPrivate=*/true);
  std::vector<size_t> wrt;
  for (size_t i = 0; i < emitter.args.size(); ++i)
    if (emitter.args[i]->requiresGrad)
      wrt.push_back(i);
  if (wrt.empty())
    throw Error("backward: no tensor in the graph requires a gradient");
  std::ostringstream os;
  std::string lossType = tensorType(loss->shape, loss->dtype);
  std::vector<std::string> argTypes, gradTypes;
  for (const NodePtr &a : emitter.args)
    argTypes.push_back(tensorType(a->shape, a->dtype));
  for (size_t w : wrt)
    gradTypes.push_back(argTypes[w]);
  auto join = [](const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v)
      s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  os << f << "func.func @main(";
  for (size_t i = 0; i < argTypes.size(); ++i)
    os << (i ? ", " : "") << "%arg" << i << ": " << argTypes[i];
  // The loss value comes back too and is kept on the node, so reading it
  // after backward() runs nothing.
  os << ") -> (" << lossType << ", " << join(gradTypes)
     << ") {\n  %r:" << wrt.size() + 1 << " = harp.autodiff @loss(";
  for (size_t i = 0; i < argTypes.size(); ++i)
    os << (i ? ", " : "") << "%arg" << i;
  os << ") wrt [";
  for (size_t j = 0; j < wrt.size(); ++j)
    os << (j ? ", " : "") << wrt[j];
  os << "] : (" << join(argTypes) << ") -> (" << lossType << ", "
     << join(gradTypes) << ")\n  return %r#0";
  for (size_t j = 0; j < wrt.size(); ++j)
    os << ", %r#" << j + 1;
  os << " : " << lossType << ", " << join(gradTypes) << "\n}\n";
  std::vector<Array> results = run(os.str(), "main", emitter.args,
                                   "of backward() (the gradients of a " +
                                       dtypeName(loss->dtype) + " loss)",
                                   deviceOf(loss->backend));
  if (loss->kind != Kind::Leaf) {
    loss->data = results[0];
    loss->epoch = nextEpoch();
  }
  for (size_t j = 0; j < wrt.size(); ++j) {
    const NodePtr &leaf = emitter.args[wrt[j]];
    if (leaf->gradient)
      accumulate(*leaf->gradient, results[j + 1]);
    else
      leaf->gradient = results[j + 1];
  }
}

NodePtr harp::detail::grad(const NodePtr &leaf) {
  if (!leaf->gradient)
    return nullptr;
  return fromData(leaf->dtype, leaf->shape, leaf->gradient->data(),
                  leaf->backend);
}

void harp::detail::zeroGrad(const NodePtr &leaf) { leaf->gradient.reset(); }

BackendPtr harp::backend::get(const std::string &name) {
  llvm::Expected<Device> device = parseDevice(name);
  if (!device)
    throw Error("backend::get: " + llvm::toString(device.takeError()));
  static const BackendPtr cpu = std::make_shared<Backend>("cpu");
  static const BackendPtr cuda = std::make_shared<Backend>("cuda");
  if (*device == Device::CPU)
    return cpu;
  if (llvm::Error err = cuda::initialize())
    throw Error("backend::get: cuda: " + llvm::toString(std::move(err)));
  return cuda;
}

BackendPtr harp::detail::backendOf(const NodePtr &node) {
  return node->backend ? node->backend : backend::get("cpu");
}

NodePtr harp::detail::to(const NodePtr &node, const BackendPtr &backend) {
  if (!backend)
    throw Error("to: no backend given");
  if (node->backend == backend)
    return node;
  const Array &value = realize(node);
  NodePtr leaf = fromData(node->dtype, node->shape, value.data(), backend);
  return leaf;
}

NodePtr harp::detail::detach(const NodePtr &node) {
  auto leaf = make(Kind::Leaf, node->shape, node->dtype);
  leaf->data = realize(node);
  leaf->backend = node->backend;
  return leaf;
}
