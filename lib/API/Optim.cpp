//===- Optim.cpp - optimizers and schedulers of harp::optim ---------------===//

#include "harp/API/Optim.h"

#include "Node.h"

#include <cmath>

using namespace harp;
using namespace harp::detail;
using namespace harp::optim;

namespace {
NodePtr add(NodePtr a, NodePtr b) { return binary(BinaryOp::Add, a, b); }
NodePtr sub(NodePtr a, NodePtr b) { return binary(BinaryOp::Sub, a, b); }
NodePtr mul(NodePtr a, NodePtr b) { return binary(BinaryOp::Mul, a, b); }
NodePtr div(NodePtr a, NodePtr b) { return binary(BinaryOp::Div, a, b); }
} // namespace

Optimizer::~Optimizer() = default;

Optimizer::Optimizer(const char *name, ParamList given, double lr)
    : name(name), learningRate(lr) {
  if (given.empty())
    throw Error(std::string(name) + ": got an empty parameter list");
  if (!(lr >= 0))
    throw Error(std::string(name) + ": lr must be >= 0, got " +
                std::to_string(lr));
  for (const Param &p : given) {
    if (!isFloat(dtypeOf(p.node)))
      throw Error(std::string(name) +
                  ": parameters must be float tensors, "
                  "got " +
                  dtypeName(dtypeOf(p.node)) + " " + shapeStr(shapeOf(p.node)));
    if (!requiresGrad(p.node))
      throw Error(std::string(name) + ": a parameter of shape " +
                  shapeStr(shapeOf(p.node)) + " does not require a gradient");
    params.push_back(p.node);
  }
  state.resize(params.size());
}

void Optimizer::zero_grad() {
  for (const NodePtr &p : params)
    zeroGrad(p);
}

void Optimizer::step() {
  ++stepCount;
  for (size_t i = 0; i < params.size(); ++i)
    if (NodePtr g = grad(params[i]))
      update(i, params[i], g);
}

void Optimizer::set_lr(double lr) {
  if (!(lr >= 0))
    throw Error(std::string(name) + ": lr must be >= 0, got " +
                std::to_string(lr));
  learningRate = lr;
}

NodePtr Optimizer::arg(const NodePtr &like, double value) const {
  return scalar(dtypeOf(like), value);
}

NodePtr Optimizer::zerosLike(const NodePtr &p) const {
  const std::vector<int64_t> &s = shapeOf(p);
  size_t n = static_cast<size_t>(numElements(s));
  if (dtypeOf(p) == DType::F64) {
    std::vector<double> zeros(n, 0.0);
    return fromData(DType::F64, s, zeros.data(), backendOf(p));
  }
  std::vector<float> zeros(n, 0.0f);
  return fromData(DType::F32, s, zeros.data(), backendOf(p));
}

void Optimizer::assign(const NodePtr &dst, const NodePtr &value) {
  const Array &data = realize(value);
  overwrite(dst, data.data());
}

//===----------------------------------------------------------------------===//
// SGD
//===----------------------------------------------------------------------===//

SGD::SGD(ParamList params, const SGDOptions &options)
    : Optimizer("SGD", std::move(params), options.learningRate),
      options(options) {
  if (options.momentumFactor < 0 || options.weightDecay < 0)
    throw Error("SGD: momentum and weight_decay must be >= 0, got " +
                std::to_string(options.momentumFactor) + " and " +
                std::to_string(options.weightDecay));
  if (options.useNesterov &&
      (options.momentumFactor <= 0 || options.dampeningFactor != 0))
    throw Error("SGD: nesterov needs momentum > 0 and dampening 0");
}

void SGD::update(size_t i, const NodePtr &p, NodePtr g) {
  if (options.maximizeObjective)
    g = unary(UnaryOp::Neg, g);
  if (options.weightDecay)
    g = add(g, mul(p, arg(p, options.weightDecay)));
  if (double momentum = options.momentumFactor) {
    if (state[i].empty()) {
      state[i].push_back(zerosLike(p));
      assign(state[i][0], g);
    } else {
      assign(state[i][0], add(mul(state[i][0], arg(p, momentum)),
                              mul(g, arg(p, 1 - options.dampeningFactor))));
    }
    const NodePtr &buf = state[i][0];
    g = options.useNesterov ? add(g, mul(buf, arg(p, momentum))) : buf;
  }
  assign(p, sub(p, mul(g, arg(p, learningRate))));
}

//===----------------------------------------------------------------------===//
// Adam and AdamW
//===----------------------------------------------------------------------===//

Adam::Adam(ParamList params, const AdamOptions &options)
    : Adam("Adam", std::move(params), options, /*decoupled=*/false) {}

Adam::Adam(const char *name, ParamList params, const AdamOptions &options,
           bool decoupled)
    : Optimizer(name, std::move(params), options.learningRate),
      options(options), decoupled(decoupled) {
  if (options.epsilon < 0 || options.weightDecay < 0)
    throw Error(std::string(name) + ": eps and weight_decay must be >= 0");
  for (double b : {options.beta1, options.beta2})
    if (!(b >= 0 && b < 1))
      throw Error(std::string(name) + ": betas must be in [0, 1), got " +
                  std::to_string(options.beta1) + ", " +
                  std::to_string(options.beta2));
}

void Adam::update(size_t i, const NodePtr &p, NodePtr g) {
  if (options.maximizeObjective)
    g = unary(UnaryOp::Neg, g);
  double lr = learningRate, wd = options.weightDecay;
  double b1 = options.beta1, b2 = options.beta2;
  if (wd) {
    if (decoupled)
      assign(p, mul(p, arg(p, 1 - lr * wd)));
    else
      g = add(g, mul(p, arg(p, wd)));
  }
  std::vector<NodePtr> &s = state[i];
  if (s.empty()) {
    // exp_avg, exp_avg_sq and, with amsgrad, max_exp_avg_sq.
    s.push_back(zerosLike(p));
    s.push_back(zerosLike(p));
    if (options.useAmsgrad)
      s.push_back(zerosLike(p));
    stepsOf.resize(params.size(), 0);
  }
  int64_t t = ++stepsOf[i];
  const NodePtr &m = s[0];
  NodePtr v = s[1];
  assign(m, add(mul(m, arg(p, b1)), mul(g, arg(p, 1 - b1))));
  assign(v, add(mul(v, arg(p, b2)), mul(mul(g, g), arg(p, 1 - b2))));
  if (options.useAmsgrad) {
    assign(s[2], binary(BinaryOp::Maximum, s[2], v));
    v = s[2];
  }
  double bias1 = 1 - std::pow(b1, double(t)),
         bias2 = 1 - std::pow(b2, double(t));
  NodePtr denom =
      add(mul(unary(UnaryOp::Sqrt, v), arg(p, 1 / std::sqrt(bias2))),
          arg(p, options.epsilon));
  assign(p, sub(p, mul(div(m, denom), arg(p, lr / bias1))));
}

AdamW::AdamW(ParamList params, const AdamOptions &options)
    : Adam("AdamW", std::move(params), options, /*decoupled=*/true) {}

//===----------------------------------------------------------------------===//
// Schedulers
//===----------------------------------------------------------------------===//

StepLR::StepLR(Optimizer &optimizer, int64_t stepSize, double gamma)
    : optimizer(optimizer), stepSize(stepSize), gamma(gamma),
      baseLr(optimizer.lr()) {
  if (stepSize < 1)
    throw Error("StepLR: step_size must be positive, got " +
                std::to_string(stepSize));
}

void StepLR::step() {
  ++epoch;
  optimizer.set_lr(baseLr * std::pow(gamma, double(epoch / stepSize)));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer &optimizer, int64_t tMax,
                                     double etaMin)
    : optimizer(optimizer), tMax(tMax), etaMin(etaMin), baseLr(optimizer.lr()) {
  if (tMax < 1)
    throw Error("CosineAnnealingLR: T_max must be positive, got " +
                std::to_string(tMax));
}

void CosineAnnealingLR::step() {
  ++epoch;
  optimizer.set_lr(etaMin +
                   (baseLr - etaMin) *
                       (1 + std::cos(M_PI * double(epoch) / double(tMax))) / 2);
}
