"""harp.optim against torch.optim: the same model, data and initial values,
100 steps in float64, parameters equal to 1e-6; every distinct update graph
compiled once; schedulers as torch's."""

import math

import numpy as np
import pytest
import torch

import harp

STEPS = 100


def problem(seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((13, 5)), "y": rng.standard_normal((13, 3)),
            "w": rng.standard_normal((5, 3)) * 0.5, "b": rng.standard_normal(3) * 0.1}


def harp_run(make, steps=STEPS, schedule=None):
    data = problem()
    x, y = harp.tensor(data["x"], harp.float64), harp.tensor(data["y"], harp.float64)
    w = harp.tensor(data["w"], harp.float64, requires_grad=True)
    b = harp.tensor(data["b"], harp.float64, requires_grad=True)
    opt = make([w, b])
    sched = schedule(opt) if schedule else None
    counts = []
    for _ in range(steps):
        opt.zero_grad()
        r = (x @ w + b).tanh() - y
        (r * r).mean().backward()
        opt.step()
        if sched:
            sched.step()
        counts.append(harp.compile_stats())
    return w.numpy(), b.numpy(), counts, opt


def torch_run(make, steps=STEPS, schedule=None):
    data = problem()
    x, y = torch.tensor(data["x"]), torch.tensor(data["y"])
    w = torch.tensor(data["w"], requires_grad=True)
    b = torch.tensor(data["b"], requires_grad=True)
    opt = make([w, b])
    sched = schedule(opt) if schedule else None
    for _ in range(steps):
        opt.zero_grad()
        r = torch.tanh(x @ w + b) - y
        (r * r).mean().backward()
        opt.step()
        if sched:
            sched.step()
    return w.detach().numpy(), b.detach().numpy()


CONFIGS = {
    "sgd": ("SGD", dict(lr=0.1)),
    "sgd-momentum": ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1)),
    "sgd-nesterov-wd": ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True,
                                    weight_decay=0.01)),
    "sgd-maximize": ("SGD", dict(lr=0.01, maximize=True)),
    "adam": ("Adam", dict(lr=0.01)),
    "adam-wd-amsgrad": ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6,
                                     weight_decay=0.05, amsgrad=True)),
    "adamw": ("AdamW", dict(lr=0.01, weight_decay=0.1)),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_torch_over_100_steps(name):
    cls, kwargs = CONFIGS[name]
    w, b, counts, _ = harp_run(lambda p: getattr(harp.optim, cls)(p, **kwargs))
    tw, tb = torch_run(lambda p: getattr(torch.optim, cls)(p, **kwargs))
    np.testing.assert_allclose(w, tw, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b, tb, rtol=1e-6, atol=1e-9)
    assert not np.allclose(w, problem()["w"])  # it moved
    # The step count and the bias corrections change every step; after
    # the first three steps nothing compiles (the momentum buffer's first
    # value is a copy, and a step's updates run at the next step's forward).
    compiled = [c["compiles"] + c["disk_hits"] for c in counts]
    assert compiled[-1] == compiled[2], compiled[:5]
    # A step is two compiled calls: backward(), and the updates of every
    # parameter and state tensor of the previous step, together.
    calls = [c["compiles"] + c["disk_hits"] + c["memory_hits"] for c in counts]
    assert [b - a for a, b in zip(calls[3:], calls[4:])] == [2] * (len(calls) - 4), calls[:8]


@pytest.mark.parametrize("schedule", ["step", "cosine"])
def test_schedulers_match_torch(schedule):
    make = {"step": (lambda o: harp.optim.lr_scheduler.StepLR(o, step_size=30, gamma=0.5),
                     lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=30, gamma=0.5)),
            "cosine": (lambda o: harp.optim.lr_scheduler.CosineAnnealingLR(o, T_max=40, eta_min=0.001),
                       lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=40, eta_min=0.001))}
    ours, theirs = make[schedule]
    w, b, counts, opt = harp_run(lambda p: harp.optim.SGD(p, lr=0.1, momentum=0.5), schedule=ours)
    tw, tb = torch_run(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5), schedule=theirs)
    np.testing.assert_allclose(w, tw, rtol=1e-6, atol=1e-9)
    compiled = [c["compiles"] + c["disk_hits"] for c in counts]
    assert compiled[-1] == compiled[2]
    # The learning rates themselves, epoch by epoch.
    hw = harp.tensor(np.zeros(2), requires_grad=True)
    tt = torch.zeros(2, requires_grad=True)
    ho, to = harp.optim.SGD([hw], lr=0.2), torch.optim.SGD([tt], lr=0.2)
    hs, ts = ours(ho), theirs(to)
    for _ in range(70):
        assert math.isclose(hs.get_last_lr()[0], ts.get_last_lr()[0], rel_tol=1e-12,
                            abs_tol=1e-15)
        ho.step()
        to.step()
        hs.step()
        ts.step()


def test_param_groups_state_dict_and_errors():
    a = harp.tensor(np.ones(3), harp.float64, requires_grad=True)
    b = harp.tensor(np.ones(2), harp.float64, requires_grad=True)
    opt = harp.optim.Adam([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    ((a * a).sum() + (b * b).sum()).backward()
    opt.step()
    np.testing.assert_allclose(a.numpy(), 1 - 0.1, rtol=1e-8)  # first step: lr
    np.testing.assert_allclose(b.numpy(), 1 - 0.5, rtol=1e-8)
    saved = opt.state_dict()
    assert saved["state"][0]["step"] == 1 and saved["state"][1]["exp_avg"].shape == (2,)
    fresh = harp.optim.Adam([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1)
    fresh.load_state_dict(saved)
    opt.zero_grad()
    assert a.grad is None
    ((a * a).sum() + (b * b).sum()).backward()
    a0 = a.numpy().copy()
    fresh.step()
    np.testing.assert_array_less(a.numpy(), a0)
    with pytest.raises(ValueError, match="does not require a gradient"):
        harp.optim.SGD([harp.tensor(np.ones(2))], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        harp.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="nesterov"):
        harp.optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(TypeError, match="harp tensors"):
        harp.optim.SGD([np.ones(2)], lr=0.1)


def test_copy_writes_into_a_leaf():
    p = harp.tensor(np.arange(4.0).reshape(2, 2), harp.float64)
    doubled = p * 2
    np.testing.assert_array_equal(doubled.numpy(), [[0, 2], [4, 6]])
    p.copy_(p + 1)
    np.testing.assert_array_equal(p.numpy(), [[1, 2], [3, 4]])
    # As torch: a tensor computed before the write keeps its values.
    np.testing.assert_array_equal(doubled.numpy(), [[0, 2], [4, 6]])
    np.testing.assert_array_equal((p * 2).numpy(), [[2, 4], [6, 8]])
    p.copy_(np.array([5.0, 6.0]))  # broadcast
    np.testing.assert_array_equal(p.numpy(), [[5, 6], [5, 6]])
    p.copy_(0)
    assert p.numpy().sum() == 0
    with pytest.raises(harp.HarpError, match="copy_: only leaves"):
        doubled.copy_(p)


@pytest.mark.parametrize("realize_first", [False, True])
def test_copy_keeps_the_values_of_tensors_built_before(realize_first):
    # harp is lazy: a tensor built before an in-place write and realized
    # after it is computed from the values it was built on, as torch's
    # eager tensors are; tensors built after the write see the new values.
    rng = np.random.default_rng(3)
    values = rng.standard_normal((3, 5))
    p, tp = harp.tensor(values.copy()), torch.tensor(values.copy())
    before = [(p * 2).sum(axis=1), p.exp()[1:], p.T @ p]
    tbefore = [(tp * 2).sum(dim=1), tp.exp()[1:], tp.T @ tp]
    if realize_first:
        for t in before[:2]:
            t.numpy()
    shared = p.detach()  # shares p's storage, as torch's detach()
    tshared = tp.detach()
    with torch.no_grad():
        tp.copy_(tp * 0.5 + 1)
    p.copy_(p * 0.5 + 1)
    for t, r in zip(before, tbefore):
        np.testing.assert_allclose(t.numpy(), r.numpy(), rtol=1e-12)
    np.testing.assert_allclose(p.numpy(), tp.numpy(), rtol=1e-12)
    np.testing.assert_allclose(shared.numpy(), tshared.numpy(), rtol=1e-12)
    np.testing.assert_allclose((p * 2).sum(axis=1).numpy(), (tp * 2).sum(dim=1).numpy(),
                               rtol=1e-12)


def test_loss_read_after_the_step_is_the_loss_before_it():
    # The training loop's `loss.backward(); opt.step(); loss.item()`: the
    # loss of the parameters the step started from, as in torch (before,
    # harp recomputed it from the updated parameters).
    data = problem()
    x, y = harp.tensor(data["x"]), harp.tensor(data["y"])
    w = harp.tensor(data["w"].copy(), requires_grad=True)
    tw = torch.tensor(data["w"].copy(), requires_grad=True)
    opt, topt = harp.optim.SGD([w], lr=0.1), torch.optim.SGD([tw], lr=0.1)
    tx, ty = torch.tensor(data["x"]), torch.tensor(data["y"])
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        tloss = ((tx @ tw - ty) ** 2).mean()
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-12)
    # The old graph's gradient would be of values w no longer holds.
    with pytest.raises(harp.HarpError, match="written in place"):
        loss.backward()


def test_a_step_hands_storage_to_the_parameters_instead_of_copying():
    # The deferred writes of an optimizer step are computed into new
    # storage, which the parameter adopts when nothing else shares its old
    # storage: no copy into it, and no snapshot copy for the update's own
    # graph (dropped once computed). A NumPy view of the parameter shares
    # its storage: then the values are written into it, and the view sees
    # them, as torch's .numpy() of a parameter does.
    w = harp.tensor(np.full((64, 64), 2.0), requires_grad=True)
    opt = harp.optim.SGD([w], lr=0.1)

    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()

    def address():
        return w.numpy().__array_interface__["data"][0]

    step()
    before = address()
    step()
    assert address() != before
    np.testing.assert_allclose(w.numpy(), 2.0 * 0.8 ** 2)
    view = w.numpy()
    shared = address()
    step()
    assert address() == shared
    np.testing.assert_allclose(view, 2.0 * 0.8 ** 3)
    # A tensor built before the step keeps the values it was built on.
    old = w * 1.0
    step()
    np.testing.assert_allclose(old.numpy(), 2.0 * 0.8 ** 3)
    np.testing.assert_allclose(w.numpy(), 2.0 * 0.8 ** 4)
