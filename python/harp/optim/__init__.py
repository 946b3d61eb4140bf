"""harp.optim: optimizers with torch.optim's names, arguments and update
rules, and learning-rate schedulers.

    opt = harp.optim.Adam([w, b], lr=1e-3)
    for x, y in batches:
        opt.zero_grad()
        loss(w, b, x, y).backward()
        opt.step()

Parameters are harp leaf tensors (requires_grad=True). Each update is built
from harp ops and written back into the parameter with `copy_`, so it runs
as a compiled harp kernel where the parameter lives. The hyperparameters and
the step count enter the kernels as Python numbers, which are arguments of
the compiled code: every distinct update graph (one per parameter shape and
option set) compiles once, however the learning rate and the bias
corrections change.
"""

from .. import _harp

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "Rprop", "LBFGS", "lr_scheduler"]


def _coupled_gradient(p, g, group):
    """The gradient a torch optimizer steps along: negated with `maximize`,
    with weight_decay * p added (coupled weight decay, not AdamW's)."""
    if group["maximize"]:
        g = -g
    if group["weight_decay"]:
        g = g + p * group["weight_decay"]
    return g


class Optimizer:
    """Parameter groups and per-parameter state, as torch.optim.Optimizer:
    `params` is an iterable of tensors or of dicts with a "params" list and
    per-group options overriding `defaults`."""

    def __init__(self, params, defaults):
        params = list(params)
        if not params:
            raise ValueError("%s: got an empty parameter list" % type(self).__name__)
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}
        for group in params:
            self.add_param_group(group)

    def add_param_group(self, group):
        """Adds a group (a dict with "params" and optional options)."""
        group = dict(group)
        tensors = group["params"]
        group["params"] = [tensors] if isinstance(tensors, _harp.Tensor) else list(tensors)
        for p in group["params"]:
            if not isinstance(p, _harp.Tensor):
                raise TypeError("%s: parameters must be harp tensors, got %s"
                                % (type(self).__name__, type(p).__name__))
            if not p.requires_grad:
                raise ValueError("%s: a parameter of shape %s does not require a "
                                 "gradient" % (type(self).__name__, list(p.shape)))
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Forgets every parameter's accumulated gradient."""
        for group in self.param_groups:
            for p in group["params"]:
                p.zero_grad()

    def _state(self, p):
        return self.state.setdefault(id(p), {})

    def step(self):
        """One update of every parameter that has a gradient."""
        # The step's numbers, shared by the C++ rules' updates (one argument
        # of the step's compiled call per number, not per parameter).
        self._scalars = _harp.optim.StepScalars()
        try:
            for group in self.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is not None:
                        self._update(p, g, group, self._state(p))
        finally:
            self._scalars = None

    def state_dict(self):
        """The options of each group and each parameter's state, as NumPy
        arrays and numbers (parameters by their index, as torch does)."""
        index = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({k: v for k, v in group.items() if k != "params"})
            groups[-1]["params"] = ids
        state = {index[key]: {k: (v.numpy().copy() if isinstance(v, _harp.Tensor) else v)
                              for k, v in entry.items()}
                 for key, entry in self.state.items() if key in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restores what state_dict() returned (the same parameters, in
        the same order)."""
        params = [p for group in self.param_groups for p in group["params"]]
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for i, entry in state_dict["state"].items():
            p = params[int(i)]
            self.state[id(p)] = {
                k: (_leaf_like(p, v) if hasattr(v, "shape") and v.shape == p.shape else v)
                for k, v in entry.items()}

    def _update(self, p, g, group, state):
        raise NotImplementedError


def _leaf_like(p, values):
    """A state tensor: a leaf holding `values` (NumPy), next to `p`."""
    import numpy as np
    return _harp.from_numpy(np.require(values, p.numpy().dtype, "C"),
                            p.device)


def _zeros_like(p):
    import numpy as np
    return _leaf_like(p, np.zeros(p.shape, dtype=p.numpy().dtype))


class SGD(Optimizer):
    """Stochastic gradient descent with momentum (torch.optim.SGD):
    g += weight_decay p; buf = momentum buf + (1 - dampening) g (buf = g at
    the first step); g = g + momentum buf with nesterov, else buf;
    p -= lr g (+= with maximize)."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, maximize=False):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("SGD: lr, momentum and weight_decay must be >= 0, got "
                             "%r, %r, %r" % (lr, momentum, weight_decay))
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, p, g, group, state):
        # harp::optim's rule (one implementation with C++), written with
        # deferred writes: every parameter's update is one compiled call.
        buf = _harp.optim.sgd_update(
            p, g, state.get("momentum_buffer"), group["lr"], group["momentum"],
            group["dampening"], group["weight_decay"], group["nesterov"],
            group["maximize"], getattr(self, "_scalars", None))
        if buf is not None:
            state["momentum_buffer"] = buf


class Adam(Optimizer):
    """Adam (torch.optim.Adam): m = b1 m + (1 - b1) g,
    v = b2 v + (1 - b2) g^2, p -= lr / (1 - b1^t) m / (sqrt(v) /
    sqrt(1 - b2^t) + eps); weight_decay adds weight_decay p to g; amsgrad
    uses the running maximum of v."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, amsgrad=False, maximize=False):
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError("%s: lr, eps and weight_decay must be >= 0"
                             % type(self).__name__)
        if not all(0 <= b < 1 for b in betas):
            raise ValueError("%s: betas must be in [0, 1), got %r"
                             % (type(self).__name__, betas))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, p, g, group, state):
        # harp::optim's rule (one implementation with C++).
        if not state:
            state["step"] = 0
        state["step"] += 1
        names = ["exp_avg", "exp_avg_sq"] + (
            ["max_exp_avg_sq"] if group["amsgrad"] else [])
        b1, b2 = group["betas"]
        made = _harp.optim.adam_update(
            p, g, [state[n] for n in names if n in state], int(state["step"]),
            group["lr"], b1, b2, group["eps"], group["weight_decay"],
            group["amsgrad"], group["maximize"], self._decoupled,
            getattr(self, "_scalars", None))
        state.update(zip(names, made))


class AdamW(Adam):
    """Adam with decoupled weight decay (torch.optim.AdamW): p *= 1 - lr
    weight_decay before the Adam step."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2, amsgrad=False, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)


def _check_nonnegative(optimizer, **values):
    for name, value in values.items():
        if not value >= 0:
            raise ValueError("%s: %s must be >= 0, got %r" % (optimizer, name, value))


class RMSprop(Optimizer):
    """RMSprop (torch.optim.RMSprop): g += weight_decay p;
    v = alpha v + (1 - alpha) g^2; with centered, m = alpha m + (1 - alpha) g
    and v - m^2 in place of v; d = sqrt(v) + eps; with momentum,
    buf = momentum buf + g / d and p -= lr buf, else p -= lr g / d
    (+= with maximize). `foreach` is accepted and ignored."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0,
                 momentum=0.0, centered=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_nonnegative("RMSprop", lr=lr, eps=eps, momentum=momentum,
                           weight_decay=weight_decay, alpha=alpha)
        if differentiable:
            raise ValueError("RMSprop: harp's optimizers are not differentiable "
                             "(differentiable=True)")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _update(self, p, g, group, state):
        g = _coupled_gradient(p, g, group)
        if not state:
            state["step"] = 0
            state["square_avg"] = _zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = _zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(p)
        state["step"] += 1
        alpha, momentum = group["alpha"], group["momentum"]
        # The new values are used where the state would be read back (see
        # SGD._update).
        square_avg = state["square_avg"] * alpha + g * g * (1 - alpha)
        state["square_avg"].copy_(square_avg)
        if group["centered"]:
            if "grad_avg" not in state:
                state["grad_avg"] = _zeros_like(p)
            grad_avg = state["grad_avg"] * alpha + g * (1 - alpha)
            state["grad_avg"].copy_(grad_avg)
            avg = (square_avg - grad_avg * grad_avg).sqrt() + group["eps"]
        else:
            avg = square_avg.sqrt() + group["eps"]
        if momentum > 0:
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = _zeros_like(p)
            buf = state["momentum_buffer"] * momentum + g / avg
            state["momentum_buffer"].copy_(buf)
            p.copy_(p - buf * group["lr"])
        else:
            p.copy_(p - g / avg * group["lr"])


class Adagrad(Optimizer):
    """Adagrad (torch.optim.Adagrad): g += weight_decay p; sum += g^2;
    p -= lr / (1 + (step - 1) lr_decay) g / (sqrt(sum) + eps) (+= with
    maximize). Every parameter's state is made when the optimizer is (sum
    starts at initial_accumulator_value), as torch's. `foreach` is
    accepted and ignored."""

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, foreach=None, *,
                 maximize=False):
        _check_nonnegative("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize))
        for group in self.param_groups:
            for p in group["params"]:
                self._initialize(p, group, self._state(p))

    @staticmethod
    def _initialize(p, group, state):
        import numpy as np
        state["step"] = 0
        state["sum"] = _leaf_like(p, np.full(p.shape, group["initial_accumulator_value"]))

    def _update(self, p, g, group, state):
        if not state:  # a parameter of a group added later
            self._initialize(p, group, state)
        state["step"] += 1
        g = _coupled_gradient(p, g, group)
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        total = state["sum"] + g * g
        state["sum"].copy_(total)
        p.copy_(p - g / (total.sqrt() + group["eps"]) * clr)


class Adadelta(Optimizer):
    """Adadelta (torch.optim.Adadelta): g += weight_decay p;
    v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) g;
    u = rho u + (1 - rho) delta^2; p -= lr delta (+= with maximize).
    `foreach` is accepted and ignored."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0,
                 foreach=None, *, maximize=False):
        _check_nonnegative("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError("Adadelta: rho must be in [0, 1], got %r" % (rho,))
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, foreach=foreach))

    def _update(self, p, g, group, state):
        g = _coupled_gradient(p, g, group)
        if not state:
            state["step"] = 0
            state["square_avg"] = _zeros_like(p)
            state["acc_delta"] = _zeros_like(p)
        state["step"] += 1
        rho, eps = group["rho"], group["eps"]
        square_avg = state["square_avg"] * rho + g * g * (1 - rho)
        delta = (state["acc_delta"] + eps).sqrt() / (square_avg + eps).sqrt() * g
        acc_delta = state["acc_delta"] * rho + delta * delta * (1 - rho)
        state["square_avg"].copy_(square_avg)
        state["acc_delta"].copy_(acc_delta)
        p.copy_(p - delta * group["lr"])


def _check_betas(optimizer, betas):
    if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
        raise ValueError("%s: betas must be in [0, 1), got %r" % (optimizer, tuple(betas)))


class Adamax(Optimizer):
    """Adamax (torch.optim.Adamax): g += weight_decay p; m = beta1 m +
    (1 - beta1) g; u = max(beta2 u, |g| + eps); p -= lr / (1 - beta1^t)
    m / u (+= with maximize). `foreach` is accepted and ignored."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 foreach=None, *, maximize=False):
        _check_nonnegative("Adamax", lr=lr, eps=eps, weight_decay=weight_decay)
        _check_betas("Adamax", betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _update(self, p, g, group, state):
        g = _coupled_gradient(p, g, group)
        if not state:
            state["step"] = 0
            state["exp_avg"] = _zeros_like(p)
            state["exp_inf"] = _zeros_like(p)
        state["step"] += 1
        beta1, beta2 = group["betas"]
        exp_avg = state["exp_avg"] * beta1 + g * (1 - beta1)
        exp_inf = (state["exp_inf"] * beta2).maximum(g.abs() + group["eps"])
        state["exp_avg"].copy_(exp_avg)
        state["exp_inf"].copy_(exp_inf)
        clr = group["lr"] / (1 - beta1 ** state["step"])
        p.copy_(p - exp_avg / exp_inf * clr)


class NAdam(Optimizer):
    """NAdam (torch.optim.NAdam): Adam with Nesterov momentum whose factor
    mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2) warms up; g +=
    weight_decay p. `foreach` is accepted and ignored."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, foreach=None):
        _check_nonnegative("NAdam", lr=lr, eps=eps, weight_decay=weight_decay,
                           momentum_decay=momentum_decay)
        _check_betas("NAdam", betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      foreach=foreach))

    def _update(self, p, g, group, state):
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        if not state:
            state["step"] = 0
            state["mu_product"] = 1.0
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        state["step"] += 1
        t = state["step"]
        beta1, beta2 = group["betas"]
        decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * decay))
        state["mu_product"] *= mu
        mu_product = state["mu_product"]
        # torch >= 2.0's mu_product_next (1.13 multiplied mu in twice).
        exp_avg = state["exp_avg"] * beta1 + g * (1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] * beta2 + g * g * (1 - beta2)
        state["exp_avg"].copy_(exp_avg)
        state["exp_avg_sq"].copy_(exp_avg_sq)
        denom = (exp_avg_sq / (1 - beta2 ** t)).sqrt() + group["eps"]
        lr = group["lr"]
        p.copy_(p - g / denom * (lr * (1 - mu) / (1 - mu_product))
                - exp_avg / denom * (lr * mu_next / (1 - mu_product * mu_next)))


class RAdam(Optimizer):
    """RAdam (torch.optim.RAdam): Adam whose adaptive step is rectified by
    the variance of its estimate, plain momentum SGD while the estimate has
    5 or fewer degrees of freedom; g += weight_decay p. `foreach` is
    accepted and ignored."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 foreach=None):
        _check_nonnegative("RAdam", lr=lr, eps=eps, weight_decay=weight_decay)
        _check_betas("RAdam", betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach))

    def _update(self, p, g, group, state):
        import math
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        state["step"] += 1
        t = state["step"]
        beta1, beta2 = group["betas"]
        exp_avg = state["exp_avg"] * beta1 + g * (1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] * beta2 + g * g * (1 - beta2)
        state["exp_avg"].copy_(exp_avg)
        state["exp_avg_sq"].copy_(exp_avg_sq)
        correction1, correction2 = 1 - beta1 ** t, 1 - beta2 ** t
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * beta2 ** t / correction2
        lr = group["lr"]
        # One update graph for both phases (the coefficients are arguments):
        # the adaptive term is weighed by 0 while the variance is not
        # rectified, the plain term by 0 once it is.
        rectified, plain = 0.0, lr / correction1
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                             / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            rectified, plain = lr * rect / correction1 * math.sqrt(correction2), 0.0
        adaptive = (exp_avg_sq.sqrt() + group["eps"]).reciprocal()
        p.copy_(p - exp_avg * (adaptive * rectified + plain))


class Rprop(Optimizer):
    """Rprop (torch.optim.Rprop): each element's step size grows by
    etas[1] while its gradient keeps its sign and shrinks by etas[0] when
    the sign flips (that step skipped), within step_sizes; p -= sign(g)
    step (+= with maximize). `foreach` is accepted and ignored."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), foreach=None,
                 *, maximize=False):
        _check_nonnegative("Rprop", lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError("Rprop: etas must satisfy 0 < etaminus < 1 < etaplus, got %r"
                             % (tuple(etas),))
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      foreach=foreach, maximize=maximize))

    def _update(self, p, g, group, state):
        import numpy as np
        from .. import full_like, where, zeros_like
        if group["maximize"]:
            g = -g
        if not state:
            state["step"] = 0
            state["prev"] = _zeros_like(p)
            state["step_size"] = _leaf_like(p, np.full(p.shape, group["lr"]))
        state["step"] += 1
        minus, plus = group["etas"]
        low, high = group["step_sizes"]
        product = g * state["prev"]
        # The factors in the parameter's dtype (a bare number would be f32).
        factor = where(product > 0, full_like(product, plus),
                       where(product < 0, full_like(product, minus), full_like(product, 1.0)))
        step_size = (state["step_size"] * factor).clamp(low, high)
        g = where(product < 0, zeros_like(g), g)
        state["step_size"].copy_(step_size)
        state["prev"].copy_(g)
        p.copy_(p - g.sign() * step_size)


from . import lr_scheduler  # noqa: E402
from .lbfgs import LBFGS  # noqa: E402
