"""harp.optim's RMSprop, Adagrad and Adadelta and the learning-rate
schedulers LambdaLR, MultiplicativeLR, ExponentialLR, MultiStepLR,
LinearLR, OneCycleLR and ReduceLROnPlateau against torch 1.13: the same
problem in float64 from the same values, parameters equal to 1e-9 over
the steps, every distinct update graph compiled once, torch's state_dict
layout, and the rates (and momenta) step by step."""

import math
import warnings

import numpy as np
import pytest
import torch

import harp
from harp.optim import lr_scheduler as hsched
from torch.optim import lr_scheduler as tsched

STEPS = 12


def problem():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((7, 4)), "y": rng.standard_normal((7, 2)),
            "w": rng.standard_normal((4, 2)) * 0.5, "b": rng.standard_normal(2) * 0.1}


def run(lib, make, steps=STEPS, schedule=None):
    """Parameters after `steps` steps, and the compile counts per step."""
    data = problem()
    if lib is harp:
        x, y = harp.tensor(data["x"]), harp.tensor(data["y"])
        params = [harp.tensor(data[k], requires_grad=True) for k in ("w", "b")]
    else:
        x, y = torch.tensor(data["x"]), torch.tensor(data["y"])
        params = [torch.tensor(data[k], requires_grad=True) for k in ("w", "b")]
    opt = make(params)
    sched = schedule(opt) if schedule else None
    counts = []
    for _ in range(steps):
        opt.zero_grad()
        r = (x @ params[0] + params[1]).tanh() - y
        (r * r).mean().backward()
        opt.step()
        if sched:
            sched.step()
        if lib is harp:
            stats = harp.compile_stats()
            counts.append(stats["compiles"] + stats["disk_hits"])
    values = [p.numpy() if lib is harp else p.detach().numpy() for p in params]
    return values, counts, opt


CONFIGS = {
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop-centered-momentum-wd": ("RMSprop", dict(lr=0.02, alpha=0.9, eps=1e-6, momentum=0.7,
                                                     centered=True, weight_decay=0.05)),
    "rmsprop-maximize": ("RMSprop", dict(lr=0.005, maximize=True, momentum=0.3)),
    "adagrad": ("Adagrad", dict(lr=0.1)),
    "adagrad-decay-init-wd": ("Adagrad", dict(lr=0.2, lr_decay=0.1, weight_decay=0.02,
                                              initial_accumulator_value=0.3, eps=1e-6)),
    "adadelta": ("Adadelta", dict()),
    "adadelta-rho-wd-maximize": ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1,
                                                  maximize=True)),
    "adamax": ("Adamax", dict()),
    "adamax-wd-maximize": ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.05,
                                          maximize=True)),
    "radam": ("RAdam", dict(lr=0.01)),
    "radam-wd-early-rectified": ("RAdam", dict(lr=0.02, betas=(0.9, 0.9), weight_decay=0.1)),
    "rprop": ("Rprop", dict()),
    "rprop-etas-maximize": ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2),
                                          maximize=True)),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_optimizers_match_torch(name):
    cls, kwargs = CONFIGS[name]
    ours, counts, _ = run(harp, lambda p: getattr(harp.optim, cls)(p, **kwargs))
    theirs, _, _ = run(torch, lambda p: getattr(torch.optim, cls)(p, **kwargs))
    for h, t in zip(ours, theirs):
        np.testing.assert_allclose(h, t, rtol=1e-9, atol=1e-12)
    assert not np.allclose(ours[0], problem()["w"])  # it moved
    # The hyperparameters (and Adagrad's step count) are arguments: nothing
    # compiles after the first steps.
    assert counts[-1] == counts[3], counts


def test_state_dict_layout_and_resuming_match_torch():
    for cls, kwargs in [("RMSprop", dict(momentum=0.5, centered=True)), ("Adagrad", {}),
                        ("Adadelta", {})]:
        _, _, ours = run(harp, lambda p: getattr(harp.optim, cls)(p, **kwargs), steps=2)
        _, _, theirs = run(torch, lambda p: getattr(torch.optim, cls)(p, **kwargs), steps=2)
        mine, reference = ours.state_dict(), theirs.state_dict()
        assert mine["param_groups"][0].keys() == reference["param_groups"][0].keys(), cls
        assert mine["state"].keys() == reference["state"].keys()
        for i in mine["state"]:
            assert mine["state"][i].keys() == reference["state"][i].keys(), cls
            assert float(mine["state"][i]["step"]) == float(reference["state"][i]["step"]) == 2
            for key, value in reference["state"][i].items():
                if key != "step":
                    np.testing.assert_allclose(mine["state"][i][key], value.numpy(), rtol=1e-9)
    # Adagrad's state exists from the start, as torch's.
    w = harp.tensor(np.ones(3), requires_grad=True)
    state = harp.optim.Adagrad([w], initial_accumulator_value=0.5).state_dict()["state"]
    np.testing.assert_array_equal(state[0]["sum"], [0.5, 0.5, 0.5])
    # A saved state resumes the same run.
    make = lambda p: harp.optim.RMSprop(p, lr=0.01, momentum=0.5)  # noqa: E731
    full, _, _ = run(harp, make, steps=4)
    data = problem()
    x, y = harp.tensor(data["x"]), harp.tensor(data["y"])
    params = [harp.tensor(data[k], requires_grad=True) for k in ("w", "b")]
    opt = make(params)

    def step(o):
        o.zero_grad()
        r = (x @ params[0] + params[1]).tanh() - y
        (r * r).mean().backward()
        o.step()

    for _ in range(2):
        step(opt)
    fresh = make(params)
    fresh.load_state_dict(opt.state_dict())
    for _ in range(2):
        step(fresh)
    np.testing.assert_allclose(params[0].numpy(), full[0], rtol=1e-12)


@pytest.mark.parametrize("make, message", [
    (lambda p: harp.optim.RMSprop(p, lr=-1), "RMSprop: lr must be >= 0, got -1"),
    (lambda p: harp.optim.RMSprop(p, alpha=-0.1), "RMSprop: alpha must be >= 0"),
    (lambda p: harp.optim.RMSprop(p, differentiable=True), "not differentiable"),
    (lambda p: harp.optim.Adagrad(p, lr_decay=-1), "Adagrad: lr_decay must be >= 0"),
    (lambda p: harp.optim.Adagrad(p, initial_accumulator_value=-1),
     "Adagrad: initial_accumulator_value must be >= 0"),
    (lambda p: harp.optim.Adadelta(p, rho=1.5), r"Adadelta: rho must be in \[0, 1\], got 1.5"),
    (lambda p: harp.optim.Adadelta(p, eps=-1e-3), "Adadelta: eps must be >= 0"),
])
def test_optimizer_argument_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make([harp.tensor(np.ones(2), requires_grad=True)])


# Schedulers --------------------------------------------------------------------


def rates(lib, optimizer, scheduler, steps, metrics=None):
    """The rates (and the momentum or beta1) of every group after each step."""
    p1 = (harp.tensor(np.zeros(2), requires_grad=True) if lib is harp
          else torch.zeros(2, dtype=torch.float64, requires_grad=True))
    p2 = (harp.tensor(np.zeros(1), requires_grad=True) if lib is harp
          else torch.zeros(1, dtype=torch.float64, requires_grad=True))
    opt = optimizer(lib, [{"params": [p1]}, {"params": [p2], "lr": 0.05}])
    sched = scheduler(lib, opt)
    seen = []
    for i in range(steps):
        momenta = [g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups]
        lrs = [g["lr"] for g in opt.param_groups]
        if lib is harp or hasattr(sched, "get_last_lr"):  # torch's plateau lacks it
            assert sched.get_last_lr() == lrs
        seen.append((lrs, momenta))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's step-order warning
            sched.step(metrics[i]) if metrics else sched.step()
    return seen, sched


def optim_of(name, **kwargs):
    return lambda lib, groups: getattr(lib.optim, name)(groups, lr=0.1, **kwargs)


def sched_of(name, *args, **kwargs):
    return lambda lib, opt: getattr(lib.optim.lr_scheduler, name)(opt, *args, **kwargs)


class Halving:
    """A callable object as lr_lambda: its state is saved."""

    def __init__(self):
        self.base = 0.5

    def __call__(self, epoch):
        return self.base ** (epoch // 3)


SCHEDULES = {
    "lambda": (optim_of("SGD"), sched_of("LambdaLR", [lambda e: 1 / (1 + e), Halving()])),
    "multiplicative": (optim_of("SGD"),
                       sched_of("MultiplicativeLR", lambda e: 0.9 if e % 2 else 1.0)),
    "exponential": (optim_of("SGD"), sched_of("ExponentialLR", gamma=0.8)),
    "multistep": (optim_of("SGD"), sched_of("MultiStepLR", milestones=[3, 7, 7, 12], gamma=0.5)),
    "linear": (optim_of("SGD"), sched_of("LinearLR", start_factor=0.25, total_iters=6)),
    "linear-down": (optim_of("SGD"), sched_of("LinearLR", start_factor=1.0, end_factor=0.1,
                                              total_iters=10)),
    "onecycle-sgd": (optim_of("SGD", momentum=0.9),
                     sched_of("OneCycleLR", max_lr=[1.0, 0.5], total_steps=20)),
    "onecycle-adam-linear": (optim_of("Adam"),
                             sched_of("OneCycleLR", max_lr=0.3, epochs=4, steps_per_epoch=5,
                                      anneal_strategy="linear", pct_start=0.25)),
    "onecycle-three-phase": (optim_of("RMSprop", momentum=0.5),
                             sched_of("OneCycleLR", max_lr=0.2, total_steps=21, three_phase=True,
                                      div_factor=10.0, base_momentum=0.8, max_momentum=0.9)),
    "onecycle-no-momentum": (optim_of("Adagrad"),
                             sched_of("OneCycleLR", max_lr=0.2, total_steps=20,
                                      cycle_momentum=False)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedulers_match_torch(name):
    optimizer, scheduler = SCHEDULES[name]
    ours, hs = rates(harp, optimizer, scheduler, 20)
    theirs, ts = rates(torch, optimizer, scheduler, 20)
    # torch's own arithmetic, so the same floats.
    assert ours == theirs
    assert len({tuple(lrs) for lrs, _ in ours}) > 2
    # torch's state_dict keys (OneCycleLR names its annealing function).
    mine, reference = hs.state_dict(), ts.state_dict()
    assert mine.keys() == reference.keys()
    for key in ("last_epoch", "base_lrs", "_last_lr", "_step_count"):
        assert mine[key] == pytest.approx(reference[key], rel=1e-12), key


def test_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.97, 0.9, 0.89, 0.891, 0.9, 0.95, 0.96, 0.97, 0.98, 0.99,
               1.0, 1.1, 1.2, 1.3, 1.4, 1.5]
    for kwargs in [dict(patience=1), dict(mode="max", factor=0.5, patience=2, cooldown=2),
                   dict(patience=0, threshold=0.05, threshold_mode="abs", min_lr=[0.02, 0.001]),
                   dict(patience=0, min_lr=0.09, eps=1e-3)]:
        ours, hs = rates(harp, optim_of("SGD"), sched_of("ReduceLROnPlateau", **kwargs), 20,
                         [harp.tensor(m, harp.float64) for m in metrics])
        theirs, ts = rates(torch, optim_of("SGD"), sched_of("ReduceLROnPlateau", **kwargs), 20,
                           metrics)
        assert [h[0] for h in ours[1:]] == [t[0] for t in theirs[1:]]  # the same arithmetic
        assert len({tuple(h[0]) for h in ours}) > 1, kwargs  # it reduced
        mine = hs.state_dict()
        assert set(mine) - {"_last_lr"} == set(ts.state_dict()) - {"_last_lr"}
        assert (mine["best"], mine["num_bad_epochs"], mine["cooldown_counter"]) == \
            (ts.best, ts.num_bad_epochs, ts.cooldown_counter)


def test_scheduler_state_dict_resumes_and_closed_form():
    w = harp.tensor(np.zeros(1), requires_grad=True)
    opt = harp.optim.SGD([w], lr=1.0)
    lam = Halving()
    sched = hsched.LambdaLR(opt, lam)
    for _ in range(4):
        sched.step()
    saved = sched.state_dict()
    assert saved["lr_lambdas"] == [{"base": 0.5}] and saved["last_epoch"] == 4
    other = Halving()
    other.base = 0.1
    resumed = hsched.LambdaLR(harp.optim.SGD([w], lr=1.0), other)
    resumed.load_state_dict(saved)
    assert other.base == 0.5 and resumed.last_epoch == 4
    resumed.step()
    assert resumed.get_last_lr() == [0.5 ** (5 // 3)]
    # step(epoch) uses the closed form, with torch's deprecation warning.
    opt = harp.optim.SGD([w], lr=1.0)
    multi = hsched.MultiStepLR(opt, milestones=[2, 4], gamma=0.1)
    with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`"):
        multi.step(5)
    assert multi.get_last_lr() == pytest.approx([0.01])
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        multi.get_lr()
    # A subclass written against torch's _LRScheduler.
    class Halve(hsched._LRScheduler):
        def get_lr(self):
            return [base / 2 ** self.last_epoch for base in self.base_lrs]

    halve = Halve(harp.optim.SGD([w], lr=0.8))
    halve.step()
    assert halve.get_last_lr() == [0.4]


@pytest.mark.parametrize("make, error, message", [
    (lambda o: hsched.LambdaLR(o, [lambda e: 1, lambda e: 1]), ValueError,
     "LambdaLR: expected 1 lr_lambdas, but got 2"),
    (lambda o: hsched.LinearLR(o, start_factor=1.5), ValueError,
     "LinearLR: starting multiplicative factor expected to be between 0 and 1"),
    (lambda o: hsched.OneCycleLR(o, max_lr=1.0), ValueError,
     "OneCycleLR: you must define either total_steps"),
    (lambda o: hsched.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=0), ValueError,
     "OneCycleLR: expected float between 0 and 1 pct_start"),
    (lambda o: hsched.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=10), ValueError,
     "expected 1 values for max_lr, got 2"),
    (lambda o: hsched.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="exp"), ValueError,
     "OneCycleLR: anneal_strategy must be one of 'cos' or 'linear'"),
    (lambda o: hsched.OneCycleLR(harp.optim.Adagrad(o.param_groups[0]["params"]), max_lr=1.0,
                                 total_steps=10), ValueError,
     "OneCycleLR: optimizer must support momentum"),
    (lambda o: hsched.ReduceLROnPlateau(o, factor=1.0), ValueError,
     "ReduceLROnPlateau: factor should be < 1.0"),
    (lambda o: hsched.ReduceLROnPlateau(o, mode="up"), ValueError,
     "ReduceLROnPlateau: mode 'up' is unknown"),
    (lambda o: hsched.ExponentialLR(object(), 0.5), TypeError, "object is not an Optimizer"),
    (lambda o: hsched.MultiStepLR(o, [1], last_epoch=3), KeyError,
     "param 'initial_lr' is not specified in param_groups\\[0\\]"),
])
def test_scheduler_errors(make, error, message):
    w = harp.tensor(np.zeros(1), requires_grad=True)
    with pytest.raises(error, match=message):
        make(harp.optim.SGD([w], lr=0.1))


def test_onecycle_past_its_steps_and_in_training_as_torch():
    w = harp.tensor(np.zeros(1), requires_grad=True)
    sched = hsched.OneCycleLR(harp.optim.SGD([w], lr=0.1, momentum=0.9), max_lr=1.0, total_steps=3)
    sched.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="OneCycleLR: tried to step 5 times; the specified "
                                         "number of total steps is 3"):
        sched.step()
    # A training run whose rate and momentum change every step compiles
    # nothing after its first steps and ends where torch's does.
    make = {harp: lambda o: hsched.OneCycleLR(o, max_lr=0.5, total_steps=STEPS),
            torch: lambda o: tsched.OneCycleLR(o, max_lr=0.5, total_steps=STEPS)}
    ours, counts, _ = run(harp, lambda p: harp.optim.SGD(p, lr=0.1, momentum=0.9),
                          schedule=make[harp])
    theirs, _, _ = run(torch, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                       schedule=make[torch])
    for h, t in zip(ours, theirs):
        np.testing.assert_allclose(h, t, rtol=1e-9, atol=1e-12)
    assert counts[-1] == counts[3] and math.isfinite(ours[0].sum())


def _lbfgs_run(lib, line_search_fn, steps, **kwargs):
    """Rosenbrock in 2-d plus a quartic coupling, from (-1.5, 2, 0.3):
    the losses, final point and counters of torch's or harp's LBFGS."""
    T = harp if lib == "harp" else torch
    x = T.tensor(np.array([-1.5, 2.0, 0.3]), requires_grad=True)
    opt = (harp.optim.LBFGS if lib == "harp" else torch.optim.LBFGS)(
        [x], line_search_fn=line_search_fn, **kwargs)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] * x[0]) ** 2 + (x[2] - x[1]) ** 4
        loss.backward()
        return loss

    losses = [float(opt.step(closure).item()) for _ in range(steps)]
    state = opt.state[x] if lib == "torch" else opt.state["global"]
    return losses, x.detach().numpy().copy(), state["func_evals"], state["n_iter"]


@pytest.mark.parametrize("line_search_fn,kwargs", [
    ("strong_wolfe", {}), ("strong_wolfe", dict(history_size=3, max_iter=7)),
    ("strong_wolfe", dict(lr=0.1)), (None, dict(lr=0.1)),
    (None, dict(lr=1.0, history_size=3, max_iter=7))], ids=str)
def test_lbfgs_matches_torch(line_search_fn, kwargs):
    # The same iterates, closure evaluations and iterations as torch's
    # (f64), with and without the strong-Wolfe line search.
    h = _lbfgs_run("harp", line_search_fn, 4, **kwargs)
    t = _lbfgs_run("torch", line_search_fn, 4, **kwargs)
    np.testing.assert_allclose(h[0], t[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h[1], t[1], rtol=1e-9, atol=1e-12)
    assert h[2:] == t[2:]


def test_lbfgs_fits_a_model_and_checks_its_arguments():
    # nn.Linear by least squares, as time_sequence_prediction trains with
    # LBFGS(lr=0.8): converges to NumPy's solution.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.7
    model = harp.nn.Linear(4, 1).double()
    opt = harp.optim.LBFGS(model.parameters(), lr=0.8)
    hx, hy = harp.tensor(X), harp.tensor(y.reshape(-1, 1))

    def closure():
        opt.zero_grad()
        loss = ((model(hx) - hy) ** 2).mean()
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    np.testing.assert_allclose(model.weight.numpy().ravel(), [1.0, -2.0, 0.5, 3.0], atol=1e-4)
    np.testing.assert_allclose(model.bias.numpy(), [0.7], atol=1e-4)
    saved = opt.state_dict()
    again = harp.optim.LBFGS(model.parameters(), lr=0.8)
    again.load_state_dict(saved)
    assert again.state["global"]["n_iter"] == opt.state["global"]["n_iter"]
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        harp.optim.LBFGS(model.parameters(), line_search_fn="armijo")
    with pytest.raises(ValueError, match="step needs a closure"):
        opt.step(None)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        harp.optim.LBFGS([{"params": [model.weight]}, {"params": [model.bias]}])


class _NAdamReference(torch.optim.Optimizer):
    """NAdam as torch >= 2.0 computes it (mu_product_next = mu_product x
    mu_next; torch 1.13 multiplied mu in twice), written from the algorithm
    over torch tensors: the reference harp.optim.NAdam is held to."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                g = p.grad + group["weight_decay"] * p
                state = self.state[p]
                if not state:
                    state.update(step=0, mu_product=1.0, m=torch.zeros_like(p),
                                 v=torch.zeros_like(p))
                state["step"] += 1
                t = state["step"]
                mu = beta1 * (1 - 0.5 * 0.96 ** (t * group["momentum_decay"]))
                mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * group["momentum_decay"]))
                state["mu_product"] *= mu
                state["m"] = beta1 * state["m"] + (1 - beta1) * g
                state["v"] = beta2 * state["v"] + (1 - beta2) * g * g
                denom = (state["v"] / (1 - beta2 ** t)).sqrt() + group["eps"]
                p -= group["lr"] * (1 - mu) / (1 - state["mu_product"]) * g / denom
                p -= (group["lr"] * mu_next / (1 - state["mu_product"] * mu_next)
                      * state["m"] / denom)


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.01, momentum_decay=0.01,
                                                  weight_decay=0.05)], ids=str)
def test_nadam_matches_the_algorithm(kwargs):
    ours, counts, _ = run(harp, lambda p: harp.optim.NAdam(p, **kwargs))
    theirs, _, _ = run(torch, lambda p: _NAdamReference(p, **kwargs))
    for h, t in zip(ours, theirs):
        np.testing.assert_allclose(h, t, rtol=1e-9, atol=1e-12)
    assert counts[-1] == counts[3], counts
