"""harp.func (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian)
against torch 1.13's functorch, which torch.func was made from: f64, odd
shapes, trees of arguments, aux outputs, composition, and the errors."""

import numpy as np
import pytest
import torch

import harp

functorch = pytest.importorskip("functorch")


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def close(got, want, tol=1e-10):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w, tol)
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want)
        for k in want:
            close(got[k], want[k], tol)
        return
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=tol,
                               atol=tol)


def H(a):
    return harp.tensor(a)


def T(a):
    return torch.tensor(a)


def mlp_loss(lib, params, x, y):
    hidden = (x @ params["w1"] + params["b1"]).tanh()
    return ((hidden @ params["w2"] - y) ** 2).mean()


@pytest.mark.parametrize("batch", [1, 5])
def test_grad_of_a_parameter_dict_matches_functorch(batch):
    shapes = {"w1": (3, 7), "b1": (7,), "w2": (7, 2)}
    params = {k: rnd(*s, seed=i) for i, (k, s) in enumerate(shapes.items())}
    x, y = rnd(batch, 3, seed=5), rnd(batch, 2, seed=6)
    got = harp.func.grad(lambda p, a, b: mlp_loss(harp, p, a, b))(
        {k: H(v) for k, v in params.items()}, H(x), H(y))
    want = functorch.grad(lambda p, a, b: mlp_loss(torch, p, a, b))(
        {k: T(v) for k, v in params.items()}, T(x), T(y))
    close(got, want)


def test_grad_argnums_aux_and_value():
    def f(lib, x, w):
        out = ((x @ w).sin() * x.sum()).sum()
        return out, out * 2

    x, w = rnd(3, 4), rnd(4, 2, seed=1)
    (gx, gw), (value, aux) = harp.func.grad_and_value(
        lambda a, b: f(harp, a, b), argnums=(0, 1), has_aux=True)(H(x), H(w))
    (tx, tw), (tvalue, taux) = functorch.grad_and_value(
        lambda a, b: f(torch, a, b), argnums=(0, 1), has_aux=True)(T(x), T(w))
    close([gx, gw, value, aux], [tx, tw, tvalue, taux])
    g1, a1 = harp.func.grad(lambda a, b: f(harp, a, b), argnums=-1,
                            has_aux=True)(H(x), H(w))
    close(g1, tw)
    close(a1, taux)
    # An argument the function does not read gets zeros.
    unused = harp.func.grad(lambda a, b: (a * a).sum(), argnums=1)(H(x), H(w))
    np.testing.assert_array_equal(unused.numpy(), np.zeros((4, 2)))


def test_vjp_of_several_outputs():
    def f(lib, x, y):
        return (x * y).exp(), (x.sum() * y)

    x, y, c1, c2 = rnd(5), rnd(5, seed=1), rnd(5, seed=2), rnd(5, seed=3)
    out, fn = harp.func.vjp(lambda a, b: f(harp, a, b), H(x), H(y))
    tout, tfn = functorch.vjp(lambda a, b: f(torch, a, b), T(x), T(y))
    close(out, tout)
    close(fn((H(c1), H(c2))), tfn((T(c1), T(c2))))
    # The same vjp_fn with other cotangents.
    close(fn((H(c2), H(c1))), tfn((T(c2), T(c1))))
    with pytest.raises(harp.HarpError, match="cotangents must have the output"):
        fn((H(c1),))


@pytest.mark.parametrize("n", [1, 3, 6])
def test_jvp_matches_functorch(n):
    def f(lib, x, w):
        return (x[:, None] * w).tanh().sum(0) + w.sum() * x.mean()

    x, w, vx, vw = rnd(n), rnd(n, 2, seed=1), rnd(n, seed=2), rnd(n, 2, seed=3)
    out, tangent = harp.func.jvp(lambda a, b: f(harp, a, b), (H(x), H(w)),
                                 (H(vx), H(vw)))
    tout, ttangent = functorch.jvp(lambda a, b: f(torch, a, b), (T(x), T(w)),
                                   (T(vx), T(vw)))
    close([out, tangent], [tout, ttangent])


@pytest.mark.parametrize("shape", [(1,), (4,), (2, 3)])
def test_jacobians_match_functorch(shape):
    def f(lib, x, w):
        return (x.sin() * w).sum(-1) * x.reshape(-1)[0]

    x, w = rnd(*shape), rnd(*shape, seed=1)
    for transform, reference in ((harp.func.jacrev, functorch.jacrev),
                                 (harp.func.jacfwd, functorch.jacfwd)):
        got = transform(lambda a, b: f(harp, a, b), argnums=(0, 1))(H(x), H(w))
        want = reference(lambda a, b: f(torch, a, b), argnums=(0, 1))(T(x), T(w))
        close(got, want)


def test_hessian_and_nested_grad_match_functorch():
    def f(lib, x):
        return (x.sin() * x * x.sum()).sum() + (x ** 4).sum()

    x = rnd(4)
    close(harp.func.hessian(lambda a: f(harp, a))(H(x)),
          functorch.hessian(lambda a: f(torch, a))(T(x)))
    # grad of a function of grad: a Hessian-vector product.
    v = rnd(4, seed=1)
    got = harp.func.grad(lambda a: (harp.func.grad(
        lambda b: f(harp, b))(a) * H(v)).sum())(H(x))
    want = functorch.grad(lambda a: (functorch.grad(
        lambda b: f(torch, b))(a) * T(v)).sum())(T(x))
    close(got, want)


def test_transforms_leave_grad_alone_and_keep_requires_grad_leaves():
    w = H(rnd(3)).requires_grad_()
    g = harp.func.grad(lambda a: (a * a).sum())(w)
    np.testing.assert_allclose(g.numpy(), 2 * w.numpy())
    assert w.grad is None
    # The gradient is still differentiable with respect to w.
    (g * g).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 8 * w.numpy())


def test_errors():
    x = H(rnd(3))
    with pytest.raises(harp.HarpError, match="grad: the function must return a 0-d float tensor"):
        harp.func.grad(lambda a: a * 2)(x)
    with pytest.raises(harp.HarpError, match="grad_and_value: the function must return"):
        harp.func.grad_and_value(lambda a: a * 2)(x)
    with pytest.raises(ValueError, match="argnums 2 is out of range"):
        harp.func.grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(TypeError, match="argnums must be an int"):
        harp.func.grad(lambda a: a.sum(), argnums=[0])(x)
    with pytest.raises(harp.HarpError, match=r"has_aux=True .* tuple \(output, aux\)"):
        harp.func.grad(lambda a: a.sum(), has_aux=True)(x)
    with pytest.raises(harp.HarpError, match="only real float tensors"):
        harp.func.grad(lambda a: a.sum())(harp.arange(3))
    with pytest.raises(TypeError, match="argument 0 must be a harp.Tensor"):
        harp.func.grad(lambda a: a)(np.ones(3))
    with pytest.raises(harp.HarpError, match="tangents must have the primals"):
        harp.func.jvp(lambda a: a * 2, (x,), (H(rnd(4)),))
    with pytest.raises(TypeError, match="primals and tangents must be tuples"):
        harp.func.jvp(lambda a: a * 2, x, x)
    with pytest.raises(ValueError, match="same tensor as another"):
        harp.func.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, x)
