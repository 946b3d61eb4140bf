//===- TensorTest.cpp - the C++ Tensor API --------------------------------===//

#include "harp/API/Tensor.h"
#include "harp/Runtime/Profile.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace harp;
using namespace harp::test;

namespace {

using F2 = Tensor<float, Dim<2>>;
using F1 = Tensor<float, Dim<1>>;

TEST(Tensor, BroadcastArithmetic) {
  F2 a = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  F2 b = F2::from_data({10, 20, 30}, {1, 3});
  expectNear((a + b).data(), {11, 22, 33, 14, 25, 36});
  expectNear((a * b - a).data(), {9, 38, 87, 36, 95, 174});
  expectNear((a / 2.0f).data(), {0.5, 1, 1.5, 2, 2.5, 3});
  expectNear((-a).relu().data(), {0, 0, 0, 0, 0, 0});
  expectNear(a.maximum(F2::full({2, 1}, 3.5f)).data(),
             {3.5, 3.5, 3.5, 4, 5, 6});
}

TEST(Tensor, UnaryFunctions) {
  F1 x = F1::from_data({-1.0f, 0.5f, 2.0f}, {3});
  std::vector<float> v = x.data(), e, t, s, sg;
  for (float f : v) {
    e.push_back(std::exp(f));
    t.push_back(std::tanh(f));
    s.push_back(std::sin(f));
    sg.push_back(1 / (1 + std::exp(-f)));
  }
  expectNear(x.exp().data(), e);
  expectNear(x.tanh().data(), t);
  expectNear(x.sin().data(), s);
  expectNear(x.sigmoid().data(), sg);
  expectNear(x.abs().sqrt().data(), {1, std::sqrt(0.5f), std::sqrt(2.0f)});
}

TEST(Tensor, Reductions) {
  F2 a = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor<float, Dim<1>> rows = a.sum(1);
  expectNear(rows.data(), {6, 15});
  expectNear(a.max(0).data(), {4, 5, 6});
  expectNear(a.mean(1).data(), {2, 5});
  EXPECT_FLOAT_EQ(a.sum().item(), 21);
  EXPECT_FLOAT_EQ(a.prod().item(), 720);
  EXPECT_EQ(a.sum_keepdim(1).shape(), (std::vector<int64_t>{2, 1}));
  std::vector<float> sm = a.softmax(1).data();
  EXPECT_NEAR(sm[0] + sm[1] + sm[2], 1.0, 1e-6);
  EXPECT_NEAR(sm[2],
              std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)),
              1e-6);
}

TEST(Tensor, MatmulWithBatch) {
  F2 a = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  F2 b = F2::from_data({1, 0, 0, 1, 1, 1}, {3, 2});
  expectNear(a.matmul(b).data(), {4, 5, 10, 11});
  using F3 = Tensor<float, Dim<3>>;
  F3 batch = F3::from_data({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  F2 eye = F2::from_data({1, 0, 0, 1}, {2, 2});
  expectNear(batch.matmul(eye).data(), {1, 2, 3, 4, 5, 6, 7, 8});
}

TEST(Tensor, Views) {
  F2 a = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  expectNear(a.transpose(0, 1).data(), {1, 4, 2, 5, 3, 6});
  expectNear(a.reshape(std::array<int64_t, 2>{3, 2}).data(),
             {1, 2, 3, 4, 5, 6});
  expectNear(a.slice(1, 0, 3, 2).data(), {1, 3, 4, 6});
  expectNear(a.flip({1}).data(), {3, 2, 1, 6, 5, 4});
  expectNear(a.pad({0, 1}, {0, 0}, -1.0f).data(), {-1, 1, 2, 3, -1, 4, 5, 6});
  Tensor<float, Dim<3>> u = a.unsqueeze(0);
  EXPECT_EQ(u.shape(), (std::vector<int64_t>{1, 2, 3}));
  Tensor<float, Dim<2>> back = u.squeeze(0);
  expectNear(back.data(), a.data());
  expectNear(a.flatten().data(), {1, 2, 3, 4, 5, 6});
  expectNear(concat<float, Dim<2>>({a, a}, 0).data(),
             {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expectNear(F1::from_data({7}, {1}).expand({3}).data(), {7, 7, 7});
}

TEST(Tensor, MixedTypesPromoteAndBroadcast) {
  using I1 = Tensor<int32_t, Dim<1>>;
  using U1 = Tensor<uint8_t, Dim<1>>;
  F2 f = F2::from_data({0.5, 1.5}, {2, 1});
  I1 i = I1::from_data({1, 2, 3}, {3});
  Tensor<float, Dim<2>> sum = f + i; // f32 + i32 -> f32, rank 2
  expectNear(sum.data(), {1.5, 2.5, 3.5, 2.5, 3.5, 4.5});
  Tensor<int16_t, Dim<1>> mixed =
      U1::from_data({200, 1}, {2}) +
      Tensor<int8_t, Dim<1>>::from_data({-1, -1}, {2});
  EXPECT_EQ(mixed.data(), (std::vector<int16_t>{199, 0})); // u8 + i8 -> i16
  Tensor<float, Dim<1>> ratio =
      i / Tensor<int64_t, Dim<1>>::from_data({2, 2, 2}, {3});
  expectNear(ratio.data(), {0.5, 1, 1.5}); // true division of integers
  Tensor<bool, Dim<2>> lt = i < f;         // i32 vs f32 compared as f32
  EXPECT_EQ(lt.data(),
            (std::vector<bool>{false, false, false, true, false, false}));
  Tensor<bool, Dim<2>> ge = i >= f;
  EXPECT_EQ(ge.data(),
            (std::vector<bool>{true, true, true, false, true, true}));
  Tensor<float, DimDyn> both = f.sum({0, 1}, true);
  EXPECT_EQ(both.shape(), (std::vector<int64_t>{1, 1}));
  expectNear(both.data(), {2});
}

TEST(Tensor, GatherScatterUnfoldConv) {
  F2 x = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  using L2 = Tensor<int64_t, Dim<2>>;
  L2 idx = L2::from_data({2, 0, 1, 1}, {2, 2});
  expectNear(x.gather(1, idx).data(), {3, 1, 5, 5});
  expectNear(F2::zeros({2, 3}).scatter_add(1, idx, F2::ones({2, 2})).data(),
             {1, 0, 1, 0, 2, 0});
  F1 s = F1::from_data({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10});
  Tensor<float, Dim<2>> w =
      s.unfold<1>({3}, {2}, {2}); // windows of 3, stride 2, dilation 2
  EXPECT_EQ(w.shape(), (std::vector<int64_t>{3, 3}));
  expectNear(w.data(), {0, 2, 4, 2, 4, 6, 4, 6, 8});
  // A 3x3 box filter with padding 1 on a 4x4 image of ones.
  using F4 = Tensor<float, Dim<4>>;
  F4 img = F4::ones({1, 1, 4, 4}), box = F4::ones({1, 1, 3, 3});
  expectNear(img.conv(box, {1, 1}, {1, 1}, {1, 1}).data(),
             {4, 6, 6, 4, 6, 9, 9, 6, 6, 9, 9, 6, 4, 6, 6, 4});
  EXPECT_EQ(
      errorOf([&] {
        img.conv(F4::ones({1, 2, 3, 3}), {1, 1}, {0, 0}, {1, 1});
      }),
      "conv: input has 1 channels but the weight expects 2 ([1, 1, 4, 4], "
      "[1, 2, 3, 3])");
}

// An index whose values are on the host is checked against the dim it
// selects in before anything is built; the error is an IndexError (a
// harp::Error) naming the op, the entry, its position and the range.
TEST(Tensor, IndexOutOfRangeThrows) {
  F2 x = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  using L2 = Tensor<int64_t, Dim<2>>;
  using I1 = Tensor<int32_t, Dim<1>>;
  EXPECT_EQ(errorOf([&] {
              x.gather(1, L2::from_data({0, 3}, {1, 2}));
            }),
            "gather: index 3 at [0, 1] is out of range for dim 1 of size 3 "
            "(valid: [0, 3))");
  EXPECT_EQ(errorOf([&] {
              x.gather(0, L2::from_data({-1}, {1, 1}));
            }),
            "gather: index -1 at [0, 0] is out of range for dim 0 of size 2 "
            "(valid: [0, 2))");
  EXPECT_EQ(errorOf([&] {
              x.index_select(0, I1::from_data({1, 0, 2}, {3}));
            }),
            "index_select: index 2 at [2] is out of range for dim 0 of size 2 "
            "(valid: [0, 2))");
  EXPECT_EQ(errorOf([&] {
              F2::zeros({2, 3}).scatter_add(0, L2::from_data({2}, {1, 1}),
                                            F2::ones({1, 1}));
            }),
            "scatter_add: index 2 at [0, 0] is out of range for dim 0 of size "
            "2 (valid: [0, 2))");
  EXPECT_THROW(x.gather(1, L2::from_data({7}, {1, 1})), IndexError);
  // A computed index is checked when the result is computed.
  L2 shifted = L2::from_data({0, 1}, {1, 2}) + L2::from_data({2, 2}, {1, 2});
  F2 picked = x.gather(1, shifted);
  EXPECT_EQ(errorOf([&] { picked.data(); }),
            "gather: index 3 (computed) is out of range for dim 1 of size 3 "
            "(valid: [0, 3))");
  L2 inRange = L2::from_data({0, 1}, {1, 2}) + L2::from_data({1, 1}, {1, 2});
  expectNear(x.gather(1, inRange).data(), {2, 3});
  // The largest and smallest valid entries pass, in both index types.
  expectNear(x.gather(1, L2::from_data({2, 0}, {1, 2})).data(), {3, 1});
  expectNear(x.index_select(1, I1::from_data({2, 0}, {2})).data(),
             {3, 1, 6, 4});
}

TEST(Tensor, FoldAndNearestInterpolation) {
  // Overlapping windows of 3 at stride 1 over 5 elements: fold counts
  // how many windows cover each position.
  F1 ones = F1::ones({5});
  Tensor<float, Dim<2>> win = ones.unfold<1>({3}, {1}, {1});
  expectNear(win.fold<1>({5}, {1}, {1}).data(), {1, 2, 3, 2, 1});
  // Stride 2, dilation 1 over 7: windows start at 0, 2, 4.
  F1 seven = F1::from_data({1, 2, 3, 4, 5, 6, 7}, {7});
  expectNear(seven.unfold<1>({3}, {2}, {1}).fold<1>({7}, {2}, {1}).data(),
             {1, 2, 6, 4, 10, 6, 7});
  F2 img = F2::from_data({1, 2, 3, 4}, {2, 2});
  expectNear(img.interpolate_nearest({3, 4}).data(),
             {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4});
  EXPECT_EQ(errorOf([&] { win.fold<1>({6}, {1}, {1}); }),
            "fold: 3 windows of 3 do not tile size 6 with stride 1 and "
            "dilation 1");
}

TEST(Tensor, LinearInterpolation) {
  // PyTorch: F.interpolate(t([[[1., 2., 4.]]]), size=5, mode="linear")
  //   = [1.0, 1.4, 2.0, 3.2, 4.0]
  using F3 = Tensor<float, Dim<3>>;
  F3 line = F3::from_data({1, 2, 4}, {1, 1, 3});
  expectNear(line.interpolate_linear({5}).data(), {1.0, 1.4, 2.0, 3.2, 4.0});
  // Bilinear 2x2 -> 3x3 (PyTorch, align_corners=False):
  //   [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]
  using F4 = Tensor<float, Dim<4>>;
  F4 img = F4::from_data({1, 2, 3, 4}, {1, 1, 2, 2});
  expectNear(img.interpolate_linear({3, 3}).data(),
             {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  // Downsampling 4 -> 2 reads between pairs: [1.5, 3.5].
  F3 four = F3::from_data({1, 2, 3, 4}, {1, 1, 4});
  expectNear(four.interpolate_linear({2}).data(), {1.5, 3.5});
}

TEST(Tensor, ConvGradientMatchesFiniteDifferences) {
  using D4 = Tensor<double, Dim<4>>;
  std::vector<double> xs(2 * 5 * 5), ws(3 * 2 * 3 * 3);
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = std::sin(0.7 * i);
  for (size_t i = 0; i < ws.size(); ++i)
    ws[i] = std::cos(0.3 * i);
  auto loss = [&](const std::vector<double> &w) {
    return D4::from_data(xs, {1, 2, 5, 5})
        .conv(D4::from_data(w, {3, 2, 3, 3}), {2, 2}, {1, 1}, {1, 1})
        .tanh()
        .sum();
  };
  D4 w = D4::from_data(ws, {3, 2, 3, 3});
  w.set_requires_grad();
  D4::from_data(xs, {1, 2, 5, 5})
      .conv(w, {2, 2}, {1, 1}, {1, 1})
      .tanh()
      .sum()
      .backward();
  std::vector<double> g = w.grad().data();
  for (size_t i = 0; i < ws.size(); i += 5) {
    auto p = ws, m = ws;
    p[i] += 1e-6;
    m[i] -= 1e-6;
    EXPECT_NEAR(g[i], (loss(p).item() - loss(m).item()) / 2e-6, 1e-7)
        << "w[" << i << "]";
  }
}

TEST(Tensor, IntegersAndCasts) {
  using I1 = Tensor<int32_t, Dim<1>>;
  I1 a = I1::from_data({-7, 7, 9}, {3});
  I1 b = I1::from_data({2, 2, -4}, {3});
  expectNear(a.idiv(b).data(), {-4, 3, -3});
  expectNear((a & b).data(), {-7 & 2, 7 & 2, 9 & -4});
  expectNear(a.cast<float>().data(), std::vector<float>{-7, 7, 9});
  using U1 = Tensor<uint8_t, Dim<1>>;
  U1 u = U1::from_data({200, 3}, {2});
  EXPECT_EQ(u.max().item(), 200); // unsigned comparison, not signed
  Tensor<bool, Dim<1>> lt = a < b;
  EXPECT_EQ(lt.data(), (std::vector<bool>{true, false, false}));
  using L1 = Tensor<int64_t, Dim<1>>;
  EXPECT_EQ(L1::arange(4, 2, 3).data(), (std::vector<int64_t>{2, 5, 8, 11}));
}

TEST(Tensor, RemainingOpsForward) {
  F1 x = F1::from_data({0.25f, 1.5f, 4.0f}, {3});
  std::vector<float> v = x.data(), l2, e2, rc, fl, cs;
  for (float f : v) {
    l2.push_back(std::log2(f));
    e2.push_back(std::exp2(f));
    rc.push_back(1 / f);
    fl.push_back(std::floor(f));
    cs.push_back(std::cos(f));
  }
  expectNear(x.log2().data(), l2);
  expectNear(x.exp2().data(), e2);
  expectNear(x.recip().data(), rc);
  expectNear(x.floor().data(), fl);
  expectNear(x.cos().data(), cs);
  expectNear(x.ln().data(), {std::log(0.25f), std::log(1.5f), std::log(4.0f)});
  expectNear(x.pow(F1::full({3}, 2.0f)).data(), {0.0625, 2.25, 16});
  expectNear(x.minimum(F1::full({3}, 1.0f)).data(), {0.25, 1, 1});
  using I1 = Tensor<int32_t, Dim<1>>;
  I1 a = I1::from_data({7, -7, 12}, {3}), b = I1::from_data({3, 3, 5}, {3});
  expectNear(a.rem(b).data(), {1, -1, 2}); // C-style remainder (fmod)
  expectNear((a | b).data(), {7 | 3, -7 | 3, 12 | 5});
  expectNear((a ^ b).data(), {7 ^ 3, -7 ^ 3, 12 ^ 5});
  expectNear((~a).data(), {~7, ~(-7), ~12});
  I1 one = I1::full({3}, 1);
  expectNear((a << one).data(), {14, -14, 24});
  expectNear((a >> one).data(), {3, -4, 6}); // arithmetic shift
  using U1 = Tensor<uint32_t, Dim<1>>;
  expectNear(
      (U1::from_data({0x80000000u, 8, 1}, {3}) >> U1::full({3}, 1)).data(),
      std::vector<uint32_t>{0x40000000u, 4, 0}); // logical shift
  EXPECT_EQ(a.eq(b).data(), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(a.ne(b).data(), (std::vector<bool>{true, true, true}));
  F2 m = F2::from_data({1, -2, 3, 4, 5, -6}, {2, 3});
  expectNear(m.min(1).data(), {-2, -6});
  expectNear(m.prod(0).data(), {4, -10, -18});
  expectNear(m.contiguous().data(), m.data());
  expectNear(m.prod({0, 1}, false).data(), {720});
  expectNear(m.min({1}, true).data(), {-2, -6});
  expectNear(m.max_keepdim(1).data(), {3, 5});
  expectNear(m.min_keepdim(0).data(), {1, -2, -6});
  expectNear(m.prod_keepdim(1).data(), {-6, -120});
  expectNear(m.mean({0, 1}, false).data(), {5.0f / 6});
  // 1-D and 3-D convolutions (the 2-D one is tested above).
  using F3 = Tensor<float, Dim<3>>;
  F3 sig = F3::from_data({1, 2, 3, 4, 5}, {1, 1, 5});
  expectNear(
      sig.conv(F3::from_data({1, 0, -1}, {1, 1, 3}), {1}, {0}, {1}).data(),
      {-2, -2, -2});
  using F5 = Tensor<float, Dim<5>>;
  F5 vol = F5::ones({1, 1, 3, 3, 3});
  expectNear(
      vol.conv(F5::ones({1, 1, 2, 2, 2}), {1, 1, 1}, {0, 0, 0}, {1, 1, 1})
          .data(),
      std::vector<float>(8, 8));
}

TEST(Tensor, InputPlaceholders) {
  F1 x = F1::input("x", {3});
  F1 y = (x * x).sum_keepdim(0);
  EXPECT_EQ(errorOf([&] { y.data(); }),
            "input 'x' [3] has no values yet; give it some with set_data");
  x.set_data({1, 2, 3});
  expectNear(y.data(), {14});
  // New values: the realized result is recomputed, not served stale.
  x.set_data({0, 0, 2});
  expectNear(y.data(), {4});
  EXPECT_EQ(errorOf([&] { x.set_data({1}); }),
            "set_data: 1 values for a tensor of 3 elements");
}

TEST(Tensor, RandIsDeterministic) {
  F2 r1 = F2::rand({4, 5}, 9), r2 = F2::rand({4, 5}, 9),
     r3 = F2::rand({4, 5}, 10);
  EXPECT_EQ(r1.data(), r2.data());
  EXPECT_NE(r1.data(), r3.data());
  for (float v : r1.data())
    EXPECT_TRUE(v >= 0 && v < 1);
}

TEST(Tensor, RandDrawsAFreshSeedPerCall) {
  // Without a seed each call takes the generator's next one, as a run-time
  // argument: new numbers, no new compile.
  manual_seed(5);
  std::vector<float> a = F2::rand({4, 5}).data();
  std::vector<float> b = F2::rand({4, 5}).data();
  EXPECT_NE(a, b);
  manual_seed(5);
  EXPECT_EQ(F2::rand({4, 5}).data(), a);
  EXPECT_EQ(F2::rand({4, 5}).data(), b);
  // A generator of its own resumes exactly at a saved state.
  Generator g(3);
  F2::randn({2, 2}, g).data();
  Generator::State saved = g.get_state();
  EXPECT_EQ(saved.seed, 3u);
  EXPECT_EQ(saved.offset, 1u);
  std::vector<float> next = F2::randn({2, 2}, g).data();
  g.set_state(saved);
  EXPECT_EQ(F2::randn({2, 2}, g).data(), next);
  // The default stream was not touched by g's draws.
  EXPECT_EQ(default_generator().get_state().offset, 2u);
}

TEST(Tensor, ErrorsNameOpShapesAndArgument) {
  F2 a = F2::zeros({2, 3}), b = F2::zeros({4, 5});
  EXPECT_EQ(errorOf([&] { (a + b).data(); }),
            "add: shapes [2, 3] and [4, 5] cannot be broadcast together");
  EXPECT_EQ(errorOf([&] { a.matmul(a); }),
            "matmul: inner dims differ: [2, 3] @ [2, 3]");
  EXPECT_EQ(errorOf([&] { a.reshape({7}); }),
            "reshape: cannot view [2, 3] (6 elements) as [7]");
  EXPECT_EQ(errorOf([&] { a.squeeze(0); }), "squeeze: dim 0 has size 2, not 1");
  EXPECT_EQ(errorOf([&] { a.sum(2); }),
            "sum: axis 2 is out of range for rank 2");
  EXPECT_EQ(errorOf([&] {
              a.permute({0, 0});
            }),
            "permute: [0, 0] repeats dim 0");
  EXPECT_EQ(errorOf([&] { (a + a).set_requires_grad(); }),
            "set_requires_grad: only leaf tensors (from_data, input, detach) "
            "hold gradients");
  EXPECT_EQ(errorOf([&] { (a + a).backward(); }),
            "backward: the loss must be a 0-d float tensor, got f32 [2, 3]");
  EXPECT_EQ(errorOf([&] {
              F1::from_data({1, 2}, {3});
            }),
            "from_data: 2 values for shape of 3 elements");
  // The graph stays usable after an error.
  expectNear((a + a).sum(1).data(), {0, 0});
}

TEST(Tensor, NoGradBuildsConstantsForBackward) {
  using D1 = Tensor<double, Dim<1>>;
  D1 w = D1::from_data({1.0, 2.0}, {2});
  D1 x = D1::from_data({3.0, 4.0}, {2});
  w.set_requires_grad();
  EXPECT_TRUE(is_grad_enabled());
  auto target = [&] {
    NoGradGuard guard;
    EXPECT_FALSE(is_grad_enabled());
    return (w * x).sum();
  }();
  EXPECT_TRUE(is_grad_enabled());
  // d/dw [(w.x - t)^2 + t sum(w)] with t = w.x held constant: t = 11.
  auto loss = ((w * x).sum() - target).square() + (w * target).sum();
  loss.backward();
  expectNear(w.grad().data(), {11.0, 11.0}, 1e-12);
  w.zero_grad();
  // Without the guard the same graph differentiates through t.
  auto t2 = (w * x).sum();
  (((w * x).sum() - t2).square() + (w * t2).sum()).backward();
  expectNear(w.grad().data(), {11.0 + 3.0 * 3.0, 11.0 + 3.0 * 4.0}, 1e-12);
  w.zero_grad();
  auto constant = [&] {
    NoGradGuard guard;
    return (w * x).sum();
  }();
  EXPECT_EQ(errorOf([&] { constant.backward(); }),
            "backward: no tensor in the graph requires a gradient (what was "
            "built under no_grad is a constant to backward)");
}

TEST(Tensor, GradReturnsGradientsOfLeavesAndIntermediates) {
  using D1 = Tensor<double, Dim<1>>;
  D1 w = D1::from_data({1.0, -2.0, 0.5}, {3});
  D1 x = D1::from_data({3.0, 4.0, -1.0}, {3});
  w.set_requires_grad();
  x.set_requires_grad();
  D1 h = w * x;
  auto loss = (h * h).sum();
  // d/dh = 2h; d/dw = 2 h x; d/dx = 2 h w.
  std::vector<D1> g = grad(loss, std::vector<D1>{w, x});
  ASSERT_EQ(g.size(), 2u);
  expectNear(g[0].data(), {18.0, -64.0, 1.0}, 1e-12);
  expectNear(g[1].data(), {6.0, 32.0, -0.5}, 1e-12);
  std::vector<D1> gh = grad(loss, std::vector<D1>{h});
  expectNear(gh[0].data(), {6.0, -16.0, -1.0}, 1e-12);
  // Nothing was accumulated.
  EXPECT_NE(errorOf([&] { (void)w.grad(); }), "");
  // backward into w alone.
  loss.backward(graphNodes(w));
  expectNear(w.grad().data(), {18.0, -64.0, 1.0}, 1e-12);
  EXPECT_NE(errorOf([&] { (void)x.grad(); }), "");
  D1 unused = D1::from_data({1.0}, {1});
  unused.set_requires_grad();
  EXPECT_EQ(errorOf([&] { (void)grad(loss, std::vector<D1>{unused}); }),
            "grad: input 0 was not used to compute the loss");
  D1 constant = D1::from_data({1.0, 2.0, 3.0}, {3});
  EXPECT_EQ(errorOf([&] { (void)grad(loss, std::vector<D1>{constant}); }),
            "grad: input 0 (f64 [3]) does not require a gradient "
            "(requires_grad_() it before building the graph)");
  EXPECT_EQ(errorOf([&] { loss.backward(graphNodes(h)); }),
            "backward: input 0 (f64 [3]) is computed, not a leaf: only "
            "leaves accumulate a gradient (harp.autograd.grad "
            "differentiates with respect to computed tensors)");
  EXPECT_EQ(errorOf([&] {
              (void)grad(loss, std::vector<D1>{h, w});
            }),
            "grad: an input is computed from another input; "
            "differentiating with respect to both at once is not supported "
            "(ask for them in two calls)");
}

TEST(Tensor, GradWithCreateGraphDifferentiatesAgain) {
  using D1 = Tensor<double, Dim<1>>;
  D1 x = D1::from_data({0.5, -1.5, 2.0}, {3});
  x.set_requires_grad();
  auto loss = (x * x * x).sum();
  // d/dx sum x^3 = 3x^2; the gradient of <3x^2, v> is 6 x v.
  D1 g = grad(loss, std::vector<D1>{x}, {}, /*createGraph=*/true)[0];
  expectNear(g.data(), {0.75, 6.75, 12.0}, 1e-12);
  D1 v = D1::from_data({1.0, 2.0, -1.0}, {3});
  (g * v).sum().backward();
  expectNear(x.grad().data(), {3.0, -18.0, -12.0}, 1e-12);
}

TEST(Tensor, BackwardMatchesFiniteDifferences) {
  using D2 = Tensor<double, Dim<2>>;
  std::vector<double> xs = {0.3, -0.7, 1.2, 0.5, -0.1, 0.9};
  std::vector<double> ws = {0.2, 0.4, -0.6};
  auto loss = [&](const std::vector<double> &x, const std::vector<double> &w) {
    D2 xt = D2::from_data(x, {2, 3});
    D2 wt = D2::from_data(w, {1, 3});
    return ((xt * wt).tanh() * (xt.exp() + wt.sin())).sum();
  };
  D2 x = D2::from_data(xs, {2, 3}), w = D2::from_data(ws, {1, 3});
  x.set_requires_grad();
  w.set_requires_grad();
  ((x * w).tanh() * (x.exp() + w.sin())).sum().backward();
  std::vector<double> gx = x.grad().data(), gw = w.grad().data();
  const double h = 1e-6;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto p = xs, m = xs;
    p[i] += h;
    m[i] -= h;
    double fd = (loss(p, ws).item() - loss(m, ws).item()) / (2 * h);
    EXPECT_NEAR(gx[i], fd, 1e-7) << "x[" << i << "]";
  }
  for (size_t i = 0; i < ws.size(); ++i) {
    auto p = ws, m = ws;
    p[i] += h;
    m[i] -= h;
    double fd = (loss(xs, p).item() - loss(xs, m).item()) / (2 * h);
    EXPECT_NEAR(gw[i], fd, 1e-7) << "w[" << i << "]";
  }
  // Gradients accumulate until zero_grad.
  ((x * w).tanh() * (x.exp() + w.sin())).sum().backward();
  expectNear(w.grad().data(), {2 * gw[0], 2 * gw[1], 2 * gw[2]}, 1e-9);
  w.zero_grad();
  EXPECT_EQ(errorOf([&] { w.grad(); }),
            "grad: no gradient has been accumulated for this tensor");
  // backward() keeps the loss value: reading it runs nothing.
  auto l = ((x * w).tanh() * (x.exp() + w.sin())).sum();
  l.backward();
  detail::CompileCounts afterBackward = detail::compileCounts();
  double value = l.item();
  detail::CompileCounts afterItem = detail::compileCounts();
  EXPECT_EQ(afterItem.memoryHits, afterBackward.memoryHits);
  EXPECT_EQ(afterItem.compilations, afterBackward.compilations);
  EXPECT_NEAR(value, loss(xs, ws).item(), 1e-12);
}

TEST(Tensor, RealizingAgainHitsTheKernelCache) {
  // Data enters as arguments, so new values reuse the compiled kernel
  // (constants made with full() are part of the program instead).
  auto graph = [](float v) {
    F2 a = F2::from_data(std::vector<float>(64, v), {8, 8});
    return (a.exp() * a).sum(0);
  };
  graph(1).data();
  detail::CompileCounts before = detail::compileCounts();
  std::vector<float> second = graph(2).data(); // same shape, new values
  detail::CompileCounts after = detail::compileCounts();
  EXPECT_EQ(after.compilations, before.compilations);
  EXPECT_EQ(after.memoryHits, before.memoryHits + 1);
  EXPECT_NEAR(second[0], 8 * 2 * std::exp(2.0f), 1e-3);
  // Realizing a tensor twice does no work the second time.
  F2 a = F2::rand({3, 3}, 1);
  F2 b = a.tanh();
  b.realize();
  detail::CompileCounts once = detail::compileCounts();
  b.realize();
  b.data();
  detail::CompileCounts twice = detail::compileCounts();
  EXPECT_EQ(once.memoryHits, twice.memoryHits);
  EXPECT_EQ(once.compilations, twice.compilations);
}

TEST(Tensor, TrainsAnMlpWithSgd) {
  // y = sin(3x) on [-1, 1]: 64 points, 1 -> 16 -> 1.
  std::vector<float> xs, ys;
  for (int i = 0; i < 64; ++i) {
    float x = -1 + 2 * i / 63.0f;
    xs.push_back(x);
    ys.push_back(std::sin(3 * x));
  }
  std::mt19937 rng(0);
  std::normal_distribution<float> normal(0, 1);
  auto init = [&](size_t n, float scale) {
    std::vector<float> v(n);
    for (float &x : v)
      x = normal(rng) * scale;
    return v;
  };
  std::vector<float> w1 = init(16, 1.0f), b1(16, 0), w2 = init(16, 0.25f),
                     b2(1, 0);
  F2 x = F2::from_data(xs, {64, 1}), y = F2::from_data(ys, {64, 1});
  float first = 0, last = 0;
  const float lr = 0.1f;
  for (int step = 0; step < 300; ++step) {
    F2 W1 = F2::from_data(w1, {1, 16}), B1 = F2::from_data(b1, {1, 16});
    F2 W2 = F2::from_data(w2, {16, 1}), B2 = F2::from_data(b2, {1, 1});
    for (F2 *p : {&W1, &B1, &W2, &B2})
      p->set_requires_grad();
    F2 pred = (x.matmul(W1) + B1).tanh().matmul(W2) + B2;
    F2 err = pred - y;
    auto loss = (err * err).mean();
    loss.backward();
    float value = loss.item();
    if (step == 0)
      first = value;
    last = value;
    auto update = [&](std::vector<float> &p, const F2 &t) {
      std::vector<float> g = t.grad().data();
      for (size_t i = 0; i < p.size(); ++i)
        p[i] -= lr * g[i];
    };
    update(w1, W1);
    update(b1, B1);
    update(w2, W2);
    update(b2, B2);
  }
  EXPECT_GT(first, 0.2f);
  EXPECT_LT(last, 0.02f) << "loss went from " << first << " to " << last;
}

using C64 = std::complex<float>;
using C128 = std::complex<double>;

void expectNearC(const std::vector<C128> &actual,
                 const std::vector<C128> &expected, double tol = 1e-12) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_LT(std::abs(actual[i] - expected[i]), tol)
        << "at " << i << ": " << actual[i] << " vs " << expected[i];
}

TEST(Tensor, ComplexArithmetic) {
  using Z = Tensor<C128, Dim<1>>;
  std::vector<C128> zs = {{1, 2}, {-0.5, 0}, {0.25, -1}};
  Z z = Z::from_data(zs, {3});
  std::vector<C128> product, quotient, exps;
  for (C128 v : zs) {
    product.push_back(v * v + C128(0, 1));
    quotient.push_back(v / (v + C128(2, 0)));
    exps.push_back(std::exp(v));
  }
  expectNearC((z * z + C128(0, 1)).data(), product);
  expectNearC((z / (z + Z::full({3}, C128(2, 0)))).data(), quotient);
  expectNearC(z.exp().data(), exps);
  expectNearC(z.conj().data(), {{1, -2}, {-0.5, 0}, {0.25, 1}});
  // abs, real, imag and angle are real tensors of the parts' type.
  Tensor<double, Dim<1>> modulus = z.abs();
  expectNear(modulus.data(), {std::sqrt(5.0), 0.5, std::sqrt(1.0625)}, 1e-12);
  expectNear(z.real().data(), {1, -0.5, 0.25}, 0);
  expectNear(z.imag().data(), {2, 0, -1}, 0);
  expectNear(z.angle().data(),
             {std::atan2(2.0, 1.0), M_PI, std::atan2(-1.0, 0.25)}, 1e-12);
  C128 total = z.sum().item();
  EXPECT_LT(std::abs(total - C128(0.75, 1)), 1e-12);
  EXPECT_EQ(errorOf([&] { z.max(); }),
            "max: not defined for complex tensors (c128 [3]): they are "
            "unordered");
}

TEST(Tensor, ComplexFromPartsPromotionAndGradient) {
  using R = Tensor<float, Dim<1>>;
  R re = R::from_data({3, 0}, {2}), im = R::from_data({4, -2}, {2});
  Tensor<C64, Dim<1>> z = complex(re, im);
  std::vector<C64> values = z.data();
  EXPECT_EQ(values, (std::vector<C64>{{3, 4}, {0, -2}}));
  // c64 with f64 promotes to c128, as PyTorch.
  auto wide = z * Tensor<double, Dim<1>>::from_data({1, 2}, {2});
  static_assert(std::is_same_v<decltype(wide), Tensor<C128, Dim<1>>>);
  expectNearC(wide.data(), {{3, 4}, {0, -4}});
  expectNearC(polar(Tensor<double, Dim<1>>::from_data({2}, {1}),
                    Tensor<double, Dim<1>>::from_data({M_PI / 2}, {1}))
                  .data(),
              {{0, 2}});
  // d|z|/dz in PyTorch's convention: z / |z|.
  auto leaf = Tensor<C128, Dim<1>>::from_data({{3, 4}, {0, -2}}, {2});
  leaf.set_requires_grad();
  leaf.abs().sum().backward();
  expectNearC(leaf.grad().data(), {{0.6, 0.8}, {0, -1}});
}

} // namespace

namespace {
using DD = Tensor<double, DimDyn>;

/// Fixed, non-symmetric values in [-1, 1] for a shape.
std::vector<double> valuesFor(const std::vector<int64_t> &shape, double phase,
                              double offset = 0) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = std::sin(1.3 * i + phase) + offset;
  return v;
}

/// backward() of L = sum(f(x) * w) against central finite differences of
/// the same graph, for every element of x.
void checkGradient(const std::string &name,
                   const std::function<DD(const DD &)> &f,
                   std::vector<int64_t> shape, double offset = 0) {
  SCOPED_TRACE(name);
  std::vector<double> xs = valuesFor(shape, 0.4, offset);
  auto loss = [&](const std::vector<double> &v) {
    DD y = f(DD::from_data(v, shape));
    DD w = DD::from_data(valuesFor(y.shape(), 2.0), y.shape());
    return (y * w).sum();
  };
  DD x = DD::from_data(xs, shape);
  x.set_requires_grad();
  DD y = f(x);
  (y * DD::from_data(valuesFor(y.shape(), 2.0), y.shape())).sum().backward();
  std::vector<double> g = x.grad().data();
  for (size_t i = 0; i < xs.size(); ++i) {
    auto p = xs, m = xs;
    p[i] += 1e-6;
    m[i] -= 1e-6;
    double fd = (loss(p).item() - loss(m).item()) / 2e-6;
    EXPECT_NEAR(g[i], fd, 1e-6 + 1e-6 * std::abs(fd)) << "element " << i;
  }
}

TEST(TensorGradients, CastsPassTheCotangentThrough) {
  // f64 -> f32 -> f64: finite differences drown in f32 rounding, but the
  // gradient is the identity, rounded to f32.
  DD x = DD::from_data(valuesFor({2, 3}, 0.4), {2, 3});
  x.set_requires_grad();
  std::vector<double> w = valuesFor({2, 3}, 2.0);
  (x.cast<float>().cast<double>() * DD::from_data(w, {2, 3})).sum().backward();
  expectNear(x.grad().data(), w, 1e-7);
}

TEST(TensorGradients, EveryDifferentiableOp) {
  std::vector<int64_t> s = {2, 3};
  DD other = DD::from_data(valuesFor({2, 3}, 1.1, 1.5), {2, 3});
  DD row = DD::from_data(valuesFor({1, 3}, 0.7), {1, 3});
  checkGradient(
      "neg", [](const DD &x) { return -x; }, s);
  checkGradient(
      "exp", [](const DD &x) { return x.exp(); }, s);
  checkGradient(
      "exp2", [](const DD &x) { return x.exp2(); }, s);
  checkGradient(
      "ln", [](const DD &x) { return x.ln(); }, s, 2.0);
  checkGradient(
      "log2", [](const DD &x) { return x.log2(); }, s, 2.0);
  checkGradient(
      "sqrt", [](const DD &x) { return x.sqrt(); }, s, 2.0);
  checkGradient(
      "recip", [](const DD &x) { return x.recip(); }, s, 2.0);
  checkGradient(
      "sin", [](const DD &x) { return x.sin(); }, s);
  checkGradient(
      "cos", [](const DD &x) { return x.cos(); }, s);
  checkGradient(
      "tanh", [](const DD &x) { return x.tanh(); }, s);
  checkGradient(
      "sigmoid", [](const DD &x) { return x.sigmoid(); }, s);
  checkGradient(
      "relu", [](const DD &x) { return x.relu(); }, s);
  checkGradient(
      "abs", [](const DD &x) { return x.abs(); }, s);
  checkGradient(
      "floor", [](const DD &x) { return x.floor() + x; }, s);
  checkGradient(
      "add", [&](const DD &x) { return x + other; }, s);
  checkGradient(
      "sub", [&](const DD &x) { return other - x; }, s);
  checkGradient(
      "mul", [&](const DD &x) { return x * other; }, s);
  checkGradient(
      "div", [&](const DD &x) { return other / (x + 2.0); }, s);
  checkGradient(
      "pow", [&](const DD &x) { return (x + 2.0).pow(other); }, s);
  checkGradient(
      "maximum", [&](const DD &x) { return x.maximum(row); }, s);
  checkGradient(
      "minimum", [&](const DD &x) { return x.minimum(row); }, s);
  checkGradient("broadcast", [&](const DD &x) { return row * x; }, {1, 3});
  checkGradient(
      "sum", [](const DD &x) { return x.sum(1); }, s);
  checkGradient(
      "prod", [](const DD &x) { return x.prod(0); }, s);
  checkGradient(
      "max", [](const DD &x) { return x.max(1); }, s);
  checkGradient(
      "min", [](const DD &x) { return x.min(1); }, s);
  checkGradient(
      "mean", [](const DD &x) { return x.mean(0); }, s);
  checkGradient(
      "sum_keepdim", [](const DD &x) { return x.sum_keepdim(1); }, s);
  checkGradient(
      "softmax", [](const DD &x) { return x.softmax(1); }, s);
  checkGradient(
      "matmul", [&](const DD &x) { return x.matmul(other.transpose(0, 1)); },
      s);
  checkGradient(
      "reshape",
      [](const DD &x) {
        return x.reshape(std::vector<int64_t>{3, 2}).exp();
      },
      s);
  checkGradient(
      "permute",
      [](const DD &x) {
        return x.permute({1, 0}).exp();
      },
      s);
  checkGradient("expand",
                [](const DD &x) {
                  return x.expand({4, 3}).exp();
                },
                {1, 3});
  checkGradient("squeeze",
                [](const DD &x) { return DD(x.squeeze(0).graphNode()).exp(); },
                {1, 3});
  checkGradient(
      "unsqueeze",
      [](const DD &x) { return DD(x.unsqueeze(1).graphNode()).exp(); }, s);
  checkGradient(
      "flatten", [](const DD &x) { return DD(x.flatten().graphNode()).exp(); },
      s);
  checkGradient(
      "slice", [](const DD &x) { return x.slice(1, 0, 3, 2).exp(); }, s);
  checkGradient(
      "flip", [](const DD &x) { return x.flip({1}).exp(); }, s);
  checkGradient(
      "pad",
      [](const DD &x) {
        return x.pad({1, 0}, {0, 2}, -1.0).exp();
      },
      s);
  checkGradient(
      "concat",
      [](const DD &x) {
        return concat<double, DimDyn>({x, x.exp()}, 1);
      },
      s);
  // 3 windows of 2 at stride 2 tile 6 elements.
  checkGradient("fold",
                [](const DD &x) {
                  return DD(Tensor<double, Dim<2>>(x.graphNode())
                                .fold<1>({6}, {2}, {1})
                                .graphNode())
                      .exp();
                },
                {3, 2});
  checkGradient(
      "interpolate_linear",
      [](const DD &x) {
        return x.interpolate_linear({3, 5}).exp();
      },
      s);
  checkGradient(
      "interpolate_nearest",
      [](const DD &x) {
        return x.interpolate_nearest({3, 5}).exp();
      },
      s);
  checkGradient(
      "contiguous", [](const DD &x) { return x.contiguous().exp(); }, s);
  checkGradient("unfold",
                [](const DD &x) {
                  return DD(x.unfold<1>({2}, {1}, {1}).graphNode()).exp();
                },
                {2, 4});
  using LL = Tensor<int64_t, DimDyn>;
  LL idx = LL::from_data({2, 0, 1, 1}, {2, 2});
  checkGradient(
      "gather", [&](const DD &x) { return x.gather(1, idx).exp(); }, s);
  checkGradient(
      "scatter_add",
      [&](const DD &x) {
        return x.scatter_add(1, idx, DD::from_data({1, 2, 3, 4}, {2, 2})).exp();
      },
      s);
  checkGradient("scatter_add src",
                [&](const DD &x) {
                  return DD::zeros({2, 3}).scatter_add(1, idx, x).exp();
                },
                {2, 2});
  checkGradient(
      "conv",
      [](const DD &x) {
        DD w = DD::from_data(valuesFor({2, 1, 2, 2}, 0.3), {2, 1, 2, 2});
        return x.conv(w, {1, 1}, {1, 0}, {1, 1});
      },
      {1, 1, 3, 3});
}

// Devices: backend::get returns one instance per device, tensors start on
// the cpu, mixing devices is an error naming the op, and to() of a tensor
// already on the device is the tensor itself.
TEST(Tensor, Backends) {
  using T = Tensor<float, DimDyn>;
  BackendPtr cpu = backend::get("cpu");
  EXPECT_EQ(cpu, backend::get("CPU"));
  EXPECT_EQ(cpu->name(), "cpu");
  T a = T::from_data({1, 2, 3}, {3});
  EXPECT_EQ(a.backend(), cpu);
  EXPECT_EQ((a * 2.0f).backend(), cpu);
  EXPECT_EQ(a.to(cpu).graphNode(), a.graphNode());
  EXPECT_EQ((a + 1.0f).to(cpu).data(), (std::vector<float>{2, 3, 4}));
  try {
    a.to(nullptr);
    FAIL() << "to() without a backend must throw";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "to: no backend given");
  }
  try {
    backend::get("tpu");
    FAIL() << "an unknown device must throw";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(),
                 "backend::get: unknown device 'tpu' (expected cpu or cuda)");
  }
  // Without a GPU, asking for one says why; with one, tensors move there
  // and mixing them with cpu tensors is refused.
  BackendPtr cuda;
  try {
    cuda = backend::get("cuda");
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("backend::get: cuda: "),
              std::string::npos)
        << e.what();
    return;
  }
  T g = a.to(cuda);
  EXPECT_EQ(g.backend(), cuda);
  try {
    (void)(g + a);
    FAIL() << "mixing devices must throw";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "add: operands are on different devices (cuda and "
                           "cpu); move one with to()");
  }
}
} // namespace

//===----------------------------------------------------------------------===//
// Built with MLIR's builders: no IR text, structural keys, scalars as
// arguments, locations, options
//===----------------------------------------------------------------------===//

namespace {

TEST(TensorBuilders, NoIrTextIsParsedOnTheApiPath) {
  unsigned parses = detail::irParseCount();
  F2 x = F2::from_data({0.5f, -1, 2, 3, 0.25f, -4}, {2, 3});
  F1 w = F1::from_data({0.1f, 0.2f, 0.3f}, {3});
  w.set_requires_grad();
  auto loss =
      ((x * w.reshape(std::array<int64_t, 2>{1, 3})).tanh() * 2.0f).sum();
  loss.backward();
  std::vector<float> y = (x.exp() + 1.0f).softmax(1).data();
  EXPECT_EQ(y.size(), 6u);
  EXPECT_NE(w.grad().data()[0], 0.0f);
  EXPECT_EQ(detail::irParseCount(), parses);
}

TEST(TensorBuilders, ScalarsAreArgumentsAndReuseTheKernel) {
  F2 x = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  // The same expression with a new number each time: compiled once.
  std::vector<float> first = (x * 0.5f + 1.0f).data();
  detail::CompileCounts before = detail::compileCounts();
  for (float lr : {0.25f, 3.0f, -7.5f}) {
    std::vector<float> y = (x * lr + 1.0f).data();
    EXPECT_FLOAT_EQ(y[5], 6 * lr + 1);
  }
  detail::CompileCounts after = detail::compileCounts();
  EXPECT_EQ(after.compilations, before.compilations);
  EXPECT_EQ(after.memoryHits, before.memoryHits + 3);
  EXPECT_FLOAT_EQ(first[0], 1.5f);
  // Integers keep their exact value (2^40 + 1 is not a float).
  auto big = Tensor<int64_t, Dim<1>>::from_data({1}, {1}) +
             int64_t((int64_t(1) << 40) + 1);
  EXPECT_EQ(big.data()[0], (int64_t(1) << 40) + 2);
  // full() is a constant of the code: a new value is a new kernel.
  (x + F2::full({1, 1}, 2.0f)).data();
  detail::CompileCounts beforeConstant = detail::compileCounts();
  (x + F2::full({1, 1}, 9.0f)).data();
  EXPECT_EQ(detail::compileCounts().compilations +
                detail::compileCounts().diskHits,
            beforeConstant.compilations + beforeConstant.diskHits + 1);
}

TEST(TensorBuilders, StructureNotDataIsTheKey) {
  // Equal structure over different leaves hits; a different layout misses.
  F2 a = F2::from_data({1, 2, 3, 4}, {2, 2});
  F2 b = F2::from_data({5, 6, 7, 8}, {2, 2});
  (a.transpose(0, 1) * a).data();
  detail::CompileCounts before = detail::compileCounts();
  std::vector<float> hit = (b.transpose(0, 1) * b).data();
  EXPECT_EQ(detail::compileCounts().memoryHits, before.memoryHits + 1);
  expectNear(hit, {25, 42, 42, 64});
  std::vector<float> miss = (b.flip({0}) * b).data();
  EXPECT_EQ(detail::compileCounts().memoryHits, before.memoryHits + 1);
  expectNear(miss, {35, 48, 35, 48});
}

TEST(TensorBuilders, OpsCarryTheCallersLine) {
  F2 x = F2::from_data({1, 2, 3, 4}, {2, 2});
  unsigned line = __LINE__ + 1;
  auto y = (x.exp() + x).sum(1);
  std::string ir = y.mlir();
  EXPECT_EQ(ir.find("TensorTest.cpp"), std::string::npos) << ir;
  std::string located = detail::moduleText(y.graphNode(), /*debugInfo=*/true);
  std::string where = "TensorTest.cpp\":" + std::to_string(line);
  // exp, +, and sum all name this file and line, not Tensor.h's.
  EXPECT_NE(located.find(where), std::string::npos) << located;
  EXPECT_EQ(located.find("Tensor.h"), std::string::npos) << located;
  EXPECT_NE(located.find("math.exp"), std::string::npos);
}

TEST(TensorBuilders, OptionsSelectTheCompiledCode) {
  CompileOptions saved = get_options();
  EXPECT_TRUE(saved.threads.has_value() && saved.vectorize.has_value() &&
              saved.cpu.has_value());
  F2 x = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  auto graph = [&] { return (x.sin() * x).sum(0); };
  std::vector<float> vectorized = graph().data();
  CompileOptions scalar;
  scalar.vectorize = false;
  set_options(scalar);
  EXPECT_FALSE(*get_options().vectorize);
  detail::CompileCounts before = detail::compileCounts();
  std::vector<float> plain = graph().data(); // another JIT: not a hit
  detail::CompileCounts after = detail::compileCounts();
  EXPECT_EQ(after.memoryHits, before.memoryHits);
  expectNear(plain, vectorized);
  // A per-call override, and back.
  CompileOptions v2;
  v2.cpu = "x86-64-v2";
  expectNear(graph().realize(v2).data(), vectorized);
  scalar.vectorize = true;
  set_options(scalar);
  EXPECT_TRUE(*get_options().vectorize);
  CompileOptions bad;
  bad.cpu = "no-such-cpu";
  EXPECT_NE(errorOf([&] { set_options(bad); }).find("x86-64-v3"),
            std::string::npos);
  EXPECT_EQ(get_options().cpu, saved.cpu);
}

TEST(TensorBuilders, NumThreadsSelectThreadedCode) {
  int saved = get_num_threads();
  CompileOptions savedOptions = get_options();
  EXPECT_GE(saved, 1);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  EXPECT_FALSE(*get_options().threads);
  set_num_threads(2);
  EXPECT_EQ(get_num_threads(), 2);
  EXPECT_TRUE(*get_options().threads);
  EXPECT_NE(errorOf([] { set_num_threads(0); })
                .find("set_num_threads: the count must be a positive integer, "
                      "got 0"),
            std::string::npos);
  EXPECT_EQ(get_num_threads(), 2);
  // Rows of a product large enough to run on threads: threaded code gives
  // the values unthreaded code does (each tile summed in the same order).
  // On one thread here: LeakSanitizer cannot scan an OpenMP worker's
  // dynamic TLS (scripts/run-sanitizers.sh); test_threads.py runs two.
  set_num_threads(1);
  std::vector<float> a(300 * 200), b(200 * 150);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i % 17) * 0.25f - 2.0f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>(i % 13) * 0.5f - 3.0f;
  auto product = [&] {
    return F2::from_data(a, {300, 200})
        .matmul(F2::from_data(b, {200, 150}))
        .data();
  };
  CompileOptions off, on;
  off.threads = false;
  on.threads = true;
  set_options(off);
  std::vector<float> plain = product();
  set_options(on);
  EXPECT_EQ(product(), plain);
  set_options(savedOptions);
  set_num_threads(saved);
}

TEST(TensorBuilders, ProfileOptionTimesKernels) {
  CompileOptions saved = get_options();
  ASSERT_TRUE(saved.profile.has_value());
  CompileOptions on;
  on.profile = true;
  set_options(on);
  resetProfile();
  F2 x = F2::from_data({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  for (int run = 0; run < 2; ++run) {
    // A fresh graph each run: the same code is called again.
    F2 y = x.exp() * 2.0f;
    std::vector<float> got = y.data();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], 2 * std::exp(float(i + 1)), 1e-3 * got[i]);
  }
  std::vector<KernelProfile> report = profileReport();
  bool whole = false, kernel = false;
  for (const KernelProfile &row : report) {
    if (row.kernel == "@main (whole call)") {
      whole = true;
      EXPECT_EQ(row.calls, 2u);
    } else if (row.kernel.find("writes memref<3x4xf32>") != std::string::npos) {
      kernel = true;
      EXPECT_EQ(row.calls, 2u) << row.kernel;
    }
  }
  EXPECT_TRUE(whole && kernel) << formatProfile(report);
  CompileOptions off;
  off.profile = saved.profile;
  set_options(off);
  resetProfile();
}

TEST(TensorMath, ActivationsWhereAndModulo) {
  F1 x = F1::from_data({-2.5f, -1, 0, 0.5f, 3}, {5});
  std::vector<float> xs = x.data();
  auto erfs = x.erf().data();
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(erfs[i], std::erf(xs[i]), 1e-6);
  // erfc keeps its precision in the tail, where 1 - erf(x) is 0.
  std::vector<double> points = {0.5, 6, 20};
  auto tail = Tensor<double, Dim<1>>::from_data(points, {3}).erfc().data();
  for (size_t i = 0; i < tail.size(); ++i)
    EXPECT_NEAR(tail[i] / std::erfc(points[i]), 1.0, 1e-13);
  auto gelu = nn::gelu(x).data();
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(gelu[i], 0.5 * xs[i] * (1 + std::erf(xs[i] / std::sqrt(2.0))),
                1e-6);
  expectNear(nn::leaky_relu(x, 0.1).data(), {-0.25f, -0.1f, 0, 0.5f, 3});
  expectNear(nn::hardtanh(x).data(), {-1, -1, 0, 0.5f, 1});
  expectNear(x.clamp(std::nullopt, 0.25f).data(), {-2.5f, -1, 0, 0.25f, 0.25f});
  expectNear(where(x > F1::zeros({5}), x, x * 2.0f).data(),
             {-5, -2, 0, 0.5f, 3});
  expectNear(x.remainder(F1::full({5}, 2)).data(), {1.5f, 1, 0, 0.5f, 1});
  auto nan = F1::from_data({1, NAN, INFINITY}, {3});
  EXPECT_EQ(nan.isnan().data(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(nan.isinf().data(), (std::vector<bool>{false, false, true}));
  // Gradients through the composed activations.
  Tensor<double, Dim<1>> d =
      Tensor<double, Dim<1>>::from_data({-1.5, 0.25, 2}, {3});
  d.set_requires_grad();
  nn::silu(d).sum().backward();
  std::vector<double> g = d.grad().data(), ds = d.data();
  for (size_t i = 0; i < ds.size(); ++i) {
    double s = 1 / (1 + std::exp(-ds[i]));
    EXPECT_NEAR(g[i], s * (1 + ds[i] * (1 - s)), 1e-12);
  }
}

} // namespace

TEST(Tensor, LogSoftmaxLogsumexpVarArgExtremes) {
  std::vector<double> v = {0.5, -1.0, 3.0, 2.0, 2.0, -4.0, 0.0, 7.5};
  auto x = Tensor<double, Dim<2>>::from_data(v, {2, 4});
  std::vector<double> lse, lsm, var;
  for (int r = 0; r < 2; ++r) {
    double m = -INFINITY, s = 0, mean = 0, sq = 0;
    for (int c = 0; c < 4; ++c)
      m = std::max(m, v[r * 4 + c]), mean += v[r * 4 + c] / 4;
    for (int c = 0; c < 4; ++c)
      s += std::exp(v[r * 4 + c] - m), sq += std::pow(v[r * 4 + c] - mean, 2);
    lse.push_back(m + std::log(s));
    var.push_back(sq / 3);
    for (int c = 0; c < 4; ++c)
      lsm.push_back(v[r * 4 + c] - lse.back());
  }
  expectNear(x.logsumexp({1}).data(), lse, 1e-12);
  expectNear(x.log_softmax(1).data(), lsm, 1e-12);
  expectNear(x.var({1}).data(), var, 1e-12);
  expectNear(x.var({1}, /*correction=*/0).data(),
             {var[0] * 3 / 4, var[1] * 3 / 4}, 1e-12);
  EXPECT_EQ(x.logsumexp({1}, /*keepdim=*/true).shape(),
            (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(x.argmax(1).data(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.argmin(1).data(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(x.argmax(0).data(), (std::vector<int64_t>{1, 0, 0, 1}));
  // Ties go to the first index.
  auto tie = Tensor<double, Dim<1>>::from_data({1, 3, 3, -2, -2}, {5});
  EXPECT_EQ(tie.argmax(0).item(), 1);
  EXPECT_EQ(tie.argmin(0).item(), 3);
  EXPECT_EQ(x.argmax(0, true).shape(), (std::vector<int64_t>{1, 4}));
}
