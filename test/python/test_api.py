"""The Python API reads like PyTorch's: keyword arguments, docstrings,
shapes as varargs or lists, indexing with None and ..., 1-D matmul, repr,
requires_grad_(), methods defined natively (not patched on), and a type
stub that names exactly what the package has."""

import ast
import inspect
import os
import re

import numpy as np
import pytest
import torch

import harp

STUB = os.path.join(os.path.dirname(harp.__file__), "__init__.pyi")


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def test_keyword_arguments_as_in_pytorch():
    x, w, b = rnd(2, 3, 9, 9), rnd(4, 3, 3, 3, seed=1), rnd(4, seed=2)
    got = harp.conv(harp.tensor(x), harp.tensor(w), stride=2, padding=1,
                    bias=harp.tensor(b)).numpy()
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w),
                                      torch.tensor(b), stride=2, padding=1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    t = harp.tensor(x)
    np.testing.assert_allclose(t.sum(dim=1, keepdim=True).numpy(),
                               x.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(t.softmax(dim=0).numpy(),
                               torch.softmax(torch.tensor(x), 0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(harp.softmax(t, dim=-1).numpy(),
                               torch.softmax(torch.tensor(x), -1).numpy(), rtol=1e-5)
    assert t.transpose(dim0=0, dim1=3).shape == (9, 3, 9, 2)
    assert t.flatten(start_dim=1).shape == (2, 243)
    with pytest.raises(TypeError):
        t.sum(axis=1, dim=1)
    # gather and scatter_add take PyTorch's order (and harp's).
    index = np.array([[0, 2], [1, 0]])
    a = rnd(2, 3)
    np.testing.assert_array_equal(
        harp.gather(harp.tensor(a), 1, harp.tensor(index)).numpy(),
        torch.gather(torch.tensor(a), 1, torch.tensor(index)).numpy())
    np.testing.assert_array_equal(
        harp.gather(harp.tensor(a), harp.tensor(index), 1).numpy(),
        torch.gather(torch.tensor(a), 1, torch.tensor(index)).numpy())


def test_shapes_as_varargs_or_sequences():
    t = harp.tensor(np.arange(24, dtype=np.float32))
    assert t.reshape(3, 8).shape == (3, 8)
    assert t.reshape([3, 8]).shape == (3, 8)
    assert t.reshape((2, -1, 3)).shape == (2, 4, 3)
    assert t.view(4, 6).permute(1, 0).shape == (6, 4)
    assert t.view(4, 6).permute([1, 0]).shape == (6, 4)
    assert t.reshape(1, 24).expand(3, -1).shape == (3, 24)
    assert harp.zeros(2, 3).shape == (2, 3) and harp.ones((4,)).shape == (4,)
    assert harp.rand(2, 2, seed=3).shape == (2, 2)
    assert t.reshape(4, 6).size() == (4, 6) and t.reshape(4, 6).size(-1) == 6
    assert t.reshape(2, 1, 12, 1).squeeze().shape == (2, 12)
    assert t.reshape(2, 1, 12).squeeze(1).shape == (2, 12)
    assert t.reshape(2, 12).squeeze(0).shape == (2, 12)  # not size 1: kept
    assert t.unsqueeze(0).shape == (1, 24) and t.ndim == 1 and len(t) == 24
    with pytest.raises(TypeError, match="reshape"):
        t.reshape(3, "8")


def test_indexing_with_none_ellipsis_and_steps():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t = harp.tensor(a)
    for key in [(1,), (-1, 2), (slice(None, None, -1),), (Ellipsis, 0),
                (None, 1, Ellipsis, None), (slice(1, None), None, slice(None, None, 2)),
                (0, slice(3, 0, -2), -1), (Ellipsis,), (slice(5, 9),)]:
        np.testing.assert_array_equal(t[key].numpy(), a[key], err_msg=str(key))
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError):
        t[..., ...]
    with pytest.raises(IndexError):
        t["a"]


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((5,), (5, 3)), ((2, 5), (5,)),
                                   ((4, 2, 5), (5,)), ((5,), (4, 5, 3)),
                                   ((1,), (1, 7))])
def test_matmul_with_1d_operands_as_numpy(sa, sb):
    a, b = rnd(*sa), rnd(*sb, seed=1)
    got = (harp.tensor(a) @ harp.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-6)
    assert got.shape == (a @ b).shape
    np.testing.assert_allclose(harp.matmul(harp.tensor(a), harp.tensor(b)).numpy(),
                               a @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((a @ harp.tensor(b)).numpy(), a @ b, rtol=1e-5,
                               atol=1e-6)


def test_matmul_of_scalars_is_an_error():
    with pytest.raises(harp.HarpError, match="matmul: operands need at least one dim"):
        harp.tensor(np.float32(2)) @ harp.tensor(np.ones(3, np.float32))


def test_requires_grad_and_repr():
    w = harp.tensor(rnd(3)).requires_grad_()
    assert w.requires_grad
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.numpy(), rtol=1e-6)
    assert w.requires_grad_(False) is not None and not w.requires_grad
    lazy = harp.tensor(np.ones(2, np.float32)) * 3
    text = repr(lazy)
    assert "shape=(2,)" in text and "not computed" in text and "float32" in text
    lazy.numpy()
    assert "array([3., 3.]" in repr(lazy)
    assert "requires_grad=True" in repr(harp.tensor(rnd(2), requires_grad=True))
    assert harp.tensor(np.float32(2.5)).item() == 2.5
    assert harp.tensor(np.arange(3)).tolist() == [0, 1, 2]


def test_methods_are_native_and_documented():
    # Defined by the extension, not assigned in harp/__init__.py.
    source = open(harp.__file__).read()
    assert not re.search(r"Tensor\.\w+\s*=|setattr\(\s*Tensor", source)
    for name in ["exp", "sum", "reshape", "transpose", "T", "__getitem__",
                 "item", "numpy", "backward", "requires_grad_"]:
        assert name in harp.Tensor.__dict__, name
    missing = [name for name, member in vars(harp.Tensor).items()
               if not name.startswith("_") and not (inspect.getdoc(member) or "")]
    assert missing == []
    for name in harp.__all__:
        obj = getattr(harp, name)
        if callable(obj) and not isinstance(obj, harp.DType):
            assert inspect.getdoc(obj), name


def stub_names():
    tree = ast.parse(open(STUB).read())
    top, methods = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.module is None:
            top.update(alias.asname or alias.name for alias in node.names)
        if isinstance(node, ast.ClassDef) and node.name == "Tensor":
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    methods.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    methods.add(item.target.id)
    return top, methods


def test_type_stub_names_what_the_package_has():
    assert os.path.exists(os.path.join(os.path.dirname(harp.__file__), "py.typed"))
    top, methods = stub_names()
    assert set(harp.__all__) <= top
    for name in top - {"Number", "Operand", "Shape", "_IrModule"}:
        assert hasattr(harp, name), name
    native = {name for name in dir(harp.Tensor)
              if not name.startswith("_") or name in vars(harp.Tensor)
              and name not in ("__init__", "__doc__", "__module__", "__dict__",
                               "__weakref__", "__new__")}
    native = {n for n in native if not n.startswith("_pybind11")}
    assert native == methods


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((2, 5), {}), ((5, 2), {}), ((5, 0, -1), {}), ((0, 1, 0.25), {}),
    ((0, 1, 0.1), {}), ((1.5,), {}), ((-3, 7, 3), {}), ((0, 5000), {}),
    ((2, 9), {"dtype": harp.float64}), ((10,), {"step": 4}), ((np.int64(4),), {}),
])
def test_arange_follows_numpy(args, kwargs):
    # arange(end), arange(start, end[, step]) as numpy.arange: arange(0, N)
    # is N values (it was `count` first, so arange(0, N) was empty).
    got = harp.arange(*args, **kwargs).numpy()
    np_kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    want = np.arange(*args, **np_kwargs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)
    if "dtype" in kwargs:
        assert got.dtype == np.float64
    else:
        integral = all(isinstance(a, (int, np.integer)) for a in args)
        assert got.dtype == (np.int64 if integral else np.float32)


def test_arange_rejects_a_zero_step_and_non_numbers():
    with pytest.raises(ValueError, match="harp.arange: step must not be zero"):
        harp.arange(0, 3, 0)
    with pytest.raises(TypeError, match="harp.arange: end must be a real number"):
        harp.arange("3")
    with pytest.raises(TypeError, match="harp.arange: step must be a real number"):
        harp.arange(0, 3, "1")
    # bools are numbers, as torch's; an integer arange truncates its bounds
    # and step first (torch's rule), so a step below 1 is zero.
    assert harp.arange(0, 3, True).tolist() == [0, 1, 2]
    assert harp.arange(False).tolist() == []
    for args in [(0.5, 3.7, 1.2), (0.0, -8.000001, -4.0), (-2.5, 3.7, 1.9)]:
        want = torch.arange(*args, dtype=torch.int64).tolist()
        assert harp.arange(*args, dtype=harp.int64).tolist() == want, args
    with pytest.raises(ValueError, match="step must not be zero"):
        harp.arange(0, 3, 0.7, dtype=harp.int64)


def test_dtype_conversions_as_in_pytorch():
    x = np.array([1.5, -2.5, 0.0], dtype=np.float32)
    t, tt = harp.tensor(x), torch.tensor(x)
    for name in ("float", "double", "int", "long", "bool"):
        np.testing.assert_array_equal(getattr(t, name)().numpy(), getattr(tt, name)().numpy())
    assert t.to(harp.float64).dtype == harp.float64
    assert t.to("cpu", harp.int32).dtype == harp.int32
    assert t.to(device="cpu", dtype=harp.int64).dtype == harp.int64
    assert t.to(dtype=harp.float64, device=None).dtype == harp.float64
    assert t.to("cpu").dtype == harp.float32
    # A conversion is differentiable like astype.
    h = harp.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    (h.double() * h.double()).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), [2.0, 4.0])


@pytest.mark.parametrize("call, message", [
    (lambda t: t.to(3), "takes a device"),
    (lambda t: t.to(harp.float64, harp.int32), "each at most once"),
    (lambda t: t.to(dtype="cpu"), "'cpu' for dtype"),
    (lambda t: t.to(foo=1), "unexpected keyword foo"),
    (lambda t: t.to("cpu", harp.float64, "cpu"), "at most a device and a dtype"),
])
def test_to_rejects_what_it_cannot_use(call, message):
    with pytest.raises(TypeError, match=message):
        call(harp.tensor([1.0]))


def _index(*values):
    return harp.tensor(np.array(values, np.int64))


X = harp.tensor(np.arange(12.0).reshape(3, 4))
F = harp.nn.functional


@pytest.mark.parametrize("call, message", [
    (lambda: harp.gather(X, 1, harp.tensor(np.array([[0, 4]]))),
     "gather: index 4 at [0, 1] is out of range for dim 1 of size 4 (valid: [0, 4))"),
    (lambda: X.gather(0, harp.tensor(np.array([[-1]], np.int32))),
     "gather: index -1 at [0, 0] is out of range for dim 0 of size 3"),
    (lambda: harp.index_select(X, 0, _index(0, 3)),
     "index_select: index 3 at [1] is out of range for dim 0 of size 3"),
    (lambda: X.index_select(-1, _index(-1)),
     "index_select: index -1 at [0] is out of range for dim 1 of size 4"),
    (lambda: harp.take_along_dim(X, _index(12)),
     "take_along_dim: index 12 at [0] is out of range for the 12 entries"),
    (lambda: harp.scatter_add(X, 0, harp.tensor(np.array([[3]])), X),
     "scatter_add: index 3 at [0, 0] is out of range for dim 0 of size 3"),
    (lambda: X.scatter(1, harp.tensor(np.array([[4]])), 1.0),
     "scatter: index 4 at [0, 0] is out of range for dim 1 of size 4"),
    (lambda: X.scatter_reduce(1, harp.tensor(np.array([[5]])), X, "amax"),
     "scatter_reduce: index 5 at [0, 0] is out of range for dim 1 of size 4"),
    (lambda: X.index_add(0, _index(3), X[:1]),
     "index_add: index 3 at [0] is out of range for dim 0 of size 3"),
    (lambda: X.index_copy(0, _index(-1), X[:1]),
     "index_copy: index -1 at [0] is out of range for dim 0 of size 3"),
    (lambda: X.index_fill(0, _index(-4), 1.0),
     "index_fill: index -4 at [0] is out of range for dim 0 of size 3 (valid: [-3, 3))"),
    (lambda: F.embedding(harp.tensor(np.array([[1, 7]])), X),
     "embedding: index 7 at [0, 1] is out of range for a weight of 3 rows"),
    (lambda: harp.nn.Embedding(3, 2)(_index(3)),
     "embedding: index 3 at [0] is out of range for a weight of 3 rows"),
    (lambda: F.one_hot(_index(0, 5), 3),
     "one_hot: index 5 at [1] is out of range for 3 classes"),
    (lambda: F.nll_loss(X, _index(0, 4, 1)),
     "nll_loss: target 4 at [1] is out of range for 4 classes"),
    (lambda: F.nll_loss(X[0], harp.tensor(np.array(9))),
     "nll_loss: target 9 is out of range for 4 classes"),
    (lambda: F.nll_loss(X, _index(0, 4, 1), weight=harp.ones(4, dtype=harp.float64)),
     "nll_loss: target 4 at [1]"),
    (lambda: F.cross_entropy(X, _index(0, 1, -1)),
     "cross_entropy: target -1 at [2] is out of range for 4 classes"),
    (lambda: X[_index(3)], "index 3 is out of range for a dim of size 3"),
])
def test_indices_out_of_range_raise_index_error(call, message):
    # PyTorch raises for an index outside its dim; a clamped read would
    # give wrong numbers without an error. HarpIndexError is both harp's
    # HarpError and Python's IndexError.
    with pytest.raises(IndexError) as raised:
        call()
    assert message in str(raised.value)
    if not str(raised.value).startswith("index "):   # __getitem__'s own
        assert isinstance(raised.value, harp.HarpIndexError)
        assert isinstance(raised.value, harp.HarpError)


def test_indices_at_the_ends_of_their_range_match_torch():
    t = torch.tensor(X.numpy())
    i, ti = _index(0, 2), torch.tensor([0, 2])
    np.testing.assert_array_equal(harp.index_select(X, 0, i).numpy(),
                                  torch.index_select(t, 0, ti).numpy())
    np.testing.assert_array_equal(X.gather(1, harp.tensor(np.array([[3, 0]]))).numpy(),
                                  t.gather(1, torch.tensor([[3, 0]])).numpy())
    # index_fill counts negative entries from the end, as torch's.
    np.testing.assert_array_equal(X.index_fill(0, _index(-1, -3), 7.0).numpy(),
                                  t.index_fill(0, torch.tensor([-1, -3]), 7.0).numpy())
    # ignore_index is not a class: -100 and an out-of-range ignore_index pass.
    for ignore in (-100, 9):
        target = np.array([0, ignore, 3])
        np.testing.assert_allclose(
            F.cross_entropy(X, harp.tensor(target), ignore_index=ignore).item(),
            torch.nn.functional.cross_entropy(t, torch.tensor(target), ignore_index=ignore).item(),
            rtol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: harp.gather(X, 1, _index(0, 1).reshape(1, 2) + 3).numpy(),
     "gather: index 4 (computed) is out of range for dim 1 of size 4 (valid: [0, 4))"),
    (lambda: X.index_select(0, _index(1, 2) - 2).numpy(),
     "index_select: index -1 (computed) is out of range for dim 0 of size 3"),
    (lambda: harp.take_along_dim(X, _index(11, 6) * 2).numpy(),
     "take_along_dim: index 22 (computed)"),
    (lambda: harp.scatter_add(X, 0, harp.tensor(np.array([[1]])) + 2, X).numpy(),
     "scatter_add: index 3 (computed) is out of range for dim 0 of size 3"),
    (lambda: X.index_add(0, _index(0) + 3, X[:1]).numpy(),
     "index_add: index 3 (computed) is out of range for dim 0 of size 3"),
    (lambda: X.index_fill(0, _index(0) - 4, 1.0).numpy(),
     "index_fill: index -4 (computed) is out of range for dim 0 of size 3 (valid: [-3, 3))"),
    (lambda: F.embedding(_index(1, 2) * 2, X).numpy(),
     "embedding: index 4 (computed) is out of range for a weight of 3 rows"),
    (lambda: F.one_hot(_index(0, 2) + 1, 3).numpy(),
     "one_hot: index 3 (computed) is out of range for 3 classes"),
    (lambda: F.cross_entropy(X, _index(0, 1, 2) + 2).item(),
     "cross_entropy: target 4 (computed) is out of range for 4 classes"),
    (lambda: F.nll_loss(X, _index(0, 1, 2) - 1).item(),
     "nll_loss: target -1 (computed) is out of range for 4 classes"),
    # An arange's entries are known from its start and step: raised at once.
    (lambda: harp.index_select(X, 0, harp.arange(4)),
     "index_select: index 3 at [3] is out of range for dim 0 of size 3"),
])
def test_computed_indices_out_of_range_raise_when_computed(call, message):
    # The index has no values when the op is built: the result's
    # computation checks the index's bounds and raises.
    with pytest.raises(harp.HarpIndexError) as raised:
        call()
    assert message in str(raised.value)


def test_computed_indices_in_range_compute_as_torch():
    t = torch.tensor(X.numpy())
    picked = harp.gather(X, 1, _index(0, 1).reshape(1, 2) + 2)
    np.testing.assert_array_equal(picked.numpy(), t.gather(1, torch.tensor([[2, 3]])).numpy())
    # ignore_index entries of a computed target are not classes.
    target = _index(0, -100, 3) * 1
    np.testing.assert_allclose(
        F.cross_entropy(X, target).item(),
        torch.nn.functional.cross_entropy(t, torch.tensor([0, -100, 3])).item(), rtol=1e-12)
    # An empty computed index has no entries to check.
    empty = harp.tensor(np.zeros((0,), np.int64)) + 5
    assert list(X.index_select(0, empty).shape) == [0, 4]
    # A position embedding read with arange (checked from its start and
    # step, nothing computed for it) and a computed index, with gradients.
    w = harp.tensor(np.arange(10.0).reshape(5, 2), requires_grad=True)
    tw = torch.tensor(np.arange(10.0).reshape(5, 2), requires_grad=True)
    loss = (F.embedding(harp.arange(5), w) * 2).sum() + F.embedding(_index(0, 1) + 3, w).sum()
    tloss = ((torch.nn.functional.embedding(torch.arange(5), tw) * 2).sum()
             + torch.nn.functional.embedding(torch.tensor([3, 4]), tw).sum())
    loss.backward()
    tloss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


def test_computed_index_out_of_range_fails_backward_and_changes_nothing():
    w = harp.tensor(np.ones((3, 2)), requires_grad=True)
    loss = F.embedding(_index(0, 1) + 2, w).sum()
    with pytest.raises(harp.HarpIndexError, match=r"embedding: index 3 \(computed\)"):
        loss.backward()
    assert w.grad is None
    # The graphs built after it are unaffected.
    F.embedding(_index(0, 1) + 1, w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0, 0], [1, 1], [1, 1]])
