//===- NN.h - layers and losses of harp::nn ---------------------*- C++ -*-===//
//
// torch.nn.functional's layers for C++: linear, convolution (1-3 spatial
// dims, groups, dilation, "same" padding), transposed convolution, pooling,
// im2col/col2im, normalization, dropout, embedding, the losses and scaled
// dot-product attention. Each is composed from harp ops in the lazy graph,
// so each has a gradient through the autodiff pass and runs wherever its
// inputs live. Numbers given here (eps, momentum, slopes) are arguments of
// the compiled code: a new value reuses the kernel.
//
// Options that PyTorch takes as keywords are option structs with chained
// setters:
//
//   auto y = nn::conv(x, w, b, nn::ConvOptions().stride({2}).padding({1}));
//
// Misuse throws harp::Error naming the op, the shapes and the argument.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_NN_H
#define HARP_API_NN_H

#include "harp/API/Tensor.h"

namespace harp {
namespace nn {

using Shape = std::vector<int64_t>;

/// How a loss reduces its per-element values.
enum class Reduction { None, Mean, Sum };

struct ConvOptions {
  /// One value for every spatial dim, or one per dim.
  Shape strides{1}, paddings{0}, dilations{1};
  int64_t groupCount = 1;
  /// padding="same": the output has the input's size (stride 1).
  bool samePadding = false;
  ConvOptions &stride(Shape v) { return strides = std::move(v), *this; }
  ConvOptions &padding(Shape v) { return paddings = std::move(v), *this; }
  ConvOptions &same() { return samePadding = true, *this; }
  ConvOptions &dilation(Shape v) { return dilations = std::move(v), *this; }
  ConvOptions &groups(int64_t v) { return groupCount = v, *this; }
};

struct ConvTransposeOptions {
  Shape strides{1}, paddings{0}, outputPaddings{0}, dilations{1};
  int64_t groupCount = 1;
  ConvTransposeOptions &stride(Shape v) {
    return strides = std::move(v), *this;
  }
  ConvTransposeOptions &padding(Shape v) {
    return paddings = std::move(v), *this;
  }
  ConvTransposeOptions &output_padding(Shape v) {
    return outputPaddings = std::move(v), *this;
  }
  ConvTransposeOptions &dilation(Shape v) {
    return dilations = std::move(v), *this;
  }
  ConvTransposeOptions &groups(int64_t v) { return groupCount = v, *this; }
};

struct PoolOptions {
  /// The window, one value for every spatial dim or one per dim; the
  /// stride defaults to the window.
  explicit PoolOptions(Shape kernel) : kernel(std::move(kernel)) {}
  Shape kernel, strides, paddings{0}, dilations{1};
  bool ceilMode = false;
  /// avg_pool: count the padding in each window's divisor (torch's
  /// default), and a divisor for every window instead (0: none).
  bool countIncludePad = true;
  int64_t divisorOverride = 0;
  PoolOptions &stride(Shape v) { return strides = std::move(v), *this; }
  PoolOptions &padding(Shape v) { return paddings = std::move(v), *this; }
  PoolOptions &dilation(Shape v) { return dilations = std::move(v), *this; }
  PoolOptions &ceil_mode(bool v) { return ceilMode = v, *this; }
  PoolOptions &count_include_pad(bool v) { return countIncludePad = v, *this; }
  PoolOptions &divisor_override(int64_t v) {
    return divisorOverride = v, *this;
  }
};

struct CrossEntropyOptions {
  int64_t ignoreIndex = -100;
  double labelSmoothing = 0.0;
  Reduction reductionKind = Reduction::Mean;
  CrossEntropyOptions &ignore_index(int64_t v) {
    return ignoreIndex = v, *this;
  }
  CrossEntropyOptions &label_smoothing(double v) {
    return labelSmoothing = v, *this;
  }
  CrossEntropyOptions &reduction(Reduction v) {
    return reductionKind = v, *this;
  }
};

} // namespace nn

namespace detail {
namespace nn {
using harp::nn::ConvOptions;
using harp::nn::ConvTransposeOptions;
using harp::nn::CrossEntropyOptions;
using harp::nn::PoolOptions;
using harp::nn::Reduction;
// The layers on untyped nodes (null for an absent optional tensor).
NodePtr linear(NodePtr x, NodePtr w, NodePtr bias);
// `op` names the layer in messages (the Python API passes "conv2d").
NodePtr conv(NodePtr x, NodePtr w, NodePtr bias, const ConvOptions &options,
             const std::string &op = "conv");
NodePtr convTranspose(NodePtr x, NodePtr w, NodePtr bias,
                      const ConvTransposeOptions &options,
                      const std::string &op = "conv_transpose");
NodePtr maxPool(NodePtr x, const PoolOptions &options,
                const std::string &op = "max_pool");
/// The int64 position (row-major over the spatial dims of x) of each
/// window's first maximum, as torch's return_indices=True.
NodePtr maxPoolIndices(NodePtr x, const PoolOptions &options,
                       const std::string &op = "max_pool");
NodePtr avgPool(NodePtr x, const PoolOptions &options,
                const std::string &op = "avg_pool");
NodePtr adaptiveAvgPool(NodePtr x, std::vector<int64_t> outputSize,
                        const std::string &op = "adaptive_avg_pool");
NodePtr adaptiveMaxPool(NodePtr x, std::vector<int64_t> outputSize,
                        const std::string &op = "adaptive_max_pool");
NodePtr globalAvgPool(NodePtr x);
NodePtr im2col(NodePtr x, std::vector<int64_t> kernel,
               std::vector<int64_t> stride, std::vector<int64_t> padding);
NodePtr col2im(NodePtr cols, std::vector<int64_t> outputSize,
               std::vector<int64_t> kernel, std::vector<int64_t> stride,
               std::vector<int64_t> padding);
NodePtr batchNorm(NodePtr x, NodePtr runningMean, NodePtr runningVar,
                  NodePtr weight, NodePtr bias, bool training, double momentum,
                  double eps);
NodePtr layerNorm(NodePtr x, std::vector<int64_t> normalizedShape,
                  NodePtr weight, NodePtr bias, double eps);
NodePtr groupNorm(NodePtr x, int64_t groups, NodePtr weight, NodePtr bias,
                  double eps);
NodePtr dropout(NodePtr x, double p, bool training, uint64_t seed);
NodePtr embedding(NodePtr indices, NodePtr weight);
NodePtr oneHot(NodePtr indices, int64_t classes);
NodePtr crossEntropy(NodePtr input, NodePtr target,
                     const CrossEntropyOptions &options);
NodePtr nllLoss(NodePtr input, NodePtr target, int64_t ignoreIndex,
                Reduction reduction);
/// crossEntropy() and nllLoss() without the range check of the targets.
NodePtr uncheckedCrossEntropy(NodePtr input, NodePtr target,
                              const CrossEntropyOptions &options);
NodePtr uncheckedNllLoss(NodePtr input, NodePtr target, int64_t ignoreIndex,
                         Reduction reduction);
NodePtr mseLoss(NodePtr input, NodePtr target, Reduction reduction);
NodePtr l1Loss(NodePtr input, NodePtr target, Reduction reduction);
NodePtr smoothL1Loss(NodePtr input, NodePtr target, double beta,
                     Reduction reduction);
NodePtr huberLoss(NodePtr input, NodePtr target, double delta,
                  Reduction reduction);
/// KL divergence target * (log target - input) of log-probabilities
/// `input`; with `logTarget` the target is given as log-probabilities. The
/// per-element loss (batchmean is sum / N, the caller's).
NodePtr klDiv(NodePtr input, NodePtr target, bool logTarget);
NodePtr binaryCrossEntropy(NodePtr input, NodePtr target, Reduction reduction);
NodePtr binaryCrossEntropyWithLogits(NodePtr input, NodePtr target,
                                     Reduction reduction);
NodePtr attention(NodePtr q, NodePtr k, NodePtr v, NodePtr mask, bool causal,
                  std::optional<double> scale, double dropoutP = 0.0,
                  uint64_t seed = 0);
} // namespace nn
} // namespace detail

namespace nn {

/// T as written, not deduced: the first tensor argument fixes the dtype and
/// the others convert (a tensor of static rank to Tensor<T>).
template <typename T>
using Same = typename std::enable_if<true, T>::type;
template <typename T>
using Optional = std::optional<Tensor<Same<T>>>;

namespace impl {
template <typename T>
detail::NodePtr nodeOf(const Optional<T> &t) {
  return t ? t->graphNode() : nullptr;
}
template <typename T>
void requireFloat(const char *op) {
  static_assert(IsFloat<T>, "harp::nn layers need float tensors");
  (void)op;
}
} // namespace impl

/// input @ weight^T + bias, weight [out_features, in_features].
template <typename T, typename D>
Tensor<T> linear(const Tensor<T, D> &x, const Tensor<Same<T>> &weight,
                 const Optional<T> &bias = std::nullopt,
                 SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("linear");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::linear(x.graphNode(), weight.graphNode(),
                                      impl::nodeOf<T>(bias)));
}

/// Convolution (cross-correlation) of x [N, C, spatial...] (1-3 spatial
/// dims) with weight [F, C / groups, kernel...], plus bias [F].
template <typename T, typename D>
Tensor<T> conv(const Tensor<T, D> &x, const Tensor<Same<T>> &weight,
               const Optional<T> &bias = std::nullopt,
               const ConvOptions &options = {},
               SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("conv");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::conv(x.graphNode(), weight.graphNode(),
                                    impl::nodeOf<T>(bias), options));
}

/// The transpose (adjoint) of conv: x [N, C, spatial...], weight
/// [C, F / groups, kernel...]; each output size is (in - 1) stride -
/// 2 padding + dilation (kernel - 1) + output_padding + 1.
template <typename T, typename D>
Tensor<T> conv_transpose(const Tensor<T, D> &x, const Tensor<Same<T>> &weight,
                         const Optional<T> &bias = std::nullopt,
                         const ConvTransposeOptions &options = {},
                         SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("conv_transpose");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::convTranspose(x.graphNode(), weight.graphNode(),
                                             impl::nodeOf<T>(bias), options));
}

/// The maximum of each window of x [N, C, spatial...] (padding is -inf).
template <typename T, typename D>
Tensor<T> max_pool(const Tensor<T, D> &x, const PoolOptions &options,
                   SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("max_pool");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::maxPool(x.graphNode(), options));
}

/// max_pool's window maxima and the int64 position of each (its first
/// maximum, row-major over the spatial dims of x), as torch's
/// return_indices=True; the positions carry no gradient.
template <typename T, typename D>
std::pair<Tensor<T>, Tensor<int64_t>>
max_pool_with_indices(const Tensor<T, D> &x, const PoolOptions &options,
                      SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("max_pool");
  LocationScope scope(loc);
  return {Tensor<T>(detail::nn::maxPool(x.graphNode(), options)),
          Tensor<int64_t>(detail::nn::maxPoolIndices(x.graphNode(), options))};
}

/// The mean of each window of x [N, C, spatial...], with torch's divisors.
template <typename T, typename D>
Tensor<T> avg_pool(const Tensor<T, D> &x, const PoolOptions &options,
                   SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("avg_pool");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::avgPool(x.graphNode(), options));
}

/// The mean over `outputSize` windows per spatial dim that cover it evenly
/// (window j spans [floor(j n / out), ceil((j + 1) n / out))).
template <typename T, typename D>
Tensor<T> adaptive_avg_pool(const Tensor<T, D> &x, Shape outputSize,
                            SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("adaptive_avg_pool");
  LocationScope scope(loc);
  return Tensor<T>(
      detail::nn::adaptiveAvgPool(x.graphNode(), std::move(outputSize)));
}

/// The maximum over adaptive windows (those of adaptive_avg_pool).
template <typename T, typename D>
Tensor<T> adaptive_max_pool(const Tensor<T, D> &x, Shape outputSize,
                            SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("adaptive_max_pool");
  LocationScope scope(loc);
  return Tensor<T>(
      detail::nn::adaptiveMaxPool(x.graphNode(), std::move(outputSize)));
}

/// The mean over every spatial dim of [N, C, spatial...], kept as size-1
/// dims.
template <typename T, typename D>
Tensor<T> global_avg_pool(const Tensor<T, D> &x,
                          SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("global_avg_pool");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::globalAvgPool(x.graphNode()));
}

/// The sliding windows of x [N, C, spatial...] as columns [N, C *
/// prod(kernel), windows] (torch.nn.functional.unfold's layout).
template <typename T, typename D>
Tensor<T> im2col(const Tensor<T, D> &x, Shape kernel, Shape stride = {1},
                 Shape padding = {0},
                 SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::im2col(x.graphNode(), std::move(kernel),
                                      std::move(stride), std::move(padding)));
}

/// The adjoint of im2col: columns [N, C * prod(kernel), windows] summed
/// back into [N, C, outputSize...] (overlaps add up).
template <typename T, typename D>
Tensor<T> col2im(const Tensor<T, D> &cols, Shape outputSize, Shape kernel,
                 Shape stride = {1}, Shape padding = {0},
                 SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::col2im(cols.graphNode(), std::move(outputSize),
                                      std::move(kernel), std::move(stride),
                                      std::move(padding)));
}

/// Normalizes each channel (dim 1) of [N, C, ...]: with the batch's mean
/// and biased variance when `training` (and then running_mean and
/// running_var, leaves of shape [C], are updated in place by torch's rule),
/// or with the running statistics otherwise.
template <typename T, typename D>
Tensor<T> batch_norm(const Tensor<T, D> &x, const Optional<T> &runningMean,
                     const Optional<T> &runningVar,
                     const Optional<T> &weight = std::nullopt,
                     const Optional<T> &bias = std::nullopt,
                     bool training = false, double momentum = 0.1,
                     double eps = 1e-5,
                     SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("batch_norm");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::batchNorm(
      x.graphNode(), impl::nodeOf<T>(runningMean), impl::nodeOf<T>(runningVar),
      impl::nodeOf<T>(weight), impl::nodeOf<T>(bias), training, momentum, eps));
}

/// Normalizes over the trailing dims `normalizedShape`, then weight and
/// bias of that shape.
template <typename T, typename D>
Tensor<T> layer_norm(const Tensor<T, D> &x, Shape normalizedShape,
                     const Optional<T> &weight = std::nullopt,
                     const Optional<T> &bias = std::nullopt, double eps = 1e-5,
                     SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("layer_norm");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::layerNorm(
      x.graphNode(), std::move(normalizedShape), impl::nodeOf<T>(weight),
      impl::nodeOf<T>(bias), eps));
}

/// Normalizes [N, C, ...] over each of `groups` groups of channels, then a
/// per-channel weight and bias [C].
template <typename T, typename D>
Tensor<T> group_norm(const Tensor<T, D> &x, int64_t groups,
                     const Optional<T> &weight = std::nullopt,
                     const Optional<T> &bias = std::nullopt, double eps = 1e-5,
                     SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("group_norm");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::groupNorm(x.graphNode(), groups,
                                         impl::nodeOf<T>(weight),
                                         impl::nodeOf<T>(bias), eps));
}

/// Zeroes each element with probability p and scales the rest by 1 / (1 -
/// p) when training (the identity otherwise). The mask comes from harp's
/// counter-based generator; `seed` is a run-time argument, so a new seed
/// per step reuses the compiled code.
template <typename T, typename D>
Tensor<T, D> dropout(const Tensor<T, D> &x, double p, bool training,
                     uint64_t seed,
                     SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("dropout");
  LocationScope scope(loc);
  return Tensor<T, D>(detail::nn::dropout(x.graphNode(), p, training, seed));
}

/// Rows of weight [num_embeddings, dim] picked by integer `indices` (any
/// shape): indices.shape + [dim].
template <typename I, typename DI, typename T, typename DW>
Tensor<T> embedding(const Tensor<I, DI> &indices, const Tensor<T, DW> &weight,
                    SourceLocation loc = SourceLocation::current()) {
  static_assert(IsInteger<I>, "embedding needs integer indices");
  LocationScope scope(loc);
  return Tensor<T>(
      detail::nn::embedding(indices.graphNode(), weight.graphNode()));
}

/// int64 [..., classes] with a 1 at each index.
template <typename I, typename DI>
Tensor<int64_t> one_hot(const Tensor<I, DI> &indices, int64_t classes,
                        SourceLocation loc = SourceLocation::current()) {
  static_assert(IsInteger<I>, "one_hot needs integer indices");
  LocationScope scope(loc);
  return Tensor<int64_t>(detail::nn::oneHot(indices.graphNode(), classes));
}

/// log_softmax over dim 1 and the negative log-likelihood of the target
/// classes (int64 [N, ...]) or of target probabilities (the input's shape
/// and dtype), with ignore_index and label smoothing as torch's.
template <typename T, typename D, typename U, typename DU>
Tensor<T> cross_entropy(const Tensor<T, D> &input, const Tensor<U, DU> &target,
                        const CrossEntropyOptions &options = {},
                        SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("cross_entropy");
  static_assert(IsInteger<U> || std::is_same_v<U, T>,
                "cross_entropy: targets are integer classes or probabilities "
                "of the input's dtype");
  LocationScope scope(loc);
  return Tensor<T>(
      detail::nn::crossEntropy(input.graphNode(), target.graphNode(), options));
}

/// -input[n, target[n]] for log-probabilities [N, C, ...] and integer
/// classes [N, ...]; targets equal to ignoreIndex count for nothing.
template <typename T, typename D, typename I, typename DI>
Tensor<T> nll_loss(const Tensor<T, D> &input, const Tensor<I, DI> &target,
                   int64_t ignoreIndex = -100,
                   Reduction reduction = Reduction::Mean,
                   SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("nll_loss");
  static_assert(IsInteger<I>, "nll_loss needs integer targets");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::nllLoss(input.graphNode(), target.graphNode(),
                                       ignoreIndex, reduction));
}

/// (input - target)^2, reduced.
template <typename T, typename D>
Tensor<T> mse_loss(const Tensor<T, D> &input, const Tensor<Same<T>> &target,
                   Reduction reduction = Reduction::Mean,
                   SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T>(
      detail::nn::mseLoss(input.graphNode(), target.graphNode(), reduction));
}

/// |input - target|, reduced.
template <typename T, typename D>
Tensor<T> l1_loss(const Tensor<T, D> &input, const Tensor<Same<T>> &target,
                  Reduction reduction = Reduction::Mean,
                  SourceLocation loc = SourceLocation::current()) {
  LocationScope scope(loc);
  return Tensor<T>(
      detail::nn::l1Loss(input.graphNode(), target.graphNode(), reduction));
}

/// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere, for d =
/// input - target (torch's smooth_l1_loss; beta = 0 is l1_loss).
template <typename T, typename D>
Tensor<T> smooth_l1_loss(const Tensor<T, D> &input,
                         const Tensor<Same<T>> &target, double beta = 1.0,
                         Reduction reduction = Reduction::Mean,
                         SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("smooth_l1_loss");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::smoothL1Loss(
      input.graphNode(), target.graphNode(), beta, reduction));
}

/// 0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (torch's
/// huber_loss).
template <typename T, typename D>
Tensor<T> huber_loss(const Tensor<T, D> &input, const Tensor<Same<T>> &target,
                     double delta = 1.0, Reduction reduction = Reduction::Mean,
                     SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("huber_loss");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::huberLoss(input.graphNode(), target.graphNode(),
                                         delta, reduction));
}

/// -(t log p + (1 - t) log(1 - p)) for probabilities p, each log clamped at
/// -100 as torch's.
template <typename T, typename D>
Tensor<T> binary_cross_entropy(const Tensor<T, D> &input,
                               const Tensor<Same<T>> &target,
                               Reduction reduction = Reduction::Mean,
                               SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("binary_cross_entropy");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::binaryCrossEntropy(
      input.graphNode(), target.graphNode(), reduction));
}

/// binary_cross_entropy of sigmoid(input), computed stably.
template <typename T, typename D>
Tensor<T> binary_cross_entropy_with_logits(
    const Tensor<T, D> &input, const Tensor<Same<T>> &target,
    Reduction reduction = Reduction::Mean,
    SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("binary_cross_entropy_with_logits");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::binaryCrossEntropyWithLogits(
      input.graphNode(), target.graphNode(), reduction));
}

/// softmax(q k^T scale + mask) v over [..., L, E] queries and [..., S, E]
/// keys and values; scale defaults to 1 / sqrt(E); a bool mask keeps where
/// true (masked scores are -inf through a select; the untyped layer also
/// takes a float mask, added to the scores), `causal` keeps key j <= query
/// i; with dropoutP > 0 the attention weights go through dropout (seeded by
/// `seed`) before the product with the values.
template <typename T, typename D>
Tensor<T> scaled_dot_product_attention(
    const Tensor<T, D> &q, const Tensor<Same<T>> &k, const Tensor<Same<T>> &v,
    const std::optional<Tensor<bool>> &mask = std::nullopt, bool causal = false,
    std::optional<double> scale = std::nullopt, double dropoutP = 0.0,
    uint64_t seed = 0, SourceLocation loc = SourceLocation::current()) {
  impl::requireFloat<T>("scaled_dot_product_attention");
  LocationScope scope(loc);
  return Tensor<T>(detail::nn::attention(
      q.graphNode(), k.graphNode(), v.graphNode(),
      mask ? mask->graphNode() : nullptr, causal, scale, dropoutP, seed));
}

} // namespace nn
} // namespace harp

#endif // HARP_API_NN_H
