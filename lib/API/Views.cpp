//===- Views.cpp - zero-copy views and data movement of the lazy graph ----===//
//
// Reshapes, permutations, broadcasts, slices, flips, pads and sliding
// windows are harp.view nodes whose #harp.view layouts come from the
// dialect's shared builders (harp/Dialect/Harp/IR/HarpBuilders.h); concat,
// gather and scatter-add are their own ops.
//
//===----------------------------------------------------------------------===//

#include "Node.h"

#include "harp/Dialect/Harp/IR/HarpBuilders.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <cmath>
#include <functional>

using namespace harp;
using namespace harp::detail;
namespace mh = mlir::harp;

NodePtr harp::detail::view(NodePtr a, std::vector<int64_t> shape,
                           mh::ViewAttr layout) {
  auto n = make(Kind::View, std::move(shape), a->dtype, {a});
  n->layout = layout;
  return n;
}

mlir::AffineExpr harp::detail::dimExpr(unsigned n) {
  return mlir::getAffineDimExpr(n, context());
}

NodePtr harp::detail::broadcastTo(NodePtr a,
                                  const std::vector<int64_t> &shape) {
  if (a->shape == shape)
    return a;
  ContextLock lock;
  return view(a, shape, mh::broadcastLayout(context(), a->shape, shape));
}

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
  ContextLock lock;
  return view(a, shape, mh::reshapeLayout(context(), a->shape, shape));
}

NodePtr harp::detail::permute(NodePtr a, std::vector<int64_t> perm) {
  size_t rank = a->shape.size();
  if (perm.size() != rank)
    throw Error("permute: " + shapeStr(perm) + " is not a permutation of " +
                std::to_string(rank) + " dims");
  std::vector<int64_t> seen(rank, -1), shape(rank), normalized(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t p = normalizeAxis("permute", perm[k], rank);
    if (seen[p] >= 0)
      throw Error("permute: " + shapeStr(perm) + " repeats dim " +
                  std::to_string(p));
    seen[p] = k;
    shape[k] = a->shape[p];
    normalized[k] = p;
  }
  ContextLock lock;
  return view(a, shape, mh::permuteLayout(context(), normalized));
}

NodePtr harp::detail::expand(NodePtr a, std::vector<int64_t> shape,
                             const std::string &op) {
  auto cannot = [&](const std::string &why) {
    return Error(op + ": cannot broadcast " + shapeStr(a->shape) + " to " +
                 shapeStr(shape) + " (" + why + ")");
  };
  if (shape.size() < a->shape.size())
    throw cannot("fewer dims");
  size_t off = shape.size() - a->shape.size();
  for (size_t i = 0; i < off; ++i)
    if (shape[i] < 0)
      throw cannot("new dim " + std::to_string(i) +
                   " needs a size; -1 keeps an existing dim");
  for (size_t i = 0; i < a->shape.size(); ++i) {
    int64_t &s = shape[off + i];
    if (s == -1)
      s = a->shape[i];
    if (s < 0 || (a->shape[i] != 1 && a->shape[i] != s))
      throw cannot("dim " + std::to_string(off + i));
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
  ContextLock lock;
  return view(a, shape, mh::sliceLayout(context(), rank, dim, start, step));
}

NodePtr harp::detail::flip(NodePtr a, std::vector<int64_t> dims) {
  size_t rank = a->shape.size();
  llvm::SmallVector<bool> flipped(rank, false);
  for (int64_t d : dims)
    if (!isScalarAxis("flip", d, rank))
      flipped[normalizeAxis("flip", d, rank)] = true;
  if (rank == 0)
    return a;
  ContextLock lock;
  return view(a, a->shape, mh::flipLayout(context(), a->shape, flipped));
}

NodePtr harp::detail::pad(NodePtr a, std::vector<int64_t> before,
                          std::vector<int64_t> after, double value) {
  size_t rank = a->shape.size();
  if (before.size() != rank || after.size() != rank)
    throw Error("pad: needs one before and one after per dim of " +
                shapeStr(a->shape) + ", got " + shapeStr(before) + " and " +
                shapeStr(after));
  bool inexact = isFloat(a->dtype) || isComplex(a->dtype);
  if (!inexact && value != std::floor(value))
    throw Error("pad: value " + std::to_string(value) + " is not an " +
                dtypeName(a->dtype));
  std::vector<int64_t> shape(rank);
  bool any = false;
  for (size_t i = 0; i < rank; ++i) {
    if (before[i] < 0 || after[i] < 0)
      throw Error("pad: negative padding " + shapeStr(before) + ", " +
                  shapeStr(after));
    shape[i] = a->shape[i] + before[i] + after[i];
    any |= before[i] || after[i];
  }
  if (!any)
    return a;
  ContextLock lock;
  mlir::MLIRContext *ctx = context();
  mlir::TypedAttr padValue;
  if (inexact) // a complex pad is value + 0i
    padValue = mlir::FloatAttr::get(mlir::Float64Type::get(ctx), value);
  else
    padValue = mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 64),
                                      static_cast<int64_t>(value));
  return view(a, shape, mh::padLayout(ctx, a->shape, before, after, padValue));
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

std::vector<NodePtr> harp::detail::callFunction(
    const std::string &callee, std::vector<NodePtr> args,
    std::vector<std::pair<DType, std::vector<int64_t>>> results) {
  auto site = std::make_shared<CallSite>();
  site->callee = callee;
  site->results = std::move(results);
  std::vector<NodePtr> nodes;
  for (size_t i = 0; i < site->results.size(); ++i) {
    NodePtr n =
        make(Kind::Call, site->results[i].second, site->results[i].first, args);
    n->call = site;
    n->dim = static_cast<int64_t>(i);
    nodes.push_back(std::move(n));
  }
  return nodes;
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
  ContextLock lock;
  return view(a, shape, mh::windowLayout(context(), rank, stride, dilation));
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
  NodePtr read;
  {
    ContextLock lock;
    read = view(cols, domain,
                mh::foldLayout(context(), lead, outs, stride, dilation));
  }
  std::vector<int64_t> dims;
  for (size_t i = lead + k; i < domain.size(); ++i)
    dims.push_back(i);
  return reduce(ReduceOp::Sum, read, dims, false);
}

NodePtr harp::detail::interpolateNearest(NodePtr a, std::vector<int64_t> size) {
  size_t k = size.size(), rank = a->shape.size();
  if (k == 0 || k > 3 || k > rank)
    throw Error("interpolate: resizes 1 to 3 trailing dims of " +
                shapeStr(a->shape) + ", got size " + shapeStr(size));
  for (int64_t n : size)
    if (n <= 0)
      throw Error("interpolate: sizes must be positive, got " + shapeStr(size));
  ContextLock lock;
  std::vector<int64_t> shape(a->shape);
  llvm::SmallVector<mlir::AffineExpr> exprs;
  for (size_t i = 0; i < rank; ++i)
    exprs.push_back(dimExpr(i));
  for (size_t i = 0; i < k; ++i) {
    size_t d = rank - k + i;
    shape[d] = size[i];
    // floor(dst * in / out), as PyTorch's "nearest".
    exprs[d] = (dimExpr(d) * a->shape[d]).floorDiv(size[i]);
  }
  return view(a, shape, mh::indexLayout(context(), rank, exprs));
}

/// Linear resampling of dim `d` of `a` to `out` elements.
static NodePtr linearAlong(NodePtr a, size_t d, int64_t out) {
  DType f = a->dtype;
  int64_t in = a->shape[d];
  // Source coordinate of each output element, clamped at 0 as PyTorch does
  // (shape-derived constants: part of the code).
  NodePtr x = binary(BinaryOp::Maximum,
                     binary(BinaryOp::Sub,
                            binary(BinaryOp::Mul,
                                   binary(BinaryOp::Add, arange(f, out, 0, 1),
                                          full(f, {}, 0.5)),
                                   full(f, {}, double(in) / double(out))),
                            full(f, {}, 0.5)),
                     full(f, {}, 0.0));
  NodePtr lo = unary(UnaryOp::Floor, x);
  NodePtr weight = binary(BinaryOp::Sub, x, lo);
  NodePtr i0 = cast(lo, DType::I64);
  NodePtr i1 = binary(BinaryOp::Minimum,
                      binary(BinaryOp::Add, i0, full(DType::I64, {}, 1)),
                      full(DType::I64, {}, double(in - 1)));
  // Laid out along dim d and expanded to the result's shape.
  std::vector<int64_t> line(a->shape.size(), 1), shape = a->shape;
  line[d] = out;
  shape[d] = out;
  auto spread = [&](NodePtr v) { return expand(reshape(v, line), shape); };
  NodePtr g0 = gatherUnchecked(a, spread(i0), d),
          g1 = gatherUnchecked(a, spread(i1), d);
  NodePtr w = spread(weight);
  // g0 + (g1 - g0) w
  return binary(BinaryOp::Add, g0,
                binary(BinaryOp::Mul, binary(BinaryOp::Sub, g1, g0), w));
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

static void checkIndex(const std::string &op, const NodePtr &index) {
  if (index->dtype != DType::I32 && index->dtype != DType::I64)
    throw Error(op + ": index must be an i32 or i64 tensor, got " +
                dtypeName(index->dtype));
}

/// The first i < count whose entry at(i) is outside [low, high) and not
/// `ignore`.
template <typename At>
static std::optional<int64_t> firstOutOfRange(At at, int64_t count, int64_t low,
                                              int64_t high,
                                              std::optional<int64_t> ignore) {
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = at(i);
    if ((v < low || v >= high) && v != ignore)
      return i;
  }
  return std::nullopt;
}

/// "[0, 5)" or "[-5, 5)".
static std::string rangeText(int64_t size, bool wrapsNegative) {
  return "[" + std::to_string(wrapsNegative ? -size : 0) + ", " +
         std::to_string(size) + ")";
}

IndexCheckPtr harp::detail::checkIndexRange(const std::string &op,
                                            const NodePtr &index, int64_t size,
                                            const std::string &what,
                                            std::optional<int64_t> ignore,
                                            bool wrapsNegative,
                                            const std::string &noun) {
  if (index->dtype != DType::I32 && index->dtype != DType::I64)
    return nullptr;
  // The entries where they are known without computing anything: the
  // values of a leaf or a realized tensor on the host, an arange's or a
  // constant's (as ArangeOp and the constant take them: integers).
  std::function<int64_t(int64_t)> at;
  bool onHost = !index->backend || index->backend->name() == "cpu";
  if (onHost && hasValue(index)) {
    const Array &values = *index->data;
    if (index->dtype == DType::I32)
      at = [p = values.as<int32_t>()](int64_t i) { return int64_t(p[i]); };
    else
      at = [p = values.as<int64_t>()](int64_t i) { return p[i]; };
  } else if (index->kind == Kind::Arange) {
    at = [start = int64_t(index->value),
          step = int64_t(index->step)](int64_t i) { return start + i * step; };
  } else if (index->kind == Kind::Full) {
    at = [value = int64_t(index->value)](int64_t) { return value; };
  }
  if (!at) {
    // Computed in the graph: its smallest and largest entries, computed
    // with the op's result, are checked then (ignored entries count as 0,
    // which any non-empty dim has).
    NodePtr entries = cast(index, DType::I64);
    if (ignore && size > 0)
      entries = where(
          binary(BinaryOp::Eq, entries, scalar(DType::I64, double(*ignore))),
          scalar(DType::I64, 0.0), entries);
    auto check = std::make_shared<IndexCheck>();
    check->bounds =
        concat({reshape(reduce(ReduceOp::Min, entries, {}, false), {1}),
                reshape(reduce(ReduceOp::Max, entries, {}, false), {1})},
               0);
    check->size = size;
    check->wrapsNegative = wrapsNegative;
    check->op = op;
    check->what = what;
    check->noun = noun;
    return check;
  }
  int64_t low = wrapsNegative ? -size : 0;
  int64_t count = numElements(index->shape);
  if (index->kind == Kind::Full)
    count = std::min<int64_t>(count, 1); // one value throughout
  std::optional<int64_t> bad = firstOutOfRange(at, count, low, size, ignore);
  if (!bad)
    return nullptr;
  int64_t value = at(*bad);
  // The entry's position, row-major.
  std::vector<int64_t> position(index->shape.size());
  for (int64_t i = static_cast<int64_t>(position.size()) - 1, rest = *bad;
       i >= 0; --i) {
    position[i] = rest % index->shape[i];
    rest /= index->shape[i];
  }
  std::string place = position.empty() ? "" : " at " + shapeStr(position);
  throw IndexError(op + ": " + noun + " " + std::to_string(value) + place +
                   " is out of range for " + what +
                   " (valid: " + rangeText(size, wrapsNegative) + ")");
}

void harp::detail::verifyIndexCheck(const IndexCheck &check,
                                    const Array &bounds) {
  const int64_t *b = bounds.as<int64_t>();
  int64_t low = check.wrapsNegative ? -check.size : 0;
  // An empty index has no entries: its bounds are the reductions'
  // identities, min above max.
  if (b[0] > b[1])
    return;
  std::optional<int64_t> value;
  if (b[0] < low)
    value = b[0];
  else if (b[1] >= check.size)
    value = b[1];
  if (!value)
    return;
  throw IndexError(check.op + ": " + check.noun + " " + std::to_string(*value) +
                   " (computed) is out of range for " + check.what +
                   " (valid: " + rangeText(check.size, check.wrapsNegative) +
                   ")");
}

NodePtr harp::detail::withCheck(NodePtr node, const IndexCheckPtr &check) {
  if (check)
    node->checks.push_back(check);
  return node;
}

std::string harp::detail::dimRange(int64_t dim, int64_t size) {
  return "dim " + std::to_string(dim) + " of size " + std::to_string(size);
}

NodePtr harp::detail::gather(NodePtr input, NodePtr index, int64_t dim) {
  NodePtr n = gatherUnchecked(input, index, dim); // validates the arguments
  size_t rank = input->shape.size();
  if (rank == 0)
    return withCheck(n, checkIndexRange("gather", index, 1, "a 0-d input"));
  int64_t d = normalizeAxis("gather", dim, rank);
  return withCheck(n, checkIndexRange("gather", index, input->shape[d],
                                      dimRange(d, input->shape[d])));
}

NodePtr harp::detail::gatherUnchecked(NodePtr input, NodePtr index,
                                      int64_t dim) {
  commonBackend("gather", {input, index});
  checkIndex("gather", index);
  size_t rank = input->shape.size();
  if (isScalarAxis("gather", dim, rank) && index->shape.empty())
    return onScalarAsVector(input, [&](NodePtr v) {
      return gatherUnchecked(v, reshape(index, {1}), 0);
    });
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
  NodePtr n = scatterAddUnchecked(dest, index, src, dim); // validates
  size_t rank = dest->shape.size();
  if (rank == 0)
    return withCheck(
        n, checkIndexRange("scatter_add", index, 1, "a 0-d destination"));
  int64_t d = normalizeAxis("scatter_add", dim, rank);
  return withCheck(n, checkIndexRange("scatter_add", index, dest->shape[d],
                                      dimRange(d, dest->shape[d])));
}

NodePtr harp::detail::scatterAddUnchecked(NodePtr dest, NodePtr index,
                                          NodePtr src, int64_t dim) {
  commonBackend("scatter_add", {dest, index, src});
  checkIndex("scatter_add", index);
  size_t rank = dest->shape.size();
  if (isScalarAxis("scatter_add", dim, rank) && index->shape.empty() &&
      src->shape.empty())
    return onScalarAsVector(dest, [&](NodePtr v) {
      return scatterAddUnchecked(v, reshape(index, {1}), reshape(src, {1}), 0);
    });
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
