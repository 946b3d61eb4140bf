"""Gradients from the tensor API as torch.autograd computes them:
Tensor.backward(gradient, inputs=...), harp.autograd.backward and
harp.autograd.grad (leaves and computed tensors, several outputs,
allow_unused, create_graph for gradients of gradients), against
torch.autograd and finite differences (f64)."""

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


# Gradients of gradients (create_graph=True) ------------------------------


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-4)])
def test_hessian_vector_product_matches_torch(dtype, tol):
    x0 = rnd(5, 4).astype(dtype)
    w0, v0 = rnd(4, 3, seed=1).astype(dtype), rnd(4, 3, seed=2).astype(dtype)
    w, tw = both(w0, requires_grad=True)
    x, tx = harp.tensor(x0), torch.tensor(x0)
    loss = ((x @ w).tanh() ** 2).sum() + (w * w * w).sum()
    tloss = ((tx @ tw).tanh() ** 2).sum() + (tw * tw * tw).sum()
    (g,) = harp.autograd.grad(loss, [w], create_graph=True)
    (tg,) = torch.autograd.grad(tloss, [tw], create_graph=True)
    close(g, tg, tol)  # read as a value: the first-order gradient
    (g * harp.tensor(v0)).sum().backward()
    (tg * torch.tensor(v0)).sum().backward()
    close(w.grad, tw.grad, tol)


def test_hessian_vector_product_matches_finite_differences():
    x0, w0, v0 = rnd(6, 3), rnd(3, seed=1), rnd(3, seed=2)

    def gradient(wv):
        w = harp.tensor(wv).requires_grad_()
        loss = harp.log1p(harp.exp(harp.tensor(x0) @ w)).sum()
        return harp.autograd.grad(loss, [w])[0].numpy()

    w = harp.tensor(w0).requires_grad_()
    loss = harp.log1p(harp.exp(harp.tensor(x0) @ w)).sum()
    (g,) = harp.autograd.grad(loss, [w], create_graph=True)
    (hv,) = harp.autograd.grad((g * harp.tensor(v0)).sum(), [w])
    eps = 1e-6
    numeric = (gradient(w0 + eps * v0) - gradient(w0 - eps * v0)) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_gradient_penalty_matches_torch():
    # WGAN-GP: the norm of a critic's gradient with respect to its input,
    # penalized, trains the critic's weights (a second-order gradient).
    x0 = rnd(7, 5)
    w1, b1, w2 = rnd(5, 8, seed=1), rnd(8, seed=2), rnd(8, 1, seed=3)
    hp = [harp.tensor(a).requires_grad_() for a in (w1, b1, w2)]
    tp = [torch.tensor(a, requires_grad=True) for a in (w1, b1, w2)]

    def critic(lib, x, p):
        act = lib.nn.functional.leaky_relu(x @ p[0] + p[1], 0.2)
        return act.tanh() @ p[2]

    hx, tx = both(x0, requires_grad=True)
    (gx,) = harp.autograd.grad(critic(harp, hx, hp).sum(), [hx], create_graph=True)
    (tgx,) = torch.autograd.grad(critic(torch, tx, tp).sum(), [tx],
                                 create_graph=True)
    penalty = ((gx.norm(2, dim=1) - 1) ** 2).mean()
    tpenalty = ((tgx.norm(2, dim=1) - 1) ** 2).mean()
    penalty.backward()
    tpenalty.backward()
    close(penalty, tpenalty)
    for h, t in zip(hp, tp):
        close(h.grad, t.grad)


def test_third_derivative_and_computed_inputs():
    x0 = rnd(4)
    x, tx = both(x0, requires_grad=True)
    y, ty = (x.sin() * x).sum(), (tx.sin() * tx).sum()
    g1 = harp.autograd.grad(y, [x], create_graph=True)[0]
    g2 = harp.autograd.grad(g1.sum(), [x], create_graph=True)[0]
    g3 = harp.autograd.grad(g2.sum(), [x])[0]
    t1 = torch.autograd.grad(ty, [tx], create_graph=True)[0]
    t2 = torch.autograd.grad(t1.sum(), [tx], create_graph=True)[0]
    t3 = torch.autograd.grad(t2.sum(), [tx])[0]
    for h, t in ((g1, t1), (g2, t2), (g3, t3)):
        close(h, t)
    # With respect to a computed tensor, then differentiated again.
    h, th = x * 3, tx * 3
    (gh,) = harp.autograd.grad((h ** 3).sum(), [h], create_graph=True)
    (tgh,) = torch.autograd.grad((th ** 3).sum(), [th], create_graph=True)
    close(gh, tgh)
    gh.sum().backward()
    tgh.sum().backward()
    close(x.grad, tx.grad)


def _index(lib, values):
    return harp.tensor(np.array(values)) if lib is harp else torch.tensor(values)


SECOND_ORDER = {
    # Contractions, windows, gathers, reductions with max, normalizations.
    "cross_entropy": (lambda lib, F, x, w: F.cross_entropy(
        x @ w, _index(lib, [0, 2, 1])), [(3, 4), (4, 3)]),
    "conv2d": (lambda lib, F, x, w: (F.conv2d(x, w, padding=1) ** 2).sum(),
               [(2, 3, 5, 5), (4, 3, 3, 3)]),
    "max_pool2d": (lambda lib, F, x: (F.max_pool2d(x, 2) ** 2).sum(),
                   [(1, 2, 5, 4)]),
    "layer_norm": (lambda lib, F, x, w: (F.layer_norm(x, (4,), w) ** 3).sum(),
                   [(3, 4), (4,)]),
    "embedding": (lambda lib, F, w: (F.embedding(
        _index(lib, [0, 2, 2]), w) ** 3).sum(), [(4, 3)]),
    "gelu_logsumexp": (lambda lib, F, x: F.gelu(x).logsumexp(1).pow(2).sum(),
                       [(3, 5)]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_hessian_vector_products_through_op_families(name):
    import harp.nn.functional as HF
    import torch.nn.functional as TF
    fn, shapes = SECOND_ORDER[name]
    arrays = [rnd(*s, seed=i) for i, s in enumerate(shapes)]
    vs = [rnd(*s, seed=10 + i) for i, s in enumerate(shapes)]
    hp = [harp.tensor(a).requires_grad_() for a in arrays]
    tp = [torch.tensor(a, requires_grad=True) for a in arrays]
    hg = harp.autograd.grad(fn(harp, HF, *hp), hp, create_graph=True)
    tg = torch.autograd.grad(fn(torch, TF, *tp), tp, create_graph=True)
    hdot = (hg[0] * harp.tensor(vs[0])).sum()
    tdot = (tg[0] * torch.tensor(vs[0])).sum()
    for g, t, v in zip(hg[1:], tg[1:], vs[1:]):
        hdot = hdot + (g * harp.tensor(v)).sum()
        tdot = tdot + (t * torch.tensor(v)).sum()
    got = harp.autograd.grad(hdot, hp, allow_unused=True)
    want = torch.autograd.grad(tdot, tp, allow_unused=True)
    for g, t in zip(got, want):
        if t is None:  # a linear dependence: torch gives None, harp zeros
            assert g is None or not np.any(g.numpy())
        else:
            close(g, t, 1e-9)


def test_gradient_functions_check_their_computed_indices():
    # The indices are computed inside the gradient's own function: their
    # range is checked before it runs, as everywhere else.
    w = harp.tensor(rnd(4, 3)).requires_grad_()
    index = harp.tensor(np.array([0.0, 1.7, 5.2])).long()
    loss = (harp.nn.functional.embedding(index, w) ** 3).sum()
    (g,) = harp.autograd.grad(loss, [w], create_graph=True)
    with pytest.raises(IndexError, match="index 5 .*out of range"):
        g.numpy()
    with pytest.raises(IndexError, match="index 5 .*out of range"):
        (g * g).sum().backward()


@pytest.mark.parametrize("accumulated", [False, True])
def test_backward_create_graph_makes_grad_differentiable(accumulated):
    # torch's gradient-norm regularizer: loss.backward(create_graph=True),
    # then a function of p.grad differentiated into p.grad again.
    x0, w0 = rnd(5, 4), rnd(4, 3, seed=1)
    w, tw = both(w0, requires_grad=True)
    if accumulated:  # an earlier gradient is part of the graph
        (w * w).sum().backward()
        (tw * tw).sum().backward()
    loss = ((harp.tensor(x0) @ w).tanh() ** 2).sum()
    tloss = ((torch.tensor(x0) @ tw).tanh() ** 2).sum()
    loss.backward(create_graph=True)
    tloss.backward(create_graph=True)
    assert not w.grad.is_leaf
    close(w.grad, tw.grad)
    w.grad.pow(2).sum().backward()
    tw.grad.pow(2).sum().backward(retain_graph=True)
    close(w.grad, tw.grad)
    assert w.grad.is_leaf  # computed by the second backward
    # zero_grad (or .grad = None) drops the graph the gradient held.
    w.grad = None
    tw.grad = None
    loss.backward(create_graph=True, inputs=[w])
    w.grad.sum().backward()
    tloss.backward(create_graph=True, inputs=[tw])
    tw.grad.sum().backward()
    close(w.grad, tw.grad)
    w.grad = None
