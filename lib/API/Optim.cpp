//===- Optim.cpp - optimizers and schedulers of harp::optim ---------------===//

#include "harp/API/Optim.h"

#include "Node.h"

#include <cmath>
#include <string_view>

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
  detail::optim::StepScalars scalars;
  for (size_t i = 0; i < params.size(); ++i)
    if (NodePtr g = grad(params[i]))
      update(i, params[i], g, scalars);
}

void Optimizer::set_lr(double lr) {
  if (!(lr >= 0))
    throw Error(std::string(name) + ": lr must be >= 0, got " +
                std::to_string(lr));
  learningRate = lr;
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

void SGD::update(size_t i, const NodePtr &p, NodePtr g,
                 detail::optim::StepScalars &scalars) {
  NodePtr buffer = state[i].empty() ? nullptr : state[i][0];
  if (NodePtr made = detail::optim::sgdUpdate(p, g, buffer, options, scalars);
      made && !buffer)
    state[i].push_back(made);
}

//===----------------------------------------------------------------------===//
// Adam and AdamW
//===----------------------------------------------------------------------===//

Adam::Adam(ParamList params, const AdamOptions &options)
    : Adam("Adam", std::move(params), options, /*decoupled=*/false) {}

Adam::Adam(const char *name, ParamList params, const AdamOptions &options,
           bool decoupled)
    : Optimizer(name, std::move(params), options.learningRate),
      options(options), decoupled(decoupled), stepsOf(this->params.size(), 0) {
  if (options.epsilon < 0 || options.weightDecay < 0)
    throw Error(std::string(name) + ": eps and weight_decay must be >= 0");
  for (double b : {options.beta1, options.beta2})
    if (!(b >= 0 && b < 1))
      throw Error(std::string(name) + ": betas must be in [0, 1), got " +
                  std::to_string(options.beta1) + ", " +
                  std::to_string(options.beta2));
}

void Adam::update(size_t i, const NodePtr &p, NodePtr g,
                  detail::optim::StepScalars &scalars) {
  detail::optim::adamUpdate(p, g, state[i], ++stepsOf[i], options, decoupled,
                            scalars);
}

AdamW::AdamW(ParamList params, const AdamOptions &options)
    : Adam("AdamW", std::move(params), options, /*decoupled=*/true) {}

//===----------------------------------------------------------------------===//
// The update rules
//===----------------------------------------------------------------------===//

NodePtr harp::detail::optim::StepScalars::get(const NodePtr &like,
                                              const char *role, double value) {
  DType dtype = dtypeOf(like);
  for (const Entry &entry : made)
    if (entry.dtype == dtype && entry.value == value &&
        std::string_view(entry.role) == role)
      return entry.node;
  made.push_back({role, dtype, value, scalar(dtype, value)});
  return made.back().node;
}

namespace {

/// A zero leaf of the parameter's shape and dtype, where it lives.
NodePtr zerosLike(const NodePtr &p) {
  const std::vector<int64_t> &s = shapeOf(p);
  size_t n = static_cast<size_t>(numElements(s));
  if (dtypeOf(p) == DType::F64) {
    std::vector<double> zeros(n, 0.0);
    return fromData(DType::F64, s, zeros.data(), backendOf(p));
  }
  std::vector<float> zeros(n, 0.0f);
  return fromData(DType::F32, s, zeros.data(), backendOf(p));
}

/// Writes `value` into the leaf `dst`: deferred where it is computed, at
/// once where it is a leaf's values (a gradient copied into a new buffer).
void write(const NodePtr &dst, const NodePtr &value) {
  if (!isLeaf(value)) {
    deferOverwrite(dst, value);
    return;
  }
  const Array &data = realize(value);
  overwrite(dst, data.data());
}
} // namespace

NodePtr harp::detail::optim::sgdUpdate(const NodePtr &p, NodePtr g,
                                       NodePtr buffer,
                                       const harp::optim::SGDOptions &options,
                                       StepScalars &scalars) {
  auto arg = [&](const char *role, double value) {
    return scalars.get(p, role, value);
  };
  if (options.maximizeObjective)
    g = unary(UnaryOp::Neg, g);
  if (options.weightDecay)
    g = add(g, mul(p, arg("weight_decay", options.weightDecay)));
  if (double momentum = options.momentumFactor) {
    // The buffer's new value is read through its expression, not the
    // buffer (which would do the write first).
    NodePtr next = g;
    if (!buffer)
      buffer = zerosLike(p);
    else
      next = add(mul(buffer, arg("momentum", momentum)),
                 mul(g, arg("1 - dampening", 1 - options.dampeningFactor)));
    write(buffer, next);
    g = options.useNesterov ? add(g, mul(next, arg("momentum", momentum)))
                            : next;
  }
  write(p, sub(p, mul(g, arg("lr", options.learningRate))));
  return options.momentumFactor ? buffer : nullptr;
}

void harp::detail::optim::adamUpdate(const NodePtr &p, NodePtr g,
                                     std::vector<NodePtr> &state, int64_t step,
                                     const harp::optim::AdamOptions &options,
                                     bool decoupled, StepScalars &scalars) {
  auto arg = [&](const char *role, double value) {
    return scalars.get(p, role, value);
  };
  if (options.maximizeObjective)
    g = unary(UnaryOp::Neg, g);
  double lr = options.learningRate, wd = options.weightDecay;
  double b1 = options.beta1, b2 = options.beta2;
  // The value the update starts from: AdamW's decay is part of the one
  // write of p.
  NodePtr param = p;
  if (wd) {
    if (decoupled)
      param = mul(p, arg("1 - lr weight_decay", 1 - lr * wd));
    else
      g = add(g, mul(p, arg("weight_decay", wd)));
  }
  size_t count = options.useAmsgrad ? 3 : 2;
  while (state.size() < count)
    state.push_back(zerosLike(p));
  NodePtr m =
      add(mul(state[0], arg("beta1", b1)), mul(g, arg("1 - beta1", 1 - b1)));
  NodePtr v = add(mul(state[1], arg("beta2", b2)),
                  mul(mul(g, g), arg("1 - beta2", 1 - b2)));
  write(state[0], m);
  write(state[1], v);
  if (options.useAmsgrad) {
    v = binary(BinaryOp::Maximum, state[2], v);
    write(state[2], v);
  }
  double bias1 = 1 - std::pow(b1, double(step)),
         bias2 = 1 - std::pow(b2, double(step));
  NodePtr denom = add(mul(unary(UnaryOp::Sqrt, v),
                          arg("1 / sqrt(bias2)", 1 / std::sqrt(bias2))),
                      arg("eps", options.epsilon));
  write(p, sub(param, mul(div(m, denom), arg("lr / bias1", lr / bias1))));
}

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
