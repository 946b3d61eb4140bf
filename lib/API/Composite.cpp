//===- Composite.cpp - ops composed of harp's views, gathers and maps -----===//
//
// Shape, data-movement, scan and norm ops with PyTorch's names that need no
// op of their own: each is a few views, concats, gathers and element-wise
// maps, so harp-autodiff differentiates it through its parts. The C++
// Tensor API and the Python bindings both call these.
//
//===----------------------------------------------------------------------===//

#include "Node.h"

#include <cmath>
#include <numeric>

using namespace harp;
using namespace harp::detail;

namespace {

NodePtr num(const NodePtr &like, double value) {
  return full(dtypeOf(like), {}, value);
}

void requireIndex(const std::string &op, const NodePtr &index) {
  DType d = dtypeOf(index);
  if (d != DType::I32 && d != DType::I64)
    throw Error(op + ": the index must be int32 or int64, got " + dtypeName(d));
}

void requireFloat(const std::string &op, const NodePtr &x) {
  if (!isFloat(dtypeOf(x)))
    throw Error(op + ": needs a float tensor, got " + dtypeName(dtypeOf(x)));
}

/// root(s) for s >= 0, and 0 where s is 0 with a zero gradient there
/// (torch's subgradient: the root's own slope is infinite at 0, and
/// infinity times the zero slope under it would be NaN).
template <typename Root>
NodePtr rootOfSum(const NodePtr &s, Root root) {
  NodePtr zero = num(s, 0);
  NodePtr atZero = binary(BinaryOp::Eq, s, zero);
  NodePtr safe = where(atZero, num(s, 1), s);
  return where(atZero, zero, root(safe));
}

} // namespace

NodePtr harp::detail::stack(std::vector<NodePtr> inputs, int64_t dim) {
  if (inputs.empty())
    throw Error("stack: needs at least one tensor");
  const std::vector<int64_t> &shape = shapeOf(inputs[0]);
  for (size_t i = 1; i < inputs.size(); ++i)
    if (shapeOf(inputs[i]) != shape)
      throw Error("stack: tensor " + std::to_string(i) + " has shape " +
                  shapeStr(shapeOf(inputs[i])) + " but tensor 0 has " +
                  shapeStr(shape));
  int64_t d = normalizeAxis("stack", dim, shape.size() + 1);
  std::vector<int64_t> unsqueezed = shape;
  unsqueezed.insert(unsqueezed.begin() + d, 1);
  for (NodePtr &t : inputs)
    t = reshape(t, unsqueezed);
  return inputs.size() == 1 ? inputs[0] : concat(std::move(inputs), d);
}

std::vector<NodePtr> harp::detail::splitSections(NodePtr a,
                                                 std::vector<int64_t> sizes,
                                                 int64_t dim) {
  int64_t d = normalizeAxis("split", dim, shapeOf(a).size());
  int64_t n = shapeOf(a)[d], total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      throw Error("split: sections " + shapeStr(sizes) +
                  " include a negative size");
    total += s;
  }
  if (total != n)
    throw Error("split: sections " + shapeStr(sizes) +
                " do not add up to dim " + std::to_string(d) + " of size " +
                std::to_string(n));
  std::vector<NodePtr> pieces;
  int64_t start = 0;
  for (int64_t s : sizes) {
    pieces.push_back(slice(a, d, start, start + s, 1));
    start += s;
  }
  return pieces;
}

std::vector<NodePtr> harp::detail::split(NodePtr a, int64_t size, int64_t dim) {
  if (size <= 0)
    throw Error("split: split_size must be positive, got " +
                std::to_string(size));
  int64_t d = normalizeAxis("split", dim, shapeOf(a).size());
  int64_t n = shapeOf(a)[d];
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += size)
    sizes.push_back(std::min(size, n - start));
  if (sizes.empty())
    sizes.push_back(0);
  return splitSections(a, sizes, d);
}

std::vector<NodePtr> harp::detail::chunk(NodePtr a, int64_t chunks,
                                         int64_t dim) {
  if (chunks <= 0)
    throw Error("chunk: chunks must be positive, got " +
                std::to_string(chunks));
  int64_t d = normalizeAxis("chunk", dim, shapeOf(a).size());
  int64_t n = shapeOf(a)[d];
  return split(a, std::max<int64_t>(1, (n + chunks - 1) / chunks), d);
}

std::vector<NodePtr> harp::detail::unbind(NodePtr a, int64_t dim) {
  int64_t d = normalizeAxis("unbind", dim, shapeOf(a).size());
  std::vector<int64_t> shape = shapeOf(a);
  shape.erase(shape.begin() + d);
  std::vector<NodePtr> pieces;
  for (int64_t i = 0; i < shapeOf(a)[d]; ++i)
    pieces.push_back(reshape(slice(a, d, i, i + 1, 1), shape));
  return pieces;
}

NodePtr harp::detail::indexSelect(NodePtr a, int64_t dim, NodePtr index) {
  requireIndex("index_select", index);
  if (shapeOf(index).size() != 1)
    throw Error("index_select: the index must be 1-D, got shape " +
                shapeStr(shapeOf(index)));
  if (isScalarAxis("index_select", dim, shapeOf(a).size())) {
    if (shapeOf(index)[0] != 1)
      throw Error("index_select: the index into a 0-d tensor must have one "
                  "entry, got shape " +
                  shapeStr(shapeOf(index)));
    IndexCheckPtr check =
        checkIndexRange("index_select", index, 1, "a 0-d input");
    return withCheck(
        onScalarAsVector(
            a, [&](NodePtr v) { return gatherUnchecked(v, index, 0); }),
        check);
  }
  int64_t d = normalizeAxis("index_select", dim, shapeOf(a).size());
  IndexCheckPtr check = checkIndexRange("index_select", index, shapeOf(a)[d],
                                        dimRange(d, shapeOf(a)[d]));
  std::vector<int64_t> shape = shapeOf(a), column(shape.size(), 1);
  shape[d] = column[d] = shapeOf(index)[0];
  return withCheck(gatherUnchecked(a, expand(reshape(index, column), shape), d),
                   check);
}

NodePtr harp::detail::takeAlongDim(NodePtr a, NodePtr indices,
                                   std::optional<int64_t> dim) {
  requireIndex("take_along_dim", indices);
  if (!dim) {
    int64_t count = numElements(shapeOf(a));
    IndexCheckPtr check = checkIndexRange("take_along_dim", indices, count,
                                          "the " + std::to_string(count) +
                                              " entries of the input");
    return withCheck(
        gatherUnchecked(reshape(a, {-1}), reshape(indices, {-1}), 0), check);
  }
  size_t rank = shapeOf(a).size();
  if (shapeOf(indices).size() != rank)
    throw Error("take_along_dim: input " + shapeStr(shapeOf(a)) +
                " and indices " + shapeStr(shapeOf(indices)) +
                " need the same rank");
  int64_t d = normalizeAxis("take_along_dim", *dim, rank);
  std::vector<int64_t> in = shapeOf(a), idx = shapeOf(indices);
  for (size_t i = 0; i < rank; ++i) {
    if (int64_t(i) == d)
      continue;
    if (in[i] != idx[i] && in[i] != 1 && idx[i] != 1)
      throw Error("take_along_dim: input " + shapeStr(shapeOf(a)) +
                  " and indices " + shapeStr(shapeOf(indices)) +
                  " do not broadcast in dim " + std::to_string(i));
    in[i] = idx[i] = std::max(in[i], idx[i]);
  }
  IndexCheckPtr check =
      checkIndexRange("take_along_dim", indices, in[d], dimRange(d, in[d]));
  return withCheck(gatherUnchecked(expand(a, in), expand(indices, idx), d),
                   check);
}

NodePtr harp::detail::repeat(NodePtr a, std::vector<int64_t> sizes) {
  const std::vector<int64_t> &shape = shapeOf(a);
  size_t rank = shape.size();
  bool negative =
      std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s < 0; });
  if (sizes.size() < rank || negative)
    throw Error("repeat: needs at least " + std::to_string(rank) +
                " non-negative sizes for shape " + shapeStr(shape) + ", got " +
                shapeStr(sizes));
  std::vector<int64_t> padded(sizes.size() - rank, 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  // [1, s0, 1, s1, ...] broadcast to [r0, s0, r1, s1, ...], then merged.
  std::vector<int64_t> interleaved, target, result;
  for (size_t i = 0; i < sizes.size(); ++i) {
    interleaved.insert(interleaved.end(), {1, padded[i]});
    target.insert(target.end(), {sizes[i], padded[i]});
    result.push_back(sizes[i] * padded[i]);
  }
  return reshape(expand(reshape(a, interleaved), target), result);
}

NodePtr harp::detail::repeatInterleave(NodePtr a, int64_t repeats,
                                       std::optional<int64_t> dim) {
  if (repeats < 0)
    throw Error("repeat_interleave: repeats must be non-negative, got " +
                std::to_string(repeats));
  if (!dim)
    return repeatInterleave(reshape(a, {-1}), repeats, 0);
  int64_t d = normalizeAxis("repeat_interleave", *dim, shapeOf(a).size());
  std::vector<int64_t> shape = shapeOf(a), unsqueezed = shape;
  unsqueezed.insert(unsqueezed.begin() + d + 1, 1);
  std::vector<int64_t> expanded = unsqueezed;
  expanded[d + 1] = repeats;
  shape[d] *= repeats;
  return reshape(expand(reshape(a, unsqueezed), expanded), shape);
}

NodePtr harp::detail::repeatInterleave(NodePtr a, std::vector<int64_t> repeats,
                                       std::optional<int64_t> dim) {
  if (!dim)
    return repeatInterleave(reshape(a, {-1}), std::move(repeats), 0);
  int64_t d = normalizeAxis("repeat_interleave", *dim, shapeOf(a).size());
  int64_t n = shapeOf(a)[d];
  bool negative = std::any_of(repeats.begin(), repeats.end(),
                              [](int64_t r) { return r < 0; });
  if (int64_t(repeats.size()) != n || negative)
    throw Error("repeat_interleave: needs " + std::to_string(n) +
                " non-negative repeats for dim " + std::to_string(d) +
                ", got " + shapeStr(repeats));
  std::vector<int64_t> index;
  for (int64_t i = 0; i < n; ++i)
    index.insert(index.end(), repeats[i], i);
  int64_t count = index.size();
  return indexSelect(a, d, fromData(DType::I64, {count}, index.data()));
}

NodePtr harp::detail::triangle(NodePtr a, int64_t diagonal, bool lower) {
  const char *op = lower ? "tril" : "triu";
  const std::vector<int64_t> &shape = shapeOf(a);
  size_t rank = shape.size();
  if (rank < 2)
    throw Error(std::string(op) + ": needs a tensor of rank >= 2, got shape " +
                shapeStr(shape));
  // Keep (i, j) where j - i <= diagonal (tril) or >= diagonal (triu): a
  // mask from two aranges, so no data is baked into the graph.
  int64_t rows = shape[rank - 2], cols = shape[rank - 1];
  NodePtr row = reshape(arange(DType::I64, rows, 0, 1), {rows, 1});
  NodePtr col = reshape(arange(DType::I64, cols, 0, 1), {1, cols});
  NodePtr offset = binary(BinaryOp::Sub, col, row);
  NodePtr keep = binary(lower ? BinaryOp::Le : BinaryOp::Ge, offset,
                        full(DType::I64, {}, double(diagonal)));
  return where(keep, a, full(dtypeOf(a), {}, 0));
}

NodePtr harp::detail::roll(NodePtr a, std::vector<int64_t> shifts,
                           std::vector<int64_t> dims) {
  if (dims.empty()) {
    if (shifts.size() != 1)
      throw Error("roll: without dims, shifts must be one number, got " +
                  shapeStr(shifts));
    return reshape(roll(reshape(a, {-1}), shifts, {0}), shapeOf(a));
  }
  if (shifts.size() != dims.size())
    throw Error("roll: " + std::to_string(shifts.size()) + " shifts for " +
                std::to_string(dims.size()) + " dims");
  NodePtr out = a;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = normalizeAxis("roll", dims[i], shapeOf(a).size());
    int64_t n = shapeOf(a)[d];
    int64_t s = n ? ((shifts[i] % n) + n) % n : 0;
    if (s)
      out = concat({slice(out, d, n - s, n, 1), slice(out, d, 0, n - s, 1)}, d);
  }
  return out;
}

NodePtr harp::detail::scan(ReduceOp kind, NodePtr a, int64_t dim) {
  const char *op = kind == ReduceOp::Sum ? "cumsum" : "cumprod";
  if (kind != ReduceOp::Sum && kind != ReduceOp::Prod)
    throw Error("scan: only sums and products, got " +
                std::string(opName(kind)));
  if (dtypeOf(a) == DType::Bool)
    throw Error(std::string(op) + ": needs a numeric tensor, got bool");
  // An inclusive scan in ceil(log2 n) steps (Hillis-Steele): step k
  // combines every element with the one 2^k before it (the identity before
  // the start). Each step is one fused element-wise kernel.
  size_t rank = shapeOf(a).size();
  if (isScalarAxis(op, dim, rank))
    return a; // the scan of one element
  int64_t d = normalizeAxis(op, dim, rank);
  int64_t n = shapeOf(a)[d];
  BinaryOp combine = kind == ReduceOp::Sum ? BinaryOp::Add : BinaryOp::Mul;
  double identity = kind == ReduceOp::Sum ? 0 : 1;
  NodePtr out = a;
  for (int64_t shift = 1; shift < n; shift *= 2) {
    std::vector<int64_t> before(rank, 0), after(rank, 0);
    before[d] = shift;
    NodePtr shifted =
        pad(slice(out, d, 0, n - shift, 1), before, after, identity);
    out = binary(combine, out, shifted);
  }
  return out;
}

NodePtr harp::detail::sqrtOfVariance(NodePtr v) {
  return rootOfSum(v, [](NodePtr s) { return unary(UnaryOp::Sqrt, s); });
}

NodePtr harp::detail::norm(NodePtr x, double p, std::vector<int64_t> axes,
                           bool keepdim) {
  requireFloat("norm", x);
  NodePtr magnitude = unary(UnaryOp::Abs, x);
  if (std::isinf(p))
    return reduce(p > 0 ? ReduceOp::Max : ReduceOp::Min, magnitude, axes,
                  keepdim);
  if (p == 0)
    return reduce(ReduceOp::Sum,
                  cast(binary(BinaryOp::Ne, x, num(x, 0)), dtypeOf(x)), axes,
                  keepdim);
  if (p == 1)
    return reduce(ReduceOp::Sum, magnitude, axes, keepdim);
  if (p == 2)
    return rootOfSum(
        reduce(ReduceOp::Sum, unary(UnaryOp::Square, x), axes, keepdim),
        [](NodePtr s) { return unary(UnaryOp::Sqrt, s); });
  if (std::isnan(p))
    throw Error("norm: p must be a number, inf or -inf, got nan");
  // A negative p as torch computes it: a zero entry makes its term
  // infinite and the norm 0.
  if (p < 0) {
    NodePtr sum = reduce(ReduceOp::Sum,
                         binary(BinaryOp::Pow, magnitude, num(magnitude, p)),
                         axes, keepdim);
    return binary(BinaryOp::Pow, sum, num(sum, 1 / p));
  }
  // |x|^p with the same care at 0 (for p < 1 its slope is infinite there).
  NodePtr terms = rootOfSum(magnitude, [&](NodePtr m) {
    return binary(BinaryOp::Pow, m, num(m, p));
  });
  return rootOfSum(reduce(ReduceOp::Sum, terms, axes, keepdim), [&](NodePtr s) {
    return binary(BinaryOp::Pow, s, num(s, 1 / p));
  });
}

NodePtr harp::detail::atan2(NodePtr y, NodePtr x) {
  DType d = promote(dtypeOf(y), dtypeOf(x));
  if (isComplex(d))
    throw Error("atan2: not defined for complex tensors (" + dtypeName(d) +
                ")");
  if (!isFloat(d))
    d = DType::F32; // integers as PyTorch's: in the default float type
  y = cast(y, d);
  x = cast(x, d);
  // atan(y / x), shifted by pi (with y's side) on the left half-plane; on
  // the y axis +-pi / 2 - x / y, whose value and both partial derivatives
  // there are atan2's (-1 / y and 0). Each branch divides by a denominator
  // made safe where it is not taken, so no 0 * inf reaches the gradient.
  auto c = [&](double v) { return num(x, v); };
  NodePtr zero = c(0);
  NodePtr xZero = binary(BinaryOp::Eq, x, zero);
  NodePtr yZero = binary(BinaryOp::Eq, y, zero);
  NodePtr xSafe = where(xZero, c(1), x), ySafe = where(yZero, c(1), y);
  NodePtr shift =
      where(binary(BinaryOp::Lt, x, zero),
            where(binary(BinaryOp::Ge, y, zero), c(M_PI), c(-M_PI)), zero);
  NodePtr offAxis =
      binary(BinaryOp::Add,
             unary(UnaryOp::Atan, binary(BinaryOp::Div, y, xSafe)), shift);
  NodePtr onAxis =
      binary(BinaryOp::Sub,
             where(binary(BinaryOp::Gt, y, zero), c(M_PI / 2), c(-M_PI / 2)),
             binary(BinaryOp::Div, x, ySafe));
  // atan2(0, 0) is 0.
  return where(xZero, where(yZero, zero, onAxis), offAxis);
}

NodePtr harp::detail::asin(NodePtr x) {
  if (!isFloat(dtypeOf(x)))
    x = cast(x, isComplex(dtypeOf(x)) ? dtypeOf(x) : DType::F32);
  requireFloat("asin", x);
  NodePtr one = num(x, 1);
  return atan2(x, unary(UnaryOp::Sqrt,
                        binary(BinaryOp::Sub, one, unary(UnaryOp::Square, x))));
}

NodePtr harp::detail::acos(NodePtr x) {
  if (!isFloat(dtypeOf(x)))
    x = cast(x, isComplex(dtypeOf(x)) ? dtypeOf(x) : DType::F32);
  requireFloat("acos", x);
  NodePtr one = num(x, 1);
  return atan2(unary(UnaryOp::Sqrt,
                     binary(BinaryOp::Sub, one, unary(UnaryOp::Square, x))),
               x);
}

NodePtr harp::detail::frac(NodePtr x) {
  requireFloat("frac", x);
  return binary(BinaryOp::Sub, x, unary(UnaryOp::Trunc, x));
}

NodePtr harp::detail::normalize(NodePtr x, double p, int64_t dim, double eps) {
  requireFloat("normalize", x);
  NodePtr n = norm(x, p, {dim}, /*keepdim=*/true);
  return binary(BinaryOp::Div, x, clamp(n, eps, std::nullopt));
}

namespace {
/// Box-Muller on a uniform draw [2, shape...].
NodePtr boxMuller(DType dtype, const std::vector<int64_t> &shape,
                  NodePtr uniform) {
  NodePtr u1 = reshape(slice(uniform, 0, 0, 1, 1), shape);
  NodePtr u2 = reshape(slice(uniform, 0, 1, 2, 1), shape);
  NodePtr one = full(dtype, {}, 1);
  NodePtr radius =
      unary(UnaryOp::Sqrt,
            binary(BinaryOp::Mul, full(dtype, {}, -2),
                   unary(UnaryOp::Log, binary(BinaryOp::Sub, one, u1))));
  NodePtr angle = binary(BinaryOp::Mul, u2, full(dtype, {}, 2 * M_PI));
  return binary(BinaryOp::Mul, radius, unary(UnaryOp::Cos, angle));
}

std::vector<int64_t> twoDraws(std::vector<int64_t> shape) {
  shape.insert(shape.begin(), 2);
  return shape;
}
} // namespace

NodePtr harp::detail::randn(DType dtype, std::vector<int64_t> shape,
                            uint64_t seed) {
  if (!isFloat(dtype))
    throw Error("randn: needs a float dtype, got " + dtypeName(dtype));
  return boxMuller(dtype, shape, rand(dtype, twoDraws(shape), seed));
}

NodePtr harp::detail::randn(DType dtype, std::vector<int64_t> shape,
                            NodePtr seed) {
  if (!isFloat(dtype))
    throw Error("randn: needs a float dtype, got " + dtypeName(dtype));
  return boxMuller(dtype, shape, rand(dtype, twoDraws(shape), seed));
}

NodePtr harp::detail::seedLeaf(uint64_t seed) {
  int64_t bits = static_cast<int64_t>(seed & 0x7FFFFFFFFFFFFFFFull);
  return scalar(DType::I64, &bits);
}

NodePtr harp::detail::dot(NodePtr a, NodePtr b) {
  if (shapeOf(a).size() != 1 || shapeOf(b).size() != 1)
    throw Error("dot: needs two 1-D tensors, got shapes " +
                shapeStr(shapeOf(a)) + " and " + shapeStr(shapeOf(b)));
  if (shapeOf(a) != shapeOf(b))
    throw Error("dot: lengths differ: " + std::to_string(shapeOf(a)[0]) +
                " and " + std::to_string(shapeOf(b)[0]));
  return reduce(ReduceOp::Sum, binary(BinaryOp::Mul, a, b), {}, false);
}

NodePtr harp::detail::outer(NodePtr a, NodePtr b) {
  if (shapeOf(a).size() != 1 || shapeOf(b).size() != 1)
    throw Error("outer: needs two 1-D tensors, got shapes " +
                shapeStr(shapeOf(a)) + " and " + shapeStr(shapeOf(b)));
  return binary(BinaryOp::Mul, reshape(a, {shapeOf(a)[0], 1}),
                reshape(b, {1, shapeOf(b)[0]}));
}
