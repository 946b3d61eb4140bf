"""harp.nn.functional's layers against torch.nn.functional: convolution
(groups, 'same', transposed), pooling (ceil_mode, count_include_pad,
adaptive), normalization, dropout, embedding, one_hot, pad and attention.
Forward values and the gradients of sum(out^2) with respect to every float
input, on odd shapes, in f64 (and f32 for the commonest)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import harp
import harp.nn.functional as F


def check(harp_fn, torch_fn, *arrays, rtol=1e-7, atol=1e-9, grad=True):
    """Runs both on the same inputs; compares outputs and input gradients."""
    hs = [harp.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    out, expected = harp_fn(*hs), torch_fn(*ts)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol, atol=atol)
    if not grad:
        return
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    for h, t in zip(hs, ts):
        if t.requires_grad:
            np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=rtol * 10,
                                       atol=atol * 10)


rng = np.random.default_rng(7)


def normal(*shape, dtype=np.float64):
    return rng.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), ((2, 1), 1, 1, 2), (1, "same", 2, 2), (1, "same", 1, 1),
    (3, (2, 0), (1, 2), 1), (2, "valid", 1, 2)])
def test_conv2d(stride, padding, dilation, groups):
    x, w, b = normal(2, 6, 7, 9), normal(4, 6 // groups, 3, 2), normal(4)
    check(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups),
          lambda x, w, b: TF.conv2d(x, w, b, stride, padding, dilation, groups), x, w, b)


def test_conv2d_depthwise_f32():
    x, w = normal(3, 5, 8, 7, dtype=np.float32), normal(10, 1, 3, 3, dtype=np.float32)
    check(lambda x, w: F.conv2d(x, w, padding=1, groups=5),
          lambda x, w: TF.conv2d(x, w, padding=1, groups=5), x, w, rtol=1e-4, atol=1e-4)


def test_conv1d_conv3d_unbatched():
    check(lambda x, w: F.conv1d(x, w, stride=2, padding="valid"),
          lambda x, w: TF.conv1d(x, w, stride=2, padding="valid"), normal(3, 11), normal(2, 3, 4))
    check(lambda x, w: F.conv3d(x, w, stride=2, padding=1, groups=3),
          lambda x, w: TF.conv3d(x, w, stride=2, padding=1, groups=3),
          normal(1, 3, 5, 6, 7), normal(6, 1, 2, 3, 2))


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 3, 1), (3, 1, 2, 2, 2), (2, 0, 1, 1, 2), ((2, 3), (0, 1), (1, 0), 1, 1)])
def test_conv_transpose2d(stride, padding, output_padding, groups, dilation):
    x, w, b = normal(2, 6, 4, 5), normal(6, 2, 3, 2), normal(2 * groups)
    check(lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation),
          lambda x, w, b: TF.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation),
          x, w, b)


def test_conv_transpose1d_3d():
    check(lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2, output_padding=1),
          lambda x, w: TF.conv_transpose1d(x, w, stride=3, padding=2, output_padding=1),
          normal(3, 4, 11), normal(4, 5, 4))
    check(lambda x, w: F.conv_transpose3d(x, w, stride=2),
          lambda x, w: TF.conv_transpose3d(x, w, stride=2), normal(1, 2, 3, 2, 3), normal(2, 3, 2, 2, 3))


def test_conv_errors():
    x = harp.tensor(normal(2, 4, 8, 8))
    with pytest.raises(ValueError, match=r"conv2d: input \[2, 4, 8, 8\] has 4 channels but weight \[3, 3, 3, 3\]"):
        F.conv2d(x, harp.tensor(normal(3, 3, 3, 3)))
    with pytest.raises(ValueError, match="conv2d: groups=3 must divide"):
        F.conv2d(x, harp.tensor(normal(3, 1, 3, 3)), groups=3)
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        F.conv2d(x, harp.tensor(normal(3, 4, 3, 3)), stride=2, padding="same")
    with pytest.raises(ValueError, match=r"conv2d: expected input \[N, C, H, W\]"):
        F.conv2d(harp.tensor(normal(8, 8)), harp.tensor(normal(3, 4, 3, 3)))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(x, harp.tensor(normal(4, 2, 3, 3)), stride=2, output_padding=2)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", [
    (2, None, 0, 1, False), (3, 2, 1, 1, True), (3, 2, 1, 2, False), (2, 3, 1, 1, True),
    ((3, 2), (2, 1), (1, 0), 1, False), (3, 1, 1, 1, False)])
def test_max_pool2d(kernel, stride, padding, dilation, ceil_mode):
    check(lambda x: F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode),
          lambda x: TF.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode),
          normal(2, 3, 7, 9))


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [
    (2, None, 0, False), (3, 2, 1, True), (3, 2, 1, False), (2, 3, 1, True), ((3, 2), (2, 1), (1, 0), False)])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d(kernel, stride, padding, ceil_mode, count_include_pad):
    check(lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad),
          lambda x: TF.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad),
          normal(2, 3, 7, 9))


def test_pool_1d_3d_and_divisor():
    check(lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True),
          lambda x: TF.max_pool1d(x, 3, 2, 1, ceil_mode=True), normal(3, 4, 11))
    check(lambda x: F.avg_pool1d(x, 4, 3, 2, count_include_pad=False),
          lambda x: TF.avg_pool1d(x, 4, 3, 2, count_include_pad=False), normal(3, 4, 11))
    check(lambda x: F.max_pool3d(x, 2, ceil_mode=True),
          lambda x: TF.max_pool3d(x, 2, ceil_mode=True), normal(2, 3, 5, 6, 7))
    check(lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False),
          lambda x: TF.avg_pool3d(x, 3, 2, 1, count_include_pad=False), normal(2, 3, 5, 6, 7))
    check(lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5),
          lambda x: TF.avg_pool2d(x, 3, 2, 1, divisor_override=5), normal(2, 3, 7, 9))


def test_pool_f32_vector_widths():
    # Rows of 1, 15, 16, 17 and 33 elements: below, at and past every vector width.
    for width in (1, 15, 16, 17, 33):
        x = normal(2, 3, 5, width, dtype=np.float32)
        k = min(3, width)
        check(lambda x: F.max_pool2d(x, (3, k), (2, 2), (1, k // 2)),
              lambda x: TF.max_pool2d(x, (3, k), (2, 2), (1, k // 2)), x, rtol=1e-5, atol=1e-5)
        check(lambda x: F.avg_pool2d(x, (3, k), (2, 2), (1, k // 2)),
              lambda x: TF.avg_pool2d(x, (3, k), (2, 2), (1, k // 2)), x, rtol=1e-5, atol=1e-5)


def test_pool_window_taps_f32_vector_widths():
    # Windows as wide as their stride (2x2 / 2, 3x3 / 3, 1-d 2 / 2): their
    # taps lie together, so each output row is reduced as vectors across
    # outputs, one strided read per tap (docs/Lowering.md, the tile plans).
    # Output rows of 1, 7, 15, 16, 17 and 33: below, at and past every
    # vector width, with remainders.
    for width in (1, 7, 15, 16, 17, 33):
        for k in (2, 3):
            x = normal(2, 3, 2 * k + 1, k * width, dtype=np.float32)
            check(lambda x: F.max_pool2d(x, k), lambda x: TF.max_pool2d(x, k), x,
                  rtol=1e-5, atol=1e-5)
            check(lambda x: F.avg_pool2d(x, k), lambda x: TF.avg_pool2d(x, k), x,
                  rtol=1e-5, atol=1e-5)
        x = normal(3, 5, 2 * width, dtype=np.float32)
        check(lambda x: F.max_pool1d(x, 2), lambda x: TF.max_pool1d(x, 2), x,
              rtol=1e-5, atol=1e-5)


def test_pool_errors():
    x = harp.tensor(normal(1, 1, 4, 4))
    with pytest.raises(ValueError, match="padding .* must be between 0 and half the kernel"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="is smaller than the window"):
        F.avg_pool2d(x, 5)


@pytest.mark.parametrize("fn,shape,args", [
    ("max_pool2d", (2, 3, 7, 9), dict(kernel_size=(3, 2), stride=2, padding=1, dilation=(1, 2),
                                      ceil_mode=True)),
    ("max_pool1d", (3, 11), dict(kernel_size=4, stride=3, padding=2)),
    ("max_pool3d", (1, 2, 5, 4, 6), dict(kernel_size=2, stride=(1, 2, 2)))])
def test_max_pool_return_indices_match_torch(fn, shape, args):
    x = normal(*shape)
    x.flat[1] = x.flat[0]  # a tie: the first wins, as torch's
    out, idx = getattr(F, fn)(harp.tensor(x), return_indices=True, **args)
    t_out, t_idx = getattr(TF, fn)(torch.tensor(x), return_indices=True, **args)
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    assert idx.dtype == harp.int64


@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 9), (5, 2), (None, 3), 2])
def test_adaptive_pool2d(size):
    x = normal(2, 3, 7, 9)
    check(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), x)
    check(lambda x: F.adaptive_max_pool2d(x, size), lambda x: TF.adaptive_max_pool2d(x, size), x)


@pytest.mark.parametrize("fn,shape,size", [
    ("adaptive_max_pool1d", (2, 3, 13), 5), ("adaptive_max_pool1d", (3, 7), 13),
    ("adaptive_max_pool1d", (1, 1, 1), 1), ("adaptive_max_pool1d", (2, 1, 7), 1),
    ("adaptive_max_pool2d", (2, 3, 7, 13), (3, 5)), ("adaptive_max_pool2d", (2, 3, 7, 13), 1),
    ("adaptive_max_pool2d", (2, 3, 7, 13), (None, 2)), ("adaptive_max_pool2d", (3, 5, 4), (7, 13)),
    ("adaptive_max_pool2d", (1, 2, 13, 1), (4, 1)),
    ("adaptive_max_pool3d", (1, 2, 5, 7, 4), (2, 3, 1)),
    ("adaptive_max_pool3d", (2, 5, 7, 3), (3, 13, 2))])
@pytest.mark.parametrize("values", ["normal", "ties"])
def test_adaptive_max_pool_return_indices_match_torch(fn, shape, size, values):
    # Indices into each input plane, int64, the first maximum of a window
    # (in its row-major order) on ties; the gradient of the values reaches
    # that element only, as torch's.
    x = normal(*shape) if values == "normal" else rng.integers(0, 3, size=shape).astype(np.float64)
    h, t = harp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = getattr(F, fn)(h, size, return_indices=True)
    t_out, t_idx = getattr(TF, fn)(t, size, return_indices=True)
    assert idx.dtype == harp.int64 and tuple(idx.shape) == tuple(t_idx.shape)
    np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    w = rng.uniform(0.5, 1.5, size=tuple(t_out.shape))
    (out * harp.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), t.grad.numpy())


def test_adaptive_max_pool_return_indices_nan_inf_f32():
    # A window with NaNs picks its last NaN, as torch's `val > max ||
    # isnan(val)`; -inf windows pick their first element.
    x = normal(2, 3, 7, 13, dtype=np.float32)
    x[0, 0, 1, 2] = x[0, 0, 2, 1] = np.nan
    x[0, 1] = -np.inf
    x[1, 2, 3, 3] = np.inf
    h, t = harp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = F.adaptive_max_pool2d(h, (2, 3), return_indices=True)
    t_out, t_idx = TF.adaptive_max_pool2d(t, (2, 3), return_indices=True)
    np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    out.sum().backward()
    t_out.sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), t.grad.numpy())
    with pytest.raises(ValueError, match="adaptive_max_pool1d: input must be f32 or f64"):
        F.adaptive_max_pool1d(harp.tensor(np.ones((1, 2, 5), np.int64)), 2, return_indices=True)


def test_adaptive_pool_1d_3d():
    check(lambda x: F.adaptive_avg_pool1d(x, 4), lambda x: TF.adaptive_avg_pool1d(x, 4), normal(2, 3, 11))
    check(lambda x: F.adaptive_max_pool1d(x, 4), lambda x: TF.adaptive_max_pool1d(x, 4), normal(2, 3, 11))
    check(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 1)),
          lambda x: TF.adaptive_avg_pool3d(x, (2, 3, 1)), normal(1, 2, 5, 7, 4))


def test_linear():
    check(lambda x, w, b: F.linear(x, w, b), lambda x, w, b: TF.linear(x, w, b),
          normal(2, 3, 5), normal(7, 5), normal(7))
    with pytest.raises(ValueError, match=r"linear: input \[2, 5\] and weight \[7, 4\]"):
        F.linear(harp.tensor(normal(2, 5)), harp.tensor(normal(7, 4)))


def test_layer_group_instance_norm():
    x = normal(2, 6, 5, 3)
    check(lambda x, g, b: F.layer_norm(x, [5, 3], g, b),
          lambda x, g, b: TF.layer_norm(x, [5, 3], g, b), x, normal(5, 3), normal(5, 3))
    check(lambda x, g, b: F.group_norm(x, 3, g, b),
          lambda x, g, b: TF.group_norm(x, 3, g, b), x, normal(6), normal(6))
    check(lambda x: F.instance_norm(x), lambda x: TF.instance_norm(x), x)
    with pytest.raises(ValueError, match=r"normalized_shape \[4\] does not end input"):
        F.layer_norm(harp.tensor(x), 4)
    with pytest.raises(ValueError, match="num_groups=4 must divide"):
        F.group_norm(harp.tensor(x), 4)


def test_batch_norm_training_and_eval():
    x, g, b = normal(4, 3, 5, 2), normal(3), normal(3)
    hm, hv = harp.tensor(np.zeros(3)), harp.tensor(np.ones(3))
    tm, tv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    for _ in range(3):
        check(lambda x, g, b: F.batch_norm(x, hm, hv, g, b, training=True, momentum=0.2),
              lambda x, g, b: TF.batch_norm(x, tm, tv, g, b, training=True, momentum=0.2),
              x, g, b)
    np.testing.assert_allclose(hm.numpy(), tm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hv.numpy(), tv.numpy(), rtol=1e-12)
    check(lambda x, g, b: F.batch_norm(x, hm, hv, g, b),
          lambda x, g, b: TF.batch_norm(x, tm, tv, g, b), x, g, b)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(harp.tensor(normal(1, 3)), hm, hv, training=True)


def test_dropout():
    x = harp.tensor(np.ones((4000,), np.float32))
    first = F.dropout(x, 0.3).numpy()
    assert abs((first == 0).mean() - 0.3) < 0.03
    np.testing.assert_allclose(first[first != 0], 1 / 0.7, rtol=1e-6)
    compiles = harp.compile_stats()["compiles"]
    second = F.dropout(x, 0.3).numpy()
    assert harp.compile_stats()["compiles"] == compiles  # the seed is an argument
    assert (first != second).any()
    np.testing.assert_array_equal(F.dropout(x, 0.3, seed=5).numpy(), F.dropout(x, 0.3, seed=5).numpy())
    assert F.dropout(x, 0.3, training=False) is x
    assert (F.dropout(x, 1.0).numpy() == 0).all()
    # Gradient: the same mask, scaled.
    w = harp.tensor(np.ones((64,)), requires_grad=True)
    out = F.dropout(w, 0.5, seed=11)
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), out.numpy())
    with pytest.raises(ValueError, match="p must be in"):
        F.dropout(x, 1.5)


def test_rand_seeded_matches_rand():
    for dtype in (harp.float32, harp.float64):
        for seed in (0, 42, 2 ** 40 + 5):
            a = harp._harp.rand(dtype, [5, 7], seed).numpy()
            b = harp._harp.rand_seeded(dtype, [5, 7], seed).numpy()
            np.testing.assert_array_equal(a, b)


def test_embedding_one_hot():
    idx = np.array([[1, 2, 0], [9, 1, 1]])
    check(lambda e: F.embedding(harp.tensor(idx), e, padding_idx=1),
          lambda e: TF.embedding(torch.tensor(idx), e, padding_idx=1), normal(10, 4))
    check(lambda e: F.embedding(harp.tensor(idx), e), lambda e: TF.embedding(torch.tensor(idx), e),
          normal(10, 4))
    np.testing.assert_array_equal(F.one_hot(harp.tensor(idx)).numpy(),
                                  TF.one_hot(torch.tensor(idx)).numpy())
    np.testing.assert_array_equal(F.one_hot(harp.tensor(idx), 12).numpy(),
                                  TF.one_hot(torch.tensor(idx), 12).numpy())


def test_pad():
    x = normal(2, 3, 4)
    check(lambda x: F.pad(x, (1, -2, 2, 0)), lambda x: TF.pad(x, (1, -2, 2, 0)), x)
    check(lambda x: F.pad(x, (0, 1), value=2.5), lambda x: TF.pad(x, (0, 1), value=2.5), x)
    # (reflect, replicate and circular: test_resample.py)
    with pytest.raises(ValueError, match="mode 'wrap' is not one of"):
        F.pad(harp.tensor(x), (1, 1), mode="wrap")


def _torch_attention(q, k, v, mask=None, causal=False, scale=None):
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return s.softmax(-1) @ v


def test_scaled_dot_product_attention():
    q, k, v = normal(2, 3, 5, 4), normal(2, 3, 6, 4), normal(2, 3, 6, 7)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
          lambda q, k, v: _torch_attention(q, k, v), q, k, v)
    k5, v5 = normal(2, 3, 5, 4), normal(2, 3, 5, 7)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
          lambda q, k, v: _torch_attention(q, k, v, causal=True, scale=0.3), q, k5, v5)
    mask = rng.random((5, 6)) < 0.7
    mask[:, 0] = True
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=harp.tensor(mask)),
          lambda q, k, v: _torch_attention(q, k, v, mask=torch.tensor(mask)), q, k, v)
    bias = normal(5, 6)
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
          lambda q, k, v, m: _torch_attention(q, k, v, mask=m), q, k, v, bias)


@pytest.mark.parametrize("length", [1, 37, 64])
def test_multihead_attention_at_register_tile_sizes(length):
    # Sizes the CPU code gives register tiles and copies to (this suite runs
    # under every vector width): heads of 16 split from a 64-wide model dim,
    # so the keys are read transposed with the heads between n and k, and
    # the key and value projections read slices of one weight. Self
    # attention with a causal mask and cross attention to 5 keys; lengths
    # 1, prime and a multiple of every vector width.
    torch.manual_seed(0)
    tmod = torch.nn.MultiheadAttention(64, 4, batch_first=True)
    hmod = harp.nn.MultiheadAttention(64, 4, batch_first=True)
    state = {k: v.detach().numpy() + (0.1 * normal(*v.shape, dtype=np.float32)
                                      if "bias" in k else 0)
             for k, v in tmod.state_dict().items()}
    tmod.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    hmod.load_state_dict(state)
    x = normal(3, length, 64, dtype=np.float32)
    causal = np.triu(np.ones((length, length), bool), k=1)
    for q, kv, targs, hargs in (
            (x, x, dict(attn_mask=torch.tensor(causal)), dict(attn_mask=harp.tensor(causal))),
            (x, normal(3, 5, 64, dtype=np.float32), {}, {})):
        tq, tkv = torch.tensor(q, requires_grad=True), torch.tensor(kv, requires_grad=True)
        hq, hkv = harp.tensor(q, requires_grad=True), harp.tensor(kv, requires_grad=True)
        tout = tmod(tq, tkv, tkv, need_weights=False, **targs)[0]
        hout = hmod(hq, hkv, hkv, need_weights=False, **hargs)[0]
        np.testing.assert_allclose(hout.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
        (tout * tout).sum().backward()
        (hout * hout).sum().backward()
        grads = [(hq.grad, tq.grad), (hkv.grad, tkv.grad)]
        hparams = dict(hmod.named_parameters())
        grads += [(hparams[name].grad, p.grad) for name, p in tmod.named_parameters()]
        for h, t in grads:
            np.testing.assert_allclose(h.numpy(), t.numpy(), rtol=1e-3, atol=1e-4)
        for p in list(tmod.parameters()):
            p.grad = None
        for p in hmod.parameters():
            p.zero_grad()


def test_pool_fused_with_scalar_operands():
    # batch_norm (eval) and relu fuse into the max pool's kernel with a 0-d
    # operand (eps): the strided-window rewrite must keep it (it aborted).
    x = normal(3, 4, 8, 8, dtype=np.float32)
    mean, var = normal(4, dtype=np.float32), np.abs(normal(4, dtype=np.float32)) + 0.5
    g, b = normal(4, dtype=np.float32), normal(4, dtype=np.float32)

    def harp_fn(x):
        out = F.batch_norm(x, harp.tensor(mean), harp.tensor(var), harp.tensor(g), harp.tensor(b))
        return F.max_pool2d(F.relu(out), 2)

    def torch_fn(x):
        out = TF.batch_norm(x, torch.tensor(mean), torch.tensor(var), torch.tensor(g), torch.tensor(b))
        return TF.max_pool2d(TF.relu(out), 2)

    check(harp_fn, torch_fn, x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 2, 6, 6), (4, 4, 6, 6), (3, 5, 10, 18), (2, 3, 34, 34)])
def test_max_pool_gradient_after_normalization_f32(shape):
    # The max-reduction's derivative selects the elements equal to the
    # maximum, recomputing the normalized input in another kernel: both
    # kernels must round alike in vector lanes and scalar remainders (with
    # every vector multiply-add contracted into an FMA, most terms were lost).
    x = normal(*shape, dtype=np.float32)
    check(lambda x: F.max_pool2d(F.batch_norm(x, None, None, training=True), 2),
          lambda x: TF.max_pool2d(TF.batch_norm(x, None, None, training=True), 2), x,
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("args", [(2,), (3, 2, 1), (3, 1, 1), (2, 2, 0, 1, True), (3, 2, 1, 2)])
def test_max_pool1d_gradient_f64(args):
    # The window view's derivative is a fold (a masked view with floordiv and
    # mod); fused with the max's derivative, its masked lanes once computed
    # 0 / 0 and LLVM dropped the mask: NaN everywhere.
    x = normal(2, 3, 9)
    check(lambda x: F.max_pool1d(x, *args), lambda x: TF.max_pool1d(x, *args), x)


def test_unfold_gradient_is_a_fold():
    # harp.unfold's gradient against torch's Tensor.unfold (1-D windows per
    # dim) for strides below, at and above the kernel.
    for size, step in ((3, 1), (3, 2), (2, 2), (2, 3)):
        check(lambda x: harp.unfold(x, [size], step), lambda x: x.unfold(-1, size, step), normal(2, 11))
        check(lambda x: harp.unfold(x, [size, size], step),
              lambda x: x.unfold(-2, size, step).unfold(-2, size, step), normal(2, 9, 10))


def test_fused_integer_division_under_a_pad():
    # A fused producer read through a masked view runs on the pad in the
    # masked lanes: an integer division there must not divide by zero.
    a = harp.tensor(np.arange(1, 13, dtype=np.int32).reshape(3, 4))
    b = harp.tensor(np.full((3, 4), 3, np.int32))
    out = F.pad(a // b, (2, 1, 1, 1)).numpy()
    np.testing.assert_array_equal(out, np.pad(np.arange(1, 13).reshape(3, 4) // 3, ((1, 1), (2, 1))))


@pytest.mark.parametrize("size", [6, 7, 12])
def test_conv_then_pool_gradients_f32(size):
    # The convolution computed on a grid as wide as its padded image and cut
    # to its width (harp-rewrite-windows) is read element by element by the
    # pool's derivative: the gather needs a contiguous copy of the cut.
    x, w = normal(4, 3, size, size, dtype=np.float32), normal(4, 3, 3, 3, dtype=np.float32)
    check(lambda x, w: F.max_pool2d(F.conv2d(x, w, padding=1), 2),
          lambda x, w: TF.max_pool2d(TF.conv2d(x, w, padding=1), 2), x, w, rtol=1e-4, atol=1e-4)
    check(lambda x, w: F.avg_pool2d(F.conv2d(x, w, padding=1), 2),
          lambda x, w: TF.avg_pool2d(TF.conv2d(x, w, padding=1), 2), x, w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel,stride,padding", [(3, 1, 0), ((2, 3), (2, 1), (1, 1)),
                                                   (1, 3, 0), ((5, 2), 2, (2, 0))])
def test_im2col_col2im_match_torch_unfold_fold(kernel, stride, padding):
    x = normal(2, 3, 7, 6)
    check(lambda x: F.im2col(x, kernel, stride, padding),
          lambda x: TF.unfold(x, kernel, 1, padding, stride), x)
    cols = TF.unfold(torch.tensor(x), kernel, 1, padding, stride).detach().numpy()
    cols = normal(*cols.shape)
    check(lambda c: F.col2im(c, (7, 6), kernel, stride, padding),
          lambda c: TF.fold(c, (7, 6), kernel, 1, padding, stride), cols)
    with pytest.raises(ValueError, match=r"col2im: \d+ columns, but output \[12, 6\]"):
        F.col2im(harp.tensor(cols), (12, 6), kernel, stride, padding)


def test_attention_dropout_drops_weights_with_a_seed():
    q, k = normal(3, 9, 4), normal(3, 11, 4)
    v = np.eye(11)[None].repeat(3, 0)  # the output is the weights themselves
    plain = F.scaled_dot_product_attention(*map(harp.tensor, (q, k, v))).numpy()
    harp.manual_seed(11)
    dropped = F.scaled_dot_product_attention(*map(harp.tensor, (q, k, v)), dropout_p=0.4)
    harp.manual_seed(11)
    again = F.scaled_dot_product_attention(*map(harp.tensor, (q, k, v)), dropout_p=0.4)
    np.testing.assert_array_equal(dropped.numpy(), again.numpy())
    out = dropped.numpy()
    zero = out == 0
    assert 0.25 < zero.mean() < 0.55
    np.testing.assert_allclose(out[~zero], plain[~zero] / 0.6, rtol=1e-12)


def test_instance_norm_running_statistics():
    # torch's arguments, in its order: with use_input_stats the running
    # statistics follow the batch's mean of each sample's (unbiased variance);
    # without, they normalize.
    x = np.random.default_rng(11).normal(size=(3, 4, 5, 6)) * 2 + 1
    weight, bias = np.linspace(0.5, 2, 4), np.linspace(-1, 1, 4)
    stats = {}
    for lib, fn in ((harp, F.instance_norm), (torch, TF.instance_norm)):
        mean, var = lib.tensor(np.zeros(4)), lib.tensor(np.ones(4))
        out = fn(lib.tensor(x), mean, var, lib.tensor(weight), lib.tensor(bias), True, 0.3, 1e-4)
        frozen = fn(lib.tensor(x), mean, var, None, None, False, 0.3, 1e-4)
        stats[lib] = [np.asarray(a.numpy() if lib is harp else a.detach().numpy())
                      for a in (out, mean, var, frozen)]
    for got, want in zip(stats[harp], stats[torch]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="use_input_stats=False needs running_mean"):
        F.instance_norm(harp.tensor(x), use_input_stats=False)
