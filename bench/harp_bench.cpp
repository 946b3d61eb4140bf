//===- harp_bench.cpp - time one harp workload ----------------------------===//
//
// Builds the harp IR of one benchmark workload, compiles it with harp::Jit,
// runs it on deterministic inputs, checks the result against a C++ reference
// and prints one JSON object:
//
//   harp-bench matmul 1024 [--reps 10] [--max-seconds 20] [--print-ir]
//              [--ir FILE]  (FILE's @main instead of the workload's program)
//              [--threads]  (OpenMP threads: OMP_NUM_THREADS of them)
//              [--device cuda]  (on the GPU, with its anchors: see below)
//   harp-bench compile
//
// With --device cuda the timed calls run on device buffers
// (Executable::callDevice: no transfers), and the same run times the
// anchors on the same device: a device-to-device copy of the largest input
// (the HBM roofline: bytes read and written) and, for matmul, cuBLAS's
// sgemm (libcublas opened at run time).
//
// Inputs are multiples of 1/32 in [-1, 1], so sums, matmuls and convolutions
// of them are exact in f32 in any summation order and are checked exactly;
// workloads with transcendental functions are checked with a tolerance.
// run.py drives this tool; see README.md.
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Array.h"
#include "harp/Runtime/Cuda.h"
#include "harp/Runtime/Jit.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace harp;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

//===----------------------------------------------------------------------===//
// IR text
//===----------------------------------------------------------------------===//

/// Replaces every `$KEY` of `text` by its value.
std::string
subst(std::string text,
      const std::vector<std::pair<std::string, std::string>> &values) {
  for (const auto &[key, value] : values) {
    std::string pattern = "$" + key;
    for (size_t pos = text.find(pattern); pos != std::string::npos;
         pos = text.find(pattern, pos + value.size()))
      text.replace(pos, pattern.size(), value);
  }
  return text;
}

/// "tensor<4x8xf32>".
std::string tensor(const std::vector<int64_t> &shape,
                   const std::string &elt = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

std::string floatLit(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9e", v);
  return buf;
}

/// GELU with tanh, one map_reduce per step (fusion makes it one kernel):
/// 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3))), reading `$X` of type
/// `$T` and defining `%gelu`.
const char *geluChain = R"(
  %x3 = harp.map_reduce ins($X : $T) {
  ^bb0(%a: f32):
    %sq = arith.mulf %a, %a : f32
    %cu = arith.mulf %sq, %a : f32
    harp.yield %cu : f32
  } : $T
  %inner = harp.map_reduce ins($X, %x3 : $T, $T) {
  ^bb0(%a: f32, %c: f32):
    %k = arith.constant 0.044715 : f32
    %t = arith.mulf %k, %c : f32
    %s = arith.addf %a, %t : f32
    harp.yield %s : f32
  } : $T
  %scaled = harp.map_reduce ins(%inner : $T) {
  ^bb0(%a: f32):
    %k = arith.constant 0.7978845608 : f32
    %s = arith.mulf %k, %a : f32
    harp.yield %s : f32
  } : $T
  %th = harp.map_reduce ins(%scaled : $T) {
  ^bb0(%a: f32):
    %t = math.tanh %a : f32
    harp.yield %t : f32
  } : $T
  %onep = harp.map_reduce ins(%th : $T) {
  ^bb0(%a: f32):
    %one = arith.constant 1.0 : f32
    %s = arith.addf %one, %a : f32
    harp.yield %s : f32
  } : $T
  %gelu = harp.map_reduce ins($X, %onep : $T, $T) {
  ^bb0(%a: f32, %u: f32):
    %half = arith.constant 0.5 : f32
    %h = arith.mulf %half, %a : f32
    %r = arith.mulf %h, %u : f32
    harp.yield %r : f32
  } : $T
)";

std::string geluIR(int64_t n) {
  std::string t = tensor({n});
  return subst("func.func @main(%x: $T) -> $T {" + std::string(geluChain) +
                   "  return %gelu : $T\n}\n",
               {{"X", "%x"}, {"T", t}});
}

std::string reduceIR(const std::vector<int64_t> &shape,
                     const std::vector<int64_t> &resultShape,
                     const std::string &dims) {
  return subst(R"(func.func @main(%x: $T) -> $R {
  %s = harp.map_reduce ins(%x : $T) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [$D]) : $R
  return %s : $R
})",
               {{"T", tensor(shape)}, {"R", tensor(resultShape)}, {"D", dims}});
}

std::string softmaxIR(int64_t rows, int64_t cols) {
  return subst(R"(func.func @main(%x: $T) -> $T {
  %m = harp.map_reduce ins(%x : $T) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : $R
  %mb = harp.view %m <(d0, d1) -> (d0)> : $R -> $T
  %e = harp.map_reduce ins(%x, %mb : $T, $T) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    harp.yield %ex : f32
  } : $T
  %s = harp.map_reduce ins(%e : $T) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : $R
  %sb = harp.view %s <(d0, d1) -> (d0)> : $R -> $T
  %y = harp.map_reduce ins(%e, %sb : $T, $T) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %a, %b : f32
    harp.yield %q : f32
  } : $T
  return %y : $T
})",
               {{"T", tensor({rows, cols})}, {"R", tensor({rows})}});
}

std::string layerNormIR(int64_t rows, int64_t cols) {
  return subst(R"(func.func @main(%x: $T, %g: $C, %b: $C) -> $T {
  %sum = harp.map_reduce ins(%x : $T) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : $R
  %mean = harp.map_reduce ins(%sum : $R) {
  ^bb0(%a: f32):
    %n = arith.constant $INV : f32
    %m = arith.mulf %a, %n : f32
    harp.yield %m : f32
  } : $R
  %mb = harp.view %mean <(d0, d1) -> (d0)> : $R -> $T
  %xc = harp.map_reduce ins(%x, %mb : $T, $T) {
  ^bb0(%a: f32, %m: f32):
    %d = arith.subf %a, %m : f32
    harp.yield %d : f32
  } : $T
  %ss = harp.map_reduce ins(%xc : $T) {
  ^bb0(%a: f32):
    %sq = arith.mulf %a, %a : f32
    harp.yield %sq : f32
  } reduce(sum, dims = [1]) : $R
  %rstd = harp.map_reduce ins(%ss : $R) {
  ^bb0(%a: f32):
    %n = arith.constant $INV : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.mulf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    harp.yield %r : f32
  } : $R
  %rb = harp.view %rstd <(d0, d1) -> (d0)> : $R -> $T
  %gb = harp.view %g <(d0, d1) -> (d1)> : $C -> $T
  %bb = harp.view %b <(d0, d1) -> (d1)> : $C -> $T
  %y = harp.map_reduce ins(%xc, %rb, %gb, %bb : $T, $T, $T, $T) {
  ^bb0(%a: f32, %r: f32, %gg: f32, %bv: f32):
    %n = arith.mulf %a, %r : f32
    %s = arith.mulf %n, %gg : f32
    %o = arith.addf %s, %bv : f32
    harp.yield %o : f32
  } : $T
  return %y : $T
})",
               {{"T", tensor({rows, cols})},
                {"R", tensor({rows})},
                {"C", tensor({cols})},
                {"INV", floatLit(1.0 / cols)}});
}

/// C = A @ B as a broadcast product summed over k; with `biasGelu`,
/// gelu(C + bias).
std::string matmulIR(int64_t n, bool biasGelu) {
  std::string text = R"(func.func @main(%lhs: $M, %rhs: $M$BIASARG) -> $M {
  %av = harp.view %lhs <(d0, d1, d2) -> (d0, d2)> : $M -> $D
  %bv = harp.view %rhs <(d0, d1, d2) -> (d2, d1)> : $M -> $D
  %mm = harp.map_reduce ins(%av, %bv : $D, $D) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : $M
)";
  if (!biasGelu)
    return subst(
        text + "  return %mm : $M\n}\n",
        {{"M", tensor({n, n})}, {"D", tensor({n, n, n})}, {"BIASARG", ""}});
  text += R"(  %biasb = harp.view %bias <(d0, d1) -> (d1)> : $V -> $M
  %z = harp.map_reduce ins(%mm, %biasb : $M, $M) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    harp.yield %s : f32
  } : $M
)" + std::string(geluChain) +
          "  return %gelu : $M\n}\n";
  return subst(text, {{"BIASARG", ", %bias: $V"},
                      {"X", "%z"},
                      {"T", "$M"},
                      {"M", tensor({n, n})},
                      {"D", tensor({n, n, n})},
                      {"V", tensor({n})}});
}

/// N=1, C -> F channels, 3x3, padding 1, stride 1: a pad view, an unfold
/// view and broadcast views into the domain (n, f, oh, ow, c, kh, kw).
std::string conv2dIR(int64_t c, int64_t f, int64_t h) {
  return subst(R"(func.func @main(%x: $X, %w: $W) -> $Y {
  %xp = harp.view %x <(d0, d1, d2, d3) -> (d0, d1, d2 - 1, d3 - 1),
      mask_ge = (d0, d1, d2, d3) -> (d2 - 1, -d2 + $H, d3 - 1, -d3 + $H)>
      : $X -> $P
  %win = harp.view %xp <(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
      : $P -> $U
  %xd = harp.view %win <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d3, d5, d6)>
      : $U -> $D
  %wd = harp.view %w <(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
      : $W -> $D
  %y = harp.map_reduce ins(%xd, %wd : $D, $D) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4, 5, 6]) : $Y
  return %y : $Y
})",
               {{"X", tensor({1, c, h, h})},
                {"W", tensor({f, c, 3, 3})},
                {"Y", tensor({1, f, h, h})},
                {"P", tensor({1, c, h + 2, h + 2})},
                {"U", tensor({1, c, h, h, 3, 3})},
                {"D", tensor({1, f, h, h, c, 3, 3})},
                {"H", std::to_string(h)}});
}

/// Embedding lookup: out[i, :] = table[idx[i], :], as a gather along dim 0
/// of the index broadcast over the columns.
std::string gatherIR(int64_t rows, int64_t cols, int64_t count) {
  return subst(R"(func.func @main(%t: $T, %i: $I) -> $Y {
  %ib = harp.view %i <(d0, d1) -> (d0)> : $I -> $J
  %g = harp.gather %t[%ib] dim(0) : ($T, $J) -> $Y
  return %g : $Y
})",
               {{"T", tensor({rows, cols})},
                {"I", tensor({count}, "i64")},
                {"J", tensor({count, cols}, "i64")},
                {"Y", tensor({count, cols})}});
}

std::string transposeIR(int64_t n) {
  return subst(R"(func.func @main(%x: $T) -> $T {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : $T -> $T
  %c = harp.contiguous %t : $T
  return %c : $T
})",
               {{"T", tensor({n, n})}});
}

//===----------------------------------------------------------------------===//
// Inputs and checks
//===----------------------------------------------------------------------===//

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// f32 values k/32, k in [-32, 32], from `seed`.
Array randomF32(std::vector<int64_t> shape, uint64_t seed) {
  Array a = Array::allocate(TensorType{ElementKind::F32, std::move(shape)});
  float *p = a.as<float>();
  for (int64_t i = 0, e = a.numElements(); i < e; ++i)
    p[i] = float(int64_t(mix(seed << 40 ^ i) % 65) - 32) / 32.0f;
  return a;
}

Array randomIndices(int64_t count, int64_t bound, uint64_t seed) {
  Array a = Array::allocate(TensorType{ElementKind::I64, {count}});
  for (int64_t i = 0; i < count; ++i)
    a.as<int64_t>()[i] = int64_t(mix(seed << 40 ^ i) % bound);
  return a;
}

/// Compares results with references: |got - ref| <= atol + rtol |ref|.
struct Checker {
  const float *got;
  double atol, rtol;
  int64_t checked = 0, mismatches = 0;
  double maxErr = 0;
  std::vector<std::string> samples;

  void expect(int64_t index, double ref) {
    ++checked;
    double err = std::fabs(double(got[index]) - ref);
    if (!(err <= maxErr))
      maxErr = err; // also records NaN
    if (err <= atol + rtol * std::fabs(ref))
      return;
    if (++mismatches <= 5) {
      char buf[128];
      std::snprintf(buf, sizeof(buf), "[%lld, %.9g, %.9g]", (long long)index,
                    double(got[index]), ref);
      samples.push_back(buf);
    }
  }
};

/// `count` indices spread over [0, n), with the first and the last.
std::vector<int64_t> sampleIndices(int64_t n, int64_t count) {
  std::vector<int64_t> idx = {0, n - 1};
  for (int64_t i = 0; i < count && i < n; ++i)
    idx.push_back(int64_t(mix(1000 + i) % uint64_t(n)));
  return idx;
}

double gelu(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

/// One benchmark: IR, inputs, a check of the result and its traffic.
struct Workload {
  std::string ir;
  std::vector<Array> inputs;
  std::string shape;
  /// Minimal bytes moved and flops, for rates.
  double bytes = 0, flops = 0;
  /// Exact workloads are checked with atol = rtol = 0.
  bool exact = true;
  std::function<void(Checker &)> verify;
};

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s;
  for (int64_t d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

/// Checks sampled elements of (a @ b), or of gelu(a @ b + bias).
void checkDotProducts(Workload &w, int64_t n, Array a, Array b,
                      const Array *bias) {
  w.verify = [n, a, b, bias = bias ? *bias : Array()](Checker &c) {
    for (int64_t idx : sampleIndices(n * n, 256)) {
      int64_t i = idx / n, j = idx % n;
      double s = 0;
      for (int64_t k = 0; k < n; ++k)
        s += double(a.as<float>()[i * n + k]) * b.as<float>()[k * n + j];
      c.expect(idx, bias.data() ? gelu(s + bias.as<float>()[j]) : s);
    }
  };
}

/// Builds workload `name` at `size` (0: the issue's size), or fails.
std::optional<Workload> makeWorkload(const std::string &name, int64_t size) {
  Workload w;
  auto pick = [&](int64_t def) { return size > 0 ? size : def; };
  if (name == "gelu") {
    int64_t n = pick(int64_t(1) << 24);
    Array x = randomF32({n}, 1);
    w = {geluIR(n), {x}, shapeStr({n}), 8.0 * n, 0, false, {}};
    w.verify = [n, x](Checker &c) {
      for (int64_t i = 0; i < n; ++i)
        c.expect(i, gelu(x.as<float>()[i]));
    };
    return w;
  }
  if (name == "sum" || name == "rowsum") {
    int64_t n = pick(int64_t(1) << 24);
    int64_t rows = name == "sum" ? 1 : 4096, cols = n / rows;
    Array x = randomF32(name == "sum" ? std::vector<int64_t>{n}
                                      : std::vector<int64_t>{rows, cols},
                        2);
    w.ir = name == "sum" ? reduceIR({n}, {}, "0")
                         : reduceIR({rows, cols}, {rows}, "1");
    w.inputs = {x};
    w.shape = name == "sum" ? shapeStr({n}) : shapeStr({rows, cols});
    w.bytes = 4.0 * rows * cols;
    w.verify = [rows, cols, x](Checker &c) {
      for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t j = 0; j < cols; ++j)
          s += x.as<float>()[r * cols + j];
        c.expect(r, s);
      }
    };
    return w;
  }
  if (name == "softmax" || name == "layernorm") {
    bool softmax = name == "softmax";
    int64_t rows = pick(softmax ? 4096 : 8192), cols = softmax ? rows : 1024;
    Array x = randomF32({rows, cols}, 3), g = randomF32({cols}, 4),
          b = randomF32({cols}, 5);
    w.ir = softmax ? softmaxIR(rows, cols) : layerNormIR(rows, cols);
    w.inputs = softmax ? std::vector<Array>{x} : std::vector<Array>{x, g, b};
    w.shape = shapeStr({rows, cols});
    w.bytes = 8.0 * rows * cols;
    w.exact = false;
    w.verify = [=](Checker &c) {
      const float *p = x.as<float>();
      for (int64_t r : sampleIndices(rows, 62)) {
        const float *row = p + r * cols;
        if (softmax) {
          double m = *std::max_element(row, row + cols), s = 0;
          for (int64_t j = 0; j < cols; ++j)
            s += std::exp(row[j] - m);
          for (int64_t j = 0; j < cols; ++j)
            c.expect(r * cols + j, std::exp(row[j] - m) / s);
          continue;
        }
        double mean = 0, var = 0;
        for (int64_t j = 0; j < cols; ++j)
          mean += row[j];
        mean /= cols;
        for (int64_t j = 0; j < cols; ++j)
          var += (row[j] - mean) * (row[j] - mean);
        double rstd = 1 / std::sqrt(var / cols + 1e-5);
        for (int64_t j = 0; j < cols; ++j)
          c.expect(r * cols + j, (row[j] - mean) * rstd * g.as<float>()[j] +
                                     b.as<float>()[j]);
      }
    };
    return w;
  }
  if (name == "matmul" || name == "matmul_bias_gelu") {
    bool epilogue = name == "matmul_bias_gelu";
    int64_t n = pick(1024);
    Array a = randomF32({n, n}, 6), b = randomF32({n, n}, 7),
          bias = randomF32({n}, 8);
    w.ir = matmulIR(n, epilogue);
    w.inputs = epilogue ? std::vector<Array>{a, b, bias} : std::vector{a, b};
    w.shape = shapeStr({n, n, n});
    w.bytes = 12.0 * n * n;
    w.flops = 2.0 * n * n * n;
    w.exact = !epilogue;
    checkDotProducts(w, n, a, b, epilogue ? &bias : nullptr);
    return w;
  }
  if (name == "conv2d") {
    int64_t h = pick(56), ch = 64;
    Array x = randomF32({1, ch, h, h}, 9), f = randomF32({ch, ch, 3, 3}, 10);
    w = {conv2dIR(ch, ch, h),
         {x, f},
         "1x64x" + shapeStr({h, h}) + " 3x3",
         8.0 * ch * h * h,
         2.0 * ch * ch * 9 * h * h,
         true,
         {}};
    w.verify = [=](Checker &c) {
      for (int64_t idx : sampleIndices(ch * h * h, 256)) {
        int64_t o = idx / (h * h), y = idx / h % h, z = idx % h;
        double s = 0;
        for (int64_t i = 0; i < ch; ++i)
          for (int64_t dy = 0; dy < 3; ++dy)
            for (int64_t dz = 0; dz < 3; ++dz) {
              int64_t yy = y + dy - 1, zz = z + dz - 1;
              if (yy >= 0 && yy < h && zz >= 0 && zz < h)
                s += double(x.as<float>()[(i * h + yy) * h + zz]) *
                     f.as<float>()[((o * ch + i) * 3 + dy) * 3 + dz];
            }
        c.expect(idx, s);
      }
    };
    return w;
  }
  if (name == "gather") {
    int64_t count = pick(8192), rows = 50000, cols = 512;
    Array t = randomF32({rows, cols}, 11), i = randomIndices(count, rows, 12);
    w = {gatherIR(rows, cols, count),
         {t, i},
         shapeStr({rows, cols}) + "[" + std::to_string(count) + "]",
         8.0 * count * cols,
         0,
         true,
         {}};
    w.verify = [=](Checker &c) {
      for (int64_t r = 0; r < count; ++r)
        for (int64_t j = 0; j < cols; ++j)
          c.expect(r * cols + j, t.as<float>()[i.as<int64_t>()[r] * cols + j]);
    };
    return w;
  }
  if (name == "transpose") {
    int64_t n = pick(4096);
    Array x = randomF32({n, n}, 13);
    w = {transposeIR(n), {x}, shapeStr({n, n}), 8.0 * n * n, 0, true, {}};
    w.verify = [=](Checker &c) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          c.expect(i * n + j, x.as<float>()[j * n + i]);
    };
    return w;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

struct Stats {
  double best, median;
};

Stats stats(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  size_t n = t.size();
  return {t[0], n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2};
}

/// A fresh temporary directory for a cold, isolated cache.
std::string tempDir() {
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createUniqueDirectory("harp-bench", path))
    return "";
  return std::string(path);
}

/// --threads: kernels on OpenMP threads (OMP_NUM_THREADS of them).
bool useThreads = false;
/// --device cuda: kernels on the GPU.
Device device = Device::CPU;
/// --cpu NAME: the CPU code is generated for (default $HARP_CPU or native).
std::string cpuName;

JitOptions coldOptions(const std::string &dir) {
  JitOptions options;
  options.device = device;
  options.threads = useThreads;
  options.cpu = cpuName;
  options.diskCache = false;
  options.cacheDir = dir;
  return options;
}

int fail(const std::string &name, const std::string &message) {
  std::string escaped;
  for (char ch : message)
    escaped += ch == '"' || ch == '\\' ? std::string("\\") + ch
               : ch == '\n'            ? std::string("\\n")
                                       : std::string(1, ch);
  llvm::outs() << "{\"workload\": \"" << name << "\", \"ok\": false, "
               << "\"error\": \"" << escaped << "\"}\n";
  return 1;
}

/// Cold compiles (a fresh Jit each, the first of the process reported on its
/// own since it pays LLVM's one-time initialisation) and in-memory cache
/// hits (a second compile() of the same text) of a small fused kernel.
int benchCompile(int reps) {
  std::string ir = geluIR(64 * 128), dir = tempDir();
  std::vector<double> cold, hit;
  double first = 0;
  for (int r = 0; r <= reps; ++r) {
    Jit jit(coldOptions(dir));
    auto start = Clock::now();
    auto exe = jit.compile(ir);
    double t = secondsSince(start);
    if (!exe)
      return fail("compile", llvm::toString(exe.takeError()));
    if (r == 0)
      first = t;
    else
      cold.push_back(t);
    if (r != reps)
      continue;
    for (int i = 0; i < 100; ++i) {
      start = Clock::now();
      auto again = jit.compile(ir);
      hit.push_back(secondsSince(start));
      if (!again || again->get() != exe->get())
        return fail("compile", "the second compile was not a cache hit");
    }
  }
  llvm::sys::fs::remove_directories(dir);
  Stats c = stats(cold), h = stats(hit);
  std::printf("{\"workload\": \"compile\", \"shape\": \"gelu 64x128\", "
              "\"ok\": true, \"cold_first_ms\": %.3f, \"cold_best_ms\": %.3f, "
              "\"cold_median_ms\": %.3f, \"cold_reps\": %d, "
              "\"hit_best_us\": %.3f, \"hit_median_us\": %.3f, "
              "\"hit_reps\": %zu}\n",
              first * 1e3, c.best * 1e3, c.median * 1e3, reps, h.best * 1e6,
              h.median * 1e6, hit.size());
  return 0;
}

/// Device buffers freed on scope exit.
struct DeviceBuffers {
  std::vector<void *> buffers;
  ~DeviceBuffers() {
    for (void *b : buffers)
      cuda::release(b);
  }
  llvm::Expected<void *> add(size_t bytes) {
    auto b = cuda::allocate(bytes);
    if (b)
      buffers.push_back(*b);
    return b;
  }
};

/// Times `body` (which must wait for the device) `reps` times.
template <typename F>
llvm::Expected<Stats> timeDevice(int reps, F body) {
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) { // the first is a warm-up
    auto start = Clock::now();
    if (llvm::Error err = body())
      return std::move(err);
    if (r)
      times.push_back(secondsSince(start));
  }
  return stats(times);
}

/// cuBLAS's sgemm on row-major device matrices: C (m x n) = A (m x k) B.
llvm::Expected<Stats> cublasMatmul(int reps, int64_t m, int64_t n, int64_t k,
                                   void *a, void *b, void *c) {
  void *lib = dlopen("libcublas.so.13", RTLD_NOW);
  if (!lib)
    lib = dlopen("libcublas.so", RTLD_NOW);
  if (!lib)
    return llvm::createStringError("libcublas could not be loaded");
  using Create = int (*)(void **);
  using Gemm =
      int (*)(void *, int, int, int, int, int, const float *, const float *,
              int, const float *, int, const float *, float *, int);
  auto create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
  auto gemm = reinterpret_cast<Gemm>(dlsym(lib, "cublasSgemm_v2"));
  if (!create || !gemm)
    return llvm::createStringError("libcublas lacks cublasSgemm_v2");
  void *handle = nullptr;
  if (int status = create(&handle))
    return llvm::createStringError("cublasCreate failed: " +
                                   std::to_string(status));
  float one = 1, zero = 0;
  // Column-major: C^T = B^T A^T.
  return timeDevice(reps, [&]() -> llvm::Error {
    if (int status = gemm(handle, 0, 0, n, m, k, &one, (const float *)b, n,
                          (const float *)a, k, &zero, (float *)c, n))
      return llvm::createStringError("cublasSgemm failed: " +
                                     std::to_string(status));
    return cuda::synchronize();
  });
}

/// The GPU half of benchWorkload: timed calls on device buffers, then the
/// anchors; prints the JSON fields after the common ones.
llvm::Error benchOnDevice(const std::string &name, Workload &w,
                          const Executable &exe, std::vector<Array> &results,
                          int reps, std::string &json) {
  DeviceBuffers buffers;
  std::vector<void *> ins, outs;
  size_t largest = 0;
  for (const Array &in : w.inputs) {
    auto b = buffers.add(in.byteSize());
    if (!b)
      return b.takeError();
    if (llvm::Error err = cuda::copyToDevice(*b, in.data(), in.byteSize()))
      return err;
    ins.push_back(*b);
    largest = std::max(largest, in.byteSize());
  }
  for (const Array &out : results) {
    auto b = buffers.add(out.byteSize());
    if (!b)
      return b.takeError();
    outs.push_back(*b);
  }
  auto harp =
      timeDevice(reps, [&] { return exe.callDevice("main", ins, outs); });
  if (!harp)
    return harp.takeError();
  for (auto [out, b] : llvm::zip(results, outs))
    if (llvm::Error err = cuda::copyToHost(out.data(), b, out.byteSize()))
      return err;
  // The HBM roofline: copy the largest input (read and write it).
  auto scratch = buffers.add(largest);
  if (!scratch)
    return scratch.takeError();
  auto copy = timeDevice(reps, [&]() -> llvm::Error {
    if (llvm::Error err = cuda::copyOnDevice(*scratch, ins.front(), largest))
      return err;
    return cuda::synchronize();
  });
  if (!copy)
    return copy.takeError();
  auto device = cuda::deviceName();
  if (!device)
    return device.takeError();
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                ", \"device\": \"%s\", \"reps\": %d, \"best_s\": %.6g, "
                "\"median_s\": %.6g, \"copy_bytes\": %zu, "
                "\"copy_best_s\": %.6g",
                device->c_str(), reps, harp->best, harp->median, 2 * largest,
                copy->best);
  json += buf;
  if (name == "matmul") {
    int64_t n = w.inputs[0].shape()[0], k = w.inputs[0].shape()[1],
            m = w.inputs[1].shape()[1];
    auto c = buffers.add(size_t(n) * m * 4);
    if (!c)
      return c.takeError();
    auto blas = cublasMatmul(reps, n, m, k, ins[0], ins[1], *c);
    if (blas) {
      std::snprintf(buf, sizeof(buf), ", \"cublas_best_s\": %.6g", blas->best);
    } else {
      std::string why = llvm::toString(blas.takeError());
      std::snprintf(buf, sizeof(buf), ", \"cublas_error\": \"%s\"",
                    why.c_str());
    }
    json += buf;
  }
  return llvm::Error::success();
}

int benchWorkload(const std::string &name, Workload &w, int maxReps,
                  double maxSeconds) {
  std::string dir = tempDir();
  Jit jit(coldOptions(dir));
  auto start = Clock::now();
  auto exe = jit.compile(w.ir);
  double compileTime = secondsSince(start);
  llvm::sys::fs::remove_directories(dir);
  if (!exe)
    return fail(name, llvm::toString(exe.takeError()));

  // Warm-up, which also checks the result and sizes the repetitions.
  start = Clock::now();
  auto results = (*exe)->call("main", w.inputs);
  double warm = secondsSince(start);
  if (!results)
    return fail(name, llvm::toString(results.takeError()));
  Checker check{results->front().as<float>(), w.exact ? 0.0 : 1e-5,
                w.exact ? 0.0 : 1e-4};
  w.verify(check);

  int reps = std::min(maxReps, int(std::clamp(maxSeconds / warm, 3.0, 1e6)));
  if (device == Device::CUDA) {
    std::string json;
    if (llvm::Error err = benchOnDevice(name, w, **exe, *results, reps, json))
      return fail(name, llvm::toString(std::move(err)));
    Checker recheck{results->front().as<float>(), check.atol, check.rtol};
    w.verify(recheck);
    check.mismatches += recheck.mismatches;
    std::printf("{\"workload\": \"%s\", \"shape\": \"%s\", \"ok\": %s, "
                "\"checked\": %lld, \"mismatches\": %lld, "
                "\"compile_ms\": %.3f, \"bytes\": %.0f, \"flops\": %.0f%s}\n",
                name.c_str(), w.shape.c_str(),
                check.mismatches ? "false" : "true", (long long)check.checked,
                (long long)check.mismatches, compileTime * 1e3, w.bytes,
                w.flops, json.c_str());
    return check.mismatches ? 2 : 0;
  }
  // Timed calls write into the warm-up's result buffers, as the C loops
  // and NumPy's in-place chain do: no fresh pages per call.
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    start = Clock::now();
    llvm::Error err = (*exe)->callInto("main", w.inputs, *results);
    times.push_back(secondsSince(start));
    if (err)
      return fail(name, llvm::toString(std::move(err)));
  }
  // The buffers hold the last timed call's results: check them again.
  Checker recheck{results->front().as<float>(), check.atol, check.rtol};
  w.verify(recheck);
  check.mismatches += recheck.mismatches;
  Stats s = stats(times);
  std::string samples;
  for (const std::string &sample : check.samples)
    samples += (samples.empty() ? "" : ", ") + sample;
  std::printf(
      "{\"workload\": \"%s\", \"shape\": \"%s\", \"ok\": %s, "
      "\"checked\": %lld, \"mismatches\": %lld, \"max_err\": %.3g, "
      "\"wrong\": [%s], \"compile_ms\": %.3f, \"warmup_s\": %.6g, "
      "\"reps\": %d, \"best_s\": %.6g, \"median_s\": %.6g, "
      "\"bytes\": %.0f, \"flops\": %.0f}\n",
      name.c_str(), w.shape.c_str(), check.mismatches ? "false" : "true",
      (long long)check.checked, (long long)check.mismatches,
      std::isnan(check.maxErr) ? -1.0 : check.maxErr, samples.c_str(),
      compileTime * 1e3, warm, reps, s.best, s.median, w.bytes, w.flops);
  return check.mismatches ? 2 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string name;
  int64_t size = 0;
  int reps = 10;
  double maxSeconds = 1e9;
  bool printIR = false;
  std::string irFile;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--max-seconds" && i + 1 < argc)
      maxSeconds = std::atof(argv[++i]);
    else if (arg == "--print-ir")
      printIR = true;
    else if (arg == "--ir" && i + 1 < argc)
      irFile = argv[++i];
    else if (arg == "--threads")
      useThreads = true;
    else if (arg == "--cpu" && i + 1 < argc)
      cpuName = argv[++i];
    else if (arg == "--device" && i + 1 < argc) {
      auto parsed = parseDevice(argv[++i]);
      if (!parsed) {
        std::fprintf(stderr, "harp-bench: %s\n",
                     llvm::toString(parsed.takeError()).c_str());
        return 1;
      }
      device = *parsed;
    } else if (name.empty())
      name = arg;
    else
      size = std::atoll(arg.c_str());
  }
  if (name == "compile")
    return benchCompile(reps);
  std::optional<Workload> w = makeWorkload(name, size);
  if (!w) {
    std::fprintf(stderr,
                 "usage: harp-bench WORKLOAD [SIZE] [--reps N] "
                 "[--max-seconds S] [--print-ir] [--ir FILE] [--threads] "
                 "[--cpu NAME] [--device cpu|cuda]\n"
                 "workloads: gelu sum rowsum softmax layernorm matmul "
                 "matmul_bias_gelu conv2d gather transpose compile\n"
                 "At most --reps timed calls after one warm-up (at least 3 "
                 "when a call takes more than S/3 seconds).\n"
                 "--ir FILE runs FILE's @main on the workload's inputs "
                 "and checks (a variant of its program).\n"
                 "--cpu NAME generates code for native (default: "
                 "$HARP_CPU, else the host), x86-64-v2, x86-64-v3, "
                 "x86-64-v4 or an LLVM CPU name.\n");
    return 1;
  }
  if (!irFile.empty()) {
    std::ifstream in(irFile);
    if (!in) {
      std::fprintf(stderr, "harp-bench: cannot read %s\n", irFile.c_str());
      return 1;
    }
    w->ir.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (printIR) {
    std::printf("%s\n", w->ir.c_str());
    return 0;
  }
  return benchWorkload(name, *w, reps, maxSeconds);
}
