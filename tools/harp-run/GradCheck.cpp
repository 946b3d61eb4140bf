//===- GradCheck.cpp - harp-run --gradcheck -------------------------------===//
//
// The reusable gradient check: every derivative rule is tested by comparing
// harp-autodiff's gradient with central finite differences of the very
// function harp compiles (not of a separate reference).
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "harp/Dialect/Harp/IR/HarpBuilders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
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

  // The function and its gradient, through harp.autodiff, built next to it
  // in the JIT's context.
  std::vector<TensorType> gradTypes;
  for (int64_t w : wrt)
    gradTypes.push_back(entry.inputs[w]);
  size_t nOut = entry.results.size();
  llvm::Expected<std::shared_ptr<Executable>> exe =
      [&]() -> llvm::Expected<std::shared_ptr<Executable>> {
    std::lock_guard<std::recursive_mutex> lock(Jit::sharedContextMutex());
    mlir::MLIRContext &context = Jit::sharedContext();
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
      os << d << "\n";
      return mlir::success();
    });
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    if (!module)
      return llvm::createStringError(diagnostics);
    auto callee = module->lookupSymbol<mlir::func::FuncOp>(entry.name);
    if (!callee)
      return llvm::createStringError("no function @" + entry.name);
    mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(module->getBody());
    mlir::harp::buildGradientFunction(b, callee.getLoc(), "__harp_gradcheck",
                                      callee, wrt, /*seeded=*/true);
    return jit.compile(*module);
  }();
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
