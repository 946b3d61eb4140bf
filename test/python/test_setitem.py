"""Tensor.__setitem__ against PyTorch: basic and advanced indices, values
broadcast and cast, computed tensors (rebound) and leaves (written in
place), gradients through both the old value and the written one, and the
errors."""

import math

import numpy as np
import pytest
import torch

import harp

rng = np.random.default_rng(5)

INDICES = [
    (lambda: (slice(None), slice(0, None, 2)), (5, 2)),   # pe[:, 0::2]
    (lambda: 1, (4,)),
    (lambda: (Ellipsis, 2), (5,)),
    (lambda: (slice(1, 3), None, slice(None)), (2, 1, 4)),
    (lambda: ([0, 2], slice(1, 3)), (2, 2)),
    (lambda: (-1, -2), ()),
    (lambda: (slice(None), slice(1, 2)), (1,)),           # broadcast value
]


@pytest.mark.parametrize("index,region", INDICES)
def test_setitem_computed_tensor_values_and_gradients(index, region):
    a = rng.normal(size=(5, 4))
    v = rng.normal(size=region)
    ha, hv = harp.tensor(a, requires_grad=True), harp.tensor(v, requires_grad=True)
    ta, tv = torch.tensor(a, requires_grad=True), torch.tensor(v, requires_grad=True)
    idx = index()
    hy, ty = ha * 2, ta * 2
    hy[idx] = hv
    ty[idx] = tv
    np.testing.assert_allclose(hy.numpy(), ty.detach().numpy(), rtol=1e-12)
    (hy * hy).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(ha.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hv.grad.numpy(), tv.grad.numpy(), rtol=1e-12)


def test_setitem_positional_encoding_as_programs_write_it():
    # The transformer tutorial's PositionalEncoding on a harp.zeros tensor.
    n, d = 11, 6
    for lib in (harp, torch):
        pe = lib.zeros(n, d)
        position = lib.arange(0, n).unsqueeze(1).float() if lib is torch else \
            harp.arange(0, n, dtype=harp.float32).unsqueeze(1)
        div = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d)).astype(np.float32)
        div = lib.tensor(div)
        pe[:, 0::2] = (position * div).sin()
        pe[:, 1::2] = (position * div).cos()
        if lib is harp:
            got = pe.numpy()
        else:
            want = pe.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_setitem_masks_numbers_and_casts():
    x = rng.normal(size=(3, 7)).astype(np.float32)
    h, t = harp.tensor(x), torch.tensor(x)
    h[h > 0.5] = float("-inf")
    t[t > 0.5] = float("-inf")
    h[0] = 3                          # an int into float32
    t[0] = 3
    h[:, 1] = harp.tensor(np.array([1, 2, 3], dtype=np.int64))   # cast
    t[:, 1] = torch.tensor([1, 2, 3])
    h[harp.tensor(np.array([2]))] = np.full(7, 0.25)            # tensor index, array value
    t[torch.tensor([2])] = torch.tensor(np.full(7, 0.25, np.float32))
    np.testing.assert_array_equal(h.numpy(), t.numpy())
    assert h.dtype == harp.float32


def test_setitem_on_a_leaf_writes_it_in_place():
    leaf = harp.tensor(np.zeros((2, 3)))
    alias = leaf                        # the same object, as torch's
    leaf[1, 1:] = 5.0
    np.testing.assert_array_equal(alias.numpy(), [[0, 0, 0], [0, 5, 5]])
    assert leaf.is_leaf
    p = harp.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="__setitem__: a leaf tensor that "
                                           "requires grad"):
        p[0] = 2.0
    with harp.no_grad():
        p[0] = 2.0
    np.testing.assert_array_equal(p.numpy(), [2, 1, 1])


def test_setitem_errors():
    x = harp.zeros(3, 4)
    with pytest.raises(IndexError, match="__setitem__: index .* shape \\[3, 4\\]"):
        x[3] = 1.0
    with pytest.raises(harp.HarpError, match="does not broadcast to the indexed "
                                             "region's shape \\[4\\]"):
        x[0] = harp.ones(3)
    with pytest.raises(harp.HarpError, match="more than once"):
        x[[0, 0]] = 1.0
    x[1:1] = 7.0                         # an empty region writes nothing
    np.testing.assert_array_equal(x.numpy(), np.zeros((3, 4)))


GETITEMS = [
    lambda x: (slice(None), [-1], slice(None)),    # nanoGPT's logits[:, [-1], :]
    lambda x: ([1, 0, 1],),
    lambda x: (Ellipsis, [3, 0, 3]),
    lambda x: (0, [1, 2]),
    lambda x: (slice(None), np.array([[0, 1], [2, 3]])),
    lambda x: (None, 1, [0, 4]),
    lambda x: (x[..., 0] > 0.5,),                  # a mask over two dims
    lambda x: (slice(None), x[0, :, 0] > 0.3),
    lambda x: (x > 0.5,),
    lambda x: (x > 100.0,),                        # selects nothing
    lambda x: (slice(None), []),
]


@pytest.mark.parametrize("make", GETITEMS)
def test_getitem_advanced_indices_values_and_gradients(make):
    x = rng.normal(size=(2, 5, 4)) + 0.5
    index = make(x)
    h, t = harp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = h[tuple(harp.tensor(i) if isinstance(i, np.ndarray) and i.dtype == bool
                  else i for i in index)]
    want = t[tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i
                   for i in index)]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12)
    (got * got).sum().backward()
    (want * want).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_getitem_advanced_errors():
    x = harp.zeros(3, 4)
    with pytest.raises(IndexError, match="index 4 is out of range for a dim of size 4"):
        x[:, [0, 4]]
    with pytest.raises(IndexError, match="shape mismatch: indexing arrays could not be "
                                         "broadcast together with shapes \\[2\\] \\[3\\]"):
        x[[0, 1], [1, 2, 3]]
    with pytest.raises(IndexError, match="index 3 is out of range for a dim of size 3"):
        x[[0, 3], [1, 2]]
    with pytest.raises(IndexError, match="bool index of shape \\[3\\] for dims of sizes \\[4\\]"):
        x[:, np.array([True, False, True])]


@pytest.mark.parametrize("index", [
    ([0, 2], [1, 3]),                       # two lists: pairs
    (slice(None), [0, 2], [1, 3]),          # after a slice: in place
    ([[0, 1], [2, 0]], slice(None), [[1, 2], [3, 4]]),  # apart: leading
    ([0, -1], [-2, 3], slice(1, 3)),        # negative entries
    ([0, 2], 1, [1, 3]),                    # an int between: selected first
    (None, [0, 2], None, [1, 3]),           # new dims around
    ("mask", [1, 2, 3, 4, 0, 0, 1, 2, 3]),  # a 2-d mask and a list
    [slice(0, 2), 1],                       # a list read as a tuple (torch)
    [[0, 2, 1], [1, 3, 3]],                 # a list of lists: the same
])
def test_getitem_several_advanced_indices(index):
    # torch's rules for several advanced indices: broadcast together, one
    # element per index tuple; the result dims in place where the indices
    # are adjacent, leading otherwise. The gradient scatters back.
    data = np.random.default_rng(3).normal(size=(3, 4, 5))
    mask = np.random.default_rng(4).random((3, 4)) > 0.4
    mask[0, :] = True
    if isinstance(index, tuple) and index[0] == "mask":
        count = int(mask.sum())
        index = (mask, np.arange(count) % 5)
    h = harp.tensor(data)
    h.requires_grad = True
    t = torch.tensor(data, requires_grad=True)
    as_torch = (tuple(torch.tensor(p) if isinstance(p, np.ndarray) else p for p in index)
                if isinstance(index, tuple) else index)
    got, want = h[index], t[as_torch]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    weight = np.random.default_rng(5).normal(size=tuple(want.shape))
    (got * harp.tensor(weight)).sum().backward()
    (want * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12)
