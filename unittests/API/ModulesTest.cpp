//===- ModulesTest.cpp - harp::nn modules ---------------------------------===//
//
// Parameter paths, initial values (PyTorch's bounds), state dicts, train and
// eval, each layer's forward against the harp::nn function it wraps (or a
// loop), attention against its definition, and a small CNN trained with
// harp::optim.
//
//===----------------------------------------------------------------------===//

#include "harp/API/Modules.h"
#include "harp/API/Optim.h"

#include "TestUtil.h"

#include <cmath>
#include <set>

using namespace harp;
using namespace harp::test;
using D = Tensor<double>;
using Shape = std::vector<int64_t>;

namespace {

std::vector<std::string> namesOf(const nn::Module<double>::Named &named) {
  std::vector<std::string> names;
  for (const auto &n : named)
    names.push_back(n.first);
  return names;
}

/// Every value of `t` lies in [-bound, bound], and they are not all equal.
void expectUniformWithin(const D &t, double bound) {
  std::vector<double> v = t.data();
  double lo = *std::min_element(v.begin(), v.end());
  double hi = *std::max_element(v.begin(), v.end());
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  EXPECT_LT(lo, hi);
  // Spread over most of the range, as U(-b, b) is for a few dozen draws.
  if (v.size() >= 32) {
    EXPECT_GT(hi - lo, bound);
  }
}

std::shared_ptr<nn::Sequential<double>> smallCnn() {
  auto model = std::make_shared<nn::Sequential<double>>();
  model->push_back(std::make_shared<nn::Conv2d<double>>(
      1, 4, Shape{3}, nn::ConvOptions().padding({1})));
  model->push_back(std::make_shared<nn::BatchNorm2d<double>>(4));
  model->push_back(std::make_shared<nn::ReLU<double>>());
  model->push_back(
      std::make_shared<nn::MaxPool2d<double>>(nn::PoolOptions({2})));
  model->push_back(std::make_shared<nn::Flatten<double>>());
  model->push_back(std::make_shared<nn::Dropout<double>>(0.25));
  model->push_back(std::make_shared<nn::Linear<double>>(4 * 3 * 3, 3));
  return model;
}

} // namespace

TEST(Modules, PathsInitialisationAndStateDict) {
  nn::manual_seed(1);
  auto model = smallCnn();
  EXPECT_EQ(namesOf(model->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight",
                                      "1.bias", "6.weight", "6.bias"}));
  EXPECT_EQ(namesOf(model->named_buffers()),
            (std::vector<std::string>{"1.running_mean", "1.running_var"}));
  EXPECT_EQ(model->state_dict().size(), 8u);
  EXPECT_EQ(model->parameters().size(), 6u);
  for (const D &p : model->parameters())
    EXPECT_TRUE(p.requires_grad());

  auto &conv = static_cast<nn::Conv2d<double> &>((*model)[0]);
  EXPECT_EQ(conv.weight.shape(), (Shape{4, 1, 3, 3}));
  expectUniformWithin(conv.weight, 1 / 3.0); // fan_in 9
  expectUniformWithin(*conv.bias, 1 / 3.0);
  auto &fc = static_cast<nn::Linear<double> &>((*model)[6]);
  EXPECT_EQ(fc.weight.shape(), (Shape{3, 36}));
  expectUniformWithin(fc.weight, 1 / 6.0); // fan_in 36
  auto &bn = static_cast<nn::BatchNorm2d<double> &>((*model)[1]);
  EXPECT_EQ(bn.weight->data(), std::vector<double>(4, 1.0));
  EXPECT_EQ(bn.running_var.data(), std::vector<double>(4, 1.0));

  // The same seed gives the same model; another seed another one.
  nn::manual_seed(1);
  auto again = smallCnn();
  EXPECT_EQ(again->parameters()[0].data(), model->parameters()[0].data());
  nn::manual_seed(2);
  auto other = smallCnn();
  EXPECT_NE(other->parameters()[0].data(), model->parameters()[0].data());

  // A state dict moves every value, buffers included.
  D x = randomTensor({2, 1, 6, 7}, 3);
  model->train();
  (*model)(x).realize(); // training updates the running statistics
  model->eval();
  other->eval();
  other->load_state_dict(model->state_dict());
  expectNear((*other)(x).data(), (*model)(x).data(), 0.0);
  EXPECT_EQ(other->named_buffers()[0].second.data(),
            model->named_buffers()[0].second.data());
  EXPECT_NE(model->named_buffers()[0].second.data(),
            std::vector<double>(4, 0.0));

  // Bad state dicts are refused before anything is written.
  auto state = model->state_dict();
  std::vector<double> before = other->parameters()[0].data();
  state[0].second = D::zeros({4, 1, 3, 3});
  state.emplace_back("7.weight", D::zeros({1}));
  EXPECT_EQ(errorOf([&] { other->load_state_dict(state); }),
            "Sequential.load_state_dict: unexpected key '7.weight'");
  EXPECT_EQ(other->parameters()[0].data(), before);
  state.pop_back();
  state[1].second = D::zeros({5});
  EXPECT_EQ(errorOf([&] { other->load_state_dict(state); }),
            "Sequential.load_state_dict: '0.bias' has shape [5] but the "
            "module's is [4]");
  state.erase(state.begin() + 1);
  EXPECT_EQ(errorOf([&] { other->load_state_dict(state); }),
            "Sequential.load_state_dict: missing key '0.bias'");
  other->load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(other->parameters()[0].data(), std::vector<double>(36, 0.0));
}

TEST(Modules, TrainEvalSwitchesDropoutAndBatchNorm) {
  nn::manual_seed(4);
  auto model = smallCnn();
  D x = randomTensor({3, 1, 6, 6}, 5);
  model->eval();
  std::vector<double> a = (*model)(x).data(), b = (*model)(x).data();
  EXPECT_EQ(a, b); // no dropout, running statistics
  model->train();
  EXPECT_TRUE((*model)[5].is_training());
  std::vector<double> c = (*model)(x).data(), d = (*model)(x).data();
  EXPECT_NE(c, d); // a new dropout mask per call

  nn::Dropout<double> drop(1.0);
  EXPECT_EQ(drop(x).data(), std::vector<double>(x.numel(), 0.0));
  drop.eval();
  EXPECT_EQ(drop(x).data(), x.data());
  EXPECT_EQ(errorOf([] { nn::Dropout<double>(1.5); }),
            "Dropout: p must be in [0, 1], got 1.500000");
}

TEST(Modules, LayersMatchTheirFunctions) {
  nn::manual_seed(6);
  D x = randomTensor({2, 3, 5, 7}, 7);
  nn::Conv2d<double> conv(3, 6, {3, 2},
                          nn::ConvOptions().stride({2, 1}).groups(3));
  EXPECT_EQ(conv.weight.shape(), (Shape{6, 1, 3, 2}));
  expectNear(conv(x).data(),
             nn::conv(x, conv.weight, conv.bias, conv.options).data(), 0.0);
  nn::ConvTranspose2d<double> up(3, 4, {2},
                                 nn::ConvTransposeOptions().stride({2}));
  EXPECT_EQ(up.weight.shape(), (Shape{3, 4, 2, 2}));
  EXPECT_EQ(up(x).shape(), (Shape{2, 4, 10, 14}));
  nn::AvgPool2d<double> avg(nn::PoolOptions({2}).stride({1}));
  expectNear(avg(x).data(), nn::avg_pool(x, avg.options).data(), 0.0);
  nn::AdaptiveAvgPool2d<double> adaptive({1, 3});
  EXPECT_EQ(adaptive(x).shape(), (Shape{2, 3, 1, 3}));
  nn::LayerNorm<double> norm({5, 7});
  expectNear(norm(x).data(), nn::layer_norm(x, {5, 7}).data(), 0.0);
  nn::Conv1d<double> conv1(3, 2, {3});
  EXPECT_EQ(conv1(x.reshape({2, 3, 35})).shape(), (Shape{2, 2, 33}));

  nn::Embedding<double> embed(10, 4);
  auto ids = Tensor<int64_t>::from_data({3, 9, 3}, {3});
  std::vector<double> rows = embed.forward(ids).data(), w = embed.weight.data();
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(rows[j], w[3 * 4 + j]);
    EXPECT_EQ(rows[4 + j], w[9 * 4 + j]);
  }
  EXPECT_EQ(errorOf([&] { embed(x); }),
            "Embedding: forward(tensor) is not defined for this module");
  EXPECT_EQ(errorOf([&] {
              conv(x.reshape({6, 5, 7}).slice(0, 0, 1).reshape({5, 7}));
            }),
            "Conv2d: expected an input of rank 3 or 4, got shape [5, 7]");
  EXPECT_EQ(errorOf([] {
              nn::Conv2d<double>(3, 4, {3}, nn::ConvOptions().groups(2));
            }),
            "Conv2d: in_channels 3 and out_channels 4 must be divisible by "
            "groups 2");
  EXPECT_EQ(errorOf([] {
              nn::Conv2d<double>(3, 4, {3, 3, 3});
            }),
            "Conv2d: kernel_size needs 1 or 2 values, got 3");
  nn::Flatten<double> flatten(1, 2);
  EXPECT_EQ(flatten(x).shape(), (Shape{2, 15, 7}));
}

TEST(Modules, MultiheadAttentionMatchesItsDefinition) {
  nn::manual_seed(8);
  const int64_t L = 5, N = 2, E = 6, H = 3, Dh = E / H;
  nn::MultiheadAttention<double> mha(E, H);
  EXPECT_EQ(namesOf(mha.named_parameters()),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                      "out_proj.weight", "out_proj.bias"}));
  expectUniformWithin(mha.in_proj_weight, std::sqrt(6.0 / (E + 3 * E)));
  EXPECT_EQ(mha.out_proj->bias->data(), std::vector<double>(E, 0.0));
  mha.in_proj_bias->set_data(randomValues(3 * E, 9));
  mha.out_proj->bias->set_data(randomValues(E, 10));

  D x = randomTensor({L, N, E}, 11);
  std::vector<double> xv = x.data(), w = mha.in_proj_weight.data(),
                      b = mha.in_proj_bias->data(),
                      ow = mha.out_proj->weight.data(),
                      ob = mha.out_proj->bias->data();
  // softmax(q k^T / sqrt(Dh)) v per head, written out, with causal masking.
  auto project = [&](int part, int64_t l, int64_t n, int64_t e) {
    double acc = b[part * E + e];
    for (int64_t j = 0; j < E; ++j)
      acc += w[(part * E + e) * E + j] * xv[(l * N + n) * E + j];
    return acc;
  };
  for (bool causal : {false, true}) {
    std::vector<double> want(L * N * E);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> heads(E);
        for (int64_t h = 0; h < H; ++h) {
          std::vector<double> scores;
          double top = -INFINITY;
          int64_t keys = causal ? l + 1 : L;
          for (int64_t s = 0; s < keys; ++s) {
            double dot = 0;
            for (int64_t d = 0; d < Dh; ++d)
              dot +=
                  project(0, l, n, h * Dh + d) * project(1, s, n, h * Dh + d);
            scores.push_back(dot / std::sqrt(double(Dh)));
            top = std::max(top, scores.back());
          }
          double total = 0;
          for (double &s : scores)
            total += (s = std::exp(s - top));
          for (int64_t d = 0; d < Dh; ++d)
            for (int64_t s = 0; s < keys; ++s)
              heads[h * Dh + d] +=
                  scores[s] / total * project(2, s, n, h * Dh + d);
        }
        for (int64_t e = 0; e < E; ++e) {
          double acc = ob[e];
          for (int64_t j = 0; j < E; ++j)
            acc += ow[e * E + j] * heads[j];
          want[(l * N + n) * E + e] = acc;
        }
      }
    expectNear(mha.forward(x, x, x, std::nullopt, causal).data(), want, 1e-12);
    // batch_first and unbatched layouts see the same numbers.
    nn::MultiheadAttention<double> first(E, H, 0.0, true, /*batchFirst=*/true);
    first.load_state_dict(mha.state_dict());
    D xt = x.transpose(0, 1);
    expectNear(first.forward(xt, xt, xt, std::nullopt, causal)
                   .transpose(0, 1)
                   .contiguous()
                   .data(),
               want, 1e-12);
    D one = x.slice(1, 1, 2).reshape({L, E});
    std::vector<double> single =
        mha.forward(one, one, one, std::nullopt, causal).data();
    for (int64_t l = 0; l < L; ++l)
      for (int64_t e = 0; e < E; ++e)
        ASSERT_NEAR(single[l * E + e], want[(l * N + 1) * E + e], 1e-12);
  }
  EXPECT_EQ(errorOf([] { nn::MultiheadAttention<double>(6, 4); }),
            "MultiheadAttention: embed_dim (6) must be divisible by "
            "num_heads (4)");
  EXPECT_NE(errorOf([&] {
              mha(D::zeros({5, 2, 4}));
            }).find("MultiheadAttention: query, key and value must be"),
            std::string::npos);
}

TEST(Modules, TransformerEncoderLayerTrains) {
  nn::manual_seed(12);
  nn::TransformerEncoderLayer<double> layer(8, 2, 16, 0.1, /*gelu=*/true, 1e-5,
                                            /*batchFirst=*/true);
  std::set<std::string> names;
  for (auto &n : layer.named_parameters())
    names.insert(n.first);
  for (const char *want :
       {"self_attn.in_proj_weight", "self_attn.out_proj.weight",
        "linear1.weight", "linear2.bias", "norm1.weight", "norm2.bias"})
    EXPECT_TRUE(names.count(want)) << want;
  EXPECT_EQ(layer.parameters().size(), 12u);

  D x = randomTensor({3, 4, 8}, 13);
  D target = randomTensor({3, 4, 8}, 14);
  layer.eval();
  EXPECT_EQ(layer(x).data(), layer(x).data());
  layer.train();
  optim::Adam opt(layer.parameters(), optim::AdamOptions(1e-2));
  auto loss = [&] {
    return nn::mse_loss(layer.forward(x, std::nullopt, /*causal=*/true),
                        target);
  };
  layer.eval();
  double first = loss().item();
  layer.train();
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    loss().backward();
    opt.step();
  }
  for (const D &p : layer.parameters())
    EXPECT_TRUE(std::isfinite(p.data()[0]));
  layer.eval();
  EXPECT_LT(loss().item(), 0.7 * first);
}

TEST(Modules, SmallCnnLearnsWithSGD) {
  // Three classes told apart by where a bright pixel is: the CNN of
  // smallCnn() learns them from 24 images.
  nn::manual_seed(15);
  auto model = smallCnn();
  std::vector<double> images(24 * 36, 0.0);
  std::vector<int64_t> labels;
  std::vector<double> noise = randomValues(images.size(), 16, 0.0, 0.2);
  for (int64_t i = 0; i < 24; ++i) {
    int64_t label = i % 3;
    labels.push_back(label);
    for (int64_t p = 0; p < 36; ++p)
      images[i * 36 + p] = noise[i * 36 + p];
    images[i * 36 + (label == 0 ? 0 : label == 1 ? 20 : 35)] = 1.0;
  }
  D x = D::from_data(images, {24, 1, 6, 6});
  auto y = Tensor<int64_t>::from_data(labels, {24});
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.2).momentum(0.9));
  auto accuracy = [&] {
    model->eval();
    std::vector<double> logits = (*model)(x).data();
    model->train();
    int correct = 0;
    for (int64_t i = 0; i < 24; ++i) {
      auto row = logits.begin() + i * 3;
      correct += std::max_element(row, row + 3) - row == labels[i];
    }
    return correct / 24.0;
  };
  double before = accuracy();
  double firstLoss = 0, lastLoss = 0;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    D loss = nn::cross_entropy((*model)(x), y);
    loss.backward();
    opt.step();
    (step == 0 ? firstLoss : lastLoss) = loss.item();
  }
  EXPECT_LT(lastLoss, 0.5 * firstLoss);
  EXPECT_EQ(accuracy(), 1.0) << "accuracy before training: " << before;
}

TEST(Modules, StepScalarsAreSharedByRoleDtypeAndValue) {
  // One 0-d argument per (role, dtype, value) for a whole optimizer step:
  // every parameter's update reads the same leaf, and numbers of other
  // roles stay apart even where equal (so the step's graph keeps its
  // structure from step to step).
  detail::optim::StepScalars scalars;
  detail::NodePtr f32 = detail::scalar(DType::F32, 1.0);
  detail::NodePtr f64 = detail::scalar(DType::F64, 1.0);
  detail::NodePtr lr = scalars.get(f32, "lr", 0.1);
  EXPECT_EQ(scalars.get(f32, "lr", 0.1), lr);
  EXPECT_NE(scalars.get(f64, "lr", 0.1), lr);
  EXPECT_NE(scalars.get(f32, "1 - beta1", 0.1), lr);
  EXPECT_NE(scalars.get(f32, "lr", 0.2), lr);
  EXPECT_EQ(detail::dtypeOf(scalars.get(f64, "lr", 0.1)), DType::F64);
}

TEST(Modules, OptimizerStepIsOneCallForEveryParameter) {
  // The update rules write with deferred writes: a step's updates of all
  // parameters and their state are one compiled call, done when a
  // parameter is next read, and give torch's values (here Adam's, from
  // its definition, and SGD with momentum's).
  D w = D::from_data({1.0, -2.0, 3.0}, {3});
  D b = D::from_data({0.5}, {1});
  D u = D::from_data({2.0, 4.0}, {2});
  for (D *t : {&w, &b, &u})
    t->set_requires_grad();
  optim::Adam adam({w, b}, optim::AdamOptions(0.1));
  optim::SGD sgd({u}, optim::SGDOptions(0.1).momentum(0.5));
  auto step = [&] {
    adam.zero_grad();
    sgd.zero_grad();
    ((w * w).sum() + (b * 3.0).sum() + (u * u).sum()).backward();
    adam.step();
    sgd.step();
  };
  step();
  step();
  (void)w.data();
  auto calls = [] {
    detail::CompileCounts c = detail::compileCounts();
    return c.compilations + c.memoryHits + c.diskHits;
  };
  unsigned before = calls();
  step();
  EXPECT_EQ(calls() - before, 1u) << "backward, the updates still deferred";
  std::vector<double> wv = w.data(), bv = b.data(), uv = u.data();
  EXPECT_EQ(calls() - before, 2u) << "the updates of all three: one call";
  // Adam from its definition over three steps, g = 2w for w, 3 for b.
  auto adamRef = [](double x, bool linear) {
    double m = 0, v = 0;
    for (int t = 1; t <= 3; ++t) {
      double g = linear ? 3.0 : 2 * x;
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g * g;
      double mh = m / (1 - std::pow(0.9, t)), vh = v / (1 - std::pow(0.999, t));
      x -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
    }
    return x;
  };
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(wv[i], adamRef(std::vector<double>{1, -2, 3}[i], false), 1e-12);
  EXPECT_NEAR(bv[0], adamRef(0.5, true), 1e-12);
  // SGD with momentum 0.5: buf = g at the first step, then 0.5 buf + g.
  for (int i = 0; i < 2; ++i) {
    double x = std::vector<double>{2, 4}[i], buf = 0;
    for (int t = 1; t <= 3; ++t) {
      double g = 2 * x;
      buf = t == 1 ? g : 0.5 * buf + g;
      x -= 0.1 * buf;
    }
    EXPECT_NEAR(uv[i], x, 1e-12);
  }
}
