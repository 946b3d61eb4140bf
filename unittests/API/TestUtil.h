//===- TestUtil.h - helpers shared by the Tensor API's tests ----*- C++ -*-===//
//
// Random inputs, element-wise comparison, the message of a harp::Error, and
// a gradient check against central differences in f64.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_UNITTESTS_API_TESTUTIL_H
#define HARP_UNITTESTS_API_TESTUTIL_H

#include "harp/API/Tensor.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace harp::test {

inline std::vector<double> randomValues(size_t n, unsigned seed, double lo = -1,
                                        double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

inline int64_t count(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Row-major offset of `index` in `shape`.
inline int64_t at(const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &index) {
  int64_t o = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    o = o * shape[i] + index[i];
  return o;
}

inline Tensor<double> randomTensor(std::vector<int64_t> s, unsigned seed) {
  return Tensor<double>::from_data(randomValues(count(s), seed), s);
}

/// Element-wise |actual - expected| <= tol (by default 1e-5 for float,
/// 1e-10 for double and integers).
template <typename T>
void expectNear(const std::vector<T> &actual, const std::vector<T> &expected,
                double tol = std::is_same_v<T, float> ? 1e-5 : 1e-10) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(double(actual[i]), double(expected[i]), tol) << "at " << i;
}

/// The message of the harp::Error `fn` throws.
template <typename Fn>
std::string errorOf(Fn fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

/// sum(out * weights) for a fixed random weighting of out's values, so
/// every output element reaches the gradient with its own factor.
inline Tensor<double> weightedSum(const Tensor<double> &out,
                                  unsigned seed = 99) {
  auto weights = Tensor<double>::from_data(
      randomValues(out.numel(), seed, 0.5, 1.5), out.shape());
  return (out * weights).sum(std::vector<int64_t>{}, false);
}

/// Checks d loss / d leaf against central differences at a few elements.
inline void checkGradient(Tensor<double> leaf,
                          const std::function<Tensor<double>()> &loss,
                          int samples = 6) {
  leaf.set_requires_grad(true);
  leaf.zero_grad();
  loss().backward();
  std::vector<double> grad = leaf.grad().data();
  std::vector<double> values = leaf.data();
  std::mt19937 gen(5);
  const double h = 1e-6;
  for (int s = 0; s < samples; ++s) {
    size_t i = gen() % values.size();
    std::vector<double> plus = values, minus = values;
    plus[i] += h;
    minus[i] -= h;
    leaf.set_data(plus);
    double up = loss().item();
    leaf.set_data(minus);
    double down = loss().item();
    leaf.set_data(values);
    EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-6) << "element " << i;
  }
  leaf.zero_grad();
  leaf.set_requires_grad(false);
}

} // namespace harp::test

#endif // HARP_UNITTESTS_API_TESTUTIL_H
