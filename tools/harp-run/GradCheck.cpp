//===- GradCheck.cpp - harp-run --gradcheck -------------------------------===//
//
// The reusable gradient check: every derivative rule is tested by comparing
// harp-autodiff's gradient with central finite differences of the very
// function harp compiles (not of a separate reference).
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <complex>
#include <cstring>
#include <random>

using namespace harp;

namespace {
/// Real and imaginary parts of element `i` of an f32/f64/complex array.
struct Element {
  static bool supported(ElementKind kind) {
    return kind == ElementKind::F32 || kind == ElementKind::F64 ||
           kind == ElementKind::C64 || kind == ElementKind::C128;
  }
  static bool isComplex(ElementKind kind) {
    return kind == ElementKind::C64 || kind == ElementKind::C128;
  }
  static std::complex<double> get(const Array &a, int64_t i) {
    switch (a.kind()) {
    case ElementKind::F32:
      return a.as<float>()[i];
    case ElementKind::F64:
      return a.as<double>()[i];
    case ElementKind::C64:
      return std::complex<double>(a.as<std::complex<float>>()[i]);
    case ElementKind::C128:
      return a.as<std::complex<double>>()[i];
    default:
      return 0;
    }
  }
  static void set(const Array &a, int64_t i, std::complex<double> v) {
    switch (a.kind()) {
    case ElementKind::F32:
      a.as<float>()[i] = static_cast<float>(v.real());
      break;
    case ElementKind::F64:
      a.as<double>()[i] = v.real();
      break;
    case ElementKind::C64:
      a.as<std::complex<float>>()[i] = std::complex<float>(v);
      break;
    case ElementKind::C128:
      a.as<std::complex<double>>()[i] = v;
      break;
    default:
      break;
    }
  }
};

Array copyOf(const Array &a) {
  Array c = Array::allocate(a.type());
  std::memcpy(c.data(), a.data(), a.byteSize());
  return c;
}

std::string typeList(const std::vector<TensorType> &types) {
  std::string s;
  for (const TensorType &t : types)
    s += (s.empty() ? "" : ", ") + t.str();
  return s;
}
} // namespace

int harp::runGradCheck(Jit &jit, llvm::StringRef source,
                       const FunctionSignature &entry,
                       std::vector<Array> inputs,
                       const GradCheckOptions &options) {
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "harp-run") << message << "\n";
    return 1;
  };
  std::vector<int64_t> wrt = options.wrt;
  if (wrt.empty())
    for (auto [i, type] : llvm::enumerate(entry.inputs))
      if (Element::supported(type.kind))
        wrt.push_back(i);
  if (wrt.empty())
    return fail("@" + entry.name +
                " has no f32, f64 or complex argument to "
                "differentiate");
  for (int64_t w : wrt) {
    if (w < 0 || w >= static_cast<int64_t>(entry.inputs.size()))
      return fail("--wrt " + llvm::Twine(w) + " is out of range: @" +
                  entry.name + " has " + llvm::Twine(entry.inputs.size()) +
                  " arguments");
    if (!Element::supported(entry.inputs[w].kind))
      return fail("argument #" + llvm::Twine(w) + " of @" + entry.name +
                  " has type " + entry.inputs[w].str() +
                  "; the gradient check takes f32, f64 and complex arguments");
  }
  for (const TensorType &t : entry.results)
    if (!Element::supported(t.kind))
      return fail("result of type " + t.str() +
                  " is not supported by the gradient check");

  // The function and its gradient, through harp.autodiff.
  std::vector<TensorType> gradTypes;
  for (int64_t w : wrt)
    gradTypes.push_back(entry.inputs[w]);
  std::string wrapper;
  llvm::raw_string_ostream os(wrapper);
  os << "\nfunc.func @__harp_gradcheck(";
  size_t nIn = entry.inputs.size(), nOut = entry.results.size();
  for (size_t i = 0; i < nIn; ++i)
    os << (i ? ", " : "") << "%a" << i << ": " << entry.inputs[i].str();
  for (size_t k = 0; k < nOut; ++k)
    os << ", %s" << k << ": " << entry.results[k].str();
  std::vector<TensorType> all(entry.results);
  all.insert(all.end(), gradTypes.begin(), gradTypes.end());
  os << ") -> (" << typeList(all) << ") {\n  %r:" << all.size()
     << " = harp.autodiff @" << entry.name << "(";
  for (size_t i = 0; i < nIn; ++i)
    os << (i ? ", " : "") << "%a" << i;
  os << ") seed(";
  for (size_t k = 0; k < nOut; ++k)
    os << (k ? ", " : "") << "%s" << k;
  os << " : " << typeList(entry.results) << ") wrt [";
  for (size_t j = 0; j < wrt.size(); ++j)
    os << (j ? ", " : "") << wrt[j];
  os << "] : (" << typeList(entry.inputs) << ") -> (" << typeList(all)
     << ")\n  return ";
  for (size_t j = 0; j < all.size(); ++j)
    os << (j ? ", " : "") << "%r#" << j;
  os << " : " << typeList(all) << "\n}\n";
  llvm::Expected<std::shared_ptr<Executable>> exe =
      jit.compile((source + wrapper).str());
  if (!exe)
    return fail(llvm::toString(exe.takeError()));

  // Random cotangents in [-1, 1) (both parts for complex results).
  std::mt19937_64 rng(options.seed);
  auto uniform = [&] {
    return std::ldexp(static_cast<double>(rng() >> 11), -53) * 2 - 1;
  };
  std::vector<Array> seeds;
  for (const TensorType &t : entry.results) {
    Array s = Array::allocate(t);
    for (int64_t i = 0; i < s.numElements(); ++i)
      Element::set(s, i,
                   Element::isComplex(t.kind)
                       ? std::complex<double>(uniform(), uniform())
                       : std::complex<double>(uniform(), 0));
    seeds.push_back(s);
  }
  std::vector<Array> gradInputs(inputs);
  gradInputs.insert(gradInputs.end(), seeds.begin(), seeds.end());
  llvm::Expected<std::vector<Array>> gradResults =
      (*exe)->call("__harp_gradcheck", gradInputs);
  if (!gradResults)
    return fail(llvm::toString(gradResults.takeError()));

  // L(inputs) = sum_k Re(<conj(seed_k), f_k(inputs)>).
  auto loss = [&](const std::vector<Array> &in, double &value) -> bool {
    llvm::Expected<std::vector<Array>> out = (*exe)->call(entry.name, in);
    if (!out) {
      fail(llvm::toString(out.takeError()));
      return false;
    }
    value = 0;
    for (auto [k, r] : llvm::enumerate(*out))
      for (int64_t i = 0; i < r.numElements(); ++i)
        value +=
            (std::conj(Element::get(seeds[k], i)) * Element::get(r, i)).real();
    return true;
  };

  size_t checked = 0, failures = 0;
  double maxAbs = 0, maxRel = 0;
  for (auto [j, w] : llvm::enumerate(wrt)) {
    ElementKind kind = entry.inputs[w].kind;
    bool isF32 = kind == ElementKind::F32 || kind == ElementKind::C64;
    double h = options.step.value_or(isF32 ? 1e-3 : 1e-6);
    double rtol = options.rtol.value_or(isF32 ? 1e-2 : 1e-6);
    double atol = options.atol.value_or(isF32 ? 1e-3 : 1e-8);
    const Array &grad = (*gradResults)[nOut + j];
    std::vector<Array> probe(inputs);
    probe[w] = copyOf(inputs[w]);
    for (int64_t i = 0; i < probe[w].numElements(); ++i) {
      std::complex<double> x = Element::get(inputs[w], i);
      std::complex<double> fd;
      int parts = Element::isComplex(kind) ? 2 : 1;
      for (int part = 0; part < parts; ++part) {
        std::complex<double> dir = part == 0 ? 1.0 : std::complex<double>(0, 1);
        double plus, minus;
        Element::set(probe[w], i, x + h * dir);
        if (!loss(probe, plus))
          return 1;
        Element::set(probe[w], i, x - h * dir);
        if (!loss(probe, minus))
          return 1;
        fd += dir * ((plus - minus) / (2 * h));
      }
      Element::set(probe[w], i, x);
      std::complex<double> g = Element::get(grad, i);
      double err = std::abs(g - fd);
      double rel = err / std::max(std::abs(fd), 1e-300);
      maxAbs = std::max(maxAbs, err);
      if (std::abs(fd) > atol)
        maxRel = std::max(maxRel, rel);
      ++checked;
      if (!(err <= atol + rtol * std::abs(fd))) {
        if (failures < 10)
          llvm::outs() << "  argument #" << w << " element " << i
                       << ": autodiff " << g.real()
                       << (Element::isComplex(kind)
                               ? (g.imag() < 0 ? "" : "+") +
                                     std::to_string(g.imag()) + "i"
                               : "")
                       << ", finite differences " << fd.real()
                       << (Element::isComplex(kind)
                               ? (fd.imag() < 0 ? "" : "+") +
                                     std::to_string(fd.imag()) + "i"
                               : "")
                       << "\n";
        ++failures;
      }
    }
  }
  llvm::outs() << "gradcheck @" << entry.name << ": " << checked
               << " elements, max abs error " << llvm::format("%.3g", maxAbs)
               << ", max rel error " << llvm::format("%.3g", maxRel) << ": "
               << (failures ? "FAIL" : "PASS") << "\n";
  return failures ? 1 : 0;
}
