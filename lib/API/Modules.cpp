//===- Modules.cpp - harp::nn layers with parameters ----------------------===//
//
// Parameter bookkeeping (paths, state dicts, train/eval) and each layer's
// initialisation; the arithmetic is the harp::nn functions'. Instantiated
// for float and double.
//
//===----------------------------------------------------------------------===//

#include "harp/API/Modules.h"

#include "Node.h"

#include <cmath>
#include <map>
#include <random>

using namespace harp;
using namespace harp::nn;

namespace {

std::mt19937_64 &generator() {
  static std::mt19937_64 g(0);
  return g;
}

int64_t count(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// A new leaf of `shape` filled with `value`.
template <typename T>
Tensor<T> filled(Shape shape, double value) {
  return Tensor<T>::from_data(std::vector<T>(count(shape), T(value)), shape);
}

template <typename T, typename Draw>
void fill(Tensor<T> &t, Draw draw) {
  std::vector<T> values(t.numel());
  for (T &v : values)
    v = T(draw());
  t.set_data(values);
}

/// torch's fans: fan_in = dim 1 times the receptive field (dims 2...),
/// fan_out = dim 0 times it.
std::pair<double, double> fans(const Shape &s, const char *op) {
  if (s.size() < 2)
    throw Error(std::string(op) +
                ": fan in and fan out need a tensor of rank >= 2, got " +
                std::to_string(s.size()));
  double receptive = 1;
  for (size_t i = 2; i < s.size(); ++i)
    receptive *= s[i];
  return {s[1] * receptive, s[0] * receptive};
}

/// U(-1/sqrt(fanIn), 1/sqrt(fanIn)): torch's default for weights
/// (kaiming_uniform with a = sqrt(5)) and biases of linear and conv layers.
template <typename T>
Tensor<T> fanInUniform(Shape shape, double fanIn) {
  Tensor<T> t = filled<T>(std::move(shape), 0);
  double bound = fanIn > 0 ? 1 / std::sqrt(fanIn) : 0;
  init::uniform_(t, -bound, bound);
  return t;
}

/// The kernel as one size per spatial dim (one value is repeated).
template <int K>
Shape perDim(const std::string &op, Shape kernel) {
  if (kernel.size() == 1 && K > 1)
    kernel.assign(K, kernel[0]);
  if (kernel.size() != size_t(K))
    throw Error(op + ": kernel_size needs 1 or " + std::to_string(K) +
                " values, got " + std::to_string(kernel.size()));
  return kernel;
}

/// A (transposed) convolution's weight, [out, in / groups, kernel...]
/// ([in, out / groups, kernel...] transposed), drawn as torch draws it.
template <typename T, int K>
Tensor<T> convWeight(const std::string &op, int64_t in, int64_t out,
                     int64_t groups, Shape kernel, bool transposed) {
  if (groups < 1 || in % groups || out % groups)
    throw Error(op + ": in_channels " + std::to_string(in) +
                " and out_channels " + std::to_string(out) +
                " must be divisible by groups " + std::to_string(groups));
  Shape k = perDim<K>(op, std::move(kernel));
  Shape shape = transposed ? Shape{in, out / groups} : Shape{out, in / groups};
  shape.insert(shape.end(), k.begin(), k.end());
  return fanInUniform<T>(shape, fans(shape, op.c_str()).first);
}

/// A convolution's bias [out], with the weight's fan in (torch's rule).
template <typename T>
Tensor<T> convBias(const Tensor<T> &weight, int64_t out) {
  return fanInUniform<T>({out}, fans(weight.shape(), "conv bias").first);
}

std::string nd(const char *base, int k) {
  return base + std::to_string(k) + "d";
}

/// Throws unless x has rank K + 2 (batched) or K + 1.
template <typename T>
void requireRank(const Module<T> &m, const Tensor<T> &x, int k) {
  if (x.rank() != k + 2 && x.rank() != k + 1)
    throw Error(m.name() + ": expected an input of rank " +
                std::to_string(k + 1) + " or " + std::to_string(k + 2) +
                ", got shape " + detail::shapeStr(x.shape()));
}

} // namespace

void harp::nn::manual_seed(uint64_t seed) {
  generator().seed(seed);
  default_generator().manual_seed(seed);
}

template <typename T>
void harp::nn::init::uniform_(Tensor<T> &t, double low, double high) {
  std::uniform_real_distribution<double> dist(low, high);
  fill(t, [&] { return dist(generator()); });
}

template <typename T>
void harp::nn::init::normal_(Tensor<T> &t, double mean, double stddev) {
  std::normal_distribution<double> dist(mean, stddev);
  fill(t, [&] { return dist(generator()); });
}

template <typename T>
void harp::nn::init::constant_(Tensor<T> &t, double value) {
  fill(t, [&] { return value; });
}

template <typename T>
void harp::nn::init::xavier_uniform_(Tensor<T> &t, double gain) {
  auto [in, out] = fans(t.shape(), "xavier_uniform_");
  double bound = gain * std::sqrt(6.0 / (in + out));
  uniform_(t, -bound, bound);
}

template <typename T>
void harp::nn::init::kaiming_uniform_(Tensor<T> &t, double a) {
  auto [in, out] = fans(t.shape(), "kaiming_uniform_");
  (void)out;
  double bound = std::sqrt(6.0 / ((1 + a * a) * in));
  uniform_(t, -bound, bound);
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

template <typename T>
Module<T>::Module(std::string typeName) : typeName(std::move(typeName)) {}

template <typename T>
Module<T>::~Module() = default;

template <typename T>
Tensor<T> Module<T>::forward(const Tensor<T> &) {
  throw Error(typeName + ": forward(tensor) is not defined for this module");
}

template <typename T>
Tensor<T> Module<T>::register_parameter(std::string name, Tensor<T> value) {
  value.set_requires_grad(true);
  params.emplace_back(std::move(name), value);
  return value;
}

template <typename T>
Tensor<T> Module<T>::register_buffer(std::string name, Tensor<T> value) {
  buffers.emplace_back(std::move(name), value);
  return value;
}

template <typename T>
uint64_t Module<T>::nextSeed() {
  return default_generator().next_seed();
}

template <typename T>
void Module<T>::collect(const std::string &prefix, bool ofBuffers,
                        Named &out) const {
  for (const auto &[name, t] : ofBuffers ? buffers : params)
    out.emplace_back(prefix + name, t);
  for (const auto &[name, child] : children)
    child->collect(prefix + name + ".", ofBuffers, out);
}

template <typename T>
std::vector<Tensor<T>> Module<T>::parameters() const {
  std::vector<Tensor<T>> out;
  for (auto &named : named_parameters())
    out.push_back(named.second);
  return out;
}

template <typename T>
typename Module<T>::Named Module<T>::named_parameters() const {
  Named out;
  collect("", /*ofBuffers=*/false, out);
  return out;
}

template <typename T>
typename Module<T>::Named Module<T>::named_buffers() const {
  Named out;
  collect("", /*ofBuffers=*/true, out);
  return out;
}

template <typename T>
typename Module<T>::Named Module<T>::state_dict() const {
  Named out = named_parameters();
  collect("", /*ofBuffers=*/true, out);
  return out;
}

template <typename T>
void Module<T>::load_state_dict(const Named &state, bool strict) {
  std::map<std::string, Tensor<T>> own;
  for (auto &[name, t] : state_dict())
    own.emplace(name, t);
  // Everything is checked before anything is written.
  std::map<std::string, const Tensor<T> *> given;
  for (const auto &[name, t] : state) {
    auto it = own.find(name);
    if (it == own.end()) {
      if (strict)
        throw Error(typeName + ".load_state_dict: unexpected key '" + name +
                    "'");
      continue;
    }
    if (t.shape() != it->second.shape())
      throw Error(typeName + ".load_state_dict: '" + name + "' has shape " +
                  detail::shapeStr(t.shape()) + " but the module's is " +
                  detail::shapeStr(it->second.shape()));
    given[name] = &t;
  }
  if (strict)
    for (const auto &[name, t] : own)
      if (!given.count(name))
        throw Error(typeName + ".load_state_dict: missing key '" + name + "'");
  for (const auto &[name, t] : given)
    own.at(name).set_data(t->data());
}

template <typename T>
Module<T> &Module<T>::train(bool on) {
  training = on;
  for (auto &child : children)
    child.second->train(on);
  return *this;
}

template <typename T>
void Module<T>::zero_grad() {
  for (auto &named : named_parameters())
    named.second.zero_grad();
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

template <typename T>
Linear<T>::Linear(int64_t in, int64_t out, bool withBias)
    : Module<T>("Linear"),
      weight(this->register_parameter("weight",
                                      fanInUniform<T>({out, in}, double(in)))) {
  if (withBias)
    bias = this->register_parameter("bias", fanInUniform<T>({out}, double(in)));
}

template <typename T>
Tensor<T> Linear<T>::forward(const Tensor<T> &x) {
  return linear(x, weight, bias);
}

template <typename T, int K>
ConvNd<T, K>::ConvNd(int64_t in, int64_t out, Shape kernel,
                     const ConvOptions &options, bool withBias)
    : Module<T>(nd("Conv", K)),
      weight(this->register_parameter(
          "weight", convWeight<T, K>(this->name(), in, out, options.groupCount,
                                     std::move(kernel), false))),
      options(options) {
  if (withBias)
    bias = this->register_parameter("bias", convBias<T>(weight, out));
}

template <typename T, int K>
Tensor<T> ConvNd<T, K>::forward(const Tensor<T> &x) {
  requireRank(*this, x, K);
  return conv(x, weight, bias, options);
}

template <typename T, int K>
ConvTransposeNd<T, K>::ConvTransposeNd(int64_t in, int64_t out, Shape kernel,
                                       const ConvTransposeOptions &options,
                                       bool withBias)
    : Module<T>(nd("ConvTranspose", K)),
      weight(this->register_parameter(
          "weight", convWeight<T, K>(this->name(), in, out, options.groupCount,
                                     std::move(kernel), true))),
      options(options) {
  if (withBias)
    bias = this->register_parameter("bias", convBias<T>(weight, out));
}

template <typename T, int K>
Tensor<T> ConvTransposeNd<T, K>::forward(const Tensor<T> &x) {
  requireRank(*this, x, K);
  return conv_transpose(x, weight, bias, options);
}

template <typename T, int K>
MaxPoolNd<T, K>::MaxPoolNd(PoolOptions options)
    : Module<T>(nd("MaxPool", K)), options(std::move(options)) {}

template <typename T, int K>
Tensor<T> MaxPoolNd<T, K>::forward(const Tensor<T> &x) {
  requireRank(*this, x, K);
  return max_pool(x, options);
}

template <typename T, int K>
AvgPoolNd<T, K>::AvgPoolNd(PoolOptions options)
    : Module<T>(nd("AvgPool", K)), options(std::move(options)) {}

template <typename T, int K>
Tensor<T> AvgPoolNd<T, K>::forward(const Tensor<T> &x) {
  requireRank(*this, x, K);
  return avg_pool(x, options);
}

template <typename T, int K>
AdaptiveAvgPoolNd<T, K>::AdaptiveAvgPoolNd(Shape outputSize)
    : Module<T>(nd("AdaptiveAvgPool", K)), outputSize(std::move(outputSize)) {}

template <typename T, int K>
Tensor<T> AdaptiveAvgPoolNd<T, K>::forward(const Tensor<T> &x) {
  requireRank(*this, x, K);
  return adaptive_avg_pool(x, outputSize);
}

template <typename T, int K>
BatchNormNd<T, K>::BatchNormNd(int64_t features, double eps, double momentum,
                               bool affine)
    : Module<T>(nd("BatchNorm", K)),
      running_mean(
          this->register_buffer("running_mean", filled<T>({features}, 0))),
      running_var(
          this->register_buffer("running_var", filled<T>({features}, 1))),
      eps(eps), momentum(momentum) {
  if (affine) {
    weight = this->register_parameter("weight", filled<T>({features}, 1));
    bias = this->register_parameter("bias", filled<T>({features}, 0));
  }
}

template <typename T, int K>
Tensor<T> BatchNormNd<T, K>::forward(const Tensor<T> &x) {
  // BatchNorm1d also takes [N, C]; the others need the batch dim.
  if (x.rank() != K + 2 && !(K == 1 && x.rank() == 2))
    throw Error(this->name() + ": expected an input of rank " +
                std::to_string(K + 2) + ", got shape " +
                detail::shapeStr(x.shape()));
  return batch_norm(x, running_mean, running_var, weight, bias,
                    this->is_training(), momentum, eps);
}

template <typename T>
LayerNorm<T>::LayerNorm(Shape normalizedShape, double eps, bool affine)
    : Module<T>("LayerNorm"), normalizedShape(normalizedShape), eps(eps) {
  if (affine) {
    weight = this->register_parameter("weight", filled<T>(normalizedShape, 1));
    bias = this->register_parameter("bias", filled<T>(normalizedShape, 0));
  }
}

template <typename T>
Tensor<T> LayerNorm<T>::forward(const Tensor<T> &x) {
  return layer_norm(x, normalizedShape, weight, bias, eps);
}

template <typename T>
Embedding<T>::Embedding(int64_t num, int64_t dim)
    : Module<T>("Embedding"), weight(this->register_parameter("weight", [&] {
        Tensor<T> w = filled<T>({num, dim}, 0);
        init::normal_(w, 0.0, 1.0);
        return w;
      }())) {}

template <typename T>
Tensor<T> Embedding<T>::forward(const Tensor<int64_t> &indices) {
  return embedding(indices, weight);
}

template <typename T>
Tensor<T> Embedding<T>::forward(const Tensor<int32_t> &indices) {
  return embedding(indices, weight);
}

template <typename T>
Dropout<T>::Dropout(double p) : Module<T>("Dropout"), p(p) {
  if (p < 0 || p > 1)
    throw Error("Dropout: p must be in [0, 1], got " + std::to_string(p));
}

template <typename T>
Tensor<T> Dropout<T>::forward(const Tensor<T> &x) {
  if (!this->is_training() || p == 0)
    return x;
  return dropout(x, p, true, this->nextSeed());
}

template <typename T>
Flatten<T>::Flatten(int64_t start, int64_t end)
    : Module<T>("Flatten"), start(start), end(end) {}

template <typename T>
Tensor<T> Flatten<T>::forward(const Tensor<T> &x) {
  int64_t r = x.rank();
  int64_t s = start < 0 ? start + r : start, e = end < 0 ? end + r : end;
  if (s < 0 || e >= r || s > e)
    throw Error("Flatten: dims " + std::to_string(start) + ".." +
                std::to_string(end) + " do not fit shape " +
                detail::shapeStr(x.shape()));
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  shape.push_back(-1);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return x.reshape(shape);
}

template <typename T>
Sequential<T> &Sequential<T>::push_back(std::shared_ptr<Module<T>> module) {
  if (!module)
    throw Error("Sequential: push_back of a null module");
  layers.push_back(
      this->register_module(std::to_string(layers.size()), std::move(module)));
  return *this;
}

template <typename T>
Tensor<T> Sequential<T>::forward(const Tensor<T> &x) {
  Tensor<T> out = x;
  for (auto &layer : layers)
    out = layer->forward(out);
  return out;
}

template <typename T>
MultiheadAttention<T>::MultiheadAttention(int64_t embedDim, int64_t numHeads,
                                          double dropout, bool withBias,
                                          bool batchFirst)
    : Module<T>("MultiheadAttention"),
      in_proj_weight(this->register_parameter(
          "in_proj_weight",
          [&] {
            if (numHeads < 1 || embedDim % numHeads)
              throw Error("MultiheadAttention: embed_dim (" +
                          std::to_string(embedDim) +
                          ") must be divisible by num_heads (" +
                          std::to_string(numHeads) + ")");
            Tensor<T> w = filled<T>({3 * embedDim, embedDim}, 0);
            init::xavier_uniform_(w);
            return w;
          }())),
      embedDim(embedDim), numHeads(numHeads), dropoutP(dropout),
      batchFirst(batchFirst) {
  if (withBias)
    in_proj_bias =
        this->register_parameter("in_proj_bias", filled<T>({3 * embedDim}, 0));
  out_proj = this->register_module(
      "out_proj", std::make_shared<Linear<T>>(embedDim, embedDim, withBias));
  if (withBias)
    out_proj->bias->set_data(std::vector<T>(embedDim, T(0)));
}

template <typename T>
Tensor<T> MultiheadAttention<T>::forward(
    const Tensor<T> &query, const Tensor<T> &key, const Tensor<T> &value,
    const std::optional<Tensor<bool>> &mask, bool causal) {
  bool batched = query.rank() == 3;
  for (const Tensor<T> *t : {&query, &key, &value})
    if (t->rank() != query.rank() || (t->rank() != 2 && t->rank() != 3) ||
        t->shape().back() != embedDim)
      throw Error("MultiheadAttention: query, key and value must be [L, N, " +
                  std::to_string(embedDim) + "] (or [L, " +
                  std::to_string(embedDim) + "] unbatched), got " +
                  detail::shapeStr(query.shape()) + ", " +
                  detail::shapeStr(key.shape()) + ", " +
                  detail::shapeStr(value.shape()));
  auto layout = [&](const Tensor<T> &t) -> Tensor<T> {
    if (!batched)
      return t.unsqueeze(1);
    return batchFirst ? t.transpose(0, 1) : t;
  };
  Tensor<T> q = layout(query), k = layout(key), v = layout(value);
  int64_t L = q.shape()[0], N = q.shape()[1], S = k.shape()[0];
  int64_t E = embedDim, H = numHeads, D = E / H;
  if (k.shape()[1] != N || v.shape() != k.shape())
    throw Error("MultiheadAttention: key " + detail::shapeStr(key.shape()) +
                " and value " + detail::shapeStr(value.shape()) +
                " do not match query " + detail::shapeStr(query.shape()));
  // [length, N, E] -> [N, H, length, D], projected by rows [i E, (i+1) E).
  auto heads = [&](const Tensor<T> &x, int i, int64_t length) {
    std::optional<Tensor<T>> b;
    if (in_proj_bias)
      b = in_proj_bias->slice(0, i * E, (i + 1) * E);
    return linear(x, in_proj_weight.slice(0, i * E, (i + 1) * E), b)
        .reshape({length, N, H, D})
        .permute({1, 2, 0, 3});
  };
  Tensor<T> out = scaled_dot_product_attention(
      heads(q, 0, L), heads(k, 1, S), heads(v, 2, S), mask, causal,
      std::nullopt, this->is_training() ? dropoutP : 0.0, this->nextSeed());
  out = (*out_proj)(out.permute({2, 0, 1, 3}).reshape({L, N, E}));
  if (!batched)
    return out.squeeze(1);
  return batchFirst ? out.transpose(0, 1) : out;
}

template <typename T>
TransformerEncoderLayer<T>::TransformerEncoderLayer(
    int64_t dModel, int64_t numHeads, int64_t dimFeedforward, double dropout,
    bool gelu, double eps, bool batchFirst, bool normFirst)
    : Module<T>("TransformerEncoderLayer"), useGelu(gelu),
      normFirst(normFirst) {
  self_attn = this->register_module(
      "self_attn", std::make_shared<MultiheadAttention<T>>(
                       dModel, numHeads, dropout, true, batchFirst));
  linear1 = this->register_module(
      "linear1", std::make_shared<Linear<T>>(dModel, dimFeedforward));
  dropout0 =
      this->register_module("dropout", std::make_shared<Dropout<T>>(dropout));
  linear2 = this->register_module(
      "linear2", std::make_shared<Linear<T>>(dimFeedforward, dModel));
  norm1 = this->register_module(
      "norm1", std::make_shared<LayerNorm<T>>(Shape{dModel}, eps));
  norm2 = this->register_module(
      "norm2", std::make_shared<LayerNorm<T>>(Shape{dModel}, eps));
  dropout1 =
      this->register_module("dropout1", std::make_shared<Dropout<T>>(dropout));
  dropout2 =
      this->register_module("dropout2", std::make_shared<Dropout<T>>(dropout));
}

template <typename T>
Tensor<T>
TransformerEncoderLayer<T>::forward(const Tensor<T> &src,
                                    const std::optional<Tensor<bool>> &mask,
                                    bool causal) {
  auto attend = [&](const Tensor<T> &x) {
    return (*dropout1)(self_attn->forward(x, x, x, mask, causal));
  };
  auto feedForward = [&](const Tensor<T> &x) {
    Tensor<T> h = (*linear1)(x);
    h = useGelu ? nn::gelu(h) : h.relu();
    return (*dropout2)((*linear2)((*dropout0)(h)));
  };
  if (normFirst) {
    Tensor<T> x = src + attend((*norm1)(src));
    return x + feedForward((*norm2)(x));
  }
  Tensor<T> x = (*norm1)(src + attend(src));
  return (*norm2)(x + feedForward(x));
}

//===----------------------------------------------------------------------===//
// Instantiations
//===----------------------------------------------------------------------===//

#define HARP_MODULES(T)                                                        \
  template void init::uniform_<T>(Tensor<T> &, double, double);                \
  template void init::normal_<T>(Tensor<T> &, double, double);                 \
  template void init::constant_<T>(Tensor<T> &, double);                       \
  template void init::xavier_uniform_<T>(Tensor<T> &, double);                 \
  template void init::kaiming_uniform_<T>(Tensor<T> &, double);                \
  template class harp::nn::Module<T>;                                          \
  template class harp::nn::Linear<T>;                                          \
  template class harp::nn::ConvNd<T, 1>;                                       \
  template class harp::nn::ConvNd<T, 2>;                                       \
  template class harp::nn::ConvNd<T, 3>;                                       \
  template class harp::nn::ConvTransposeNd<T, 1>;                              \
  template class harp::nn::ConvTransposeNd<T, 2>;                              \
  template class harp::nn::ConvTransposeNd<T, 3>;                              \
  template class harp::nn::MaxPoolNd<T, 1>;                                    \
  template class harp::nn::MaxPoolNd<T, 2>;                                    \
  template class harp::nn::MaxPoolNd<T, 3>;                                    \
  template class harp::nn::AvgPoolNd<T, 1>;                                    \
  template class harp::nn::AvgPoolNd<T, 2>;                                    \
  template class harp::nn::AvgPoolNd<T, 3>;                                    \
  template class harp::nn::AdaptiveAvgPoolNd<T, 1>;                            \
  template class harp::nn::AdaptiveAvgPoolNd<T, 2>;                            \
  template class harp::nn::AdaptiveAvgPoolNd<T, 3>;                            \
  template class harp::nn::BatchNormNd<T, 1>;                                  \
  template class harp::nn::BatchNormNd<T, 2>;                                  \
  template class harp::nn::BatchNormNd<T, 3>;                                  \
  template class harp::nn::LayerNorm<T>;                                       \
  template class harp::nn::Embedding<T>;                                       \
  template class harp::nn::Dropout<T>;                                         \
  template class harp::nn::Flatten<T>;                                         \
  template class harp::nn::Sequential<T>;                                      \
  template class harp::nn::MultiheadAttention<T>;                              \
  template class harp::nn::TransformerEncoderLayer<T>;

HARP_MODULES(float)
HARP_MODULES(double)
