//===- NNTest.cpp - harp::nn layers and harp::optim -----------------------===//
//
// Each layer against a direct loop over its definition (odd sizes, padding,
// strides, groups), each gradient against central differences in f64, and
// each optimizer against its update rule written out in doubles over 100
// steps.
//
//===----------------------------------------------------------------------===//

#include "harp/API/NN.h"
#include "harp/API/Optim.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace harp;
using namespace harp::test;
using D = Tensor<double>;
using F = Tensor<float>;
using Shape = std::vector<int64_t>;

namespace {

/// Direct 2-D convolution with padding, stride, dilation and groups.
std::vector<double> naiveConv2d(const std::vector<double> &x, Shape xs,
                                const std::vector<double> &w, Shape ws,
                                Shape stride, Shape pad, Shape dil,
                                int64_t groups, Shape &os) {
  int64_t n = xs[0], c = xs[1], f = ws[0], cg = c / groups, fg = f / groups;
  int64_t oh = (xs[2] + 2 * pad[0] - dil[0] * (ws[2] - 1) - 1) / stride[0] + 1;
  int64_t ow = (xs[3] + 2 * pad[1] - dil[1] * (ws[3] - 1) - 1) / stride[1] + 1;
  os = {n, f, oh, ow};
  std::vector<double> out(count(os), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < f; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = 0;
          int64_t g = o / fg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t p = 0; p < ws[2]; ++p)
              for (int64_t q = 0; q < ws[3]; ++q) {
                int64_t y = i * stride[0] - pad[0] + p * dil[0];
                int64_t z = j * stride[1] - pad[1] + q * dil[1];
                if (y < 0 || z < 0 || y >= xs[2] || z >= xs[3])
                  continue;
                acc += x[at(xs, {b, g * cg + ci, y, z})] *
                       w[at(ws, {o, ci, p, q})];
              }
          out[at(os, {b, o, i, j})] = acc;
        }
  (void)fg;
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

TEST(NN, ConvMatchesLoopsWithGroupsStridePaddingDilation) {
  struct Case {
    Shape xs, ws, stride, pad, dil;
    int64_t groups;
  };
  for (const Case &c : std::vector<Case>{
           {{2, 3, 7, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
           {{1, 4, 9, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
           {{2, 5, 6, 7}, {5, 1, 3, 3}, {1, 2}, {2, 1}, {1, 1}, 5},
           {{1, 1, 1, 1}, {3, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
           {{1, 2, 17, 3}, {2, 2, 5, 1}, {3, 1}, {2, 0}, {2, 1}, 1}}) {
    std::vector<double> x = randomValues(count(c.xs), 1);
    std::vector<double> w = randomValues(count(c.ws), 2);
    std::vector<double> b = randomValues(c.ws[0], 3);
    Shape os;
    std::vector<double> expected =
        naiveConv2d(x, c.xs, w, c.ws, c.stride, c.pad, c.dil, c.groups, os);
    for (int64_t o = 0; o < os[0] * os[1]; ++o)
      for (int64_t s = 0; s < os[2] * os[3]; ++s)
        expected[o * os[2] * os[3] + s] += b[o % os[1]];
    D out = nn::conv(D::from_data(x, c.xs), D::from_data(w, c.ws),
                     D::from_data(b, {c.ws[0]}),
                     nn::ConvOptions()
                         .stride(c.stride)
                         .padding(c.pad)
                         .dilation(c.dil)
                         .groups(c.groups));
    EXPECT_EQ(out.shape(), os);
    expectNear(out.data(), expected);
  }
}

TEST(NN, ConvSamePaddingKeepsTheSizeWithEvenKernels) {
  // "same" with an even kernel puts the odd padding element after.
  Shape xs = {1, 2, 6, 5}, ws = {3, 2, 4, 2};
  D x = randomTensor(xs, 4), w = randomTensor(ws, 5);
  D out = nn::conv(x, w, std::nullopt, nn::ConvOptions().same());
  EXPECT_EQ(out.shape(), (Shape{1, 3, 6, 5}));
  // Equal to an explicit asymmetric zero padding (1 before, 2 after; 0, 1).
  D padded = x.pad({0, 0, 1, 0}, {0, 0, 2, 1});
  expectNear(out.data(), nn::conv(padded, w).data());
}

TEST(NN, Conv1dAnd3dAndUnbatched) {
  D x1 = randomTensor({2, 3, 11}, 6), w1 = randomTensor({4, 3, 3}, 7);
  D y1 = nn::conv(x1, w1, std::nullopt, nn::ConvOptions().padding({1}));
  EXPECT_EQ(y1.shape(), (Shape{2, 4, 11}));
  // A 1-D convolution is a 2-D one over a height of 1.
  D y2 = nn::conv(x1.reshape(Shape{2, 3, 1, 11}), w1.reshape(Shape{4, 3, 1, 3}),
                  std::nullopt, nn::ConvOptions().padding({0, 1}));
  expectNear(y1.data(), y2.data());
  D x3 = randomTensor({1, 2, 4, 5, 3}, 8),
    w3 = randomTensor({3, 2, 2, 3, 2}, 9);
  D y3 = nn::conv(x3, w3, std::nullopt, nn::ConvOptions().stride({2, 1, 1}));
  EXPECT_EQ(y3.shape(), (Shape{1, 3, 2, 3, 2}));
  // Unbatched input [C, spatial...] gives [F, spatial...].
  D u = nn::conv(x1.slice(0, 0, 1).reshape(Shape{3, 11}), w1);
  EXPECT_EQ(u.shape(), (Shape{4, 9}));
}

TEST(NN, ConvTransposeIsTheAdjointOfConv) {
  // <conv(x, w), y> == <x, conv_transpose(y, w)>, for the same geometry.
  struct Case {
    Shape xs, ws, stride, pad, dil;
    int64_t groups;
  };
  for (const Case &c : std::vector<Case>{
           {{2, 3, 7, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {1, 1}, 1},
           {{1, 4, 9, 9}, {6, 2, 3, 3}, {2, 3}, {1, 1}, {2, 1}, 2}}) {
    D x = randomTensor(c.xs, 10), w = randomTensor(c.ws, 11);
    D y0 = nn::conv(x, w, std::nullopt,
                    nn::ConvOptions()
                        .stride(c.stride)
                        .padding(c.pad)
                        .dilation(c.dil)
                        .groups(c.groups));
    D y = randomTensor(y0.shape(), 12);
    // output_padding restores the rows a strided convolution dropped.
    Shape outputPadding;
    for (size_t i = 0; i < 2; ++i) {
      int64_t full = (y0.shape()[2 + i] - 1) * c.stride[i] +
                     c.dil[i] * (c.ws[2 + i] - 1) + 1 - 2 * c.pad[i];
      outputPadding.push_back(c.xs[2 + i] - full);
    }
    D xt = nn::conv_transpose(y, w, std::nullopt,
                              nn::ConvTransposeOptions()
                                  .stride(c.stride)
                                  .padding(c.pad)
                                  .output_padding(outputPadding)
                                  .dilation(c.dil)
                                  .groups(c.groups));
    ASSERT_EQ(xt.shape(), c.xs);
    double left = (y0 * y).sum().item(), right = (x * xt).sum().item();
    EXPECT_NEAR(left, right, 1e-9);
  }
}

//===----------------------------------------------------------------------===//
// Pooling, im2col, col2im
//===----------------------------------------------------------------------===//

TEST(NN, PoolingMatchesLoops) {
  Shape xs = {2, 3, 7, 8};
  std::vector<double> x = randomValues(count(xs), 13);
  D t = D::from_data(x, xs);
  // 3x2 windows, stride (2, 3), padding (1, 1), ceil_mode.
  auto opts = nn::PoolOptions({3, 2}).stride({2, 3}).padding({1, 1});
  for (bool ceil : {false, true}) {
    for (bool includePad : {true, false}) {
      opts.ceil_mode(ceil).count_include_pad(includePad);
      D mx = nn::max_pool(t, opts), avg = nn::avg_pool(t, opts);
      ASSERT_EQ(mx.shape(), avg.shape());
      Shape os = mx.shape();
      std::vector<double> wantMax, wantAvg;
      for (int64_t b = 0; b < xs[0] * xs[1]; ++b)
        for (int64_t i = 0; i < os[2]; ++i)
          for (int64_t j = 0; j < os[3]; ++j) {
            double m = -INFINITY, s = 0;
            int64_t inside = 0, boxH = 0, boxW = 0;
            int64_t y0 = i * 2 - 1, z0 = j * 3 - 1;
            // The window clipped to the padded input (ceil_mode windows
            // may run past it).
            int64_t y1 = std::min(y0 + 3, xs[2] + 1);
            int64_t z1 = std::min(z0 + 2, xs[3] + 1);
            boxH = y1 - y0;
            boxW = z1 - z0;
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t z = z0; z < z1; ++z) {
                if (y < 0 || z < 0 || y >= xs[2] || z >= xs[3])
                  continue;
                double v = x[b * xs[2] * xs[3] + y * xs[3] + z];
                m = std::max(m, v);
                s += v;
                ++inside;
              }
            wantMax.push_back(m);
            wantAvg.push_back(s / double(includePad ? boxH * boxW : inside));
          }
      expectNear(mx.data(), wantMax);
      expectNear(avg.data(), wantAvg);
    }
  }
  EXPECT_EQ(nn::max_pool(t, nn::PoolOptions({2})).shape(), (Shape{2, 3, 3, 4}));
  // divisor_override divides every window by one number.
  D over = nn::avg_pool(t, nn::PoolOptions({2}).divisor_override(3));
  D plain = nn::avg_pool(t, nn::PoolOptions({2}));
  expectNear(over.data(), (plain * (4.0 / 3.0)).data());
}

TEST(NN, AdaptiveAndGlobalAveragePool) {
  Shape xs = {1, 2, 5, 7};
  std::vector<double> x = randomValues(count(xs), 14);
  D t = D::from_data(x, xs);
  D out = nn::adaptive_avg_pool(t, {3, 2});
  ASSERT_EQ(out.shape(), (Shape{1, 2, 3, 2}));
  std::vector<double> want;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        int64_t y0 = i * 5 / 3, y1 = ((i + 1) * 5 + 2) / 3;
        int64_t z0 = j * 7 / 2, z1 = ((j + 1) * 7 + 1) / 2;
        double s = 0;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t z = z0; z < z1; ++z)
            s += x[c * 35 + y * 7 + z];
        want.push_back(s / double((y1 - y0) * (z1 - z0)));
      }
  expectNear(out.data(), want);
  D global = nn::global_avg_pool(t);
  EXPECT_EQ(global.shape(), (Shape{1, 2, 1, 1}));
  expectNear(global.data(), nn::adaptive_avg_pool(t, {1}).data());
}

TEST(NN, Im2ColLayoutAndCol2ImIsItsAdjoint) {
  Shape xs = {2, 3, 5, 6};
  std::vector<double> x = randomValues(count(xs), 15);
  D t = D::from_data(x, xs);
  D cols = nn::im2col(t, {3, 2}, {2, 2}, {1, 0});
  // [N, C * kh * kw, windows], channel-major then kernel offsets.
  int64_t oh = (5 + 2 - 3) / 2 + 1, ow = (6 - 2) / 2 + 1;
  ASSERT_EQ(cols.shape(), (Shape{2, 18, oh * ow}));
  std::vector<double> c = cols.data();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t ch = 0; ch < 3; ++ch)
      for (int64_t p = 0; p < 3; ++p)
        for (int64_t q = 0; q < 2; ++q)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              int64_t y = i * 2 - 1 + p, z = j * 2 + q;
              double want = (y < 0 || y >= 5) ? 0.0 : x[at(xs, {b, ch, y, z})];
              ASSERT_EQ(
                  c[at({2, 18, oh * ow}, {b, ch * 6 + p * 2 + q, i * ow + j})],
                  want);
            }
  D back = randomTensor(cols.shape(), 16);
  D image = nn::col2im(back, {5, 6}, {3, 2}, {2, 2}, {1, 0});
  ASSERT_EQ(image.shape(), xs);
  EXPECT_NEAR((cols * back).sum().item(), (t * image).sum().item(), 1e-10);
}

//===----------------------------------------------------------------------===//
// Normalization, dropout, embedding
//===----------------------------------------------------------------------===//

TEST(NN, BatchNormTrainingUpdatesRunningStatistics) {
  Shape xs = {4, 3, 2, 5};
  std::vector<double> x = randomValues(count(xs), 17);
  D t = D::from_data(x, xs);
  D runningMean = D::from_data({0.5, -0.5, 0.0}, {3});
  D runningVar = D::from_data({1.0, 2.0, 0.5}, {3});
  D weight = D::from_data({1.5, 0.5, -1.0}, {3});
  D bias = D::from_data({0.1, 0.2, 0.3}, {3});
  D out = nn::batch_norm(t, runningMean, runningVar, weight, bias,
                         /*training=*/true, /*momentum=*/0.2, 1e-5);
  std::vector<double> o = out.data();
  std::vector<double> rm0 = {0.5, -0.5, 0.0}, rv0 = {1.0, 2.0, 0.5};
  std::vector<double> w = {1.5, 0.5, -1.0}, b = {0.1, 0.2, 0.3};
  int64_t per = 4 * 10;
  for (int64_t c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t s = 0; s < 10; ++s)
        m += x[n * 30 + c * 10 + s];
    m /= per;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t s = 0; s < 10; ++s)
        v += std::pow(x[n * 30 + c * 10 + s] - m, 2);
    v /= per;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t s = 0; s < 10; ++s) {
        int64_t i = n * 30 + c * 10 + s;
        ASSERT_NEAR(o[i], (x[i] - m) / std::sqrt(v + 1e-5) * w[c] + b[c],
                    1e-10);
      }
    EXPECT_NEAR(runningMean.data()[c], 0.8 * rm0[c] + 0.2 * m, 1e-12);
    EXPECT_NEAR(runningVar.data()[c],
                0.8 * rv0[c] + 0.2 * v * per / (per - 1.0), 1e-12);
  }
  // Evaluation uses the running statistics.
  D eval = nn::batch_norm(t, runningMean, runningVar);
  std::vector<double> rm = runningMean.data(), rv = runningVar.data();
  std::vector<double> e = eval.data();
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t c = (i / 10) % 3;
    ASSERT_NEAR(e[i], (x[i] - rm[c]) / std::sqrt(rv[c] + 1e-5), 1e-10);
  }
}

TEST(NN, BatchNormStatisticsReadTheInputTheyWereComputedOn) {
  // The running statistics are written later (deferred writes), but from
  // the values the input had at the forward: new values set into the input
  // before the write is done do not reach them.
  Shape xs = {2, 2, 3};
  std::vector<double> first = randomValues(count(xs), 5);
  D x = D::input("x", xs);
  x.set_data(first);
  D runningMean = D::from_data({0.0, 0.0}, {2});
  D runningVar = D::from_data({1.0, 1.0}, {2});
  D out = nn::batch_norm(x, runningMean, runningVar, std::nullopt, std::nullopt,
                         /*training=*/true, /*momentum=*/1.0, 1e-5);
  x.set_data(randomValues(count(xs), 6));
  std::vector<double> rm = runningMean.data();
  for (int64_t c = 0; c < 2; ++c) {
    double m = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t s = 0; s < 3; ++s)
        m += first[n * 6 + c * 3 + s];
    EXPECT_NEAR(rm[c], m / 6, 1e-12) << "channel " << c;
  }
}

TEST(NN, LayerNormAndGroupNormMatchLoops) {
  Shape xs = {3, 4, 5};
  std::vector<double> x = randomValues(count(xs), 18);
  D t = D::from_data(x, xs);
  D w = randomTensor({4, 5}, 19), b = randomTensor({4, 5}, 20);
  std::vector<double> wv = w.data(), bv = b.data();
  D ln = nn::layer_norm(t, {4, 5}, w, b);
  // group_norm with 2 groups of 2 channels normalizes the same 10 values
  // per (sample, group) as layer_norm would over [2, 5].
  D gn = nn::group_norm(t, 2);
  std::vector<double> l = ln.data(), g = gn.data();
  for (int64_t n = 0; n < 3; ++n) {
    auto stats = [&](int64_t begin, int64_t size) {
      double m = 0, v = 0;
      for (int64_t i = 0; i < size; ++i)
        m += x[begin + i];
      m /= size;
      for (int64_t i = 0; i < size; ++i)
        v += std::pow(x[begin + i] - m, 2);
      return std::pair{m, v / size};
    };
    auto [m, v] = stats(n * 20, 20);
    for (int64_t i = 0; i < 20; ++i)
      ASSERT_NEAR(l[n * 20 + i],
                  (x[n * 20 + i] - m) / std::sqrt(v + 1e-5) * wv[i] + bv[i],
                  1e-10);
    for (int64_t grp = 0; grp < 2; ++grp) {
      auto [gm, gv] = stats(n * 20 + grp * 10, 10);
      for (int64_t i = 0; i < 10; ++i) {
        int64_t k = n * 20 + grp * 10 + i;
        ASSERT_NEAR(g[k], (x[k] - gm) / std::sqrt(gv + 1e-5), 1e-10);
      }
    }
  }
}

TEST(NN, DropoutSeedsAreRunTimeArguments) {
  F x = F::full({64, 33}, 2.0f);
  auto before = detail::compileCounts();
  std::vector<float> first = nn::dropout(x, 0.25, true, 1).data();
  auto afterFirst = detail::compileCounts();
  size_t zeros = 0;
  for (float v : first) {
    ASSERT_TRUE(v == 0.0f || std::fabs(v - 2.0f / 0.75f) < 1e-6) << v;
    zeros += v == 0.0f;
  }
  // 2112 draws at p = 0.25: 528 expected, sd 20.
  EXPECT_GT(zeros, 428u);
  EXPECT_LT(zeros, 628u);
  std::vector<float> again = nn::dropout(x, 0.25, true, 1).data();
  EXPECT_EQ(first, again);
  std::vector<float> other = nn::dropout(x, 0.25, true, 2).data();
  EXPECT_NE(first, other);
  auto after = detail::compileCounts();
  EXPECT_EQ(after.compilations + after.diskHits,
            afterFirst.compilations + afterFirst.diskHits)
      << "a new seed compiled anew";
  EXPECT_GT(afterFirst.compilations + afterFirst.diskHits +
                afterFirst.memoryHits,
            before.compilations + before.diskHits + before.memoryHits);
  EXPECT_EQ(nn::dropout(x, 0.25, false, 3).data(), x.data());
}

// Class indices and embedding rows out of range throw IndexError naming the
// op and the entry; ignore_index is not a class.
TEST(NN, TargetsAndRowsOutOfRangeThrow) {
  D weight = randomTensor({5, 3}, 21);
  auto rows = Tensor<int64_t>::from_data({4, 5}, {2});
  EXPECT_EQ(errorOf([&] { nn::embedding(rows, weight); }),
            "embedding: index 5 at [1] is out of range for a weight of 5 rows "
            "(valid: [0, 5))");
  EXPECT_THROW(nn::one_hot(rows, 5), IndexError);
  D logits = randomTensor({3, 4}, 5);
  auto target = Tensor<int64_t>::from_data({0, 4, 1}, {3});
  EXPECT_EQ(errorOf([&] { nn::nll_loss(logits, target); }),
            "nll_loss: target 4 at [1] is out of range for 4 classes "
            "(valid: [0, 4))");
  EXPECT_THROW(nn::cross_entropy(logits, target), IndexError);
  // -100 (ignore_index's default) is skipped, not a class.
  auto ignored = Tensor<int64_t>::from_data({0, -100, 3}, {3});
  D kept = nn::cross_entropy(logits, ignored);
  EXPECT_TRUE(std::isfinite(kept.item()));
}

TEST(NN, EmbeddingAndOneHot) {
  D weight = randomTensor({5, 3}, 21);
  std::vector<double> w = weight.data();
  auto idx = Tensor<int64_t>::from_data({4, 0, 2, 2, 1, 3}, {2, 3});
  D e = nn::embedding(idx, weight);
  ASSERT_EQ(e.shape(), (Shape{2, 3, 3}));
  std::vector<int64_t> ids = idx.data();
  std::vector<double> want;
  for (int64_t i : ids)
    for (int64_t d = 0; d < 3; ++d)
      want.push_back(w[i * 3 + d]);
  expectNear(e.data(), want);
  auto oh = nn::one_hot(idx, 5);
  ASSERT_EQ(oh.shape(), (Shape{2, 3, 5}));
  std::vector<int64_t> o = oh.data();
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < 5; ++c)
      ASSERT_EQ(o[i * 5 + c], c == ids[i] ? 1 : 0);
}

//===----------------------------------------------------------------------===//
// Losses and attention
//===----------------------------------------------------------------------===//

TEST(NN, CrossEntropyWithIgnoreIndexAndLabelSmoothing) {
  Shape xs = {5, 4};
  std::vector<double> x = randomValues(count(xs), 22, -3, 3);
  D logits = D::from_data(x, xs);
  auto target = Tensor<int64_t>::from_data({3, 0, -100, 1, 3}, {5});
  double eps = 0.1;
  D loss = nn::cross_entropy(logits, target,
                             nn::CrossEntropyOptions().label_smoothing(eps));
  double total = 0, kept = 0;
  std::vector<int64_t> t = target.data();
  for (int64_t n = 0; n < 5; ++n) {
    if (t[n] == -100)
      continue;
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < 4; ++c)
      mx = std::max(mx, x[n * 4 + c]);
    for (int64_t c = 0; c < 4; ++c)
      s += std::exp(x[n * 4 + c] - mx);
    double lse = mx + std::log(s), all = 0;
    for (int64_t c = 0; c < 4; ++c)
      all += lse - x[n * 4 + c];
    total += (1 - eps) * (lse - x[n * 4 + t[n]]) + eps / 4 * all;
    kept += 1;
  }
  EXPECT_NEAR(loss.item(), total / kept, 1e-12);
  // Probabilities: a one-hot target gives the plain loss of the kept rows.
  D probs = D::from_data({0, 0, 0, 1}, {1, 4});
  D plain = nn::cross_entropy(logits.slice(0, 0, 1), probs);
  D byIndex = nn::cross_entropy(logits.slice(0, 0, 1),
                                Tensor<int64_t>::from_data({3}, {1}));
  EXPECT_NEAR(plain.item(), byIndex.item(), 1e-12);
  // nll_loss of log_softmax is cross_entropy without smoothing.
  D nll = nn::nll_loss(logits.softmax(1).ln(), target);
  D ce = nn::cross_entropy(logits, target);
  EXPECT_NEAR(nll.item(), ce.item(), 1e-12);
}

TEST(NN, RegressionAndBinaryLosses) {
  std::vector<double> p = {0.1, 0.7, 0.999, 0.3}, y = {0, 1, 1, 0.5};
  D input = D::from_data(p, {2, 2}), target = D::from_data(y, {2, 2});
  double mse = 0, l1 = 0, bce = 0, logits = 0;
  for (int i = 0; i < 4; ++i) {
    mse += std::pow(p[i] - y[i], 2);
    l1 += std::fabs(p[i] - y[i]);
    bce -= y[i] * std::log(p[i]) + (1 - y[i]) * std::log(1 - p[i]);
    double s = 1 / (1 + std::exp(-p[i]));
    logits -= y[i] * std::log(s) + (1 - y[i]) * std::log(1 - s);
  }
  EXPECT_NEAR(nn::mse_loss(input, target).item(), mse / 4, 1e-12);
  EXPECT_NEAR(nn::l1_loss(input, target, nn::Reduction::Sum).item(), l1, 1e-12);
  EXPECT_NEAR(nn::binary_cross_entropy(input, target).item(), bce / 4, 1e-12);
  EXPECT_NEAR(nn::binary_cross_entropy_with_logits(input, target).item(),
              logits / 4, 1e-12);
  EXPECT_EQ(nn::mse_loss(input, target, nn::Reduction::None).shape(),
            (Shape{2, 2}));
}

TEST(NN, CausalAttentionMatchesLoops) {
  int64_t L = 5, E = 3;
  std::vector<double> q = randomValues(L * E, 23), k = randomValues(L * E, 24),
                      v = randomValues(L * 2, 25);
  D out = nn::scaled_dot_product_attention(
      D::from_data(q, {1, L, E}), D::from_data(k, {1, L, E}),
      D::from_data(v, {1, L, 2}), std::nullopt, /*causal=*/true);
  std::vector<double> want;
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> s;
    double mx = -INFINITY, z = 0;
    for (int64_t j = 0; j <= i; ++j) {
      double d = 0;
      for (int64_t e = 0; e < E; ++e)
        d += q[i * E + e] * k[j * E + e];
      s.push_back(d / std::sqrt(double(E)));
      mx = std::max(mx, s.back());
    }
    for (double &x : s)
      z += (x = std::exp(x - mx));
    for (int64_t c = 0; c < 2; ++c) {
      double acc = 0;
      for (int64_t j = 0; j <= i; ++j)
        acc += s[j] / z * v[j * 2 + c];
      want.push_back(acc);
    }
  }
  expectNear(out.data(), want);
}

//===----------------------------------------------------------------------===//
// Gradients against central differences
//===----------------------------------------------------------------------===//

TEST(NN, GradientsMatchFiniteDifferences) {
  D x = randomTensor({2, 4, 6, 5}, 30), w = randomTensor({6, 2, 3, 2}, 31);
  auto conv = [&] {
    return weightedSum(
        nn::conv(x, w, std::nullopt,
                 nn::ConvOptions().stride({2, 1}).padding({1, 1}).groups(2)));
  };
  checkGradient(x, conv);
  checkGradient(w, conv);
  D wt = randomTensor({4, 3, 3, 2}, 32);
  checkGradient(wt, [&] {
    return weightedSum(nn::conv_transpose(
        x, wt, std::nullopt,
        nn::ConvTransposeOptions().stride({2, 1}).padding({1, 0})));
  });
  checkGradient(x, [&] {
    return weightedSum(nn::avg_pool(
        x, nn::PoolOptions({3}).stride({2}).padding({1}).ceil_mode(true)));
  });
  checkGradient(x, [&] {
    return weightedSum(nn::max_pool(x, nn::PoolOptions({2, 3})));
  });
  D gamma = randomTensor({6, 5}, 33);
  checkGradient(x, [&] {
    return weightedSum(nn::layer_norm(x, {6, 5}, gamma));
  });
  checkGradient(x, [&] { return weightedSum(nn::group_norm(x, 2)); });
  checkGradient(x, [&] {
    return weightedSum(nn::batch_norm(x, std::nullopt, std::nullopt,
                                      std::nullopt, std::nullopt, true));
  });
  D logits = randomTensor({7, 5}, 34);
  auto target = Tensor<int64_t>::from_data({0, 4, 2, 2, -100, 1, 3}, {7});
  checkGradient(logits, [&] {
    return nn::cross_entropy(logits, target,
                             nn::CrossEntropyOptions().label_smoothing(0.2));
  });
  D q = randomTensor({2, 4, 3}, 35), k = randomTensor({2, 6, 3}, 36),
    v = randomTensor({2, 6, 2}, 37);
  auto keep = Tensor<bool>::from_data(
      {1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
      {4, 6});
  auto attention = [&] {
    return weightedSum(nn::scaled_dot_product_attention(q, k, v, keep));
  };
  checkGradient(q, attention);
  checkGradient(k, attention);
  checkGradient(v, attention);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(NN, MisuseNamesTheLayerAndTheShapes) {
  D x = randomTensor({2, 3, 5, 5}, 40);
  EXPECT_NE(errorOf([&] {
              nn::conv(x, randomTensor({4, 2, 3, 3}, 41));
            })
                .find("conv: input [2, 3, 5, 5] has 3 channels but weight "
                      "[4, 2, 3, 3] with groups=1 expects 2"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::conv(x, randomTensor({4, 3, 3, 3}, 41), std::nullopt,
                       nn::ConvOptions().groups(2));
            }).find("groups=2 must divide"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::max_pool(x, nn::PoolOptions({7}));
            }).find("max_pool: input [2, 3, 5, 5] is smaller than the window"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::linear(x, randomTensor({4, 3}, 42));
            }).find("linear: input [2, 3, 5, 5] and weight [4, 3] do not"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::layer_norm(x, {4, 5});
            }).find("layer_norm: normalized_shape [4, 5] does not end input"),
            std::string::npos);
  EXPECT_NE(
      errorOf([&] {
        nn::cross_entropy(randomTensor({3, 4}, 43),
                          Tensor<int64_t>::from_data({1, 2}, {2}));
      }).find("cross_entropy: input [3, 4] must be [N, C, ...] and target"),
      std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::dropout(x, 1.5, true, 0);
            }).find("dropout: p must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::col2im(randomTensor({1, 7, 4}, 44), {3, 3}, {2});
            }).find("col2im: columns must be [N, C * 4, L]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              nn::batch_norm(x, std::nullopt, std::nullopt);
            }).find("batch_norm: evaluation needs running_mean"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

namespace {

/// Loss sum(c * p^2 + d * p) with gradient 2 c p + d, a fixed quadratic per
/// element: the reference update loops below use the same gradient.
struct Quadratic {
  std::vector<double> c = randomValues(7, 50, 0.5, 2.0),
                      d = randomValues(7, 51, -1.0, 1.0);
  D loss(const D &p) const {
    return (D::from_data(c, {7}) * p * p + D::from_data(d, {7}) * p).sum();
  }
  double grad(size_t i, double p) const { return 2 * c[i] * p + d[i]; }
};

template <typename Update>
void checkOptimizer(optim::Optimizer &opt, D &p, std::vector<double> ref,
                    const Quadratic &q, Update reference) {
  for (int step = 1; step <= 100; ++step) {
    opt.zero_grad();
    q.loss(p).backward();
    opt.step();
    for (size_t i = 0; i < ref.size(); ++i)
      reference(i, ref[i], q.grad(i, ref[i]), step);
  }
  expectNear(p.data(), ref, 1e-9);
}

} // namespace

TEST(Optim, SGDWithMomentumNesterovAndWeightDecay) {
  Quadratic q;
  std::vector<double> start = randomValues(7, 52);
  D p = D::from_data(start, {7});
  p.set_requires_grad(true);
  optim::SGD opt(
      {p},
      optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01));
  std::vector<double> buf(7, 0.0);
  checkOptimizer(opt, p, start, q, [&](size_t i, double &w, double g, int t) {
    g += 0.01 * w;
    buf[i] = t == 1 ? g : 0.9 * buf[i] + g;
    w -= 0.05 * (g + 0.9 * buf[i]);
  });
}

TEST(Optim, AdamAndAdamWAndAmsgradFollowTheirRules) {
  for (int variant = 0; variant < 3; ++variant) {
    Quadratic q;
    std::vector<double> start = randomValues(7, 53);
    D p = D::from_data(start, {7});
    p.set_requires_grad(true);
    double lr = 0.02, b1 = 0.8, b2 = 0.99, eps = 1e-6, wd = 0.05;
    auto options =
        optim::AdamOptions(lr).betas(b1, b2).eps(eps).weight_decay(wd);
    bool amsgrad = variant == 2, decoupled = variant == 1;
    std::unique_ptr<optim::Optimizer> opt;
    if (decoupled)
      opt =
          std::make_unique<optim::AdamW>(std::vector<optim::Param>{p}, options);
    else
      opt = std::make_unique<optim::Adam>(std::vector<optim::Param>{p},
                                          options.amsgrad(amsgrad));
    std::vector<double> m(7, 0), v(7, 0), vmax(7, 0);
    checkOptimizer(
        *opt, p, start, q, [&](size_t i, double &w, double g, int t) {
          if (decoupled)
            w *= 1 - lr * wd;
          else
            g += wd * w;
          m[i] = b1 * m[i] + (1 - b1) * g;
          v[i] = b2 * v[i] + (1 - b2) * g * g;
          double vv = v[i];
          if (amsgrad)
            vv = vmax[i] = std::max(vmax[i], v[i]);
          double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
          w -= lr / c1 * m[i] / (std::sqrt(vv) / std::sqrt(c2) + eps);
        });
  }
}

TEST(Optim, UpdatesCompileOnceAndSchedulersSetTheRate) {
  Quadratic q;
  D p = randomTensor({7}, 54);
  p.set_requires_grad(true);
  optim::Adam opt({p}, optim::AdamOptions(0.1));
  optim::CosineAnnealingLR schedule(opt, 50, 0.001);
  auto run = [&] {
    opt.zero_grad();
    q.loss(p).backward();
    opt.step();
    schedule.step();
  };
  run();
  run();
  auto before = detail::compileCounts();
  for (int i = 0; i < 20; ++i)
    run();
  auto after = detail::compileCounts();
  EXPECT_EQ(after.compilations + after.diskHits,
            before.compilations + before.diskHits)
      << "the learning rate or the step count compiled anew";
  EXPECT_NEAR(opt.lr(),
              0.001 + (0.1 - 0.001) * (1 + std::cos(M_PI * 22 / 50)) / 2,
              1e-15);
  optim::SGD sgd({p}, optim::SGDOptions(1.0));
  optim::StepLR step(sgd, 3, 0.5);
  for (int i = 0; i < 7; ++i)
    step.step();
  EXPECT_DOUBLE_EQ(sgd.lr(), 0.25);
}

TEST(Optim, AStepKeepsTheValuesOfGraphsBuiltBeforeIt) {
  // As torch: the loss read after the step is the loss before it, and a
  // loss built after the step sees the new parameters.
  D p = D::from_data({1.0, 2.0}, {2});
  p.set_requires_grad(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  D loss = (p * p).sum();
  loss.backward();
  D pending = p * 3.0; // built before the step, realized after it
  opt.step();
  EXPECT_DOUBLE_EQ(loss.item(), 5.0);
  expectNear(pending.data(), {3.0, 6.0}, 0);
  expectNear(p.data(), {0.8, 1.6}, 1e-15);
  EXPECT_NEAR((p * p).sum().item(), 3.2, 1e-12);
  // A gradient of the old graph would belong to values p no longer holds.
  EXPECT_NE(errorOf([&] { loss.backward(); })
                .find("written in place (copy_, an optimizer step) after "
                      "this graph was built"),
            std::string::npos);
}

TEST(Optim, MisuseIsAnError) {
  D frozen = randomTensor({3}, 55);
  EXPECT_NE(errorOf([&] { optim::SGD({frozen}, optim::SGDOptions(0.1)); })
                .find("SGD: a parameter of shape [3] does not require a "
                      "gradient"),
            std::string::npos);
  frozen.set_requires_grad(true);
  EXPECT_NE(errorOf([&] {
              optim::Adam({frozen}, optim::AdamOptions().betas(1.0, 0.9));
            }).find("Adam: betas must be in [0, 1)"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              optim::SGD({frozen}, optim::SGDOptions(0.1).nesterov(true));
            }).find("nesterov needs momentum > 0"),
            std::string::npos);
}

TEST(NN, Float32AgreesWithFloat64OnOddShapes) {
  // Rows of 1, a prime and width +- 1 for every vector width.
  for (int64_t w : {1, 7, 15, 17, 33}) {
    D x = randomTensor({2, 3, 5, w}, 60), k = randomTensor({4, 3, 3, 1}, 61);
    F xf = x.cast<float>(), kf = k.cast<float>();
    auto close = [](const F &f, const D &d) {
      std::vector<float> a = f.data();
      std::vector<double> b = d.data();
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i]))) << "at " << i;
    };
    auto opts = nn::ConvOptions().padding({1, 0});
    close(nn::conv(xf, kf, std::nullopt, opts),
          nn::conv(x, k, std::nullopt, opts));
    auto pool = nn::PoolOptions({2, 1}).padding({1, 0}).ceil_mode(true);
    close(nn::max_pool(xf, pool), nn::max_pool(x, pool));
    close(nn::avg_pool(xf, pool), nn::avg_pool(x, pool));
    close(nn::layer_norm(xf, {w}), nn::layer_norm(x, {w}));
    auto target = Tensor<int64_t>::full({2, 5, w}, 1);
    close(nn::cross_entropy(xf, target), nn::cross_entropy(x, target));
  }
}

TEST(NN, TrainsASmallConvNetWithAdam) {
  // Two classes of 6x6 images: a bright left or right half, with noise.
  std::vector<float> images;
  std::vector<int64_t> labels;
  std::mt19937 gen(70);
  std::normal_distribution<float> noise(0.f, 0.3f);
  for (int n = 0; n < 16; ++n) {
    labels.push_back(n % 2);
    for (int i = 0; i < 36; ++i)
      images.push_back(float((i % 6 < 3) == (n % 2 == 0)) + noise(gen));
  }
  auto x = F::from_data(images, {16, 1, 6, 6});
  auto y = Tensor<int64_t>::from_data(labels, {16});
  std::vector<double> init = randomValues(4 * 9, 71, -0.3, 0.3);
  F w =
      F::from_data(std::vector<float>(init.begin(), init.end()), {4, 1, 3, 3});
  F head =
      F::from_data({0.1f, -0.2f, 0.3f, 0.0f, -0.1f, 0.2f, 0.1f, -0.3f}, {2, 4});
  w.set_requires_grad();
  head.set_requires_grad();
  optim::Adam opt({w, head}, optim::AdamOptions(0.05));
  optim::StepLR schedule(opt, 20, 0.5);
  std::vector<float> losses;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    F h = nn::conv(x, w, std::nullopt, nn::ConvOptions().padding({1}));
    F pooled =
        nn::global_avg_pool(nn::max_pool(h.relu(), nn::PoolOptions({2})));
    F loss = nn::cross_entropy(nn::linear(pooled.reshape({16, 4}), head), y);
    loss.backward();
    losses.push_back(loss.item());
    opt.step();
    schedule.step();
  }
  EXPECT_LT(losses.back(), 0.2f * losses.front())
      << "first " << losses.front() << ", last " << losses.back();
}

TEST(NN, MaxPoolIndicesPointAtEachWindowsFirstMaximum) {
  Shape xs = {2, 2, 7, 6};
  std::vector<double> x = randomValues(count(xs), 80);
  x[5] = x[4]; // a tie: the first in the window wins
  D t = D::from_data(x, xs);
  auto opts =
      nn::PoolOptions({3, 2}).stride({2, 2}).padding({1, 1}).dilation({1, 2});
  auto [values, indices] = nn::max_pool_with_indices(t, opts);
  ASSERT_EQ(indices.shape(), values.shape());
  std::vector<double> v = values.data();
  std::vector<int64_t> idx = indices.data();
  Shape os = values.shape();
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t i = 0; i < os[2]; ++i)
      for (int64_t j = 0; j < os[3]; ++j) {
        double best = -INFINITY;
        int64_t where = -1;
        for (int64_t p = 0; p < 3; ++p)
          for (int64_t q = 0; q < 2; ++q) {
            int64_t y = i * 2 - 1 + p, z = j * 2 - 1 + 2 * q;
            if (y < 0 || z < 0 || y >= 7 || z >= 6)
              continue;
            if (x[b * 42 + y * 6 + z] > best)
              best = x[b * 42 + y * 6 + z], where = y * 6 + z;
          }
        int64_t o = (b * os[2] + i) * os[3] + j;
        ASSERT_EQ(idx[o], where) << "window " << o;
        ASSERT_EQ(v[o], best);
      }
}

TEST(NN, TakesTensorsOfStaticRank) {
  // Tensor<T, Dim<N>> arguments convert to the layers' Tensor<T>.
  auto x = Tensor<double, Dim<2>>::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  auto w = Tensor<double, Dim<2>>::from_data({1, 0, -1, 2, 1, 0}, {2, 3});
  auto b = Tensor<double, Dim<1>>::from_data({0.5, -0.5}, {2});
  D y = nn::linear(x, w, b);
  expectNear(y.data(), {-1.5, 3.5, -1.5, 12.5});
  Tensor<double> dynamic = x;
  EXPECT_EQ(dynamic.shape(), (Shape{2, 3}));
  EXPECT_NEAR(nn::mse_loss(x, Tensor<double, Dim<2>>::zeros({2, 3})).item(),
              91.0 / 6, 1e-12);
}
