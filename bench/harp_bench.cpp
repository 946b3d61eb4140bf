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
//              [--gpu-elements-per-thread N]  (harp-gpu-kernels' option)
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

/// Replaces every `$KEY` of `text` by its value, longer keys first (so that
/// `$PAD` is not read as `$P` followed by "AD").
std::string subst(std::string text,
                  std::vector<std::pair<std::string, std::string>> values) {
  std::stable_sort(values.begin(), values.end(), [](auto &a, auto &b) {
    return a.first.size() > b.first.size();
  });
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

/// Softmax over rows as harp's `softmax` builds it: exp around the row's
/// maximum, scaled by the reciprocal of its sum (one division per row).
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
  %r = harp.map_reduce ins(%s : $R) {
  ^bb0(%a: f32):
    %one = arith.constant 1.0 : f32
    %q = arith.divf %one, %a : f32
    harp.yield %q : f32
  } : $R
  %rb = harp.view %r <(d0, d1) -> (d0)> : $R -> $T
  %y = harp.map_reduce ins(%e, %rb : $T, $T) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.mulf %a, %b : f32
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

/// C = A @ B (A: m x k, B: k x n, or `batch` of each when batch > 0) as a
/// broadcast product summed over k; with `biasGelu`, gelu(C + bias).
std::string matmulIR(int64_t batch, int64_t m, int64_t k, int64_t n,
                     bool biasGelu) {
  std::string text =
      R"(func.func @main(%lhs: $A, %rhs: $B$BIASARG) -> $M {
  %av = harp.view %lhs <($DIMS) -> ($BD d0, d2)> : $A -> $D
  %bv = harp.view %rhs <($DIMS) -> ($BD d2, d1)> : $B -> $D
  %mm = harp.map_reduce ins(%av, %bv : $D, $D) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [$K]) : $M
)";
  // The domain is (m, n, k), or (b, m, n, k) when batched.
  std::vector<int64_t> pre =
      batch ? std::vector<int64_t>{batch} : std::vector<int64_t>{};
  auto with = [&](std::vector<int64_t> dims) {
    dims.insert(dims.begin(), pre.begin(), pre.end());
    return dims;
  };
  std::vector<std::pair<std::string, std::string>> values = {
      {"A", tensor(with({m, k}))},
      {"B", tensor(with({k, n}))},
      {"M", tensor(with({m, n}))},
      {"D", tensor(with({m, n, k}))},
      {"V", tensor({n})},
      {"K", batch ? "3" : "2"},
      {"DIMS", batch ? "b, d0, d1, d2" : "d0, d1, d2"},
      {"BD", batch ? "b," : ""}};
  if (!biasGelu) {
    values.push_back({"BIASARG", ""});
    return subst(text + "  return %mm : $M\n}\n", values);
  }
  std::string bias = batch ? "(b, d0, d1) -> (d1)" : "(d0, d1) -> (d1)";
  text += "  %biasb = harp.view %bias <" + bias + R"(> : $V -> $M
  %z = harp.map_reduce ins(%mm, %biasb : $M, $M) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    harp.yield %s : f32
  } : $M
)" + std::string(geluChain) +
          "  return %gelu : $M\n}\n";
  values.insert(values.begin(),
                {{"BIASARG", ", %bias: $V"}, {"X", "%z"}, {"T", "$M"}});
  return subst(text, values);
}

/// A 2-D convolution of one image: C -> F channels, K x K filters, square
/// images, stride, zero padding and groups (1, or C = F for depthwise).
struct ConvSpec {
  int64_t c = 64, h = 56, f = 64, k = 3, stride = 1, pad = 1, groups = 1;
  int64_t out() const { return (h + 2 * pad - k) / stride + 1; }
  bool depthwise() const { return groups > 1; }
  std::vector<int64_t> filterShape() const {
    return depthwise() ? std::vector<int64_t>{f, k, k}
                       : std::vector<int64_t>{f, c, k, k};
  }
  std::string str() const {
    return "c=" + std::to_string(c) + ",h=" + std::to_string(h) +
           ",f=" + std::to_string(f) + ",k=" + std::to_string(k) +
           ",s=" + std::to_string(stride) + ",p=" + std::to_string(pad) +
           ",g=" + std::to_string(groups);
  }
};

/// Zero padding as a masked view (when pad > 0), the K x K windows as an
/// unfold view with the stride, and broadcast views into the domain
/// (n, f, oh, ow, c, kh, kw), or (n, c, oh, ow, kh, kw) when depthwise.
std::string conv2dIR(const ConvSpec &s) {
  int64_t o = s.out(), hp = s.h + 2 * s.pad;
  std::string p = std::to_string(s.pad), st = std::to_string(s.stride);
  std::string text = "func.func @main(%x: $X, %w: $W) -> $Y {\n";
  std::string padded = "%x";
  if (s.pad) {
    text += "  %xp = harp.view %x <(d0, d1, d2, d3) -> (d0, d1, d2 - $PAD, "
            "d3 - $PAD),\n      mask_ge = (d0, d1, d2, d3) -> (d2 - $PAD, "
            "-d2 + $LAST, d3 - $PAD, -d3 + $LAST)>\n      : $X -> $P\n";
    padded = "%xp";
  }
  text += "  %win = harp.view " + padded +
          " <(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * $S + d4, d3 * $S + "
          "d5)>\n      : $P -> $U\n";
  if (s.depthwise()) {
    text += R"(  %wd = harp.view %w <(d0, d1, d2, d3, d4, d5) -> (d1, d4, d5)>
      : $W -> $U
  %y = harp.map_reduce ins(%win, %wd : $U, $U) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4, 5]) : $Y
  return %y : $Y
})";
  } else {
    text +=
        R"(  %xd = harp.view %win <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d3, d5, d6)>
      : $U -> $D
  %wd = harp.view %w <(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
      : $W -> $D
  %y = harp.map_reduce ins(%xd, %wd : $D, $D) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4, 5, 6]) : $Y
  return %y : $Y
})";
  }
  return subst(text, {{"X", tensor({1, s.c, s.h, s.h})},
                      {"W", tensor(s.filterShape())},
                      {"Y", tensor({1, s.f, o, o})},
                      {"P", tensor({1, s.c, hp, hp})},
                      {"U", tensor({1, s.c, o, o, s.k, s.k})},
                      {"D", tensor({1, s.f, o, o, s.c, s.k, s.k})},
                      {"PAD", p},
                      {"LAST", std::to_string(s.pad + s.h - 1)},
                      {"S", st}});
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

/// Checks sampled elements of (a @ b), or of gelu(a @ b + bias), for
/// `batch` (at least 1) products of m x k and k x n matrices.
void checkDotProducts(Workload &w, int64_t batch, int64_t m, int64_t k,
                      int64_t n, Array a, Array b, const Array *bias) {
  w.verify = [=, bias = bias ? *bias : Array()](Checker &c) {
    for (int64_t idx : sampleIndices(batch * m * n, 256)) {
      int64_t p = idx / (m * n), i = idx / n % m, j = idx % n;
      const float *pa = a.as<float>() + p * m * k,
                  *pb = b.as<float>() + p * k * n;
      double s = 0;
      for (int64_t q = 0; q < k; ++q)
        s += double(pa[i * k + q]) * pb[q * n + j];
      c.expect(idx, bias.data() ? gelu(s + bias.as<float>()[j]) : s);
    }
  };
}

/// "97x1031x257" -> {97, 1031, 257}; empty on a malformed list.
std::vector<int64_t> parseDims(const std::string &text) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('x', pos);
    std::string item =
        text.substr(pos, end == std::string::npos ? end : end - pos);
    char *rest = nullptr;
    long long v = std::strtoll(item.c_str(), &rest, 10);
    if (item.empty() || *rest || v <= 0)
      return {};
    dims.push_back(v);
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  return dims;
}

/// "c=256,h=14,f=256,k=3,s=1,p=1,g=1" (any subset; the rest are the
/// defaults) or a plain image size "56"; nullopt, saying why in
/// `convError`, for anything else.
std::optional<ConvSpec> parseConv(const std::string &text,
                                  std::string &convError) {
  ConvSpec spec;
  if (text.empty())
    return spec;
  if (text.find('=') == std::string::npos) {
    std::vector<int64_t> dims = parseDims(text);
    if (dims.size() != 1) {
      convError = "expected an image size or c=,h=,f=,k=,s=,p=,g=";
      return std::nullopt;
    }
    spec.h = dims[0];
    return spec;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    std::string item =
        text.substr(pos, end == std::string::npos ? end : end - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      convError = "'" + item + "' is no KEY=VALUE";
      return std::nullopt;
    }
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    char *rest = nullptr;
    long long v = std::strtoll(value.c_str(), &rest, 10);
    int64_t *field = key == "c"   ? &spec.c
                     : key == "h" ? &spec.h
                     : key == "f" ? &spec.f
                     : key == "k" ? &spec.k
                     : key == "s" ? &spec.stride
                     : key == "p" ? &spec.pad
                     : key == "g" ? &spec.groups
                                  : nullptr;
    if (!field) {
      convError = "unknown key '" + key + "' (c, h, f, k, s, p, g)";
      return std::nullopt;
    }
    if (value.empty() || *rest || v < (key == "p" ? 0 : 1)) {
      convError = key + "=" + value + " is no integer of at least " +
                  (key == "p" ? "0" : "1");
      return std::nullopt;
    }
    *field = v;
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  // Any padding up to the filter size; groups 1, or depthwise (C = F = g).
  if (spec.pad >= spec.k) {
    convError = "padding p=" + std::to_string(spec.pad) +
                " must be below the filter size k=" + std::to_string(spec.k) +
                " (p defaults to 1)";
    return std::nullopt;
  }
  if (spec.out() < 1) {
    convError = "the filter does not fit the padded image";
    return std::nullopt;
  }
  if (spec.groups != 1 && (spec.groups != spec.c || spec.f != spec.c)) {
    convError = "groups g must be 1 or depthwise (g = c = f)";
    return std::nullopt;
  }
  return spec;
}

/// Builds workload `name` at `size` (empty: the default size), or fails,
/// saying why in `error` where it can (a conv2d SIZE).
std::optional<Workload> makeWorkload(const std::string &name,
                                     const std::string &size,
                                     std::string &error) {
  Workload w;
  std::vector<int64_t> dims = parseDims(size);
  if (!size.empty() && dims.empty() && name != "conv2d")
    return std::nullopt;
  auto pick = [&](int64_t def) { return dims.empty() ? def : dims[0]; };
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
    if (dims.size() > 2)
      return std::nullopt;
    int64_t rows = pick(softmax ? 4096 : 8192);
    int64_t cols = dims.size() == 2 ? dims[1] : softmax ? rows : 1024;
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
  if (name == "matmul" || name == "matmul_bias_gelu" || name == "bmm") {
    // matmul N, matmul MxKxN; bmm BxMxKxN.
    bool epilogue = name == "matmul_bias_gelu", batched = name == "bmm";
    if (dims.empty())
      dims = batched ? std::vector<int64_t>{32, 128, 64, 128}
                     : std::vector<int64_t>{1024};
    if (dims.size() == 1)
      dims = {dims[0], dims[0], dims[0]};
    if (dims.size() != (batched ? 4u : 3u))
      return std::nullopt;
    int64_t batch = batched ? dims[0] : 0, m = dims[batched],
            k = dims[batched + 1], n = dims[batched + 2],
            copies = std::max<int64_t>(batch, 1);
    std::vector<int64_t> pre =
        batched ? std::vector<int64_t>{batch} : std::vector<int64_t>{};
    auto with = [&](std::vector<int64_t> d) {
      d.insert(d.begin(), pre.begin(), pre.end());
      return d;
    };
    Array a = randomF32(with({m, k}), 6), b = randomF32(with({k, n}), 7),
          bias = randomF32({n}, 8);
    w.ir = matmulIR(batch, m, k, n, epilogue);
    w.inputs = epilogue ? std::vector<Array>{a, b, bias} : std::vector{a, b};
    w.shape = shapeStr(with({m, k, n}));
    w.bytes = 4.0 * copies * (m * k + k * n + m * n);
    w.flops = 2.0 * copies * m * n * k;
    w.exact = !epilogue;
    checkDotProducts(w, copies, m, k, n, a, b, epilogue ? &bias : nullptr);
    return w;
  }
  if (name == "conv2d") {
    std::optional<ConvSpec> spec = parseConv(size, error);
    if (!spec)
      return std::nullopt;
    ConvSpec cs = *spec;
    int64_t h = cs.h, o = cs.out(), k = cs.k, cin = cs.depthwise() ? 1 : cs.c;
    Array x = randomF32({1, cs.c, h, h}, 9),
          f = randomF32(cs.filterShape(), 10);
    w = {conv2dIR(cs),
         {x, f},
         cs.str(),
         4.0 * (cs.c * h * h + f.numElements() + cs.f * o * o),
         2.0 * cs.f * cin * k * k * o * o,
         true,
         {}};
    w.verify = [=](Checker &c) {
      for (int64_t idx : sampleIndices(cs.f * o * o, 256)) {
        int64_t fo = idx / (o * o), y = idx / o % o, z = idx % o;
        double s = 0;
        for (int64_t i = 0; i < cin; ++i) {
          int64_t ch = cs.depthwise() ? fo : i;
          for (int64_t dy = 0; dy < k; ++dy)
            for (int64_t dz = 0; dz < k; ++dz) {
              int64_t yy = y * cs.stride + dy - cs.pad,
                      zz = z * cs.stride + dz - cs.pad;
              if (yy >= 0 && yy < h && zz >= 0 && zz < h)
                s += double(x.as<float>()[(ch * h + yy) * h + zz]) *
                     f.as<float>()[((fo * cin + i) * k + dy) * k + dz];
            }
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
/// --gpu-elements-per-thread N: harp-gpu-kernels' elements-per-thread.
unsigned gpuElementsPerThread = JitOptions().cudaElementsPerThread;

JitOptions coldOptions(const std::string &dir) {
  JitOptions options;
  options.device = device;
  options.threads = useThreads;
  options.cpu = cpuName;
  options.cudaElementsPerThread = gpuElementsPerThread;
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
  std::string size;
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
    else if (arg == "--gpu-elements-per-thread" && i + 1 < argc)
      gpuElementsPerThread = unsigned(std::max(1, std::atoi(argv[++i])));
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
      size = arg;
  }
  if (name == "compile")
    return benchCompile(reps);
  std::string error;
  std::optional<Workload> w = makeWorkload(name, size, error);
  if (!w) {
    if (!error.empty())
      std::fprintf(stderr, "harp-bench: %s %s: %s\n", name.c_str(),
                   size.c_str(), error.c_str());
    std::fprintf(stderr,
                 "usage: harp-bench WORKLOAD [SIZE] [--reps N] "
                 "[--max-seconds S] [--print-ir] [--ir FILE] [--threads] "
                 "[--cpu NAME] [--device cpu|cuda] "
                 "[--gpu-elements-per-thread N]\n"
                 "workloads (SIZE): gelu sum rowsum (N), softmax layernorm "
                 "(ROWS or ROWSxCOLS), matmul matmul_bias_gelu (N or MxKxN), "
                 "bmm (BxMxKxN), conv2d (H, or c=,h=,f=,k=,s=,p=,g= with "
                 "g 1 or depthwise), gather (ROWS), transpose (N), compile\n"
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
