//===- Modules.h - harp::nn layers with parameters ---------------*- C++
//-*-===//
//
// torch.nn's modules for C++: each owns its parameters (leaves that require
// gradients) and buffers, initialised as PyTorch initialises them, and
// calls the harp::nn functions of NN.h in forward(). Modules nest, and the
// root names every parameter by its path ("0.weight", "self_attn.
// in_proj_weight"), as PyTorch's state dicts do. T is float or double.
//
//   auto model = std::make_shared<nn::Sequential<float>>();
//   model->push_back(std::make_shared<nn::Linear<float>>(784, 128));
//   model->push_back(std::make_shared<nn::ReLU<float>>());
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_MODULES_H
#define HARP_API_MODULES_H

#include "harp/API/NN.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace harp {
namespace nn {

/// Seeds the generator that the initialisers draw from and the default
/// generator (harp::default_generator) that dropout and the random ops draw
/// their seeds from; the same as harp::manual_seed.
void manual_seed(uint64_t seed);

/// In-place initialisers of a leaf (torch.nn.init's names).
namespace init {
template <typename T>
void uniform_(Tensor<T> &t, double low, double high);
template <typename T>
void normal_(Tensor<T> &t, double mean, double stddev);
template <typename T>
void constant_(Tensor<T> &t, double value);
/// U(-b, b) with b = gain sqrt(6 / (fan_in + fan_out)).
template <typename T>
void xavier_uniform_(Tensor<T> &t, double gain = 1.0);
/// U(-b, b) with b = sqrt(6 / ((1 + a^2) fan_in)) (leaky_relu's gain).
template <typename T>
void kaiming_uniform_(Tensor<T> &t, double a = 0.0);
} // namespace init

template <typename T>
class Module {
  static_assert(IsFloat<T>, "harp::nn modules hold float or double tensors");

public:
  using Named = std::vector<std::pair<std::string, Tensor<T>>>;

  virtual ~Module();
  /// The layer applied to `x`; modules that take other inputs (Embedding,
  /// MultiheadAttention) throw here and offer their own forward.
  virtual Tensor<T> forward(const Tensor<T> &x);
  Tensor<T> operator()(const Tensor<T> &x) { return forward(x); }

  /// Parameters of this module and its children, depth first.
  std::vector<Tensor<T>> parameters() const;
  Named named_parameters() const;
  Named named_buffers() const;
  /// Parameters, then buffers, by path (PyTorch's state_dict order).
  Named state_dict() const;
  /// Copies values into the parameters and buffers of the same paths; each
  /// shape must match. strict: every path of both must appear in the
  /// other.
  void load_state_dict(const Named &state, bool strict = true);

  /// Training mode (dropout active, batch statistics) for this module and
  /// its children; eval() is train(false).
  Module &train(bool on = true);
  Module &eval() { return train(false); }
  bool is_training() const { return training; }
  /// Forgets the accumulated gradients of every parameter.
  void zero_grad();
  /// The module's type name ("Linear").
  const std::string &name() const { return typeName; }

protected:
  explicit Module(std::string typeName);
  /// Adds a parameter (made a leaf that requires a gradient) or a buffer;
  /// returns it (a handle to the same node).
  Tensor<T> register_parameter(std::string name, Tensor<T> value);
  Tensor<T> register_buffer(std::string name, Tensor<T> value);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name,
                                     std::shared_ptr<M> child) {
    children.emplace_back(std::move(name), child);
    return child;
  }
  /// A fresh seed per call for the module's random draws.
  uint64_t nextSeed();

private:
  void collect(const std::string &prefix, bool buffers, Named &out) const;

  std::string typeName;
  Named params, buffers;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children;
  bool training = true;
};

/// y = x weight^T + bias; weight [out, in] and bias [out] drawn from
/// U(-1/sqrt(in), 1/sqrt(in)).
template <typename T>
class Linear : public Module<T> {
public:
  Linear(int64_t in, int64_t out, bool bias = true);
  Tensor<T> forward(const Tensor<T> &x) override;
  Tensor<T> weight;
  std::optional<Tensor<T>> bias;
};

/// K-d convolution: weight [out, in / groups, kernel...], bias [out].
template <typename T, int K>
class ConvNd : public Module<T> {
public:
  ConvNd(int64_t in, int64_t out, Shape kernel, const ConvOptions &options = {},
         bool bias = true);
  Tensor<T> forward(const Tensor<T> &x) override;
  Tensor<T> weight;
  std::optional<Tensor<T>> bias;
  ConvOptions options;
};
template <typename T>
using Conv1d = ConvNd<T, 1>;
template <typename T>
using Conv2d = ConvNd<T, 2>;
template <typename T>
using Conv3d = ConvNd<T, 3>;

/// K-d transposed convolution: weight [in, out / groups, kernel...].
template <typename T, int K>
class ConvTransposeNd : public Module<T> {
public:
  ConvTransposeNd(int64_t in, int64_t out, Shape kernel,
                  const ConvTransposeOptions &options = {}, bool bias = true);
  Tensor<T> forward(const Tensor<T> &x) override;
  Tensor<T> weight;
  std::optional<Tensor<T>> bias;
  ConvTransposeOptions options;
};
template <typename T>
using ConvTranspose1d = ConvTransposeNd<T, 1>;
template <typename T>
using ConvTranspose2d = ConvTransposeNd<T, 2>;
template <typename T>
using ConvTranspose3d = ConvTransposeNd<T, 3>;

/// Pooling over K spatial dims (no parameters).
template <typename T, int K>
class MaxPoolNd : public Module<T> {
public:
  explicit MaxPoolNd(PoolOptions options);
  Tensor<T> forward(const Tensor<T> &x) override;
  PoolOptions options;
};
template <typename T, int K>
class AvgPoolNd : public Module<T> {
public:
  explicit AvgPoolNd(PoolOptions options);
  Tensor<T> forward(const Tensor<T> &x) override;
  PoolOptions options;
};
template <typename T, int K>
class AdaptiveAvgPoolNd : public Module<T> {
public:
  explicit AdaptiveAvgPoolNd(Shape outputSize);
  Tensor<T> forward(const Tensor<T> &x) override;
  Shape outputSize;
};
template <typename T>
using MaxPool2d = MaxPoolNd<T, 2>;
template <typename T>
using AvgPool2d = AvgPoolNd<T, 2>;
template <typename T>
using AdaptiveAvgPool2d = AdaptiveAvgPoolNd<T, 2>;

/// Batch normalisation of [N, C, K spatial dims]: weight ones, bias zeros,
/// buffers running_mean zeros and running_var ones, updated in training.
template <typename T, int K>
class BatchNormNd : public Module<T> {
public:
  explicit BatchNormNd(int64_t features, double eps = 1e-5,
                       double momentum = 0.1, bool affine = true);
  Tensor<T> forward(const Tensor<T> &x) override;
  std::optional<Tensor<T>> weight, bias;
  Tensor<T> running_mean, running_var;
  double eps, momentum;
};
template <typename T>
using BatchNorm1d = BatchNormNd<T, 1>;
template <typename T>
using BatchNorm2d = BatchNormNd<T, 2>;
template <typename T>
using BatchNorm3d = BatchNormNd<T, 3>;

/// Layer normalisation over the trailing dims `normalizedShape`.
template <typename T>
class LayerNorm : public Module<T> {
public:
  explicit LayerNorm(Shape normalizedShape, double eps = 1e-5,
                     bool affine = true);
  Tensor<T> forward(const Tensor<T> &x) override;
  std::optional<Tensor<T>> weight, bias;
  Shape normalizedShape;
  double eps;
};

/// Rows of weight [num, dim] (drawn from N(0, 1)) picked by integer
/// indices.
template <typename T>
class Embedding : public Module<T> {
public:
  Embedding(int64_t num, int64_t dim);
  Tensor<T> forward(const Tensor<int64_t> &indices);
  Tensor<T> forward(const Tensor<int32_t> &indices);
  using Module<T>::forward;
  Tensor<T> weight;
};

/// Zeroes elements with probability p in training, with a new seed per
/// call (the identity in eval()).
template <typename T>
class Dropout : public Module<T> {
public:
  explicit Dropout(double p = 0.5);
  Tensor<T> forward(const Tensor<T> &x) override;
  double p;
};

/// Activations and reshapes as modules.
template <typename T>
class ReLU : public Module<T> {
public:
  ReLU() : Module<T>("ReLU") {}
  Tensor<T> forward(const Tensor<T> &x) override { return x.relu(); }
};
template <typename T>
class GELU : public Module<T> {
public:
  explicit GELU(bool tanh = false) : Module<T>("GELU"), tanh(tanh) {}
  Tensor<T> forward(const Tensor<T> &x) override { return gelu(x, tanh); }
  bool tanh;
};
template <typename T>
class SiLU : public Module<T> {
public:
  SiLU() : Module<T>("SiLU") {}
  Tensor<T> forward(const Tensor<T> &x) override { return silu(x); }
};
template <typename T>
class Tanh : public Module<T> {
public:
  Tanh() : Module<T>("Tanh") {}
  Tensor<T> forward(const Tensor<T> &x) override { return x.tanh(); }
};
template <typename T>
class Sigmoid : public Module<T> {
public:
  Sigmoid() : Module<T>("Sigmoid") {}
  Tensor<T> forward(const Tensor<T> &x) override { return x.sigmoid(); }
};
/// Dims start..end (inclusive, negative from the end) merged into one.
template <typename T>
class Flatten : public Module<T> {
public:
  explicit Flatten(int64_t start = 1, int64_t end = -1);
  Tensor<T> forward(const Tensor<T> &x) override;
  int64_t start, end;
};

/// Modules applied in order; children are named "0", "1", ...
template <typename T>
class Sequential : public Module<T> {
public:
  Sequential() : Module<T>("Sequential") {}
  Sequential &push_back(std::shared_ptr<Module<T>> module);
  Tensor<T> forward(const Tensor<T> &x) override;
  size_t size() const { return layers.size(); }
  Module<T> &operator[](size_t i) { return *layers.at(i); }

private:
  std::vector<std::shared_ptr<Module<T>>> layers;
};

/// Multi-head attention with PyTorch's parameters: in_proj_weight [3E, E]
/// (xavier_uniform), in_proj_bias [3E] (zeros) and out_proj (Linear E->E,
/// bias zeros). Inputs are [L, N, E] ([N, L, E] with batchFirst).
template <typename T>
class MultiheadAttention : public Module<T> {
public:
  MultiheadAttention(int64_t embedDim, int64_t numHeads, double dropout = 0.0,
                     bool bias = true, bool batchFirst = false);
  /// The attended values, shaped like query. mask: [L, S], true keeps a
  /// key for a query; causal: key j only for queries i >= j.
  Tensor<T> forward(const Tensor<T> &query, const Tensor<T> &key,
                    const Tensor<T> &value,
                    const std::optional<Tensor<bool>> &mask = std::nullopt,
                    bool causal = false);
  /// Self-attention: forward(x, x, x).
  Tensor<T> forward(const Tensor<T> &x) override { return forward(x, x, x); }
  Tensor<T> in_proj_weight;
  std::optional<Tensor<T>> in_proj_bias;
  std::shared_ptr<Linear<T>> out_proj;
  int64_t embedDim, numHeads;
  double dropoutP;
  bool batchFirst;
};

/// Self-attention and a feed-forward block, each with a residual
/// connection and layer norm (post-norm, or pre-norm with normFirst);
/// PyTorch's submodule names, so state dicts line up.
template <typename T>
class TransformerEncoderLayer : public Module<T> {
public:
  TransformerEncoderLayer(int64_t dModel, int64_t numHeads,
                          int64_t dimFeedforward = 2048, double dropout = 0.1,
                          bool gelu = false, double eps = 1e-5,
                          bool batchFirst = false, bool normFirst = false);
  Tensor<T> forward(const Tensor<T> &src,
                    const std::optional<Tensor<bool>> &mask,
                    bool causal = false);
  Tensor<T> forward(const Tensor<T> &src) override {
    return forward(src, std::nullopt);
  }
  std::shared_ptr<MultiheadAttention<T>> self_attn;
  std::shared_ptr<Linear<T>> linear1, linear2;
  std::shared_ptr<LayerNorm<T>> norm1, norm2;
  std::shared_ptr<Dropout<T>> dropout0, dropout1, dropout2;
  bool useGelu, normFirst;
};

} // namespace nn
} // namespace harp

#endif // HARP_API_MODULES_H
