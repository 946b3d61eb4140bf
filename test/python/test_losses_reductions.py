"""Composite reductions (logsumexp, log_softmax, var, std, argmax, argmin)
and the losses of harp.nn.functional against PyTorch: values and gradients
in float64 (and float32 values), odd shapes, ignore_index, label smoothing,
probability targets."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import harp
import harp.nn.functional as HF


def sample(*shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def both(fn_h, fn_t, *arrays, grad=True, tol=1e-10):
    """Runs fn on harp and torch tensors (float64) and compares the values
    and the gradients of sum(result) w.r.t. every array."""
    hs = [harp.tensor(a, harp.float64, requires_grad=grad) for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    hy, ty = fn_h(*hs), fn_t(*ts)
    np.testing.assert_allclose(hy.numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    if grad:
        hy.sum().backward()
        ty.sum().backward()
        for h, t in zip(hs, ts):
            np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=tol * 100,
                                       atol=tol * 100)


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0),
                                       ((2, 3, 4), (0, 2)), ((4, 1), None)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_var_std(shape, dim, keepdim):
    x = sample(*shape, seed=len(shape))
    tdim = tuple(range(len(shape))) if dim is None else dim
    both(lambda t: t.logsumexp(dim, keepdim), lambda t: torch.logsumexp(t, tdim, keepdim), x)
    if np.prod([shape[d] for d in np.atleast_1d(tdim)]) > 1:
        both(lambda t: t.var(dim, keepdim=keepdim), lambda t: torch.var(t, tdim, keepdim=keepdim), x)
        both(lambda t: t.std(dim, unbiased=False, keepdim=keepdim),
             lambda t: torch.std(t, tdim, unbiased=False, keepdim=keepdim), x)


def test_logsumexp_of_minus_infinity_and_log_softmax():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.5, -np.inf, 2.0]])
    np.testing.assert_array_equal(harp.tensor(x).logsumexp(dim=1).numpy(),
                                  torch.logsumexp(torch.tensor(x), 1).numpy())
    both(lambda t: t.log_softmax(dim=1), lambda t: F.log_softmax(t, 1), sample(4, 7, seed=2))
    both(lambda t: HF.log_softmax(t, 0), lambda t: F.log_softmax(t, 0), sample(5, 3, seed=3))
    y = harp.tensor(sample(3, 9).astype(np.float32)).log_softmax()
    np.testing.assert_allclose(y.numpy(), F.log_softmax(torch.tensor(sample(3, 9).astype(np.float32)), -1).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_argmax_argmin():
    x = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, -5.0, -5.0], [0.0, np.nan, 4.0, np.nan]])
    for name in ["argmax", "argmin"]:
        for dim in [0, 1, -1]:
            for keepdim in [False, True]:
                got = getattr(harp.tensor(x), name)(dim, keepdim).numpy()
                want = getattr(torch.tensor(x), name)(dim, keepdim).numpy()
                np.testing.assert_array_equal(got, want, err_msg="%s %d %s" % (name, dim, keepdim))
        clean = x[:2]
        assert getattr(harp.tensor(clean), name)().numpy() == getattr(torch.tensor(clean), name)().numpy()
    i = harp.tensor(np.array([[3, 9, 9], [7, -2, 7]], np.int32))
    np.testing.assert_array_equal(i.argmax(dim=1).numpy(), [1, 0])
    assert i.argmax(dim=1).dtype == harp.int64
    with pytest.raises(harp.HarpError, match="argmax: dim 1 of \\[2, 0\\] is empty"):
        harp.tensor(np.zeros((2, 0))).argmax(1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(reduction):
    a, b = sample(4, 7, seed=1), sample(4, 7, seed=2)
    both(lambda x, y: HF.mse_loss(x, y, reduction=reduction),
         lambda x, y: F.mse_loss(x, y, reduction=reduction), a, b)
    both(lambda x, y: HF.l1_loss(x, y, reduction=reduction),
         lambda x, y: F.l1_loss(x, y, reduction=reduction), a, b)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_indices(smoothing, reduction):
    logits = sample(6, 5, seed=4)
    target = np.array([0, 4, 2, -100, 1, 4])
    kw = dict(ignore_index=-100, reduction=reduction, label_smoothing=smoothing)
    both(lambda x: HF.cross_entropy(x, harp.tensor(target), **kw),
         lambda x: F.cross_entropy(x, torch.tensor(target), **kw), logits)
    # [N, C, d] inputs with [N, d] targets.
    logits3 = sample(2, 3, 4, seed=5)
    target3 = np.array([[0, 2, 1, 1], [2, 2, 0, 1]])
    both(lambda x: HF.cross_entropy(x, harp.tensor(target3), reduction=reduction,
                                    label_smoothing=smoothing),
         lambda x: F.cross_entropy(x, torch.tensor(target3), reduction=reduction,
                                   label_smoothing=smoothing), logits3)


def test_cross_entropy_with_probabilities_and_nll():
    logits, probs = sample(5, 4, seed=6), np.random.default_rng(7).dirichlet(np.ones(4), 5)
    both(lambda x, p: HF.cross_entropy(x, p, label_smoothing=0.1),
         lambda x, p: F.cross_entropy(x, p, label_smoothing=0.1), logits, probs)
    logp = np.log(np.random.default_rng(8).dirichlet(np.ones(3), 4))
    target = np.array([2, 0, 1, 1])
    both(lambda x: HF.nll_loss(x, harp.tensor(target)),
         lambda x: F.nll_loss(x, torch.tensor(target)), logp)
    with pytest.raises(ValueError, match="reduction"):
        HF.mse_loss(harp.tensor(logits), harp.tensor(logits), reduction="avg")


def test_binary_cross_entropy():
    p = sample(3, 4, seed=9, low=0.05, high=0.95)
    t = sample(3, 4, seed=10, low=0.0, high=1.0)
    both(lambda x, y: HF.binary_cross_entropy(x, y),
         lambda x, y: F.binary_cross_entropy(x, y), p, t)
    z = sample(3, 4, seed=11, low=-30, high=30)
    both(lambda x, y: HF.binary_cross_entropy_with_logits(x, y, reduction="sum"),
         lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"), z, t)


@pytest.mark.parametrize("p", [2, "fro", 1, float("inf"), float("-inf"), 3, 0.5, 0])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), ((0, 1), False)],
                         ids=str)
def test_norm(p, dim, keepdim):
    x = sample(4, 5, seed=12)
    x[1, 2] = 0.0
    tp = 2 if p == "fro" else p
    both(lambda t: t.norm(p, dim, keepdim),
         lambda t: torch.linalg.vector_norm(t, tp, dim, keepdim), x, grad=(p != 0))
    both(lambda t: harp.norm(t, p, dim, keepdim),
         lambda t: torch.linalg.vector_norm(t, tp, dim, keepdim), x, grad=False)


def test_dot_outer_normalize():
    a, b = sample(6, seed=13), sample(6, seed=14)
    both(lambda x, y: harp.dot(x, y), lambda x, y: torch.dot(x, y), a, b)
    both(lambda x, y: harp.outer(x, y), lambda x, y: torch.outer(x, y), a, sample(3, seed=15))
    both(lambda x: HF.normalize(x, dim=1), lambda x: F.normalize(x, dim=1), sample(3, 4, seed=16))
    both(lambda x: HF.normalize(x, p=1.0, dim=0), lambda x: F.normalize(x, p=1.0, dim=0),
         sample(3, 4, seed=17))
    with pytest.raises(harp.HarpError, match="dot: lengths differ: 6 and 3"):
        harp.dot(harp.tensor(a), harp.tensor(sample(3)))
    with pytest.raises(harp.HarpError, match="norm: p must be a number or 'fro'"):
        harp.tensor(a).norm("nuc")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("ignore_index", [-100, 1, 2])
def test_unbatched_classification_losses(reduction, ignore_index):
    # Input [C] and a 0-d class index: a batch of one, with a 0-d loss per
    # sample (this aborted the process with a heap error once).
    logp = np.log(np.array([0.2, 0.5, 0.3]))
    target = np.array(1)
    kw = dict(reduction=reduction, ignore_index=ignore_index)
    both(lambda x: HF.nll_loss(x, harp.tensor(target), **kw),
         lambda x: F.nll_loss(x, torch.tensor(target), **kw), logp)
    both(lambda x: HF.cross_entropy(x, harp.tensor(target), label_smoothing=0.2, **kw),
         lambda x: F.cross_entropy(x, torch.tensor(target), label_smoothing=0.2, **kw),
         sample(5, seed=9))
    probs = np.array([0.1, 0.6, 0.3])
    both(lambda x, p: HF.cross_entropy(x, p, reduction=reduction),
         lambda x, p: F.cross_entropy(x, p, reduction=reduction), sample(3, seed=10), probs)


def test_classification_losses_reject_bad_shapes():
    x = harp.tensor(np.zeros(3))
    with pytest.raises(harp.HarpError, match=r"nll_loss: input \[3\] must be .*or \[C\] and a "
                                             r"0-d target; got target \[3\]"):
        HF.nll_loss(x, harp.tensor(np.array([0, 1, 2])))
    with pytest.raises(harp.HarpError, match="nll_loss: input"):
        HF.nll_loss(harp.tensor(np.array(0.5)), harp.tensor(np.array(0)))


def test_max_min_in_torchs_forms():
    a = sample(3, 5, seed=11)
    h, t = harp.tensor(a), torch.tensor(a)
    for name in ("max", "min"):
        for dim, keepdim in ((1, False), (0, True), (-1, True)):
            got = getattr(h, name)(dim, keepdim=keepdim)
            want = getattr(t, name)(dim, keepdim=keepdim)
            values, indices = got
            assert type(got).__name__ == name and got.values is values
            np.testing.assert_array_equal(values.numpy(), want.values.numpy())
            np.testing.assert_array_equal(indices.numpy(), want.indices.numpy())
            assert indices.dtype == harp.int64
        np.testing.assert_array_equal(getattr(h, name)(dim=0).indices.numpy(),
                                      getattr(t, name)(dim=0).indices.numpy())
        assert getattr(h, name)().item() == getattr(t, name)().item()
        other = sample(5, seed=12)
        np.testing.assert_array_equal(getattr(h, name)(harp.tensor(other)).numpy(),
                                      getattr(t, name)(torch.tensor(other)).numpy())
        # NumPy's axis= gives the values alone, with tuples of dims.
        np.testing.assert_array_equal(getattr(h, name)(axis=(0, 1)).numpy(),
                                      getattr(np, name)(a, axis=(0, 1)))
        with pytest.raises(TypeError, match=name + ": dim must be an int"):
            getattr(h, name)((0, 1))
        with pytest.raises(TypeError, match="give axis or dim"):
            getattr(h, name)(0, axis=1)
    # The values carry the gradient of the max.
    both(lambda x: x.max(1).values, lambda x: x.max(1).values, a)


_ZERO_D = [
    ("sum", lambda x: x.sum(dim=0), lambda x: x.sum(dim=0)),
    ("mean keepdim", lambda x: x.mean(dim=-1, keepdim=True), lambda x: x.mean(dim=-1, keepdim=True)),
    ("prod", lambda x: x.prod(dim=[0]), lambda x: x.prod(dim=0)),
    ("max", lambda x: x.max(dim=0).values, lambda x: x.max(dim=0).values),
    ("min indices", lambda x: x.min(dim=-1).indices, lambda x: x.min(dim=-1).indices),
    ("softmax", lambda x: HF.softmax(x, dim=0), lambda x: F.softmax(x, dim=0)),
    ("log_softmax", lambda x: HF.log_softmax(x, dim=-1), lambda x: F.log_softmax(x, dim=-1)),
    ("logsumexp", lambda x: x.logsumexp(dim=0), lambda x: x.logsumexp(dim=0)),
    ("cumsum", lambda x: x.cumsum(dim=0), lambda x: x.cumsum(dim=0)),
    ("cumprod", lambda x: x.cumprod(dim=-1), lambda x: x.cumprod(dim=-1)),
    ("index_select", lambda x: x.index_select(0, harp.tensor(np.array([0]))),
     lambda x: x.index_select(0, torch.tensor([0]))),
    ("gather", lambda x: harp.gather(x, 0, harp.tensor(np.array(0))),
     lambda x: torch.gather(x, 0, torch.tensor(0))),
    ("transpose", lambda x: x.transpose(0, -1), lambda x: x.transpose(0, -1)),
    ("squeeze", lambda x: x.squeeze(0), lambda x: x.squeeze(0)),
    ("flip", lambda x: x.flip(0), lambda x: x.flip(0)),
    ("normalize", lambda x: HF.normalize(x, dim=0), lambda x: F.normalize(x, dim=0)),
    ("norm", lambda x: x.norm(dim=0), lambda x: x.norm(dim=0)),
    ("std", lambda x: x.std(dim=0, unbiased=False), lambda x: x.std(dim=0, unbiased=False)),
]


@pytest.mark.parametrize("name,fh,ft", _ZERO_D, ids=[c[0] for c in _ZERO_D])
def test_zero_d_tensors_take_dim_0_and_minus_1(name, fh, ft):
    # As torch's: a 0-d tensor has one dim to name (0 or -1), of one element.
    hy, ty = fh(harp.tensor(np.array(0.7))), ft(torch.tensor(0.7, dtype=torch.float64))
    assert tuple(hy.shape) == tuple(ty.shape) == ()
    np.testing.assert_allclose(hy.numpy(), ty.numpy())
    if hy.dtype == harp.float64:
        both(fh, ft, np.array(-1.3))


def test_zero_d_tensors_reject_other_dims():
    x = harp.tensor(np.array(0.7))
    for fn, op in ((lambda: x.sum(dim=1), "sum"), (lambda: HF.softmax(x, dim=2), "softmax"),
                   (lambda: x.cumsum(dim=-2), "cumsum"), (lambda: x.flip(1), "flip")):
        with pytest.raises(harp.HarpError, match=op + r": dim -?\d is out of range for a 0-d"):
            fn()
    with pytest.raises(harp.HarpError, match="index_select: the index into a 0-d tensor"):
        x.index_select(0, harp.tensor(np.array([0, 0])))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_smooth_l1_and_huber_losses(reduction):
    x, y = sample(4, 5, seed=13), sample(4, 5, seed=14)
    for beta in (1.0, 0.4, 0.0):
        both(lambda a, b: HF.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
             lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta), x, y)
    for delta in (1.0, 0.3, 2.5):
        both(lambda a, b: HF.huber_loss(a, b, reduction=reduction, delta=delta),
             lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=delta), x, y)
    both(lambda a, b: harp.nn.SmoothL1Loss(reduction=reduction, beta=0.5)(a, b),
         lambda a, b: torch.nn.SmoothL1Loss(reduction=reduction, beta=0.5)(a, b), x, y)
    both(lambda a, b: harp.nn.HuberLoss(reduction=reduction, delta=0.5)(a, b),
         lambda a, b: torch.nn.HuberLoss(reduction=reduction, delta=0.5)(a, b), x, y)
    with pytest.raises(harp.HarpError, match="huber_loss: delta must be > 0"):
        HF.huber_loss(harp.tensor(x), harp.tensor(y), delta=0.0)
    with pytest.raises(harp.HarpError, match="smooth_l1_loss: beta must be >= 0"):
        HF.smooth_l1_loss(harp.tensor(x), harp.tensor(y), beta=-1.0)


@pytest.mark.parametrize("reduction", ["none", "mean", "batchmean", "sum"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    logp = np.log(np.random.default_rng(15).dirichlet(np.ones(5), 3))
    q = np.random.default_rng(16).dirichlet(np.ones(5), 3)
    q[0, 1] = 0.0  # a zero probability contributes nothing (xlogy)
    target = np.log(q + 1e-3) if log_target else q
    kw = dict(reduction=reduction, log_target=log_target)
    both(lambda a, b: HF.kl_div(a, b, **kw), lambda a, b: F.kl_div(a, b, **kw), logp, target)
    both(lambda a, b: harp.nn.KLDivLoss(**kw)(a, b), lambda a, b: torch.nn.KLDivLoss(**kw)(a, b),
         logp, target)
    with pytest.raises(ValueError, match="kl_div: reduction must be"):
        HF.kl_div(harp.tensor(logp), harp.tensor(q), reduction="avg")


def test_reductions_of_constant_tensors():
    # ones/full are splat constants: a reduction of one once read its value
    # once instead of once per element (ones(4, 5).sum(dim=1) gave 1s).
    np.testing.assert_array_equal(harp.ones(4, 5).sum(dim=1).numpy(), np.full(4, 5.0))
    assert harp.full((4, 5), 2.0).sum().item() == 40.0
    assert harp.ones(7).sum().item() == 7.0
    assert harp.ones(3, 4).mean().item() == 1.0
    assert harp.full((2, 3), 1.5, dtype=harp.float64).prod().item() == 1.5 ** 6
    np.testing.assert_array_equal(harp.ones(4, 5).amax(dim=1).numpy(), np.ones(4))
    assert harp.ones(2, 3, dtype=harp.int64).sum().item() == 6


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2), (4,)], ids=str)
def test_class_weights(reduction, shape):
    # weight= of nll_loss and cross_entropy (class indices with ignore_index
    # and label smoothing, class probabilities), as torch's: "mean" divides
    # by the weights of the targets counted.
    classes = shape[1] if len(shape) > 1 else shape[0]
    w = np.random.default_rng(20).uniform(0.2, 2.0, size=classes)
    rng = np.random.default_rng(21)
    target_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    target = rng.integers(0, classes, size=target_shape)
    if len(shape) > 1:
        target.flat[0] = 1  # ignored below
    hw, tw = harp.tensor(w), torch.tensor(w)
    for kw in (dict(reduction=reduction), dict(reduction=reduction, ignore_index=1)):
        both(lambda x: HF.nll_loss(x, harp.tensor(target), weight=hw, **kw),
             lambda x: F.nll_loss(x, torch.tensor(target), weight=tw, **kw),
             sample(*shape, seed=22))
        both(lambda x: HF.cross_entropy(x, harp.tensor(target), hw, **kw),
             lambda x: F.cross_entropy(x, torch.tensor(target), tw, **kw),
             sample(*shape, seed=23))
        both(lambda x: HF.cross_entropy(x, harp.tensor(target), weight=hw, label_smoothing=0.15,
                                        **kw),
             lambda x: F.cross_entropy(x, torch.tensor(target), weight=tw, label_smoothing=0.15,
                                       **kw),
             sample(*shape, seed=24))
    batch = shape[:1] + shape[2:] if len(shape) > 1 else None
    probs = np.random.default_rng(25).dirichlet(np.ones(classes), size=batch)
    if len(shape) > 1:
        probs = np.moveaxis(probs, -1, 1)
    both(lambda x, p: HF.cross_entropy(x, p, weight=hw, reduction=reduction, label_smoothing=0.1),
         lambda x, p: F.cross_entropy(x, p, weight=tw, reduction=reduction, label_smoothing=0.1),
         sample(*shape, seed=26), probs)
    # The modules keep the weight as torch's buffer.
    both(lambda x: harp.nn.CrossEntropyLoss(weight=hw, reduction=reduction)(x, harp.tensor(target)),
         lambda x: torch.nn.CrossEntropyLoss(weight=tw, reduction=reduction)(x, torch.tensor(target)),
         sample(*shape, seed=27))
    assert "weight" in dict(harp.nn.NLLLoss(weight=hw).named_buffers())


def test_binary_cross_entropy_weights():
    p = sample(4, 3, seed=30, low=0.05, high=0.95)
    t = np.random.default_rng(31).integers(0, 2, size=(4, 3)).astype(np.float64)
    w = sample(4, 3, seed=32, low=0.5, high=2.0)
    pos = sample(3, seed=33, low=0.5, high=3.0)
    for reduction in ("mean", "sum", "none"):
        both(lambda x: HF.binary_cross_entropy(x, harp.tensor(t), harp.tensor(w),
                                               reduction=reduction),
             lambda x: F.binary_cross_entropy(x, torch.tensor(t), torch.tensor(w),
                                              reduction=reduction), p)
        both(lambda x: HF.binary_cross_entropy_with_logits(
                 x, harp.tensor(t), weight=harp.tensor(w), reduction=reduction,
                 pos_weight=harp.tensor(pos)),
             lambda x: F.binary_cross_entropy_with_logits(
                 x, torch.tensor(t), weight=torch.tensor(w), reduction=reduction,
                 pos_weight=torch.tensor(pos)), sample(4, 3, seed=34))


def test_class_weight_errors():
    x = harp.tensor(sample(3, 4))
    y = harp.tensor(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"cross_entropy: weight must be a 1-d tensor of the 4 "
                                         r"classes, got shape \[3\]"):
        HF.cross_entropy(x, y, weight=harp.ones(3))
    with pytest.raises(TypeError, match="nll_loss: weight must be a harp tensor"):
        HF.nll_loss(x, y, weight=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="NLLLoss: weight must be a 1-d tensor"):
        harp.nn.NLLLoss(weight=harp.ones(2, 2))


def test_class_weights_every_target_ignored():
    # torch: a NaN mean with a zero gradient.
    x = sample(2, 3, seed=40)
    hx = harp.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    w = np.array([1.0, 2.0, 0.5])
    h = HF.nll_loss(hx, harp.tensor(np.array([1, 1])), weight=harp.tensor(w), ignore_index=1)
    t = F.nll_loss(tx, torch.tensor([1, 1]), weight=torch.tensor(w), ignore_index=1)
    assert np.isnan(h.item()) and np.isnan(t.item())
    h.backward()
    t.backward()
    np.testing.assert_array_equal(hx.grad.numpy(), tx.grad.numpy())
