"""einsum, tensordot, tile and diagonal against PyTorch: values and the
gradients of sum(out^2) (f64), odd sizes, torch's implicit-output and
ellipsis rules, errors that name the op; and the mechanism: a matmul
written as an einsum is one contraction writing the result, as `@`."""

import re

import numpy as np
import pytest
import torch

import harp

rng = np.random.default_rng(11)


def check(harp_fn, torch_fn, *arrays, rtol=1e-10, atol=1e-12):
    hs = [harp.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = harp_fn(*hs), torch_fn(*ts)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(),
                               rtol=rtol, atol=atol)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    for h, t in zip(hs, ts):
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=rtol,
                                   atol=atol)


def arrays(*shapes):
    return [rng.normal(size=s) for s in shapes]


EINSUMS = [
    ("ij,jk->ik", [(3, 7), (7, 5)]),
    ("ij,jk", [(1, 17), (17, 2)]),                  # implicit output
    ("ij,kj->ik", [(5, 3), (4, 3)]),                 # x @ W^T
    ("ji,jk->ik", [(7, 3), (7, 5)]),                 # a weight gradient
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 7, 4)]),  # attention scores
    ("i,j->ij", [(4,), (6,)]),
    ("i,i->", [(13,), (13,)]),
    ("ij->", [(3, 5)]),
    ("ij->ji", [(3, 5)]),
    ("ii", [(4, 4)]),                                # trace
    ("ii->i", [(5, 5)]),
    ("iij->ji", [(3, 3, 2)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),      # three operands
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),     # broadcast batch
    ("b...,b...->b", [(3, 2, 5), (3, 2, 5)]),
    ("...i,i", [(2, 3, 4), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->i", [(17, 1), (17, 9)]),                # size 1 broadcasts
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),  # bilinear
]


@pytest.mark.parametrize("equation,shapes", EINSUMS,
                         ids=[e for e, _ in EINSUMS])
def test_einsum(equation, shapes):
    check(lambda *h: harp.einsum(equation, *h),
          lambda *t: torch.einsum(equation, *t), *arrays(*shapes))


def test_einsum_takes_a_list_and_spaces():
    a, b = arrays((3, 4), (4, 2))
    out = harp.einsum("ij , jk -> ik", [harp.tensor(a), harp.tensor(b)])
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk->ik", [(3, 4)], "has 2 operand"),
    ("ijk->i", [(3, 4)], "operand 0 has 2 dims"),
    ("ij,jk->ik", [(3, 4), (5, 2)], "subscript 'j' has size 5"),
    ("ij->iz", [(3, 4)], "output subscript 'z'"),
    ("ij->ii", [(3, 4)], "repeat"),
    ("i1->i", [(3, 4)], "must be letters"),
    ("ii->i", [(3, 4)], "subscript 'i' has size 4 in operand 0 and 3 in "
                        "operand 0"),
])
def test_einsum_errors_name_the_problem(equation, shapes, message):
    with pytest.raises(harp.HarpError, match=message):
        harp.einsum(equation, *[harp.tensor(a) for a in arrays(*shapes)])
    with pytest.raises(TypeError, match="einsum: operand 0"):
        harp.einsum("i->i", np.ones(3))


def test_einsum_matmul_is_one_contraction_kernel():
    # The product broadcast to (i, j, k) and its sum over k fuse into one
    # map_reduce summing products: its kernels (a register-tile loop and
    # the remainder rows' loops) write the 37 x 41 result only, as those of
    # `a @ b` do; the 37 x 41 x 29 product is never materialized.
    a = harp.tensor(rng.normal(size=(37, 29)).astype(np.float32))
    b = harp.tensor(rng.normal(size=(29, 41)).astype(np.float32))
    # In-place writes an earlier test left deferred are done by the next
    # realization, as a program of its own: done here, not profiled below.
    (harp.zeros(1) + 1).numpy()
    harp.set_options(profile=True)
    try:
        written = []
        for compute in (lambda: harp.einsum("ik,kj->ij", a, b), lambda: a @ b):
            harp.reset_profile()
            compute().numpy()
            written.append(sorted({w for r in harp.profile()
                                   if "(whole call)" not in r["kernel"]
                                   for w in re.findall(r"memref<[^>]*>",
                                                       r["kernel"])}))
    finally:
        harp.set_options(profile=False)
    assert written[0] == ["memref<37x41xf32>"]
    assert written[0] == written[1]


@pytest.mark.parametrize("dims,shapes", [
    (2, [(3, 4, 5), (4, 5, 3)]), (1, [(3, 4, 5), (5, 2)]),
    (0, [(3, 2), (4,)]), (([1, 2], [0, 1]), [(3, 4, 5), (4, 5, 3)]),
    (([0], [2]), [(3, 4, 5), (4, 5, 3)]), (((1,), (0,)), [(3, 4, 5), (4, 5, 3)])])
def test_tensordot(dims, shapes):
    a, b = arrays(*shapes)
    check(lambda x, y: harp.tensordot(x, y, dims=dims),
          lambda x, y: torch.tensordot(x, y, dims=dims), a, b)


def test_tensordot_errors():
    a, b = [harp.tensor(x) for x in arrays((3, 4), (5, 6))]
    with pytest.raises(harp.HarpError, match="tensordot: a's dim 1 \\(4\\)"):
        harp.tensordot(a, b, dims=1)
    with pytest.raises(harp.HarpError, match="tensordot: dims 3"):
        harp.tensordot(a, b, dims=3)


@pytest.mark.parametrize("shape,reps", [((3, 4), (2, 1)), ((3, 4), (2,)),
                                        ((5,), (2, 3)), ((2, 1, 3), (1, 4, 1)),
                                        ((3, 4), 3)])
def test_tile(shape, reps):
    check(lambda x: harp.tile(x, reps), lambda x: torch.tile(x, (reps,) if
                                                            isinstance(reps, int)
                                                            else reps),
          *arrays(shape))
    check(lambda x: x.tile(reps), lambda x: x.tile(reps), *arrays(shape))


@pytest.mark.parametrize("offset", [0, 1, -1, 3, -2])
@pytest.mark.parametrize("dims", [(0, 1), (1, 2), (2, 0), (-1, -2)])
def test_diagonal(offset, dims):
    check(lambda x: harp.diagonal(x, offset, *dims),
          lambda x: torch.diagonal(x, offset, *dims), *arrays((4, 5, 6)))
    check(lambda x: x.diagonal(offset, *dims),
          lambda x: x.diagonal(offset, *dims), *arrays((4, 5, 6)))


def test_diagonal_errors():
    x = harp.tensor(np.ones((3, 4)))
    with pytest.raises(harp.HarpError, match="diagonal: dim1 and dim2"):
        harp.diagonal(x, 0, 1, 1)
    with pytest.raises(harp.HarpError, match="offset 4 leaves no element"):
        harp.diagonal(x, 4)
    with pytest.raises(harp.HarpError, match="at least 2 dims"):
        harp.diagonal(harp.tensor(np.ones(3)))
    with pytest.raises(harp.HarpError, match="tile: repeats must be >= 0"):
        harp.tile(x, (-1, 1))
