//===- OptimBindings.cpp - harp::optim's update rules for harp.optim ------===//
//
// _harp.optim: the C++ update rules of SGD and Adam/AdamW, one parameter per
// call. harp.optim keeps torch.optim's surface (parameter groups, state,
// state_dict) in Python and calls these, so Python and C++ share one
// implementation of each rule.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "harp/API/Optim.h"

#include <optional>

namespace harp::python {

void bindOptim(py::module_ &parent) {
  py::module_ m = parent.def_submodule(
      "optim", "harp::optim's update rules (harp.optim is the interface).");
  py::class_<detail::optim::StepScalars>(
      m, "StepScalars",
      "The numbers of one optimizer step, one 0-d argument per role, dtype "
      "and value shared by the step's updates (pass one to every update of "
      "a step).")
      .def(py::init<>());
  // The step's shared numbers, or numbers of this update's own.
  auto scalarsOf = [](py::object given,
                      std::optional<detail::optim::StepScalars> &own)
      -> detail::optim::StepScalars & {
    if (!given.is_none())
      return given.cast<detail::optim::StepScalars &>();
    return own.emplace();
  };
  m.def(
      "sgd_update",
      [scalarsOf](const NodePtr &p, const NodePtr &g, const py::object &buffer,
                  double lr, double momentum, double dampening,
                  double weightDecay, bool nesterov, bool maximize,
                  py::object scalars) -> py::object {
        std::optional<detail::optim::StepScalars> own;
        optim::SGDOptions options(lr);
        options.momentum(momentum)
            .dampening(dampening)
            .weight_decay(weightDecay)
            .nesterov(nesterov)
            .maximize(maximize);
        NodePtr made = detail::optim::sgdUpdate(
            p, g, buffer.is_none() ? nullptr : buffer.cast<NodePtr>(), options,
            scalarsOf(scalars, own));
        return made ? py::cast(made) : py::none();
      },
      py::arg("param"), py::arg("grad"), py::arg("momentum_buffer"),
      py::arg("lr"), py::arg("momentum"), py::arg("dampening"),
      py::arg("weight_decay"), py::arg("nesterov"), py::arg("maximize"),
      py::arg("scalars") = py::none(),
      "One SGD update of `param` (written with a deferred write); returns "
      "the momentum buffer (made at the first step), None without momentum. "
      "`scalars`: the step's StepScalars, shared by its updates.");
  m.def(
      "adam_update",
      [scalarsOf](const NodePtr &p, const NodePtr &g,
                  std::vector<NodePtr> state, int64_t step, double lr,
                  double beta1, double beta2, double eps, double weightDecay,
                  bool amsgrad, bool maximize, bool decoupled,
                  py::object scalars) {
        std::optional<detail::optim::StepScalars> own;
        optim::AdamOptions options(lr);
        options.betas(beta1, beta2)
            .eps(eps)
            .weight_decay(weightDecay)
            .amsgrad(amsgrad)
            .maximize(maximize);
        detail::optim::adamUpdate(p, g, state, step, options, decoupled,
                                  scalarsOf(scalars, own));
        return state;
      },
      py::arg("param"), py::arg("grad"), py::arg("state"), py::arg("step"),
      py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"),
      py::arg("weight_decay"), py::arg("amsgrad"), py::arg("maximize"),
      py::arg("decoupled"), py::arg("scalars") = py::none(),
      "One Adam update of `param` (AdamW's with `decoupled`), written with "
      "deferred writes; `state` is [exp_avg, exp_avg_sq(, max_exp_avg_sq)], "
      "made where empty, and is returned; `step` counts this update. "
      "`scalars`: the step's StepScalars, shared by its updates.");
}

} // namespace harp::python
