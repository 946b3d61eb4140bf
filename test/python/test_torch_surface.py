"""PyTorch's program surface written in Python, against torch 1.13:
harp.device, torch's dtype names, from_numpy and the module-level functions
(harp/_functions.py), the Tensor methods harp/_tensor_methods.py adds
(reductions, shapes, new tensors, in-place writes through copy_, .data),
harp.nn.utils (gradient clipping, parameter vectors) and harp.utils.data
(datasets, samplers, DataLoader, default_collate)."""

import collections
import pickle
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import harp
from harp.utils import data as hdata


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(dtype)


def close(got, want, **kw):
    if isinstance(want, torch.Tensor):
        want = want.detach().numpy()
    got = got.numpy() if isinstance(got, harp.Tensor) else np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, rtol=kw.get("rtol", 1e-6), atol=kw.get("atol", 1e-6))


# Devices and dtypes ----------------------------------------------------------


def test_device_as_torch_device():
    d = harp.device("cuda:0")
    assert (d.type, d.index, str(d), repr(d)) == ("cuda", 0, "cuda:0",
                                                  "device(type='cuda', index=0)")
    assert f"{d}" == "cuda:0" and "%s" % d == "cuda:0"
    cpu = harp.device("cpu")
    assert (cpu.type, cpu.index, repr(cpu)) == ("cpu", None, "device(type='cpu')")
    assert harp.device("cuda", 0) == d and harp.device(0) == d and harp.device(d) is d
    assert harp.device("cuda") != d  # as torch: no index is not index 0
    assert cpu == "cpu" and "cpu" == cpu and cpu != "cuda"
    assert len({harp.device("cpu"), harp.device("cpu"), "cpu"}) == 1
    assert pickle.loads(pickle.dumps(d)) == d and pickle.loads(pickle.dumps(d)).index == 0
    # Accepted wherever a device name is.
    t = harp.tensor(np.ones(2, np.float32), device=cpu)
    assert t.device == cpu and t.to(cpu).device == "cpu"
    assert t.to(cpu, harp.float64).dtype == harp.float64
    model = harp.nn.Linear(2, 1).to(harp.device("cpu"))
    assert model.weight.device == "cpu"
    assert t.new_zeros(2, device=cpu).device == "cpu"
    for bad, error, message in [
            ("tpu", ValueError, "unknown device type 'tpu'"),
            ("cuda:x", ValueError, "invalid device string"),
            ("cuda:-1", ValueError, "invalid device string"),
            (3.5, TypeError, "expected a device name")]:
        with pytest.raises(error, match="harp.device: " + message):
            harp.device(bad)
    with pytest.raises(ValueError, match="must not be negative"):
        harp.device("cuda", -1)
    with pytest.raises(ValueError, match="must not include an index"):
        harp.device("cuda:0", 1)
    with pytest.raises(harp.HarpError, match="cuda:1"):
        harp.tensor(np.ones(2), device=harp.device("cuda", 1))


def test_dtype_names_and_star_import():
    assert (harp.float, harp.double, harp.int, harp.long, harp.short, harp.bool,
            harp.cfloat, harp.cdouble) == (harp.float32, harp.float64, harp.int32,
                                           harp.int64, harp.int16, harp.bool_,
                                           harp.complex64, harp.complex128)
    from harp import float as hfloat, sum as hsum
    assert hfloat is harp.float32 and hsum is harp.sum
    namespace = {}
    exec("from harp import *", namespace)
    # Names that would hide Python's builtins stay out of __all__.
    for name in ("float", "int", "bool", "sum", "max", "min", "abs", "all", "any",
                 "round", "pow"):
        assert name not in namespace, name
        assert name in dir(harp)
    for name in ("exp", "device", "from_numpy", "long", "double", "add", "amax", "utils"):
        assert name in namespace, name
    with pytest.raises(AttributeError, match="no attribute 'float16'"):
        harp.float16


def test_from_numpy_keeps_the_dtype():
    for array in [rnd(2, 3, dtype=np.float64), np.arange(6, dtype=np.int32).reshape(2, 3),
                  np.array([True, False]), rnd(4, 5)[:, ::2], np.asfortranarray(rnd(3, 2))]:
        t = harp.from_numpy(array)
        assert t.numpy().dtype == array.dtype
        np.testing.assert_array_equal(t.numpy(), array)
        np.testing.assert_array_equal(t.numpy(), torch.from_numpy(np.ascontiguousarray(array)))
    with pytest.raises(TypeError, match="harp.from_numpy: expected a NumPy array, got list"):
        harp.from_numpy([1.0, 2.0])


# Module-level functions --------------------------------------------------------

X = rnd(3, 4)
Y = rnd(3, 4, seed=1)
P = np.abs(X) + 0.5
I = np.array([[-7, 7, 5], [-6, 9, -1]], dtype=np.int64)
J = np.array([[2, -2, 3], [4, 2, -3]], dtype=np.int64)
FUNCTIONS = [
    ("exp", (X,), {}), ("log", (P,), {}), ("sin", (X,), {}), ("cos", (X,), {}),
    ("tanh", (X,), {}), ("sigmoid", (X,), {}), ("sqrt", (P,), {}), ("abs", (X,), {}),
    ("rsqrt", (P,), {}), ("reciprocal", (P,), {}), ("neg", (X,), {}),
    ("floor", (X,), {}), ("round", (X,), {}), ("relu", (X,), {}), ("square", (X,), {}),
    ("sum", (X,), {}), ("sum", (X,), {"dim": 1}), ("sum", (X,), {"dim": (0, 1), "keepdim": True}),
    ("sum", (X,), {"dim": 0, "dtype": torch.float64}), ("mean", (X,), {"dim": -1}),
    ("prod", (P,), {"dim": 1}), ("amax", (X,), {}),
    ("amax", (X,), {"dim": (0, 1), "keepdim": True}),
    ("amin", (X,), {"dim": 0}), ("argmax", (X,), {"dim": 1}), ("argmin", (X,), {}),
    ("all", (X > 0,), {}), ("any", (X > 0,), {"dim": 1, "keepdim": True}),
    ("logsumexp", (X,), {"dim": 1}), ("var", (X,), {"dim": 1, "unbiased": False}),
    ("std", (X,), {}), ("var", (X,), {"dim": 0, "correction": 0, "keepdim": True}),
    ("log_softmax", (X,), {"dim": 1}), ("clamp", (X,), {"min": -0.5, "max": 0.5}),
    ("clamp", (X,), {"min": Y}), ("clip", (X,), {"max": 1.0}),
    ("add", (X, Y), {"alpha": 2.5}), ("sub", (X, Y), {"alpha": -1}), ("mul", (X, 3.0), {}),
    ("div", (X, P), {}), ("div", (I, J), {"rounding_mode": "trunc"}),
    ("div", (I, J), {"rounding_mode": "floor"}), ("div", (I, 2), {"rounding_mode": "trunc"}),
    ("div", (I, -2), {"rounding_mode": "trunc"}), ("div", (X, 0.3), {"rounding_mode": "trunc"}),
    ("floor_divide", (I, J), {}), ("remainder", (I, J), {}), ("fmod", (I, J), {}),
    ("pow", (P, 2.5), {}), ("pow", (2.0, X), {}), ("maximum", (X, Y), {}), ("minimum", (X, Y), {}),
    ("eq", (I, J), {}), ("ne", (X, Y), {}), ("lt", (X, Y), {}), ("le", (X, 0.0), {}),
    ("gt", (X, Y), {}), ("ge", (X, Y), {}), ("mm", (X, Y.T), {}),
    ("bmm", (rnd(2, 3, 4), rnd(2, 4, 5)), {}), ("reshape", (X, (2, -1)), {}),
    ("flatten", (rnd(2, 3, 4),), {"start_dim": 1}), ("transpose", (X, 0, 1), {}),
    ("permute", (rnd(2, 3, 4), (2, 0, 1)), {}), ("squeeze", (rnd(3, 1, 2),), {"dim": 1}),
    ("unsqueeze", (X,), {"dim": -1}), ("flip", (X, (0, 1)), {}), ("t", (X,), {}),
    ("movedim", (rnd(2, 3, 4, 5), (0, 1), (3, 0)), {}), ("narrow", (X, 1, -3, 2), {}),
    ("masked_fill", (X, X > 0, -1.0), {}), ("clone", (X,), {}),
]


def as_args(values, lib):
    out = []
    for v in values:
        if isinstance(v, np.ndarray):
            out.append(harp.tensor(v) if lib is harp else torch.tensor(v))
        else:
            out.append(v)
    return out


@pytest.mark.parametrize("name, args, kwargs", FUNCTIONS,
                         ids=["%s-%d" % (f[0], i) for i, f in enumerate(FUNCTIONS)])
def test_module_functions_match_torch(name, args, kwargs):
    hkw = {k: (harp.float64 if v is torch.float64 else
               harp.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    tkw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    got = getattr(harp, name)(*as_args(args, harp), **hkw)
    want = getattr(torch, name)(*as_args(args, torch), **tkw)
    close(got, want, rtol=1e-5, atol=1e-5)


def test_max_and_min_in_torch_forms():
    x, y = harp.tensor(X), harp.tensor(Y)
    assert harp.max(x).item() == pytest.approx(float(X.max()))
    values, indices = harp.max(x, 1)
    np.testing.assert_array_equal(values.numpy(), X.max(1))
    np.testing.assert_array_equal(indices.numpy(), X.argmax(1))
    pair = harp.min(x, dim=0, keepdim=True)
    tpair = torch.min(torch.tensor(X), dim=0, keepdim=True)
    close(pair.values, tpair.values)
    close(pair.indices, tpair.indices)
    close(harp.max(x, y), torch.max(torch.tensor(X), torch.tensor(Y)))


def test_module_function_errors_name_the_function():
    with pytest.raises(TypeError, match=r"harp\.exp: input must be a harp\.Tensor, got list"):
        harp.exp([1.0, 2.0])
    with pytest.raises(TypeError, match=r"harp\.sum: input must be a harp\.Tensor, got ndarray"):
        harp.sum(X)
    with pytest.raises(TypeError, match=r"harp\.round: decimals must be an int"):
        harp.round(harp.tensor(X), decimals=2.0)
    with pytest.raises(ValueError, match="div: rounding_mode must be"):
        harp.div(harp.tensor(X), 2.0, rounding_mode="ceil")
    with pytest.raises(harp.HarpError, match="alpha must not be a floating point"):
        harp.add(harp.tensor(I), 1, alpha=0.5)
    with pytest.raises(harp.HarpError, match="mm: self must be a matrix"):
        harp.mm(harp.tensor(X[0]), harp.tensor(X))
    with pytest.raises(harp.HarpError, match="t: expects a tensor with <= 2 dimensions"):
        harp.t(harp.tensor(rnd(2, 2, 2)))
    with pytest.raises(harp.HarpError, match="narrow: start \\(2\\) \\+ length \\(3\\) exceeds"):
        harp.narrow(harp.tensor(X), 1, 2, 3)
    with pytest.raises(harp.HarpError, match="movedim: repeated dim in `source`"):
        harp.movedim(harp.tensor(X), (0, 0), (1, 0))
    with pytest.raises(harp.HarpError, match="clamp: at least one of min and max"):
        harp.clamp(harp.tensor(X))


# Tensor methods ----------------------------------------------------------------


def test_tensor_methods_match_torch():
    a, ta = harp.tensor(rnd(2, 3, 4)), torch.tensor(rnd(2, 3, 4))
    close(a.amax(dim=(0, 2)), ta.amax(dim=(0, 2)))
    close(a.amin(-1, keepdim=True), ta.amin(-1, keepdim=True))
    close((a > 0).all(dim=1), (ta > 0).all(dim=1))
    close(a.any(), ta.any())
    index = np.array([[[0, 2, 1, 1]], [[2, 2, 0, 1]]])
    close(a.gather(1, harp.tensor(index)), ta.gather(1, torch.tensor(index)))
    close(a.movedim(-1, 0), ta.movedim(-1, 0))
    close(a[0].t(), ta[0].t())
    close(a[0, 0].t(), ta[0, 0].t())
    close(a[0].mm(a[1].t()), ta[0].mm(ta[1].t()))
    close(a.bmm(a.transpose(1, 2)), ta.bmm(ta.transpose(1, 2)))
    close(a.narrow(2, 1, 2), ta.narrow(2, 1, 2))
    b, tb = harp.tensor(rnd(4, 6)), torch.tensor(rnd(4, 6))
    close(b.view_as(a), tb.view_as(ta))
    close(b.reshape_as(a.permute(2, 0, 1)), tb.reshape_as(ta.permute(2, 0, 1)))
    close(b[:1].expand_as(b), tb[:1].expand_as(tb))
    close(b.type_as(harp.tensor(I)), tb.type_as(torch.tensor(I)))
    close(b.add(b, alpha=2), tb.add(tb, alpha=2))
    close(b.sub(1.5), tb.sub(1.5))
    close(b.mul(b), tb.mul(tb))
    close(b.div(3, rounding_mode="floor"), tb.div(3, rounding_mode="floor"))
    close(b.neg().lt(b), tb.neg().lt(tb))
    assert (b.nelement(), b.element_size(), harp.tensor(I).element_size()) == (24, 4, 8)
    assert b.type() == "harp.FloatTensor" and harp.tensor(I).type() == "harp.LongTensor"
    assert b.type(harp.float64).dtype == harp.float64
    assert b.type("torch.IntTensor").dtype == harp.int32
    assert b.cpu().device == "cpu" and b.is_cuda is False and b.get_device() == -1
    for name in ("float", "double", "int", "long", "bool"):
        close(getattr(b, name)(memory_format=None), getattr(tb, name)())
    with pytest.raises(ValueError, match="type: invalid type 'torch.HalfTensor'"):
        b.type("torch.HalfTensor")


def test_new_tensors_take_this_ones_dtype():
    x = harp.tensor(np.ones(3), harp.float64)
    tx = torch.ones(3, dtype=torch.float64)
    for h, t in [(x.new_zeros(2, 3), tx.new_zeros(2, 3)), (x.new_ones((2,)), tx.new_ones((2,))),
                 (x.new_full((2, 2), 7), tx.new_full((2, 2), 7)),
                 (x.new_tensor([1, 2]), tx.new_tensor([1, 2])),
                 (x.new_zeros(2, dtype=harp.int32), tx.new_zeros(2, dtype=torch.int32)),
                 (x.new_empty(0, 2), tx.new_empty(0, 2))]:
        close(h, t)
    leaf = x.new_zeros(3, requires_grad=True)
    (leaf * 2).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [2, 2, 2])
    with pytest.raises(RuntimeError, match="fill_: a leaf tensor that requires grad"):
        leaf.fill_(4.0)  # as torch's: only under no_grad
    with harp.no_grad():
        leaf.fill_(4.0)  # a new tensor is a leaf: writable
    np.testing.assert_array_equal(leaf.numpy(), [4, 4, 4])
    with pytest.raises(TypeError, match="new_full: size must be a tuple"):
        x.new_full(2, 3)
    with pytest.raises(TypeError, match="new_zeros: the size must be ints"):
        x.new_zeros(2.5)


def test_clone_keeps_its_values_and_gradient():
    w = harp.tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = w.clone()
    w.copy_(w * 0 + 5)
    np.testing.assert_array_equal(c.numpy(), [1, 2])
    (w.clone() * w.clone()).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [10, 10])


def test_assigning_grad_as_torch():
    w = harp.tensor(np.array([1.0, 2.0]), requires_grad=True)
    t = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    for x in (w, t):
        (x * 3).sum().backward()
        x.grad = None
    assert w.grad is None and t.grad is None
    for x in (w, t):
        (x * x).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), t.grad.numpy())
    w.grad = harp.tensor(np.array([10.0, 20.0]))
    t.grad = torch.tensor([10.0, 20.0], dtype=torch.float64)
    for x in (w, t):
        (x * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [12, 22])
    np.testing.assert_array_equal(w.grad.numpy(), t.grad.numpy())
    with pytest.raises(harp.HarpError, match=r"f64 \[2\] leaf cannot take a gradient of tensor<3xf64>"):
        w.grad = harp.tensor(np.zeros(3))
    with pytest.raises(TypeError, match="grad: takes a harp.Tensor or None, got list"):
        w.grad = [1.0, 2.0]
    np.testing.assert_array_equal(w.grad.numpy(), [12, 22])


def test_realize_computes_tensors_in_one_call():
    x = harp.tensor(rnd(5, 7))
    shared = (x * 2).exp()
    a, b, c = shared.sum(0), shared.amax(1), x.t() @ x
    before = harp.compile_stats()
    assert harp.realize(a, b, c, a, x) == (a, b, c, a, x)
    after = harp.compile_stats()
    assert (after["compiles"] + after["memory_hits"] + after["disk_hits"]) - \
        (before["compiles"] + before["memory_hits"] + before["disk_hits"]) == 1
    e = np.exp(rnd(5, 7) * 2)
    np.testing.assert_allclose(a.numpy(), e.sum(0), rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), e.max(1), rtol=1e-5)
    np.testing.assert_allclose(c.numpy(), rnd(5, 7).T @ rnd(5, 7), rtol=1e-5)
    # Nothing more is computed for them, and nothing is computed twice.
    again = harp.compile_stats()
    harp.realize(a, b, c)
    a.numpy(), b.numpy(), c.numpy()
    assert harp.compile_stats() == again
    assert harp.realize() == ()
    with pytest.raises(TypeError, match="realize: takes harp.Tensor arguments, got ndarray"):
        harp.realize(a, np.ones(3))


def test_in_place_writes_match_torch():
    h = harp.tensor(rnd(2, 3), requires_grad=True)
    t = torch.tensor(rnd(2, 3), requires_grad=True)
    other = rnd(2, 3, seed=3)
    with torch.no_grad(), harp.no_grad():
        steps = [("add_", (other,), {"alpha": -0.5}), ("mul_", (2.0,), {}),
                 ("sub_", (1.0,), {"alpha": 3}), ("div_", (other,), {}),
                 ("clamp_", (), {"min": -1.0, "max": 1.5}), ("clamp_", (), {"max": other}),
                 ("masked_fill_", (other > 0, 0.25), {})]
        for name, args, kwargs in steps:
            hargs = as_args(args, harp)
            hkw = {k: harp.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
            tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                   for k, v in kwargs.items()}
            assert getattr(h, name)(*hargs, **hkw) is h
            getattr(t, name)(*as_args(args, torch), **tkw)
        close(h, t, rtol=1e-5)
        h.fill_(harp.tensor(np.float64(2.5)))
        t.fill_(torch.tensor(2.5))
        close(h, t)
        assert h.zero_() is h
        np.testing.assert_array_equal(h.numpy(), np.zeros((2, 3)))
    n = harp.tensor(np.arange(6).reshape(2, 3))
    n.div_(-4, rounding_mode="trunc")
    want = torch.arange(6).reshape(2, 3).div(-4, rounding_mode="trunc")
    np.testing.assert_array_equal(n.numpy(), want)
    n.fill_(2.7)  # fill_ casts, as torch's
    np.testing.assert_array_equal(n.numpy(), np.full((2, 3), 2))


def test_in_place_errors():
    x = harp.tensor(rnd(2, 3))
    with pytest.raises(harp.HarpError, match=r"add_: the result's shape \[4, 2, 3\] does not"):
        x.add_(harp.tensor(rnd(4, 2, 3)))
    with pytest.raises(harp.HarpError, match="add_: result type float32 can't be cast"):
        harp.tensor(I).add_(1.5)
    with pytest.raises(harp.HarpError, match="fill_: only supports a 0-dimension value"):
        x.fill_(harp.tensor(rnd(3)))
    with pytest.raises(TypeError, match="fill_: value must be a number"):
        x.fill_("1")
    with pytest.raises(harp.HarpError, match="normal_: expects a floating-point tensor"):
        harp.tensor(I).normal_()
    with pytest.raises(TypeError, match="uniform_: takes from and to"):
        x.uniform_(0, 1, low=2)


def test_random_in_place_fills_follow_harp_manual_seed():
    w = harp.tensor(np.zeros((200, 50), np.float32))
    harp.manual_seed(3)
    first = w.normal_(1.0, 0.5).numpy().copy()
    w.uniform_(-0.1, 0.1)
    second = w.numpy().copy()
    harp.manual_seed(3)
    np.testing.assert_array_equal(w.normal_(1.0, 0.5).numpy(), first)
    w.uniform_(**{"from": -0.1, "to": 0.1})
    np.testing.assert_array_equal(w.numpy(), second)
    assert abs(first.mean() - 1.0) < 0.02 and abs(first.std() - 0.5) < 0.02
    assert second.min() >= -0.1 and second.max() < 0.1 and abs(second.mean()) < 0.005


def test_data_reads_and_writes_the_values():
    w = harp.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    d = w.data
    assert not d.requires_grad
    d.mul_(2.0)  # writes w's values, as torch's p.data.mul_
    np.testing.assert_array_equal(w.numpy(), [2, 4, 6])
    w.data = harp.tensor(np.array([0.5, 0.5, 0.5]))
    np.testing.assert_array_equal(w.numpy(), [0.5, 0.5, 0.5])
    assert w.requires_grad
    # A hand-written SGD step as torch programs write it.
    tw = torch.tensor([0.5, 0.5, 0.5], dtype=torch.float64, requires_grad=True)
    (w * w * harp.tensor(np.array([1.0, 2.0, 3.0]))).sum().backward()
    (tw * tw * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    w.data.sub_(0.1 * w.grad)
    tw.data.sub_(0.1 * tw.grad)
    close(w, tw)
    with pytest.raises(harp.HarpError, match=r"data: harp writes .* \[3\], got float64 \[2\]"):
        w.data = harp.tensor(np.ones(2))
    with pytest.raises(TypeError, match="data: expected a harp.Tensor, got list"):
        w.data = [1.0, 2.0, 3.0]


# harp.nn.utils -----------------------------------------------------------------


def grads_of(lib, norm_shapes=((3, 4), (4,), (2, 2, 2))):
    params = []
    for i, shape in enumerate(norm_shapes):
        value = rnd(*shape, seed=10 + i, dtype=np.float64)
        params.append(harp.tensor(value, requires_grad=True) if lib is harp
                      else torch.tensor(value, requires_grad=True))
    loss = sum(((p * p * p).sum() if lib is harp else (p ** 3).sum()) for p in params)
    loss.backward()
    return params


@pytest.mark.parametrize("norm_type, max_norm", [(2.0, 1.0), (1, 5.0), ("inf", 2.0),
                                                 (3.5, 0.5), (2, 1e6)])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    hp, tp = grads_of(harp), grads_of(torch)
    total = harp.nn.utils.clip_grad_norm_(hp, max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type=norm_type)
    assert total.ndim == 0
    close(total, ttotal, rtol=1e-10)
    for h, t in zip(hp, tp):
        close(h.grad, t.grad, rtol=1e-10, atol=1e-12)
    # The optimizer reads the clipped gradients.
    harp.optim.SGD(hp, lr=0.1).step()
    torch.optim.SGD(tp, lr=0.1).step()
    for h, t in zip(hp, tp):
        close(h, t, rtol=1e-10, atol=1e-12)


def test_clip_grad_edge_cases_and_value():
    w = harp.tensor(np.array([1.0, 2.0]), requires_grad=True)
    total = harp.nn.utils.clip_grad_norm_(w, 1.0)  # no gradient yet
    assert total.item() == 0.0 and total.dtype == harp.float32
    (w * np.inf).sum().backward()
    with pytest.raises(RuntimeError, match="clip_grad_norm_: the total norm of order 2.0"):
        harp.nn.utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(w.grad.numpy(), [np.inf, np.inf])  # nothing written
    hp, tp = grads_of(harp), grads_of(torch)
    assert harp.nn.utils.clip_grad_value_(hp, 0.75) is None
    torch.nn.utils.clip_grad_value_(tp, 0.75)
    for h, t in zip(hp, tp):
        close(h.grad, t.grad)


def test_parameters_to_vector_and_back():
    hp, tp = grads_of(harp), grads_of(torch)
    vec, tvec = harp.nn.utils.parameters_to_vector(hp), torch.nn.utils.parameters_to_vector(tp)
    close(vec, tvec)
    (vec * vec).sum().backward()  # a differentiable concat
    np.testing.assert_allclose(hp[1].grad.numpy(), tp[1].grad.numpy() + 2 * tp[1].detach().numpy())
    new = np.arange(24.0)
    harp.nn.utils.vector_to_parameters(harp.tensor(new), hp)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), tp)
    for h, t in zip(hp, tp):
        close(h, t)
    with pytest.raises(TypeError, match="vector_to_parameters: expected a harp.Tensor, but "
                                        "got: ndarray"):
        harp.nn.utils.vector_to_parameters(new, hp)
    with pytest.raises(harp.HarpError, match="the parameters have 24 elements, vec 23"):
        harp.nn.utils.vector_to_parameters(harp.tensor(new[:23]), hp)


# harp.utils.data ---------------------------------------------------------------


def epoch(loader):
    return [[np.asarray(part.numpy()).tolist() for part in batch] for batch in loader]


def test_dataloader_batches_in_order_as_torch():
    x, y = rnd(10, 3), np.arange(10)
    ours = hdata.DataLoader(hdata.TensorDataset(harp.tensor(x), harp.tensor(y)), batch_size=4)
    theirs = tdata.DataLoader(tdata.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=4)
    assert len(ours) == len(theirs) == 3
    got = list(ours)
    for (hx, hy), (tx, ty) in zip(got, theirs):
        close(hx, tx)
        close(hy, ty)
    assert isinstance(got[0], list) and len(got) == 3
    dropped = hdata.DataLoader(hdata.TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[1].numpy().tolist() for b in dropped] == [[0, 1, 2, 3],
                                                                             [4, 5, 6, 7]]


def test_shuffling_follows_harp_manual_seed():
    ds = hdata.TensorDataset(harp.tensor(np.arange(20.0)), harp.tensor(np.arange(20)))
    loader = hdata.DataLoader(ds, batch_size=6, shuffle=True)
    before = harp.compile_stats()
    harp.manual_seed(7)
    first, second = epoch(loader), epoch(loader)
    harp.manual_seed(7)
    assert epoch(loader) == first and epoch(loader) == second
    assert first != second
    after = harp.compile_stats()
    assert after["compiles"] + after["disk_hits"] == before["compiles"] + before["disk_hits"]
    for batches in (first, second):
        order = [i for xb, yb in batches for i in yb]
        assert sorted(order) == list(range(20)) and [len(b[1]) for b in batches] == [6, 6, 6, 2]
        assert [v for xb, yb in batches for v in xb] == [float(i) for i in order]
    # A generator of its own: its own stream, the default one untouched.
    state = harp.get_rng_state()
    mine = hdata.DataLoader(ds, batch_size=20, shuffle=True, generator=harp.Generator(1))
    again = hdata.DataLoader(ds, batch_size=20, shuffle=True, generator=harp.Generator(1))
    assert epoch(mine) == epoch(again) and harp.get_rng_state() == state
    with pytest.raises(TypeError, match="generator must be a harp.Generator"):
        list(hdata.DataLoader(ds, shuffle=True, generator=torch.Generator()))


def test_random_split_as_torch():
    for lengths, n in [([3, 7], 10), ([0.3, 0.3, 0.4], 10), ([0.5, 0.5], 7), ([0.2, 0.8], 3)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = hdata.random_split(range(n), lengths)
            theirs = tdata.random_split(range(n), lengths)
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        assert sorted(i for s in ours for i in s) == list(range(n))
    harp.manual_seed(1)
    a = [list(s) for s in hdata.random_split(range(10), [4, 6])]
    harp.manual_seed(1)
    assert [list(s) for s in hdata.random_split(range(10), [4, 6])] == a
    assert [list(s) for s in hdata.random_split(range(10), [4, 6], generator=harp.Generator(2))] \
        == [list(s) for s in hdata.random_split(range(10), [4, 6], generator=harp.Generator(2))]
    with pytest.raises(ValueError, match="random_split: the lengths add up to 9"):
        hdata.random_split(range(10), [4, 5])
    with pytest.raises(ValueError, match="random_split: fraction at index 0"):
        hdata.random_split(range(10), [1.5, -0.5])
    # A Subset of a TensorDataset reads its batches in one piece too.
    ds = hdata.TensorDataset(np.arange(10.0) * 2)
    train, _ = hdata.random_split(ds, [0.6, 0.4])
    batch, = next(iter(hdata.DataLoader(train, batch_size=6)))
    np.testing.assert_array_equal(batch.numpy(), [2.0 * i for i in train.indices])


Point = collections.namedtuple("Point", ["x", "y"])


def describe(value):
    """A structure's types, dtypes and values, comparable across libraries."""
    if isinstance(value, (harp.Tensor, torch.Tensor)):
        array = np.asarray(value.numpy() if isinstance(value, harp.Tensor) else value.numpy())
        return ("tensor", str(array.dtype), array.tolist())
    if isinstance(value, dict):
        return {k: describe(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, [describe(v) for v in value])
    if isinstance(value, list):
        return [describe(v) for v in value]
    return value


@pytest.mark.parametrize("samples", [
    [(np.float32([1, 2]), 1, "a"), (np.float32([3, 4]), 2, "b")],
    [{"x": np.arange(3), "y": 0.5, "flag": True}, {"x": np.arange(3) + 3, "y": 1.5, "flag": False}],
    [Point(np.float64(1.5), [1, 2]), Point(np.float64(2.5), [3, 4])],
    [[1, 2.5], [3, 4.0]],
    [np.int32(3), np.int32(4)],
])
def test_default_collate_as_torch(samples):
    assert describe(hdata.default_collate(samples)) == \
        describe(tdata.default_collate(samples))


def test_collate_of_harp_tensors_custom_datasets_and_errors():
    class Squares(hdata.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": harp.tensor(np.full(2, float(i))), "n": i}

    batches = list(hdata.DataLoader(Squares(), batch_size=2))
    assert [b["n"].numpy().tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    np.testing.assert_array_equal(batches[1]["x"].numpy(), [[2, 2], [3, 3]])
    single = list(hdata.DataLoader(Squares(), batch_size=None))
    assert single[3]["n"] == 3 and single[3]["x"].shape == (2,)
    custom = hdata.DataLoader(Squares(), batch_size=3, collate_fn=lambda b: [s["n"] for s in b])
    assert list(custom) == [[0, 1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        hdata.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain harp tensors"):
        hdata.default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        hdata.default_collate([np.array(["a"]), np.array(["b"])])
    assert describe(hdata.default_convert((np.arange(2), [np.float32(1)], "s"))) == \
        describe(tdata.default_convert((np.arange(2), [np.float32(1)], "s")))


def test_a_dataset_that_requires_grad_keeps_the_graph():
    x = harp.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    (xb,) = next(iter(hdata.DataLoader(hdata.TensorDataset(x), batch_size=2,
                                       sampler=[2, 0, 1])))
    (xb * xb).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2], [0, 0], [8, 10]])


def test_samplers_iterables_and_concat():
    ds = hdata.TensorDataset(np.arange(10))
    harp.manual_seed(0)
    drawn = list(hdata.RandomSampler(ds, replacement=True, num_samples=25))
    assert len(drawn) == 25 and set(drawn) <= set(range(10))
    long = list(hdata.RandomSampler(ds, num_samples=25))
    assert sorted(long[:10]) == sorted(long[10:20]) == list(range(10)) and len(set(long[20:])) == 5
    subset = list(hdata.SubsetRandomSampler([3, 5, 7]))
    assert sorted(subset) == [3, 5, 7]
    batches = hdata.BatchSampler(hdata.SequentialSampler(range(7)), 3, drop_last=False)
    assert list(batches) == [[0, 1, 2], [3, 4, 5], [6]] and len(batches) == 3
    loader = hdata.DataLoader(ds, batch_sampler=[[9, 0], [4]])
    assert [b[0].numpy().tolist() for b in loader] == [[9, 0], [4]]

    class Stream(hdata.IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    stream = hdata.DataLoader(Stream(), batch_size=3, drop_last=True)
    assert [b.numpy().tolist() for b in stream] == [[0, 1, 2], [3, 4, 5]] and len(stream) == 2
    both = hdata.TensorDataset(np.arange(3)) + hdata.TensorDataset(np.arange(10, 12))
    assert len(both) == 5 and both[3][0].item() == 10 and both[-1][0].item() == 11
    assert hdata.get_worker_info() is None


@pytest.mark.parametrize("make, error, message", [
    (lambda ds: hdata.DataLoader(ds, sampler=[0, 1], shuffle=True), ValueError,
     "sampler option is mutually exclusive with shuffle"),
    (lambda ds: hdata.DataLoader(ds, batch_sampler=[[0]], batch_size=2), ValueError,
     "batch_sampler option is mutually exclusive"),
    (lambda ds: hdata.DataLoader(ds, batch_size=None, drop_last=True), ValueError,
     "batch_size=None option disables auto-batching"),
    (lambda ds: hdata.DataLoader(ds, batch_size=0), ValueError,
     "BatchSampler: batch_size should be a positive integer value, but got batch_size=0"),
    (lambda ds: hdata.DataLoader(ds, num_workers=-1), ValueError,
     "num_workers option should be a non-negative int"),
    (lambda ds: hdata.DataLoader(ds, persistent_workers=True), ValueError,
     "persistent_workers option needs num_workers > 0"),
    (lambda ds: hdata.RandomSampler(ds, num_samples=0), ValueError,
     "RandomSampler: num_samples should be a positive integer"),
    (lambda ds: hdata.RandomSampler(ds, replacement=1), TypeError,
     "RandomSampler: replacement should be a boolean"),
    (lambda ds: hdata.TensorDataset(np.arange(3), np.arange(4)), ValueError,
     r"TensorDataset: size mismatch between tensors: first dims \[3, 4\]"),
    (lambda ds: hdata.TensorDataset([1, 2]), TypeError,
     "TensorDataset: tensor 0 is a list"),
    (lambda ds: hdata.DataLoader(hdata.IterableDataset(), shuffle=True), ValueError,
     "DataLoader with IterableDataset: expected unspecified shuffle option"),
])
def test_data_errors(make, error, message):
    with pytest.raises(error, match=message):
        make(hdata.TensorDataset(np.arange(4)))


def test_a_torch_style_training_loop_matches_torch():
    # A shuffling DataLoader, gradient clipping, RMSprop with momentum and
    # ExponentialLR, written as a PyTorch program; torch runs the same
    # batches (the loader also yields each sample's index).
    rng = np.random.default_rng(4)
    x = rng.standard_normal((24, 5))
    y = np.tanh(x @ rng.standard_normal((5, 2)))
    hm = harp.nn.Sequential(harp.nn.Linear(5, 8), harp.nn.Tanh(), harp.nn.Linear(8, 2)).double()
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(v) for k, v in hm.state_dict().items()})
    loader = hdata.DataLoader(hdata.TensorDataset(harp.from_numpy(x), harp.from_numpy(y),
                                                  harp.from_numpy(np.arange(24))),
                              batch_size=8, shuffle=True)
    hopt = harp.optim.RMSprop(hm.parameters(), lr=0.05, momentum=0.5)
    topt = torch.optim.RMSprop(tm.parameters(), lr=0.05, momentum=0.5)
    hsched = harp.optim.lr_scheduler.ExponentialLR(hopt, gamma=0.7)
    tsched = torch.optim.lr_scheduler.ExponentialLR(topt, gamma=0.7)
    harp.manual_seed(0)
    compiled, norms = [], []
    for _ in range(3):
        for xb, yb, ib in loader:
            hopt.zero_grad()
            loss = harp.nn.MSELoss()(hm(xb), yb)
            loss.backward()
            norm = harp.nn.utils.clip_grad_norm_(hm.parameters(), max_norm=0.3)
            hopt.step()
            rows = torch.tensor(ib.numpy())
            topt.zero_grad()
            tloss = torch.nn.MSELoss()(tm(torch.tensor(x)[rows]), torch.tensor(y)[rows])
            tloss.backward()
            tnorm = torch.nn.utils.clip_grad_norm_(tm.parameters(), max_norm=0.3)
            topt.step()
            assert loss.item() == pytest.approx(tloss.item(), rel=1e-9)
            norms.append((norm.item(), tnorm.item()))
        hsched.step()
        tsched.step()
        stats = harp.compile_stats()
        compiled.append(stats["compiles"] + stats["disk_hits"])
    for (name, value), tvalue in zip(hm.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_allclose(value, tvalue.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    assert any(h > 0.3 for h, _ in norms)  # the clipping acted
    np.testing.assert_allclose(*zip(*norms), rtol=1e-9)
    assert compiled[2] == compiled[1], compiled  # the last epoch compiled nothing


def test_constructors_take_device_and_requires_grad():
    cpu = harp.device("cpu")
    for make in [lambda **k: harp.zeros(2, 3, **k), lambda **k: harp.ones((2, 3), **k),
                 lambda **k: harp.full((2, 3), 1.5, **k), lambda **k: harp.rand(2, 3, **k),
                 lambda **k: harp.randn(2, 3, **k), lambda **k: harp.arange(0.0, 6.0, **k),
                 lambda **k: harp.zeros_like(harp.tensor(X), **k),
                 lambda **k: harp.ones_like(harp.tensor(X), **k),
                 lambda **k: harp.full_like(harp.tensor(X), 2.0, **k),
                 lambda **k: harp.rand_like(harp.tensor(X), **k),
                 lambda **k: harp.randn_like(harp.tensor(X), **k)]:
        plain, leaf = make(device=cpu), make(device="cpu", requires_grad=True)
        assert plain.device == "cpu" and not plain.requires_grad and leaf.requires_grad
        (leaf * 3).sum().backward()
        np.testing.assert_array_equal(leaf.grad.numpy(), np.full(leaf.shape, 3, np.float32))
    assert harp.randint(0, 5, (4,), device=cpu).dtype == harp.int64
    w = harp.randn(3, requires_grad=True)
    with harp.no_grad():
        w.zero_()  # a leaf: writable, as torch.randn(3, requires_grad=True) under no_grad
    np.testing.assert_array_equal(w.numpy(), np.zeros(3))


def test_clamp_with_tensor_bounds_as_torch():
    # Tensor bounds broadcast; the gradient goes to self inside [min, max]
    # and at the bounds, to min below it, to max above it (max wins where
    # min > max), for clamp, clip and harp.clamp alike.
    x = np.array([[-2.0, 0.5, 1.0, 3.0], [0.0, 0.2, 5.0, -1.0]])
    lo = np.array([0.0, 0.5, 0.0, 4.0])
    hi = np.array([1.0, 2.0, 0.5, 2.0])
    for name in ("clamp", "clip", "function"):
        hs = [harp.tensor(a, requires_grad=True) for a in (x, lo, hi)]
        ts = [torch.tensor(a, requires_grad=True) for a in (x, lo, hi)]
        if name == "function":
            h, t = harp.clamp(*hs), torch.clamp(*ts)
        else:
            h, t = getattr(hs[0], name)(hs[1], hs[2]), getattr(ts[0], name)(ts[1], ts[2])
        np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
        (h * h).sum().backward()
        (t * t).sum().backward()
        for a, b in zip(hs, ts):
            np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    hx = harp.tensor(x)
    np.testing.assert_array_equal(hx.clamp(max=harp.tensor(hi)).numpy(),
                                  torch.tensor(x).clamp(max=torch.tensor(hi)).numpy())
    np.testing.assert_array_equal(hx.clamp(min=0.0).numpy(), np.maximum(x, 0))
    with pytest.raises(harp.HarpError, match="clamp: give min, max or both"):
        hx.clamp()


def test_in_place_ops_on_computed_tensors():
    # An in-place op on a computed tensor rebinds it in the lazy graph, as
    # torch writes it: later uses read the new value, gradients flow through.
    data = rnd(2, 3)
    h = harp.tensor(data)
    h.requires_grad = True
    t = torch.tensor(data, requires_grad=True)
    results = []
    for x, lib in ((h, harp), (t, torch)):
        y = x * 2
        y.add_(1.0).mul_(x)
        z = x * 3
        z.zero_()
        w = x + 0
        w.fill_(3.0)
        (y.sum() + (z * x).sum() + (w * x).sum()).backward()
        results.append((y.detach().numpy() if lib is torch else y.numpy(),
                        z.detach().numpy() if lib is torch else z.numpy(),
                        x.grad.numpy()))
    for got, want in zip(results[0], results[1]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_decimals_of_round_as_torch():
    x = rnd(4, 5) * 1000
    for decimals in (-2, -1, 1, 3):
        np.testing.assert_allclose(
            harp.round(harp.tensor(x), decimals=decimals).numpy(),
            torch.round(torch.tensor(x), decimals=decimals).numpy(), rtol=1e-12)
