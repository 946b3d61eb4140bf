"""Gradients from the tensor API as torch.autograd computes them:
Tensor.backward(gradient, inputs=...), harp.autograd.backward and
harp.autograd.grad (leaves and computed tensors, several outputs,
allow_unused), against torch.autograd and finite differences (f64)."""

import numpy as np
import pytest
import torch

import harp

SHAPES = [(1, 1), (3, 5), (7, 17)]


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def both(array, requires_grad=False):
    h = harp.tensor(array)
    t = torch.tensor(array)
    if requires_grad:
        h.requires_grad_()
        t.requires_grad_()
    return h, t


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(np.asarray(got.numpy() if hasattr(got, "numpy")
                                          else got),
                               want.detach().numpy(), rtol=tol, atol=tol)


def net(lib, x, w, b):
    """A layer with a non-0-d output: tanh(x @ w + b) * x[:, :1]."""
    return (x @ w + b).tanh() * x[:, :1]


@pytest.mark.parametrize("m,n", SHAPES)
def test_backward_with_gradient_matches_torch(m, n):
    x, tx = both(rnd(m, 4), requires_grad=True)
    w, tw = both(rnd(4, n, seed=1), requires_grad=True)
    b, tb = both(rnd(n, seed=2), requires_grad=True)
    v = rnd(m, n, seed=3)
    net(harp, x, w, b).backward(harp.tensor(v))
    net(torch, tx, tw, tb).backward(torch.tensor(v))
    for h, t in ((x, tx), (w, tw), (b, tb)):
        close(h.grad, t.grad)
    # A second backward accumulates, as torch's.
    net(harp, x, w, b).backward(v * 2)  # a NumPy gradient
    net(torch, tx, tw, tb).backward(torch.tensor(v * 2))
    close(w.grad, tw.grad)


def test_vector_jacobian_product_matches_finite_differences():
    x0, v = rnd(3, 5), rnd(3, 5, seed=1)
    x = harp.tensor(x0).requires_grad_()
    f = lambda a: np.sin(a) * a.sum(axis=1, keepdims=True)  # noqa: E731
    (harp.sin(x) * x.sum(1, keepdim=True)).backward(harp.tensor(v))
    eps, numeric = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        numeric[i] = ((f(x0 + d) - f(x0 - d)) * v).sum() / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("m,n", SHAPES)
def test_grad_of_leaves_leaves_grad_untouched(m, n):
    x, tx = both(rnd(m, 4), requires_grad=True)
    w, tw = both(rnd(4, n, seed=1), requires_grad=True)
    b, tb = both(rnd(n, seed=2), requires_grad=True)
    loss = (net(harp, x, w, b) ** 2).mean()
    tloss = (net(torch, tx, tw, tb) ** 2).mean()
    got = harp.autograd.grad(loss, [w, b])
    want = torch.autograd.grad(tloss, [tw, tb], retain_graph=True)
    assert isinstance(got, tuple) and len(got) == 2
    for g, t in zip(got, want):
        close(g, t)
    assert w.grad is None and b.grad is None and x.grad is None
    # The loss was computed with the gradients: reading it runs nothing.
    close(loss, tloss)
    # A single tensor for inputs, as torch takes it.
    (gx,) = harp.autograd.grad(loss, x)
    (tgx,) = torch.autograd.grad(tloss, tx)
    close(gx, tgx)


def test_grad_of_computed_tensors_matches_torch():
    x, tx = both(rnd(6, 4), requires_grad=True)
    w, tw = both(rnd(4, 3, seed=1), requires_grad=True)
    hidden, thidden = x @ w, tx @ tw
    act, tact = hidden.tanh(), thidden.tanh()
    loss = (act * act.sum(0)).sum()
    tloss = (tact * tact.sum(0)).sum()
    (gh,) = harp.autograd.grad(loss, [hidden])
    (tgh,) = torch.autograd.grad(tloss, [thidden], retain_graph=True)
    close(gh, tgh)
    # A computed tensor and a leaf it does not read.
    b, tb = both(rnd(3, seed=2), requires_grad=True)
    loss2 = (act + b).exp().sum()
    tloss2 = (tact + tb).exp().sum()
    got = harp.autograd.grad(loss2, [act, b])
    want = torch.autograd.grad(tloss2, [tact, tb])
    for g, t in zip(got, want):
        close(g, t)
    with pytest.raises(harp.HarpError, match="computed from another input"):
        harp.autograd.grad(loss, [hidden, w])


def test_several_outputs_with_grad_outputs():
    x, tx = both(rnd(5, 3), requires_grad=True)
    outs = [x.exp(), (x * x).sum(1), x.sum()]
    touts = [tx.exp(), (tx * tx).sum(1), tx.sum()]
    cot = [rnd(5, 3, seed=1), rnd(5, seed=2), None]
    tcot = [torch.tensor(cot[0]), torch.tensor(cot[1]), None]
    (g,) = harp.autograd.grad(outs, [x], grad_outputs=cot)
    (t,) = torch.autograd.grad(touts, [tx], grad_outputs=tcot, retain_graph=True)
    close(g, t)
    # harp.autograd.backward, as torch.autograd.backward.
    harp.autograd.backward(outs, [harp.tensor(c) if c is not None else None
                                  for c in cot])
    torch.autograd.backward(touts, tcot)
    close(x.grad, tx.grad)
    # A number as the gradient of a 0-d output.
    (g2,) = harp.autograd.grad(x.sum() * 3, [x], grad_outputs=[2.0])
    np.testing.assert_allclose(g2.numpy(), np.full((5, 3), 6.0))


def test_backward_inputs_accumulates_only_there():
    w, tw = both(rnd(4, 2), requires_grad=True)
    b, tb = both(rnd(2, seed=1), requires_grad=True)
    x = harp.tensor(rnd(3, 4, seed=2))
    loss = ((x @ w + b) ** 2).sum()
    tloss = ((torch.tensor(rnd(3, 4, seed=2)) @ tw + tb) ** 2).sum()
    loss.backward(inputs=[b])
    tloss.backward(inputs=[tb], retain_graph=True)
    close(b.grad, tb.grad)
    assert w.grad is None and tw.grad is None
    loss.backward(inputs=w)
    close(w.grad, torch.autograd.grad(tloss, tw)[0])
    close(b.grad, tb.grad)  # unchanged by the second call


def test_grad_under_no_grad_and_of_a_module():
    lin = harp.nn.Linear(4, 3).double()
    tlin = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(lin.weight.numpy()))
        tlin.bias.copy_(torch.tensor(lin.bias.numpy()))
    x = rnd(6, 4)
    loss = lin(harp.tensor(x)).square().mean()
    tloss = tlin(torch.tensor(x)).square().mean()
    with harp.no_grad():  # the graph was built before
        got = harp.autograd.grad(loss, list(lin.parameters()))
    want = torch.autograd.grad(tloss, list(tlin.parameters()))
    for g, t in zip(got, want):
        close(g, t)
    assert all(p.grad is None for p in lin.parameters())


def test_unused_inputs():
    x = harp.tensor(rnd(3)).requires_grad_()
    u = harp.tensor(rnd(2)).requires_grad_()
    loss = (x * x).sum()
    gx, gu = harp.autograd.grad(loss, [x, u], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), 2 * rnd(3))
    assert gu is None
    with pytest.raises(harp.HarpError,
                       match=r"inputs\[1\] \(float64 \[2\]\) was not used.*allow_unused"):
        harp.autograd.grad(loss, [x, u])
    # Nothing asked for is under the loss.
    assert harp.autograd.grad(loss, [u], allow_unused=True) == (None,)


def test_errors_name_the_argument():
    x = harp.tensor(rnd(2, 3)).requires_grad_()
    y = x * 2
    with pytest.raises(harp.HarpError, match=r"shape \[2, 3\].*only for a 0-d"):
        y.backward()
    with pytest.raises(harp.HarpError, match=r"gradient of outputs\[0\] has "
                       r"shape \[3\], the output \[2, 3\]"):
        y.backward(harp.ones(3, dtype=harp.float64))
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        y.sum().backward(create_graph=True)
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        harp.autograd.grad(y.sum(), [x], create_graph=True)
    with pytest.raises(harp.HarpError, match=r"input 0 .*computed, not a leaf"):
        y.sum().backward(inputs=[y])
    c = harp.tensor(rnd(3))
    with pytest.raises(harp.HarpError, match="does not require a gradient"):
        harp.autograd.grad((c * c).sum(), [c])
    with pytest.raises(harp.HarpError, match="only real float outputs"):
        harp.autograd.grad(harp.arange(3).sum(), [x])
    with pytest.raises(ValueError, match="2 gradients given for 1 outputs"):
        harp.autograd.grad(y.sum(), [x], grad_outputs=[None, None])
    with pytest.raises(TypeError, match=r"inputs\[0\] must be a harp.Tensor"):
        harp.autograd.grad(y.sum(), [np.ones(3)])
    with pytest.raises(ValueError, match="inputs must not be empty"):
        harp.autograd.grad(y.sum(), [])
    # retain_graph is accepted: harp keeps every graph.
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.numpy())
