//===- NN.cpp - layers and losses of harp::nn -----------------------------===//
//
// Each layer is composed from the graph's ops (views, element-wise ops,
// reductions, matmul, gather), so its gradient comes from the autodiff pass
// like any other graph's. Shapes are checked here first, so a mistake names
// the layer rather than the op it is built from.
//
//===----------------------------------------------------------------------===//

#include "harp/API/NN.h"

#include "Node.h"

#include <cmath>
#include <numeric>

using namespace harp;
using namespace harp::detail;
using harp::nn::Reduction;
using Shape = std::vector<int64_t>;

namespace {

NodePtr num(const NodePtr &like, double value) {
  return scalar(dtypeOf(like), value);
}
NodePtr add(NodePtr a, NodePtr b) { return binary(BinaryOp::Add, a, b); }
NodePtr sub(NodePtr a, NodePtr b) { return binary(BinaryOp::Sub, a, b); }
NodePtr mul(NodePtr a, NodePtr b) { return binary(BinaryOp::Mul, a, b); }
NodePtr div(NodePtr a, NodePtr b) { return binary(BinaryOp::Div, a, b); }
NodePtr scale(NodePtr a, double s) { return mul(a, num(a, s)); }
NodePtr sum(NodePtr a, Shape axes, bool keepdim = false) {
  return reduce(ReduceOp::Sum, a, std::move(axes), keepdim);
}
NodePtr mean(NodePtr a, Shape axes, bool keepdim = false) {
  return reduce(ReduceOp::Mean, a, std::move(axes), keepdim);
}
Shape range(int64_t begin, int64_t end) {
  Shape r(static_cast<size_t>(std::max<int64_t>(end - begin, 0)));
  std::iota(r.begin(), r.end(), begin);
  return r;
}
Shape join(Shape a, const Shape &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
int64_t product(const Shape &s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1),
                         std::multiplies<int64_t>());
}
const Shape &shape(const NodePtr &n) { return shapeOf(n); }
std::string str(const NodePtr &n) { return shapeStr(shapeOf(n)); }

void requireFloat(const std::string &op, const NodePtr &x,
                  const char *what = "input") {
  if (!isFloat(dtypeOf(x)))
    throw Error(op + ": " + what + " must be f32 or f64, got " +
                dtypeName(dtypeOf(x)));
}

void requireInteger(const std::string &op, const NodePtr &x, const char *what) {
  DType d = dtypeOf(x);
  if (isFloat(d) || d == DType::Bool)
    throw Error(op + ": " + what + " must hold integers, got " + dtypeName(d));
}

/// `value` (1 or `count` numbers) as `count` numbers.
Shape perDim(const std::string &op, const char *name, const Shape &value,
             size_t count) {
  if (value.size() == 1)
    return Shape(count, value[0]);
  if (value.size() != count)
    throw Error(op + ": " + name + " needs 1 or " + std::to_string(count) +
                " values, got " + shapeStr(value));
  return value;
}

/// Checks that `t` (if given) has shape [c].
void requireChannels(const std::string &op, const char *name, const NodePtr &t,
                     int64_t c, const NodePtr &x) {
  if (t && shape(t) != Shape{c})
    throw Error(op + ": " + name + " must have shape [" + std::to_string(c) +
                "] for input " + str(x) + ", got " + str(t));
}

/// x [N, C, spatial...] with 1 to 3 spatial dims; returns their count.
size_t spatialDims(const std::string &op, const NodePtr &x) {
  size_t rank = shape(x).size();
  if (rank < 3 || rank > 5)
    throw Error(op +
                ": expected input [N, C, spatial...] with 1 to 3 "
                "spatial dims, got " +
                str(x));
  return rank - 2;
}

/// [1, c, 1...] for per-channel parameters of a rank-`rank` input.
NodePtr perChannel(const NodePtr &t, int64_t c, size_t rank) {
  Shape s(rank, 1);
  s[1] = c;
  return reshape(t, s);
}

NodePtr reduceLoss(const std::string &op, NodePtr loss, Reduction r) {
  switch (r) {
  case Reduction::None:
    return loss;
  case Reduction::Sum:
    return sum(loss, {});
  case Reduction::Mean:
    return mean(loss, {});
  }
  throw Error(op + ": unknown reduction");
}

/// A constant tensor of `dtype` (f32 or f64) holding `values`.
NodePtr constant(DType dtype, Shape s, const std::vector<double> &values) {
  if (dtype == DType::F64)
    return fromData(dtype, std::move(s), values.data());
  std::vector<float> narrow(values.begin(), values.end());
  return fromData(dtype, std::move(s), narrow.data());
}

} // namespace

//===----------------------------------------------------------------------===//
// Linear and convolution
//===----------------------------------------------------------------------===//

NodePtr harp::detail::nn::linear(NodePtr x, NodePtr w, NodePtr bias) {
  requireFloat("linear", x);
  const Shape &ws = shape(w), &xs = shape(x);
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1])
    throw Error("linear: input " + str(x) + " and weight " + str(w) +
                " do not match (weight [out_features, " +
                std::to_string(xs.empty() ? 0 : xs.back()) + "] expected)");
  NodePtr out = matmul(x, permute(w, {1, 0}));
  if (bias) {
    if (shape(bias) != Shape{ws[0]})
      throw Error("linear: bias must have shape [" + std::to_string(ws[0]) +
                  "], got " + str(bias));
    out = add(out, bias);
  }
  return out;
}

NodePtr harp::detail::nn::conv(NodePtr x, NodePtr w, NodePtr bias,
                               const ConvOptions &options,
                               const std::string &op) {
  requireFloat(op, x);
  const Shape ws = shape(w);
  if (ws.size() < 3 || ws.size() > 5)
    throw Error(op +
                ": weight must be [out_channels, in_channels / groups, "
                "kernel...] with 1 to 3 kernel dims, got " +
                str(w));
  size_t k = ws.size() - 2;
  bool unbatched = shape(x).size() == k + 1;
  if (unbatched)
    x = reshape(x, join({1}, shape(x)));
  if (shape(x).size() != k + 2)
    throw Error(op + ": input must be [N, C, spatial...] with " +
                std::to_string(k) + " spatial dims for weight " + str(w) +
                ", got " + str(x));
  const Shape xs = shape(x);
  int64_t n = xs[0], c = xs[1], f = ws[0], groups = options.groupCount;
  if (groups < 1 || c % groups || f % groups)
    throw Error(op + ": groups=" + std::to_string(groups) +
                " must divide the input channels (" + std::to_string(c) +
                ") and the output channels (" + std::to_string(f) + ")");
  if (ws[1] * groups != c)
    throw Error(op + ": input " + shapeStr(xs) + " has " + std::to_string(c) +
                " channels but weight " + str(w) +
                " with groups=" + std::to_string(groups) + " expects " +
                std::to_string(ws[1] * groups));
  Shape kernel(ws.begin() + 2, ws.end());
  Shape stride = perDim(op, "stride", options.strides, k);
  Shape dilation = perDim(op, "dilation", options.dilations, k);
  Shape before, after;
  if (options.samePadding) {
    for (int64_t s : stride)
      if (s != 1)
        throw Error(op + ": same padding needs stride 1, got " +
                    shapeStr(stride));
    for (size_t i = 0; i < k; ++i) {
      int64_t total = dilation[i] * (kernel[i] - 1);
      before.push_back(total / 2);
      after.push_back(total - total / 2);
    }
  } else {
    before = after = perDim(op, "padding", options.paddings, k);
  }
  for (size_t i = 0; i < k; ++i) {
    if (stride[i] < 1 || dilation[i] < 1 || before[i] < 0)
      throw Error(op + ": stride " + shapeStr(stride) + " and dilation " +
                  shapeStr(dilation) + " must be positive and padding " +
                  shapeStr(before) + " not negative");
    if (xs[2 + i] + before[i] + after[i] < dilation[i] * (kernel[i] - 1) + 1)
      throw Error(op + ": kernel " + shapeStr(kernel) + " (dilation " +
                  shapeStr(dilation) + ") is larger than the padded input " +
                  shapeStr(xs));
  }
  NodePtr out;
  if (groups == 1 && before == after) {
    out = detail::conv(x, w, stride, before, dilation);
  } else {
    if (before != Shape(k, 0) || after != Shape(k, 0))
      x = pad(x, join({0, 0}, before), join({0, 0}, after), 0.0);
    if (groups == 1) {
      out = detail::conv(x, w, stride, Shape(k, 0), dilation);
    } else {
      // Per group g: out[n, g, f, o...] = sum over c and the kernel of
      // windows[n, g, c, o..., k...] * weight[g, f, c, k...].
      NodePtr windows = unfold(x, kernel, stride, dilation);
      Shape outs(shape(windows).begin() + 2, shape(windows).begin() + 2 + k);
      int64_t cg = c / groups, fg = f / groups;
      windows = reshape(windows, join(join({n, groups, 1, cg}, outs), kernel));
      NodePtr wr =
          reshape(w, join(join({1, groups, fg, cg}, Shape(k, 1)), kernel));
      Shape dims = join({3}, range(4 + k, 4 + 2 * k));
      out = reshape(sum(mul(windows, wr), dims), join({n, f}, outs));
    }
  }
  if (bias) {
    requireChannels(op, "bias", bias, f, x);
    out = add(out, perChannel(bias, f, k + 2));
  }
  if (unbatched)
    out = reshape(out, Shape(shape(out).begin() + 1, shape(out).end()));
  return out;
}

NodePtr harp::detail::nn::convTranspose(NodePtr x, NodePtr w, NodePtr bias,
                                        const ConvTransposeOptions &options,
                                        const std::string &op) {
  requireFloat(op, x);
  const Shape ws = shape(w);
  if (ws.size() < 3 || ws.size() > 5)
    throw Error(op +
                ": weight must be [in_channels, out_channels / "
                "groups, kernel...] with 1 to 3 kernel dims, got " +
                str(w));
  size_t k = ws.size() - 2;
  if (shape(x).size() != k + 2)
    throw Error(op + ": input must be [N, C, spatial...] with " +
                std::to_string(k) + " spatial dims for weight " + str(w) +
                ", got " + str(x));
  const Shape xs = shape(x);
  int64_t n = xs[0], c = xs[1], groups = options.groupCount;
  if (groups < 1 || c % groups)
    throw Error(op + ": groups=" + std::to_string(groups) +
                " must divide the input channels (" + std::to_string(c) + ")");
  if (ws[0] != c)
    throw Error(op + ": input " + shapeStr(xs) + " has " + std::to_string(c) +
                " channels but weight " + str(w) + " expects " +
                std::to_string(ws[0]));
  Shape kernel(ws.begin() + 2, ws.end());
  Shape stride = perDim(op, "stride", options.strides, k);
  Shape padding = perDim(op, "padding", options.paddings, k);
  Shape outputPadding = perDim(op, "output_padding", options.outputPaddings, k);
  Shape dilation = perDim(op, "dilation", options.dilations, k);
  for (size_t i = 0; i < k; ++i) {
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0 ||
        outputPadding[i] < 0)
      throw Error(op + ": stride and dilation must be positive, "
                       "padding and output_padding not negative");
    if (outputPadding[i] >= std::max(stride[i], dilation[i]))
      throw Error(op + ": output_padding " + shapeStr(outputPadding) +
                  " must be smaller than the stride " + shapeStr(stride) +
                  " or the dilation " + shapeStr(dilation));
  }
  int64_t fg = ws[1], cg = c / groups, f = fg * groups;
  Shape sizes(xs.begin() + 2, xs.end());
  // cols[n, g, f, i..., k...] = sum over c of x[n, g, c, i...] w[g, c, f,
  // k...]; then every window is added back at its place (fold, the adjoint
  // of the convolution's sliding windows).
  NodePtr xr = reshape(x, join(join({n, groups, cg, 1}, sizes), Shape(k, 1)));
  NodePtr wr = reshape(w, join(join({1, groups, cg, fg}, Shape(k, 1)), kernel));
  NodePtr cols =
      reshape(sum(mul(xr, wr), {2}), join(join({n, f}, sizes), kernel));
  Shape full(k);
  for (size_t i = 0; i < k; ++i)
    full[i] = (sizes[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1;
  NodePtr out = fold(cols, full, stride, dilation);
  if (outputPadding != Shape(k, 0))
    out = pad(out, Shape(k + 2, 0), join({0, 0}, outputPadding), 0.0);
  for (size_t i = 0; i < k; ++i) {
    int64_t size = full[i] + outputPadding[i] - 2 * padding[i];
    if (size <= 0)
      throw Error(op + ": padding " + shapeStr(padding) +
                  " leaves no output for input " + shapeStr(xs));
    if (padding[i])
      out = slice(out, 2 + i, padding[i], padding[i] + size, 1);
  }
  if (bias) {
    requireChannels(op, "bias", bias, f, x);
    out = add(out, perChannel(bias, f, k + 2));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Pooling, im2col and col2im
//===----------------------------------------------------------------------===//

namespace {

struct PoolGeometry {
  Shape kernel, stride, dilation, before, after, outs;
};

/// torch's pooling geometry: with ceil_mode, a last window must start
/// inside the input or its left padding.
PoolGeometry poolGeometry(const std::string &op, const NodePtr &x,
                          const harp::nn::PoolOptions &options, bool dilated) {
  size_t k = spatialDims(op, x);
  PoolGeometry g;
  g.kernel = perDim(op, "kernel", options.kernel, k);
  g.stride = options.strides.empty() ? g.kernel
                                     : perDim(op, "stride", options.strides, k);
  g.dilation =
      dilated ? perDim(op, "dilation", options.dilations, k) : Shape(k, 1);
  g.before = perDim(op, "padding", options.paddings, k);
  for (size_t i = 0; i < k; ++i) {
    if (g.kernel[i] < 1 || g.stride[i] < 1 || g.dilation[i] < 1)
      throw Error(op + ": kernel " + shapeStr(g.kernel) + ", stride " +
                  shapeStr(g.stride) + " and dilation " + shapeStr(g.dilation) +
                  " must be positive");
    if (g.before[i] < 0 || 2 * g.before[i] > g.kernel[i])
      throw Error(op + ": padding " + shapeStr(g.before) +
                  " must be between 0 and half the kernel " +
                  shapeStr(g.kernel));
    int64_t size = shape(x)[2 + i];
    int64_t span = g.dilation[i] * (g.kernel[i] - 1) + 1;
    int64_t room = size + 2 * g.before[i] - span;
    if (room < 0)
      throw Error(op + ": input " + str(x) + " is smaller than the window " +
                  shapeStr(g.kernel) + " (dilation " + shapeStr(g.dilation) +
                  ", padding " + shapeStr(g.before) + ")");
    int64_t out =
        (room + (options.ceilMode ? g.stride[i] - 1 : 0)) / g.stride[i] + 1;
    if (options.ceilMode && (out - 1) * g.stride[i] >= size + g.before[i])
      --out;
    g.outs.push_back(out);
    g.after.push_back(std::max(g.before[i], (out - 1) * g.stride[i] + span -
                                                size - g.before[i]));
  }
  return g;
}

} // namespace

NodePtr harp::detail::nn::maxPool(NodePtr x, const PoolOptions &options,
                                  const std::string &op) {
  requireFloat(op, x);
  PoolGeometry g = poolGeometry(op, x, options, /*dilated=*/true);
  size_t k = g.kernel.size();
  if (g.before != Shape(k, 0) || g.after != Shape(k, 0))
    x = pad(x, join({0, 0}, g.before), join({0, 0}, g.after), -INFINITY);
  NodePtr windows = unfold(x, g.kernel, g.stride, g.dilation);
  return reduce(ReduceOp::Max, windows, range(2 + k, 2 + 2 * k), false);
}

NodePtr harp::detail::nn::maxPoolIndices(NodePtr x, const PoolOptions &options,
                                         const std::string &op) {
  requireFloat(op, x);
  PoolGeometry g = poolGeometry(op, x, options, /*dilated=*/true);
  size_t k = g.kernel.size();
  Shape sizes(shape(x).begin() + 2, shape(x).end());
  if (g.before != Shape(k, 0) || g.after != Shape(k, 0))
    x = pad(x, join({0, 0}, g.before), join({0, 0}, g.after), -INFINITY);
  // The first maximum of each window, as an offset in the window...
  NodePtr windows = unfold(x, g.kernel, g.stride, g.dilation);
  Shape flat(shape(windows).begin(), shape(windows).begin() + 2 + k);
  flat.push_back(product(g.kernel));
  NodePtr local = argExtreme(reshape(windows, flat), 2 + k, false, true);
  // ... then as a position in the input, row-major over its spatial dims:
  // per dim, out * stride - padding + (offset in the window) * dilation.
  // The geometry's numbers are constants of the compiled code (not run-time
  // arguments): divisions by them become multiplications.
  auto i64 = [](double v) { return full(DType::I64, {}, v); };
  NodePtr index;
  int64_t inner = product(g.kernel), placeValue = product(sizes);
  for (size_t i = 0; i < k; ++i) {
    inner /= g.kernel[i];
    placeValue /= sizes[i];
    NodePtr offset =
        binary(BinaryOp::Rem, binary(BinaryOp::FloorDiv, local, i64(inner)),
               i64(g.kernel[i]));
    Shape along(2 + k, 1);
    along[2 + i] = g.outs[i];
    NodePtr start = reshape(arange(DType::I64, g.outs[i], double(-g.before[i]),
                                   double(g.stride[i])),
                            along);
    NodePtr position =
        add(start, binary(BinaryOp::Mul, offset, i64(g.dilation[i])));
    NodePtr term = binary(BinaryOp::Mul, position, i64(placeValue));
    index = index ? add(index, term) : term;
  }
  return index;
}

NodePtr harp::detail::nn::avgPool(NodePtr x, const PoolOptions &options,
                                  const std::string &op) {
  requireFloat(op, x);
  PoolGeometry g = poolGeometry(op, x, options, /*dilated=*/false);
  size_t k = g.kernel.size();
  Shape sizes(shape(x).begin() + 2, shape(x).end());
  if (g.before != Shape(k, 0) || g.after != Shape(k, 0))
    x = pad(x, join({0, 0}, g.before), join({0, 0}, g.after), 0.0);
  NodePtr windows = unfold(x, g.kernel, g.stride, g.dilation);
  NodePtr total = sum(windows, range(2 + k, 2 + 2 * k));
  if (options.divisorOverride)
    return scale(total, 1.0 / double(options.divisorOverride));
  // Each window's element count, as torch's: windows are clipped to the
  // padded input (ceil_mode), and to the input itself unless
  // count_include_pad; a box's count is the product of its sides.
  std::vector<double> counts{1.0};
  for (size_t i = 0; i < k; ++i) {
    std::vector<double> next;
    for (double prior : counts)
      for (int64_t j = 0; j < g.outs[i]; ++j) {
        int64_t start = j * g.stride[i] - g.before[i];
        int64_t end = std::min(start + g.kernel[i], sizes[i] + g.before[i]);
        if (!options.countIncludePad) {
          end = std::min(end, sizes[i]);
          start = std::max<int64_t>(start, 0);
        }
        next.push_back(prior * double(end - start));
      }
    counts = std::move(next);
  }
  bool uniform = std::all_of(counts.begin(), counts.end(),
                             [&](double v) { return v == counts[0]; });
  if (uniform)
    return scale(total, 1.0 / counts[0]);
  for (double &v : counts)
    v = 1.0 / v;
  return mul(total, constant(dtypeOf(total), g.outs, counts));
}

namespace {
/// torch's adaptive window j of `o` over a dim of `size`:
/// [floor(j size / o), ceil((j + 1) size / o)).
std::pair<int64_t, int64_t> adaptiveWindow(int64_t j, int64_t size, int64_t o) {
  return {j * size / o, ((j + 1) * size + o - 1) / o};
}

/// Adaptive pooling of x [N, C, spatial...] to `outputSize`, one spatial dim
/// at a time (average and maximum are both separable): `pool(out, dim,
/// size, o)` pools dim `dim` of `size` into `o` windows. Dims already of
/// their output size are left as they are.
template <typename Pool>
NodePtr adaptivePool(const std::string &op, NodePtr x, Shape outputSize,
                     Pool pool) {
  requireFloat(op, x);
  size_t k = spatialDims(op, x);
  Shape sizes = perDim(op, "output size", outputSize, k);
  NodePtr out = x;
  for (size_t i = 0; i < k; ++i) {
    int64_t dim = 2 + i, size = shape(x)[dim], o = sizes[i];
    if (o < 1)
      throw Error(op + ": output size must be positive, got " +
                  shapeStr(sizes));
    if (o != size)
      out = pool(out, dim, size, o);
  }
  return out;
}
} // namespace

NodePtr harp::detail::nn::adaptiveAvgPool(NodePtr x, Shape outputSize,
                                          const std::string &op) {
  size_t rank = shape(x).size();
  return adaptivePool(op, x, std::move(outputSize),
                      [&](NodePtr out, int64_t dim, int64_t size, int64_t o) {
                        if (o == 1)
                          return mean(out, {dim}, /*keepdim=*/true);
                        // The dim times a [size, o] matrix of 1 / count per
                        // window.
                        std::vector<double> weights(size * o, 0.0);
                        for (int64_t j = 0; j < o; ++j) {
                          auto [start, end] = adaptiveWindow(j, size, o);
                          for (int64_t s = start; s < end; ++s)
                            weights[s * o + j] = 1.0 / double(end - start);
                        }
                        Shape perm = range(0, rank);
                        std::swap(perm[dim], perm[rank - 1]);
                        return permute(
                            matmul(permute(out, perm),
                                   constant(dtypeOf(x), {size, o}, weights)),
                            perm);
                      });
}

NodePtr harp::detail::nn::adaptiveMaxPool(NodePtr x, Shape outputSize,
                                          const std::string &op) {
  return adaptivePool(op, x, std::move(outputSize),
                      [](NodePtr out, int64_t dim, int64_t size, int64_t o) {
                        // The maximum of each window, joined along the dim.
                        std::vector<NodePtr> parts;
                        for (int64_t j = 0; j < o; ++j) {
                          auto [start, end] = adaptiveWindow(j, size, o);
                          parts.push_back(reduce(ReduceOp::Max,
                                                 slice(out, dim, start, end, 1),
                                                 {dim}, /*keepdim=*/true));
                        }
                        return o == 1 ? parts[0] : concat(parts, dim);
                      });
}

NodePtr harp::detail::nn::globalAvgPool(NodePtr x) {
  requireFloat("global_avg_pool", x);
  size_t k = spatialDims("global_avg_pool", x);
  return mean(x, range(2, 2 + k), /*keepdim=*/true);
}

NodePtr harp::detail::nn::im2col(NodePtr x, Shape kernel, Shape stride,
                                 Shape padding) {
  const std::string op = "im2col";
  size_t k = spatialDims(op, x);
  kernel = perDim(op, "kernel", kernel, k);
  stride = perDim(op, "stride", stride, k);
  padding = perDim(op, "padding", padding, k);
  for (size_t i = 0; i < k; ++i)
    if (kernel[i] < 1 || stride[i] < 1 || padding[i] < 0)
      throw Error("im2col: kernel " + shapeStr(kernel) + " and stride " +
                  shapeStr(stride) + " must be positive, padding " +
                  shapeStr(padding) + " not negative");
  if (padding != Shape(k, 0))
    x = pad(x, join({0, 0}, padding), join({0, 0}, padding), 0.0);
  for (size_t i = 0; i < k; ++i)
    if (shape(x)[2 + i] < kernel[i])
      throw Error("im2col: kernel " + shapeStr(kernel) +
                  " is larger than the padded input " + str(x));
  // [N, C, out..., kernel...] -> [N, C, kernel..., out...] -> [N, C *
  // prod(kernel), prod(out)].
  NodePtr windows = unfold(x, kernel, stride, Shape(k, 1));
  int64_t n = shape(x)[0], c = shape(x)[1];
  Shape outs(shape(windows).begin() + 2, shape(windows).begin() + 2 + k);
  NodePtr moved = permute(
      windows, join(join({0, 1}, range(2 + k, 2 + 2 * k)), range(2, 2 + k)));
  return reshape(moved, {n, c * product(kernel), product(outs)});
}

NodePtr harp::detail::nn::col2im(NodePtr cols, Shape outputSize, Shape kernel,
                                 Shape stride, Shape padding) {
  const std::string op = "col2im";
  size_t k = outputSize.size();
  if (k < 1 || k > 3)
    throw Error("col2im: output size needs 1 to 3 dims, got " +
                shapeStr(outputSize));
  kernel = perDim(op, "kernel", kernel, k);
  stride = perDim(op, "stride", stride, k);
  padding = perDim(op, "padding", padding, k);
  const Shape cs = shape(cols);
  int64_t windows = product(kernel);
  if (cs.size() != 3 || windows < 1 || cs[1] % windows)
    throw Error("col2im: columns must be [N, C * " + std::to_string(windows) +
                ", L] for kernel " + shapeStr(kernel) + ", got " + str(cols));
  Shape padded(k), outs(k);
  for (size_t i = 0; i < k; ++i) {
    if (kernel[i] < 1 || stride[i] < 1 || padding[i] < 0)
      throw Error("col2im: kernel " + shapeStr(kernel) + " and stride " +
                  shapeStr(stride) + " must be positive, padding " +
                  shapeStr(padding) + " not negative");
    padded[i] = outputSize[i] + 2 * padding[i];
    if (padded[i] < kernel[i])
      throw Error("col2im: kernel " + shapeStr(kernel) +
                  " is larger than the padded output " + shapeStr(padded));
    outs[i] = (padded[i] - kernel[i]) / stride[i] + 1;
  }
  if (product(outs) != cs[2])
    throw Error("col2im: " + std::to_string(cs[2]) + " columns, but output " +
                shapeStr(outputSize) + " with kernel " + shapeStr(kernel) +
                ", stride " + shapeStr(stride) + " and padding " +
                shapeStr(padding) + " has " + std::to_string(product(outs)) +
                " windows");
  int64_t n = cs[0], c = cs[1] / windows;
  NodePtr split = reshape(cols, join(join({n, c}, kernel), outs));
  NodePtr moved = permute(
      split, join(join({0, 1}, range(2 + k, 2 + 2 * k)), range(2, 2 + k)));
  NodePtr out = fold(moved, padded, stride, Shape(k, 1));
  for (size_t i = 0; i < k; ++i)
    if (padding[i])
      out = slice(out, 2 + i, padding[i], padding[i] + outputSize[i], 1);
  return out;
}

//===----------------------------------------------------------------------===//
// Normalization, dropout, embedding
//===----------------------------------------------------------------------===//

NodePtr harp::detail::nn::batchNorm(NodePtr x, NodePtr runningMean,
                                    NodePtr runningVar, NodePtr weight,
                                    NodePtr bias, bool training,
                                    double momentum, double eps) {
  const std::string op = "batch_norm";
  requireFloat(op, x);
  const Shape xs = shape(x);
  if (xs.size() < 2)
    throw Error("batch_norm: expected input [N, C, ...], got " + str(x));
  int64_t c = xs[1];
  requireChannels(op, "running_mean", runningMean, c, x);
  requireChannels(op, "running_var", runningVar, c, x);
  requireChannels(op, "weight", weight, c, x);
  requireChannels(op, "bias", bias, c, x);
  size_t rank = xs.size();
  NodePtr m, v;
  if (training) {
    int64_t count = numElements(xs) / c;
    if (count <= 1)
      throw Error("batch_norm: expected more than 1 value per channel when "
                  "training, got input " +
                  str(x));
    Shape dims = join({0}, range(2, rank));
    m = mean(x, dims, /*keepdim=*/true);
    v = mean(unary(UnaryOp::Square, sub(x, m)), dims, /*keepdim=*/true);
    if (runningMean && runningVar) {
      // torch's rule: the unbiased variance, weighted by momentum. The
      // writes are deferred: backward() computes them with the loss, in
      // the same forward (a realization here would compute every layer
      // below again, once per statistic), as auxiliary results that carry
      // no gradient.
      NodePtr batchMean = reshape(m, {c});
      NodePtr batchVar = reshape(v, {c});
      deferOverwrite(runningMean, add(scale(runningMean, 1 - momentum),
                                      scale(batchMean, momentum)));
      deferOverwrite(runningVar, add(scale(runningVar, 1 - momentum),
                                     scale(batchVar, momentum * count /
                                                         double(count - 1))));
    } else if (runningMean || runningVar) {
      throw Error("batch_norm: give both running_mean and running_var, or "
                  "neither");
    }
  } else {
    if (!runningMean || !runningVar)
      throw Error("batch_norm: evaluation needs running_mean and running_var");
    m = perChannel(runningMean, c, rank);
    v = perChannel(runningVar, c, rank);
  }
  NodePtr out = mul(sub(x, m), unary(UnaryOp::Rsqrt, add(v, num(v, eps))));
  if (weight)
    out = mul(out, perChannel(weight, c, rank));
  if (bias)
    out = add(out, perChannel(bias, c, rank));
  return out;
}

NodePtr harp::detail::nn::layerNorm(NodePtr x, Shape normalizedShape,
                                    NodePtr weight, NodePtr bias, double eps) {
  requireFloat("layer_norm", x);
  const Shape xs = shape(x);
  size_t k = normalizedShape.size();
  if (k == 0 || k > xs.size() ||
      !std::equal(normalizedShape.begin(), normalizedShape.end(), xs.end() - k))
    throw Error("layer_norm: normalized_shape " + shapeStr(normalizedShape) +
                " does not end input " + shapeStr(xs));
  for (auto [t, name] : {std::pair{weight, "weight"}, {bias, "bias"}})
    if (t && shape(t) != normalizedShape)
      throw Error(std::string("layer_norm: ") + name + " must have shape " +
                  shapeStr(normalizedShape) + ", got " + str(t));
  Shape dims = range(xs.size() - k, xs.size());
  NodePtr centered = sub(x, mean(x, dims, /*keepdim=*/true));
  NodePtr var = mean(unary(UnaryOp::Square, centered), dims, true);
  NodePtr out = mul(centered, unary(UnaryOp::Rsqrt, add(var, num(var, eps))));
  if (weight)
    out = mul(out, weight);
  if (bias)
    out = add(out, bias);
  return out;
}

NodePtr harp::detail::nn::groupNorm(NodePtr x, int64_t groups, NodePtr weight,
                                    NodePtr bias, double eps) {
  const std::string op = "group_norm";
  requireFloat(op, x);
  const Shape xs = shape(x);
  if (xs.size() < 2 || groups < 1 || xs[1] % groups)
    throw Error("group_norm: num_groups=" + std::to_string(groups) +
                " must divide the channels of input " + shapeStr(xs));
  int64_t c = xs[1];
  requireChannels(op, "weight", weight, c, x);
  requireChannels(op, "bias", bias, c, x);
  int64_t perGroup = c / groups;
  for (size_t d = 2; d < xs.size(); ++d)
    perGroup *= xs[d];
  NodePtr grouped = reshape(x, {xs[0], groups, perGroup});
  NodePtr centered = sub(grouped, mean(grouped, {2}, /*keepdim=*/true));
  NodePtr var = mean(unary(UnaryOp::Square, centered), {2}, true);
  NodePtr out = reshape(
      mul(centered, unary(UnaryOp::Rsqrt, add(var, num(var, eps)))), xs);
  if (weight)
    out = mul(out, perChannel(weight, c, xs.size()));
  if (bias)
    out = add(out, perChannel(bias, c, xs.size()));
  return out;
}

NodePtr harp::detail::nn::dropout(NodePtr x, double p, bool training,
                                  uint64_t seed) {
  requireFloat("dropout", x);
  if (!(p >= 0.0 && p <= 1.0))
    throw Error("dropout: p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0.0)
    return x;
  if (p == 1.0)
    return scale(x, 0.0);
  // The seed is an argument of the compiled code (a 0-d i64 leaf).
  NodePtr draw = rand(dtypeOf(x), shape(x), seedLeaf(seed));
  return where(binary(BinaryOp::Ge, draw, num(draw, p)),
               scale(x, 1.0 / (1.0 - p)), num(x, 0.0));
}

NodePtr harp::detail::nn::embedding(NodePtr indices, NodePtr weight) {
  requireInteger("embedding", indices, "indices");
  if (shape(weight).size() != 2)
    throw Error("embedding: weight must be [num_embeddings, dim], got " +
                str(weight));
  int64_t rows = shape(weight)[0], dim = shape(weight)[1],
          count = numElements(shape(indices));
  IndexCheckPtr check =
      checkIndexRange("embedding", indices, rows,
                      "a weight of " + std::to_string(rows) + " rows");
  NodePtr flat = expand(reshape(indices, {count, 1}), {count, dim});
  return withCheck(
      reshape(gatherUnchecked(weight, flat, 0), join(shape(indices), {dim})),
      check);
}

NodePtr harp::detail::nn::oneHot(NodePtr indices, int64_t classes) {
  requireInteger("one_hot", indices, "indices");
  if (classes < 1)
    throw Error("one_hot: needs a positive number of classes, got " +
                std::to_string(classes));
  IndexCheckPtr check = checkIndexRange("one_hot", indices, classes,
                                        std::to_string(classes) + " classes");
  NodePtr labels = reshape(indices, join(shape(indices), {1}));
  return withCheck(cast(binary(BinaryOp::Eq, labels,
                               arange(dtypeOf(indices), classes, 0, 1)),
                        DType::I64),
                   check);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {

/// [N, ...] class indices as [N, classes, ...] floats of `dtype`.
NodePtr classMask(const NodePtr &target, int64_t classes, DType dtype) {
  Shape s = shape(target), labels = s;
  labels.insert(labels.begin() + 1, 1);
  Shape along(s.size() + 1, 1);
  along[1] = classes;
  NodePtr ids = reshape(arange(dtypeOf(target), classes, 0, 1), along);
  return cast(binary(BinaryOp::Eq, reshape(target, labels), ids), dtype);
}

/// Checks input [N, C, ...] against class indices [N, ...].
void requireClasses(const std::string &op, const NodePtr &input,
                    const NodePtr &target) {
  const Shape &is = shape(input), &ts = shape(target);
  Shape expected = is;
  if (expected.size() >= 2)
    expected.erase(expected.begin() + 1);
  if (is.size() < 2 || ts != expected)
    throw Error(op + ": input " + shapeStr(is) +
                " must be [N, C, ...] and target its shape without dim 1 (" +
                shapeStr(expected) + "), or [C] and a 0-d target; got target " +
                shapeStr(ts));
}

} // namespace

namespace {
/// The mean of `loss` over the samples `keep` (0 or 1) counts. With none
/// counted it is NaN, as PyTorch's, and its gradient 0 rather than 0 / 0.
NodePtr meanOverKept(const NodePtr &loss, const NodePtr &keep) {
  NodePtr count = sum(keep, {});
  NodePtr mean =
      div(sum(loss, {}), binary(BinaryOp::Maximum, count, num(count, 1.0)));
  return where(binary(BinaryOp::Eq, count, num(count, 0.0)), num(mean, NAN),
               mean);
}

/// PyTorch's unbatched form of a classification loss: input [C] with a 0-d
/// class index (or [C] probabilities) is a batch of one, and its per-sample
/// loss is 0-d. `loss` computes the batched form.
template <typename Loss>
std::optional<NodePtr> unbatched(const NodePtr &input, const NodePtr &target,
                                 Reduction reduction, Loss loss) {
  if (shape(input).size() != 1 ||
      shape(target).size() != (isFloat(dtypeOf(target)) ? 1u : 0u))
    return std::nullopt;
  int64_t classes = shape(input)[0];
  NodePtr batched = loss(reshape(input, {1, classes}),
                         reshape(target, join({1}, shape(target))));
  return reduction == Reduction::None ? reshape(batched, {}) : batched;
}
/// Raises for a target (class indices) naming a class `input` [N, C, ...]
/// or [C] lacks; ignoreIndex is not a class. A computed target's check is
/// returned, for the loss.
IndexCheckPtr checkTargets(const std::string &op, const NodePtr &input,
                           const NodePtr &target, int64_t ignoreIndex) {
  const Shape &is = shape(input);
  if (is.empty())
    return nullptr;
  int64_t classes = is.size() == 1 ? is[0] : is[1];
  return checkIndexRange(op, target, classes,
                         std::to_string(classes) + " classes", ignoreIndex,
                         /*wrapsNegative=*/false, "target");
}
} // namespace

NodePtr harp::detail::nn::nllLoss(NodePtr input, NodePtr target,
                                  int64_t ignoreIndex, Reduction reduction) {
  const std::string op = "nll_loss";
  requireFloat(op, input);
  requireInteger(op, target, "target");
  IndexCheckPtr check = checkTargets(op, input, target, ignoreIndex);
  return withCheck(uncheckedNllLoss(input, target, ignoreIndex, reduction),
                   check);
}

NodePtr harp::detail::nn::uncheckedNllLoss(NodePtr input, NodePtr target,
                                           int64_t ignoreIndex,
                                           Reduction reduction) {
  const std::string op = "nll_loss";
  if (auto loss =
          unbatched(input, target, reduction, [&](NodePtr in, NodePtr t) {
            return uncheckedNllLoss(in, t, ignoreIndex, reduction);
          }))
    return *loss;
  requireClasses(op, input, target);
  DType dtype = dtypeOf(input);
  NodePtr picked =
      sum(mul(input, classMask(target, shape(input)[1], dtype)), {1});
  NodePtr keep = cast(binary(BinaryOp::Ne, target,
                             scalar(dtypeOf(target), double(ignoreIndex))),
                      dtype);
  NodePtr loss = mul(unary(UnaryOp::Neg, picked), keep);
  if (reduction == Reduction::Mean)
    return meanOverKept(loss, keep);
  return reduceLoss(op, loss, reduction);
}

NodePtr harp::detail::nn::crossEntropy(NodePtr input, NodePtr target,
                                       const CrossEntropyOptions &options) {
  requireFloat("cross_entropy", input);
  IndexCheckPtr check;
  if (!isFloat(dtypeOf(target)))
    check = checkTargets("cross_entropy", input, target, options.ignoreIndex);
  return withCheck(uncheckedCrossEntropy(input, target, options), check);
}

NodePtr
harp::detail::nn::uncheckedCrossEntropy(NodePtr input, NodePtr target,
                                        const CrossEntropyOptions &options) {
  const std::string op = "cross_entropy";
  double eps = options.labelSmoothing;
  if (!(eps >= 0.0 && eps <= 1.0))
    throw Error("cross_entropy: label_smoothing must be in [0, 1], got " +
                std::to_string(eps));
  if (auto loss = unbatched(input, target, options.reductionKind,
                            [&](NodePtr in, NodePtr t) {
                              return uncheckedCrossEntropy(in, t, options);
                            }))
    return *loss;
  if (shape(input).size() < 2)
    throw Error("cross_entropy: input must be [N, C, ...] or [C], got " +
                str(input));
  DType dtype = dtypeOf(input);
  int64_t classes = shape(input)[1];
  NodePtr logp = logSoftmax(input, 1);
  if (isFloat(dtypeOf(target))) {
    if (shape(target) != shape(input) || dtypeOf(target) != dtype)
      throw Error("cross_entropy: probabilities " + str(target) + " (" +
                  dtypeName(dtypeOf(target)) +
                  ") must have the input's shape " + str(input) +
                  " and dtype " + dtypeName(dtype));
    NodePtr smoothed = add(scale(target, 1 - eps), num(input, eps / classes));
    NodePtr loss = unary(UnaryOp::Neg, sum(mul(logp, smoothed), {1}));
    return reduceLoss(op, loss, options.reductionKind);
  }
  requireInteger(op, target, "target");
  requireClasses(op, input, target);
  NodePtr keep =
      cast(binary(BinaryOp::Ne, target,
                  scalar(dtypeOf(target), double(options.ignoreIndex))),
           dtype);
  NodePtr picked = sum(mul(logp, classMask(target, classes, dtype)), {1});
  NodePtr loss = sub(scale(picked, -(1 - eps)),
                     scale(sum(logp, {1}), eps / double(classes)));
  loss = mul(loss, keep);
  if (options.reductionKind == Reduction::Mean)
    return meanOverKept(loss, keep);
  return reduceLoss(op, loss, options.reductionKind);
}

namespace {
void requireSameShape(const std::string &op, const NodePtr &input,
                      const NodePtr &target) {
  if (shape(input) != shape(target))
    throw Error(op + ": input " + str(input) + " and target " + str(target) +
                " must have the same shape");
}
} // namespace

NodePtr harp::detail::nn::mseLoss(NodePtr input, NodePtr target,
                                  Reduction reduction) {
  requireSameShape("mse_loss", input, target);
  return reduceLoss("mse_loss", unary(UnaryOp::Square, sub(input, target)),
                    reduction);
}

NodePtr harp::detail::nn::l1Loss(NodePtr input, NodePtr target,
                                 Reduction reduction) {
  requireSameShape("l1_loss", input, target);
  return reduceLoss("l1_loss", unary(UnaryOp::Abs, sub(input, target)),
                    reduction);
}

NodePtr harp::detail::nn::smoothL1Loss(NodePtr input, NodePtr target,
                                       double beta, Reduction reduction) {
  const std::string op = "smooth_l1_loss";
  requireFloat(op, input);
  requireSameShape(op, input, target);
  if (!(beta >= 0))
    throw Error(op + ": beta must be >= 0, got " + std::to_string(beta));
  NodePtr d = unary(UnaryOp::Abs, sub(input, target));
  if (beta == 0)
    return reduceLoss(op, d, reduction);
  NodePtr loss = where(binary(BinaryOp::Lt, d, num(d, beta)),
                       scale(unary(UnaryOp::Square, d), 0.5 / beta),
                       sub(d, num(d, 0.5 * beta)));
  return reduceLoss(op, loss, reduction);
}

NodePtr harp::detail::nn::huberLoss(NodePtr input, NodePtr target, double delta,
                                    Reduction reduction) {
  const std::string op = "huber_loss";
  requireFloat(op, input);
  requireSameShape(op, input, target);
  if (!(delta > 0))
    throw Error(op + ": delta must be > 0, got " + std::to_string(delta));
  NodePtr d = unary(UnaryOp::Abs, sub(input, target));
  NodePtr loss = where(binary(BinaryOp::Lt, d, num(d, delta)),
                       scale(unary(UnaryOp::Square, d), 0.5),
                       scale(sub(d, num(d, 0.5 * delta)), delta));
  return reduceLoss(op, loss, reduction);
}

NodePtr harp::detail::nn::klDiv(NodePtr input, NodePtr target, bool logTarget) {
  const std::string op = "kl_div";
  requireFloat(op, input);
  requireSameShape(op, input, target);
  if (logTarget)
    return mul(unary(UnaryOp::Exp, target), sub(target, input));
  // target * log(target) is 0 where the target is 0 (xlogy); its gradient
  // there is NaN (0 * log 0), as torch's.
  NodePtr zero = num(target, 0);
  NodePtr entropy = where(binary(BinaryOp::Eq, target, zero), zero,
                          mul(target, unary(UnaryOp::Log, target)));
  return sub(entropy, mul(target, input));
}

NodePtr harp::detail::nn::binaryCrossEntropy(NodePtr input, NodePtr target,
                                             Reduction reduction) {
  const std::string op = "binary_cross_entropy";
  requireFloat(op, input);
  requireSameShape(op, input, target);
  NodePtr logP = clamp(unary(UnaryOp::Log, input), -100.0, std::nullopt);
  NodePtr logQ = clamp(unary(UnaryOp::Log, sub(num(input, 1.0), input)), -100.0,
                       std::nullopt);
  NodePtr loss =
      unary(UnaryOp::Neg,
            add(mul(target, logP), mul(sub(num(target, 1.0), target), logQ)));
  return reduceLoss(op, loss, reduction);
}

NodePtr harp::detail::nn::binaryCrossEntropyWithLogits(NodePtr input,
                                                       NodePtr target,
                                                       Reduction reduction) {
  const std::string op = "binary_cross_entropy_with_logits";
  requireFloat(op, input);
  requireSameShape(op, input, target);
  // max(x, 0) - x t + log(1 + exp(-|x|)).
  NodePtr tail = unary(
      UnaryOp::Log1p,
      unary(UnaryOp::Exp, unary(UnaryOp::Neg, unary(UnaryOp::Abs, input))));
  NodePtr loss =
      add(sub(unary(UnaryOp::Relu, input), mul(input, target)), tail);
  return reduceLoss(op, loss, reduction);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

NodePtr harp::detail::nn::attention(NodePtr q, NodePtr k, NodePtr v,
                                    NodePtr mask, bool causal,
                                    std::optional<double> scaleFactor,
                                    double dropoutP, uint64_t seed) {
  const std::string op = "scaled_dot_product_attention";
  requireFloat(op, q);
  const Shape &qs = shape(q), &ks = shape(k), &vs = shape(v);
  if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2 ||
      qs.back() != ks.back() || ks[ks.size() - 2] != vs[vs.size() - 2])
    throw Error(op + ": query " + shapeStr(qs) + ", key " + shapeStr(ks) +
                " and value " + shapeStr(vs) +
                " do not match ([..., L, E], [..., S, E], [..., S, Ev])");
  int64_t length = qs[qs.size() - 2], source = ks[ks.size() - 2];
  double factor =
      scaleFactor ? *scaleFactor : 1.0 / std::sqrt(double(qs.back()));
  Shape perm = range(0, ks.size());
  std::swap(perm[ks.size() - 1], perm[ks.size() - 2]);
  NodePtr scores = scale(matmul(q, permute(k, perm)), factor);
  if (causal) {
    if (mask)
      throw Error(op + ": give a mask or causal, not both");
    std::vector<uint8_t> keep(length * source);
    for (int64_t i = 0; i < length; ++i)
      for (int64_t j = 0; j < source; ++j)
        keep[i * source + j] = j <= i;
    mask = fromData(DType::Bool, {length, source}, keep.data());
  }
  if (mask && dtypeOf(mask) == DType::Bool)
    scores = where(mask, scores, num(scores, -INFINITY));
  else if (mask && isFloat(dtypeOf(mask)))
    scores = add(scores, mask);
  else if (mask)
    throw Error(op +
                ": the mask must be bool (true keeps) or float (added), "
                "got " +
                dtypeName(dtypeOf(mask)));
  return matmul(nn::dropout(softmax(scores, -1), dropoutP, dropoutP > 0, seed),
                v);
}
