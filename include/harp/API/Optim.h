//===- Optim.h - optimizers and schedulers of harp::optim -------*- C++ -*-===//
//
// torch.optim's SGD, Adam and AdamW with their update rules, and the StepLR
// and CosineAnnealingLR schedules:
//
//   optim::Adam opt({w, b}, optim::AdamOptions(1e-3).weight_decay(1e-4));
//   for (...) {
//     opt.zero_grad();
//     loss(w, b).backward();
//     opt.step();
//   }
//
// Parameters are float leaves that require a gradient. Each update is built
// from harp ops and written back into its parameter with a deferred write:
// the updates of every parameter run as one compiled call where the
// parameters live, when one is next read (the next step's forward). The
// learning rate, the other hyperparameters and the bias corrections are
// arguments of that code, so it compiles once however they change.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_OPTIM_H
#define HARP_API_OPTIM_H

#include "harp/API/Tensor.h"

namespace harp {
namespace detail::optim {
class StepScalars;
} // namespace detail::optim

namespace optim {

/// A parameter of any dtype and rank (the optimizer checks it is a float
/// leaf that requires a gradient).
struct Param {
  template <typename T, typename D>
  Param(const Tensor<T, D> &t) : node(t.graphNode()) {}
  detail::NodePtr node;
};

/// The parameters an optimizer updates: a braced list of tensors, or a
/// module's parameters() (a vector of tensors).
struct ParamList : std::vector<Param> {
  ParamList(std::initializer_list<Param> params) : std::vector<Param>(params) {}
  ParamList(std::vector<Param> params)
      : std::vector<Param>(std::move(params)) {}
  template <typename T, typename D>
  ParamList(const std::vector<Tensor<T, D>> &tensors)
      : std::vector<Param>(tensors.begin(), tensors.end()) {}
};

class Optimizer {
public:
  virtual ~Optimizer();
  /// Forgets every parameter's accumulated gradient.
  void zero_grad();
  /// One update of every parameter that has a gradient.
  void step();
  double lr() const { return learningRate; }
  void set_lr(double lr);
  /// How many times step() has run.
  int64_t steps() const { return stepCount; }

protected:
  Optimizer(const char *name, ParamList params, double lr);
  /// Updates parameter `i` from its gradient `g`, its numbers from
  /// `scalars` (shared by the step's updates).
  virtual void update(size_t i, const detail::NodePtr &p, detail::NodePtr g,
                      detail::optim::StepScalars &scalars) = 0;

  const char *name;
  std::vector<detail::NodePtr> params;
  /// Per-parameter state tensors (momentum, moments), made at first use.
  std::vector<std::vector<detail::NodePtr>> state;
  double learningRate;
  int64_t stepCount = 0;
};

struct SGDOptions {
  explicit SGDOptions(double lr) : learningRate(lr) {}
  double learningRate, momentumFactor = 0, dampeningFactor = 0, weightDecay = 0;
  bool useNesterov = false, maximizeObjective = false;
  SGDOptions &momentum(double v) { return momentumFactor = v, *this; }
  SGDOptions &dampening(double v) { return dampeningFactor = v, *this; }
  SGDOptions &weight_decay(double v) { return weightDecay = v, *this; }
  SGDOptions &nesterov(bool v) { return useNesterov = v, *this; }
  SGDOptions &maximize(bool v) { return maximizeObjective = v, *this; }
};

/// Stochastic gradient descent (torch.optim.SGD): g += weight_decay p;
/// buf = momentum buf + (1 - dampening) g (buf = g at the first step);
/// g = g + momentum buf with nesterov, else buf; p -= lr g.
class SGD : public Optimizer {
public:
  SGD(ParamList params, const SGDOptions &options);

private:
  void update(size_t i, const detail::NodePtr &p, detail::NodePtr g,
              detail::optim::StepScalars &scalars) override;
  SGDOptions options;
};

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : learningRate(lr) {}
  double learningRate, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8,
                       weightDecay = 0;
  bool useAmsgrad = false, maximizeObjective = false;
  AdamOptions &betas(double b1, double b2) {
    return beta1 = b1, beta2 = b2, *this;
  }
  AdamOptions &eps(double v) { return epsilon = v, *this; }
  AdamOptions &weight_decay(double v) { return weightDecay = v, *this; }
  AdamOptions &amsgrad(bool v) { return useAmsgrad = v, *this; }
  AdamOptions &maximize(bool v) { return maximizeObjective = v, *this; }
};

/// Adam (torch.optim.Adam): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
/// p -= lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps); weight_decay
/// adds weight_decay p to g; amsgrad uses the running maximum of v.
class Adam : public Optimizer {
public:
  Adam(ParamList params, const AdamOptions &options = AdamOptions());

protected:
  Adam(const char *name, ParamList params, const AdamOptions &options,
       bool decoupled);

private:
  void update(size_t i, const detail::NodePtr &p, detail::NodePtr g,
              detail::optim::StepScalars &scalars) override;
  AdamOptions options;
  bool decoupled;
  /// Each parameter's own step count (the bias corrections').
  std::vector<int64_t> stepsOf;
};

/// Adam with decoupled weight decay (torch.optim.AdamW): p *= 1 - lr
/// weight_decay before the Adam step; weight_decay defaults to 0.01.
class AdamW : public Adam {
public:
  AdamW(ParamList params,
        const AdamOptions &options = AdamOptions().weight_decay(1e-2));
};

/// Multiplies the learning rate by gamma every step_size calls of step()
/// (torch.optim.lr_scheduler.StepLR).
class StepLR {
public:
  StepLR(Optimizer &optimizer, int64_t stepSize, double gamma = 0.1);
  void step();
  int64_t last_epoch() const { return epoch; }

private:
  Optimizer &optimizer;
  int64_t stepSize, epoch = 0;
  double gamma, baseLr;
};

/// eta_min + (base_lr - eta_min) (1 + cos(pi t / T_max)) / 2 after t calls
/// of step() (torch.optim.lr_scheduler.CosineAnnealingLR, closed form).
class CosineAnnealingLR {
public:
  CosineAnnealingLR(Optimizer &optimizer, int64_t tMax, double etaMin = 0.0);
  void step();
  int64_t last_epoch() const { return epoch; }

private:
  Optimizer &optimizer;
  int64_t tMax, epoch = 0;
  double etaMin, baseLr;
};

} // namespace optim

namespace detail {
namespace optim {
/// The update rules of harp::optim's SGD and Adam, and of harp.optim's
/// (Python): one implementation. Each writes the new values of the
/// parameter and its state with deferred writes (deferOverwrite), reading
/// every state tensor it writes through its new value's expression, so a
/// step's updates of all parameters are one compiled call, done when a
/// parameter is next read. Numbers are run-time arguments of that call.

/// The numbers of one optimizer step (learning rate, betas, bias
/// corrections), one 0-d argument per role, dtype and value shared by every
/// parameter's update: the step's compiled call takes a handful of scalar
/// arguments instead of one per parameter and number (28 parameters of a
/// GPT-style model with Adam: 8 where there were 224), and its graph is
/// that much smaller to build and plan. Keyed by role as well as value, so
/// numbers that happen to be equal in one step (a bias correction meeting
/// a constant) stay distinct, and the graph keeps its structure.
class StepScalars {
public:
  /// The 0-d leaf of `value` in `like`'s dtype for `role` (a string
  /// literal).
  NodePtr get(const NodePtr &like, const char *role, double value);

private:
  struct Entry {
    const char *role;
    DType dtype;
    double value;
    NodePtr node;
  };
  std::vector<Entry> made;
};

/// One SGD update of `p` from its gradient `g`: returns the momentum
/// buffer, made (a leaf like `p`) where `buffer` is null at the first step
/// with momentum; null without momentum. Numbers come from `scalars`,
/// shared with the step's other updates.
NodePtr sgdUpdate(const NodePtr &p, NodePtr g, NodePtr buffer,
                  const harp::optim::SGDOptions &options, StepScalars &scalars);
/// One Adam update of `p` (AdamW's with `decoupled`): `state` holds
/// exp_avg, exp_avg_sq and, with amsgrad, max_exp_avg_sq (leaves like `p`),
/// made where it is empty; `step` counts this update (1 at the first).
void adamUpdate(const NodePtr &p, NodePtr g, std::vector<NodePtr> &state,
                int64_t step, const harp::optim::AdamOptions &options,
                bool decoupled, StepScalars &scalars);
} // namespace optim
} // namespace detail
} // namespace harp

#endif // HARP_API_OPTIM_H
