//===- CompositeTest.cpp - the Tensor API's composed ops ------------------===//
//
// stack/split/chunk/unbind, index_select, take_along_dim, repeat(_interleave),
// tril/triu, roll, broadcast_to, cumsum/cumprod, norm/normalize, randn,
// dot/outer and adaptive_max_pool: each against a loop over its definition
// on odd sizes, each gradient against central differences, and the errors.
//
//===----------------------------------------------------------------------===//

#include "harp/API/NN.h"

#include "TestUtil.h"

#include <cmath>

using namespace harp;
using namespace harp::test;
using D = Tensor<double>;
using Shape = std::vector<int64_t>;

namespace {

/// The values of `x` [a, b, c] as a function of (i, j, k).
std::vector<double> tabulate(const Shape &s,
                             const std::function<double(Shape)> &f) {
  std::vector<double> out;
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k)
        out.push_back(f({i, j, k}));
  return out;
}

const Shape xs = {3, 5, 4};

} // namespace

TEST(Composite, StackSplitChunkUnbind) {
  D x = randomTensor(xs, 1), y = randomTensor(xs, 2);
  std::vector<double> xv = x.data(), yv = y.data();
  D s = stack(std::vector<D>{x, y}, 1);
  EXPECT_EQ(s.shape(), (Shape{3, 2, 5, 4}));
  std::vector<double> sv = s.data();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t l = 0; l < 4; ++l)
          ASSERT_EQ(sv[at({3, 2, 5, 4}, {i, k, j, l})],
                    (k ? yv : xv)[at(xs, {i, j, l})]);
  EXPECT_EQ(stack(std::vector<D>{x}, -1).shape(), (Shape{3, 5, 4, 1}));

  auto expectPieces = [&](const std::vector<D> &pieces, const Shape &sizes) {
    ASSERT_EQ(pieces.size(), sizes.size());
    int64_t start = 0;
    for (size_t p = 0; p < sizes.size(); ++p) {
      Shape ps = {3, sizes[p], 4};
      EXPECT_EQ(pieces[p].shape(), ps);
      expectNear(pieces[p].data(), tabulate(ps, [&](Shape i) {
                   return xv[at(xs, {i[0], start + i[1], i[2]})];
                 }));
      start += sizes[p];
    }
  };
  expectPieces(x.split(2, 1), {2, 2, 1});
  expectPieces(x.split(Shape{1, 4}, -2), {1, 4});
  expectPieces(x.split(Shape{0, 5, 0}, 1), {0, 5, 0});
  expectPieces(x.chunk(3, 1), {2, 2, 1});
  expectPieces(x.chunk(9, 1), {1, 1, 1, 1, 1});

  std::vector<Tensor<double>> rows = x.unbind(2);
  ASSERT_EQ(rows.size(), 4u);
  for (int64_t l = 0; l < 4; ++l) {
    EXPECT_EQ(rows[l].shape(), (Shape{3, 5}));
    std::vector<double> rv = rows[l].data();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j)
        ASSERT_EQ(rv[i * 5 + j], xv[at(xs, {i, j, l})]);
  }

  // Reassembled in another order, each piece's gradient finds its place.
  checkGradient(x, [&] {
    std::vector<D> pieces = x.split(2, 1), parts = x.unbind(0);
    return weightedSum(stack(std::vector<D>{parts[2], parts[0]}, 1)) +
           weightedSum(pieces[2], 7) * 3.0;
  });

  EXPECT_EQ(errorOf([&] {
              stack(std::vector<D>{x, x.slice(0, 0, 2)}, 0);
            }),
            "stack: tensor 1 has shape [2, 5, 4] but tensor 0 has [3, 5, 4]");
  EXPECT_EQ(errorOf([&] { stack(std::vector<D>{}, 0); }),
            "stack: needs at least one tensor");
  EXPECT_EQ(errorOf([&] {
              x.split(Shape{2, 2}, 1);
            }),
            "split: sections [2, 2] do not add up to dim 1 of size 5");
  EXPECT_EQ(errorOf([&] { x.split(0, 1); }),
            "split: split_size must be positive, got 0");
  EXPECT_EQ(errorOf([&] { x.chunk(0); }),
            "chunk: chunks must be positive, got 0");
  EXPECT_NE(errorOf([&] { x.unbind(3); }).find("unbind"), std::string::npos);
}

TEST(Composite, IndexSelectAndTakeAlongDim) {
  D x = randomTensor(xs, 3);
  std::vector<double> xv = x.data();
  auto index = Tensor<int64_t>::from_data({4, 0, 4, 2}, {4});
  D picked = x.index_select(1, index);
  EXPECT_EQ(picked.shape(), (Shape{3, 4, 4}));
  std::vector<int64_t> iv = {4, 0, 4, 2};
  expectNear(picked.data(), tabulate({3, 4, 4}, [&](Shape i) {
               return xv[at(xs, {i[0], iv[i[1]], i[2]})];
             }));
  // Row 4 is picked twice: its gradient adds up.
  checkGradient(x, [&] { return weightedSum(x.index_select(1, index)); });

  // Indices [3, 2, 1] broadcast against x [3, 5, 4] except along dim 1.
  auto idx = Tensor<int32_t>::from_data({1, 4, 0, 0, 3, 3}, {3, 2, 1});
  D taken = x.take_along_dim(idx, 1);
  EXPECT_EQ(taken.shape(), (Shape{3, 2, 4}));
  std::vector<int32_t> tv = idx.data();
  expectNear(taken.data(), tabulate({3, 2, 4}, [&](Shape i) {
               return xv[at(xs, {i[0], tv[i[0] * 2 + i[1]], i[2]})];
             }));
  auto flat = Tensor<int64_t>::from_data({59, 0, 17}, {3});
  expectNear(x.take_along_dim(flat).data(), {xv[59], xv[0], xv[17]});
  checkGradient(x, [&] { return weightedSum(x.take_along_dim(idx, 1)); });

  auto floats = D::from_data({0.0}, {1});
  EXPECT_EQ(errorOf([&] { x.index_select(1, floats); }),
            "index_select: the index must be int32 or int64, got f64");
  auto square = Tensor<int64_t>::from_data({0, 1, 2, 3}, {2, 2});
  EXPECT_EQ(errorOf([&] { x.index_select(1, square); }),
            "index_select: the index must be 1-D, got shape [2, 2]");
  auto wide = Tensor<int64_t>::from_data(std::vector<int64_t>(6, 0), {2, 1, 3});
  EXPECT_EQ(errorOf([&] { x.take_along_dim(wide, 1); }),
            "take_along_dim: input [3, 5, 4] and indices [2, 1, 3] do not "
            "broadcast in dim 0");
}

TEST(Composite, RepeatAndRepeatInterleave) {
  D x = randomTensor({2, 3}, 4);
  std::vector<double> xv = x.data();
  D tiled = x.repeat({2, 3, 2});
  EXPECT_EQ(tiled.shape(), (Shape{2, 6, 6}));
  expectNear(tiled.data(), tabulate({2, 6, 6}, [&](Shape i) {
               return xv[at({2, 3}, {i[1] % 2, i[2] % 3})];
             }));
  checkGradient(x, [&] { return weightedSum(x.repeat({2, 3, 2})); });

  D inter = x.repeat_interleave(3, 1);
  EXPECT_EQ(inter.shape(), (Shape{2, 9}));
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 9; ++j)
      want.push_back(xv[i * 3 + j / 3]);
  expectNear(inter.data(), want);
  Shape counts = {2, 0, 3};
  D perElement = x.repeat_interleave(counts, 1);
  EXPECT_EQ(perElement.shape(), (Shape{2, 5}));
  expectNear(perElement.data(), {xv[0], xv[0], xv[2], xv[2], xv[2], xv[3],
                                 xv[3], xv[5], xv[5], xv[5]});
  D flat = x.repeat_interleave(2);
  EXPECT_EQ(flat.shape(), (Shape{12}));
  EXPECT_EQ(flat.data()[7], xv[3]);
  checkGradient(x, [&] { return weightedSum(x.repeat_interleave(counts, 1)); });

  EXPECT_EQ(errorOf([&] { x.repeat({2}); }),
            "repeat: needs at least 2 non-negative sizes for shape [2, 3], "
            "got [2]");
  EXPECT_EQ(errorOf([&] {
              x.repeat_interleave(Shape{1, 2}, 1);
            }),
            "repeat_interleave: needs 3 non-negative repeats for dim 1, got "
            "[1, 2]");
  EXPECT_EQ(errorOf([&] { x.repeat_interleave(-1, 0); }),
            "repeat_interleave: repeats must be non-negative, got -1");
}

TEST(Composite, TrilTriuRoll) {
  D x = randomTensor(xs, 5);
  std::vector<double> xv = x.data();
  for (int64_t diagonal : {-2, -1, 0, 1, 3}) {
    expectNear(x.tril(diagonal).data(), tabulate(xs, [&](Shape i) {
                 return i[2] - i[1] <= diagonal ? xv[at(xs, i)] : 0.0;
               }));
    expectNear(x.triu(diagonal).data(), tabulate(xs, [&](Shape i) {
                 return i[2] - i[1] >= diagonal ? xv[at(xs, i)] : 0.0;
               }));
  }
  checkGradient(x, [&] { return weightedSum(x.triu(1)); });
  EXPECT_EQ(errorOf([&] {
              D::from_data({1, 2}, {2}).tril();
            }),
            "tril: needs a tensor of rank >= 2, got shape [2]");

  expectNear(x.roll({2, -1}, {1, 2}).data(), tabulate(xs, [&](Shape i) {
               return xv[at(xs, {i[0], (i[1] + 5 - 2) % 5, (i[2] + 1) % 4})];
             }));
  std::vector<double> flat = x.roll({7}).data();
  for (int64_t i = 0; i < 60; ++i)
    ASSERT_EQ(flat[i], xv[(i + 60 - 7) % 60]);
  expectNear(x.roll({-12}, {1}).data(), x.roll({3}, {1}).data());
  checkGradient(x, [&] { return weightedSum(x.roll({2, -1}, {1, 2})); });
  EXPECT_EQ(errorOf([&] { x.roll({1, 2}, {0}); }), "roll: 2 shifts for 1 dims");
  EXPECT_EQ(errorOf([&] {
              x.roll({1, 2});
            }),
            "roll: without dims, shifts must be one number, got [1, 2]");

  D column = x.slice(1, 0, 1);
  D wide = column.broadcast_to({2, 3, 5, -1});
  EXPECT_EQ(wide.shape(), (Shape{2, 3, 5, 4}));
  EXPECT_EQ(wide.data()[at({2, 3, 5, 4}, {1, 2, 3, 1})], xv[at(xs, {2, 0, 1})]);
  EXPECT_EQ(errorOf([&] {
              x.broadcast_to({3, 6, 4});
            }),
            "broadcast_to: cannot broadcast [3, 5, 4] to [3, 6, 4] (dim 1)");
  EXPECT_EQ(errorOf([&] {
              x.broadcast_to({-1, 3, 5, 4});
            }),
            "broadcast_to: cannot broadcast [3, 5, 4] to [-1, 3, 5, 4] (new "
            "dim 0 needs a size; -1 keeps an existing dim)");
}

TEST(Composite, CumsumCumprodAtEveryLength) {
  // Lengths around powers of two: the scan takes ceil(log2 n) steps.
  for (int64_t n : {1, 2, 5, 8, 17}) {
    D x = D::from_data(randomValues(3 * n, 6, 0.5, 1.5), {3, n});
    std::vector<double> xv = x.data(), sums, products;
    for (int64_t i = 0; i < 3; ++i) {
      double s = 0, p = 1;
      for (int64_t j = 0; j < n; ++j) {
        sums.push_back(s += xv[i * n + j]);
        products.push_back(p *= xv[i * n + j]);
      }
    }
    expectNear(x.cumsum(1).data(), sums);
    expectNear(x.cumprod(-1).data(), products);
    checkGradient(x, [&] { return weightedSum(x.cumprod(1)); });
  }
  auto ints = Tensor<int64_t>::from_data({1, 2, 3, 4, 5}, {5});
  EXPECT_EQ(ints.cumsum(0).data(), (std::vector<int64_t>{1, 3, 6, 10, 15}));
  EXPECT_EQ(ints.cumprod(0).data(), (std::vector<int64_t>{1, 2, 6, 24, 120}));
  EXPECT_NE(errorOf([&] { ints.cumsum(1); }).find("cumsum"), std::string::npos);
}

TEST(Composite, NormNormalizeWithZeroRows) {
  std::vector<double> values = randomValues(15, 7);
  for (int64_t j = 0; j < 5; ++j)
    values[5 + j] = 0; // row 1 is zero
  values[1] = 0;       // and one element of row 0
  D x = D::from_data(values, {3, 5});
  const double inf = INFINITY;
  // Negative p as torch: a zero entry's term is infinite, its norm 0.
  for (double p : {2.0, 1.0, 3.0, 0.5, inf, -inf, 0.0, -1.0, -0.5}) {
    std::vector<double> want;
    for (int64_t i = 0; i < 3; ++i) {
      double acc = std::isinf(p) ? (p > 0 ? 0 : INFINITY) : 0;
      for (int64_t j = 0; j < 5; ++j) {
        double a = std::abs(values[i * 5 + j]);
        if (std::isinf(p))
          acc = p > 0 ? std::max(acc, a) : std::min(acc, a);
        else
          acc += p == 0 ? (a != 0) : std::pow(a, p);
      }
      want.push_back(std::isinf(p) || p == 0 ? acc : std::pow(acc, 1 / p));
    }
    expectNear(x.norm(p, {1}).data(), want, 1e-12);
  }
  // The zero row and the zero element have gradient 0, as in torch.
  for (double p : {2.0, 3.0, 0.5}) {
    D leaf = D::from_data(values, {3, 5});
    leaf.set_requires_grad();
    leaf.norm(p, {1}).sum().backward();
    std::vector<double> g = leaf.grad().data();
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_EQ(g[5 + j], 0.0) << "p = " << p;
    EXPECT_EQ(g[1], 0.0) << "p = " << p;
    for (double v : g)
      EXPECT_TRUE(std::isfinite(v)) << "p = " << p;
  }
  D y = randomTensor({3, 5}, 8);
  checkGradient(y, [&] { return weightedSum(y.norm(3.0, {0}, true)); });

  D unit = nn::normalize(x, 2.0, 1);
  std::vector<double> uv = unit.data();
  double first = 0;
  for (int64_t j = 0; j < 5; ++j)
    first += uv[j] * uv[j];
  EXPECT_NEAR(first, 1.0, 1e-12);
  for (int64_t j = 0; j < 5; ++j)
    EXPECT_EQ(uv[5 + j], 0.0); // x / max(0, eps)
  checkGradient(y, [&] { return weightedSum(nn::normalize(y, 2.0, 1)); });
  EXPECT_EQ(errorOf([&] { x.norm(std::nan("")); }),
            "norm: p must be a number, inf or -inf, got nan");
}

TEST(Composite, RandnDotOuter) {
  const int64_t n = 40000;
  std::vector<double> v = D::randn({n}, 11).data();
  double mean = 0, square = 0;
  for (double s : v) {
    mean += s / n;
    square += s * s / n;
  }
  // Standard errors: 1/sqrt(n) = 0.005 for the mean, about 0.007 for E[x^2].
  EXPECT_NEAR(mean, 0.0, 0.025);
  EXPECT_NEAR(square, 1.0, 0.035);
  double beyond2 = 0;
  for (double s : v)
    beyond2 += std::abs(s) > 2 ? 1.0 / n : 0;
  EXPECT_NEAR(beyond2, 0.0455, 0.006); // P(|z| > 2)
  EXPECT_EQ(D::randn({5}, 11).data(), D::randn({5}, 11).data());
  EXPECT_NE(D::randn({5}, 11).data(), D::randn({5}, 12).data());
  EXPECT_EQ(Tensor<float>::randn({2, 3}, 1).shape(), (Shape{2, 3}));

  D a = D::from_data({1, 2, 3}, {3}), b = D::from_data({4, -5, 6}, {3});
  EXPECT_EQ(dot(a, b).item(), 12.0);
  expectNear(outer(a, b.slice(0, 0, 2)).data(), {4, -5, 8, -10, 12, -15});
  EXPECT_EQ(errorOf([&] { dot(a, b.slice(0, 0, 2)); }),
            "dot: lengths differ: 3 and 2");
  EXPECT_EQ(errorOf([&] {
              outer(a, b.reshape({3, 1}));
            }),
            "outer: needs two 1-D tensors, got shapes [3] and [3, 1]");
  EXPECT_EQ(D::zeros({2}).ones_like().data(), (std::vector<double>{1, 1}));
  EXPECT_EQ(a.full_like(7).data(), (std::vector<double>{7, 7, 7}));
}

TEST(Composite, AdaptiveMaxPool) {
  Shape s = {2, 3, 7, 5};
  D x = randomTensor(s, 9);
  std::vector<double> xv = x.data();
  D out = nn::adaptive_max_pool(x, {3, 2});
  EXPECT_EQ(out.shape(), (Shape{2, 3, 3, 2}));
  std::vector<double> want;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          double m = -INFINITY;
          for (int64_t y = i * 7 / 3; y < ((i + 1) * 7 + 2) / 3; ++y)
            for (int64_t z = j * 5 / 2; z < ((j + 1) * 5 + 1) / 2; ++z)
              m = std::max(m, xv[at(s, {b, c, y, z})]);
          want.push_back(m);
        }
  expectNear(out.data(), want);
  checkGradient(x, [&] {
    return weightedSum(nn::adaptive_max_pool(x, {3, 2}));
  });
  EXPECT_EQ(nn::adaptive_max_pool(x, {1}).shape(), (Shape{2, 3, 1, 1}));
  EXPECT_NE(errorOf([&] {
              nn::adaptive_max_pool(x, {0, 2});
            }).find("adaptive_max_pool: output size must be positive"),
            std::string::npos);
}
