"""Regressions found on machines other than the one a change was written on
(each crashed the process or returned wrong numbers without an error). They
run under every CPU profile the test command uses (HARP_CPU)."""

import os

import numpy as np
import pytest
import torch

import harp


def leaf(array):
    t = harp.tensor(np.asarray(array, np.float64))
    t.requires_grad = True
    return t


def tleaf(array):
    return torch.tensor(np.asarray(array, np.float64), requires_grad=True)


def test_backward_when_two_gradients_are_one_value():
    # d/da and d/db of sum((-a - b) * 1) are the same tensor; returning it
    # twice crashed buffer-results-to-out-params.
    a, b = leaf([1.0, 2.0, 3.0]), leaf([4.0, 5.0, 6.0])
    ((-a - b) * harp.tensor(np.ones(3))).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [-1, -1, -1])
    np.testing.assert_array_equal(b.grad.numpy(), [-1, -1, -1])


def test_backward_of_two_0d_leaves():
    a, b = leaf(2.0), leaf(3.0)
    (a + b).backward()
    assert a.grad.numpy() == 1 and b.grad.numpy() == 1


def test_empty_tensors_forward_and_backward():
    x, w = leaf(np.zeros((0, 8))), leaf(np.ones((4, 8)))
    (x @ w.T).sum().backward()
    assert x.grad.numpy().shape == (0, 8)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 8)))
    a, b = leaf(np.zeros((0, 3))), leaf(np.zeros((0, 3)))
    harp.concat([a, b]).sum().backward()
    assert a.grad.numpy().shape == (0, 3) and b.grad.numpy().shape == (0, 3)
    assert harp.tensor(np.arange(10.0)).slice(0, 5, 5, 1).numpy().shape == (0,)
    np.testing.assert_array_equal((harp.tensor(np.zeros((4, 0))).sum(1)).numpy(), np.zeros(4))


@pytest.mark.parametrize("n", [2, 8, 9, 17, 20, 33, 65])
def test_shifted_view(n):
    # x[1:] of n elements: the tile's slice was one element short.
    x = np.arange(float(n))
    np.testing.assert_array_equal(harp.tensor(x)[1:].numpy(), x[1:])
    np.testing.assert_array_equal(harp.tensor(x)[2:-1].numpy(), x[2:-1])
    np.testing.assert_array_equal((harp.tensor(x)[1:] * 2).numpy(), x[1:] * 2)


def test_batched_matmul_sum_plus_bias_f32():
    rng = np.random.default_rng(0)
    b1, b2 = rng.standard_normal((5, 5, 5)), rng.standard_normal((5, 5, 10))
    c = rng.standard_normal((5, 10))
    for dtype in (np.float32, np.float64):
        got = ((harp.tensor(b1.astype(dtype)) @ harp.tensor(b2.astype(dtype))).sum(0)
               + harp.tensor(c.astype(dtype))).numpy()
        want = (torch.tensor(b1) @ torch.tensor(b2)).sum(0) + torch.tensor(c)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_broadcast_gradient_of_hypot():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 10, 5)), rng.standard_normal((10, 5))
    ha, hb = leaf(a), leaf(b)
    (ha * ha + hb * hb).sqrt().sum().backward()
    ta, tb = tleaf(a), tleaf(b)
    (ta * ta + tb * tb).sqrt().sum().backward()
    np.testing.assert_allclose(ha.grad.numpy(), ta.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hb.grad.numpy(), tb.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_dilated_conv_then_add():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 4, 5, 5)), rng.standard_normal((1, 4, 3, 3))
    y = rng.standard_normal((1, 1, 5, 5))
    got = (harp.conv(harp.tensor(x), harp.tensor(w), [1, 1], [3, 3], [3, 3])
           + harp.tensor(y)).numpy()
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=3,
                                      dilation=3) + torch.tensor(y)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-9, atol=1e-12)


def test_concat_backward_with_both_inputs():
    a, b = leaf(np.ones((2, 3))), leaf(2 * np.ones((2, 3)))
    weight = harp.tensor(np.arange(12.0).reshape(4, 3))
    (harp.concat([a, b], 0) * weight).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(b.grad.numpy(), np.arange(6.0, 12).reshape(2, 3))


@pytest.mark.parametrize("n", [5, 17, 100, 129])
def test_masked_row_softmax(n):
    # A causal mask read through linalg.index in a row reduction tiled into
    # several partial tiles: every tile used the first tile's columns.
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n)).astype(np.float32)
    mask = np.tril(np.ones((n, n), bool))
    got = harp.tensor(x).softmax(-1).numpy()
    np.testing.assert_allclose(got, torch.softmax(torch.tensor(x), -1).numpy(),
                               rtol=1e-5, atol=1e-6)
    masked = np.where(mask, x, -np.inf)
    got = harp.tensor(masked).softmax(-1).numpy()
    np.testing.assert_allclose(got, torch.softmax(torch.tensor(masked), -1).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_bf16_round_trip_matches_torch():
    x = np.array([1e-40, 1.00390625, 1.01171875, 3.0, -2.5, 0.1, 65504.0], np.float32)
    module = """
func.func @main(%x: tensor<7xf32>) -> tensor<7xf32> {
  %y = harp.map_reduce ins(%x : tensor<7xf32>) {
  ^bb0(%v: f32):
    %t = arith.truncf %v : f32 to bf16
    %e = arith.extf %t : bf16 to f32
    harp.yield %e : f32
  } : tensor<7xf32>
  return %y : tensor<7xf32>
}
"""
    (got,) = harp.ir.call(module, "main", [x])
    want = torch.tensor(x).to(torch.bfloat16).float().numpy()
    # AVX512-BF16's conversion flushes subnormals (1e-40) to zero.
    np.testing.assert_array_equal(got[1:], want[1:])
    assert got[0] in (0.0, want[0])


def test_compiler_crash_is_an_exception(monkeypatch, tmp_path):
    # A crash inside the compiler (simulated by harp's test hook) raises in
    # the caller; the process goes on and compiles the next module. The
    # constants are new in every run, so no cached kernel skips the compile
    # (harp.constant: a plain Python number would be an argument).
    c = 1.0 + int.from_bytes(os.urandom(4), "little") / 2.0**32
    module = """
func.func @main(%%x: tensor<5xf32>) -> tensor<5xf32> {
  %%y = harp.map_reduce ins(%%x : tensor<5xf32>) {
  ^bb0(%%a: f32):
    %%c = arith.constant %.9e : f32
    %%r = arith.mulf %%a, %%c : f32
    harp.yield %%r : f32
  } : tensor<5xf32>
  return %%y : tensor<5xf32>
}
""" % c
    x = np.arange(5, dtype=np.float32)
    monkeypatch.setenv("HARP_DEBUG_CRASH_COMPILER", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with pytest.raises(ValueError, match="harp crashed while compiling") as crash:
        harp.ir.call(module, "main", [x])
    # The module is written where the message says, for harp-run to
    # reproduce the compile.
    written = list(tmp_path.glob("harp-crash-*.mlir"))
    assert len(written) == 1 and str(written[0]) in str(crash.value)
    # The API's error names the request and the inputs' types and shapes.
    with pytest.raises(harp.HarpError, match=r"realizing a f32 \[5\] tensor "
                       r"\(inputs: f32 \[5\]\): harp crashed while compiling"):
        (harp.tensor(x) * harp.constant(c + 1.0)).numpy()
    # A crash inside a pass leaves the JIT's pass manager mid-run (it is
    # built once and run for every module): the next compile builds another.
    monkeypatch.setenv("HARP_DEBUG_CRASH_COMPILER", "harp-vector-cleanup")
    with pytest.raises(ValueError, match="in pass harp-vector-cleanup"):
        harp.ir.call(module, "main", [x])
    monkeypatch.delenv("HARP_DEBUG_CRASH_COMPILER")
    np.testing.assert_allclose(harp.ir.call(module, "main", [x])[0], x * np.float32(c),
                               rtol=1e-6)
    # The module written is the program that crashed.
    np.testing.assert_allclose(harp.ir.call(written[0].read_text(), "main", [x])[0],
                               x * np.float32(c), rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 1])
def test_gradient_through_a_flip_of_a_reduction(dim):
    # Found by test_differential: softmax -> abs -> flip, backward. The
    # reduction read through the flip was fused into a row loop whose tile
    # slices were computed for an increasing map.
    x = np.array([[0.5478], [-0.9209]], np.float32)
    h = harp.tensor(x)
    h.requires_grad = True
    (h.softmax(0).abs().abs().abs().flip([dim]) * harp.tensor(np.ones((2, 1), np.float32))).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    (t.softmax(0).abs().abs().abs().flip([dim])).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_elementwise_extremum_ties_share_the_gradient(op):
    # Found by test_differential: harp gave a tie's whole gradient to the
    # first operand; torch.maximum/minimum give each half.
    x = np.array([1.0, 2.0, 3.0, -1.0])
    y = np.array([1.0, 1.0, 4.0, -1.0])
    hx, hy = leaf(x), leaf(y)
    (getattr(hx, op)(hy) * harp.tensor(np.array([1.0, 2.0, 3.0, 4.0]))).sum().backward()
    tx, ty = tleaf(x), tleaf(y)
    (getattr(torch, op)(tx, ty) * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(hx.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(hy.grad.numpy(), ty.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_gradient_at_zero_is_zero_and_nan_propagates(dtype):
    # relu was maximumf(x, 0), whose tie rule gave half the gradient at 0;
    # torch.relu gives 0. NaN stays NaN and -inf becomes 0, as torch's.
    x = np.array([0.0, -0.0, 1.5, -2.0, np.nan, -np.inf, np.inf], dtype)
    h = harp.tensor(x)
    h.requires_grad = True
    out = h.relu()
    (out * harp.tensor(np.arange(1, 8).astype(dtype))).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    expected = torch.relu(t)
    (expected * torch.arange(1, 8, dtype=t.dtype)).sum().backward()
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(h.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("p", [2, 3, 0.5, "fro"])
def test_norm_gradient_at_a_zero_row_is_zero(p):
    # sqrt(sum x^2) has an infinite slope at 0: its gradient was NaN for a
    # zero row; torch gives 0 there (normalize of a zero row included).
    x = np.array([[0.0, 0.0, 0.0], [3.0, -4.0, 1.0], [0.0, 2.0, -1.0]])
    h = harp.tensor(x)
    h.requires_grad = True
    h.norm(p, 1).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    torch.norm(t, p, 1).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=0)
    assert not np.isnan(h.grad.numpy()).any()
    h2 = harp.tensor(x)
    h2.requires_grad = True
    harp.nn.functional.normalize(h2, dim=1).sum().backward()
    t2 = torch.tensor(x, requires_grad=True)
    torch.nn.functional.normalize(t2, dim=1).sum().backward()
    np.testing.assert_allclose(h2.grad.numpy(), t2.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n,k", [(1, 1), (7, 3), (17, 5), (33, 2)])
def test_window_read_backwards_with_its_index(n, k):
    # convert-harp-to-linalg runs a reduced dim read backwards through a
    # window (x[i - j + k - 1]) backwards, reading the filter through a
    # reversed copy; the region must still see the original index j.
    src = """module {
  func.func @main(%x: tensor<NPADxf32>, %f: tensor<Kxf32>) -> tensor<Nxf32> {
    %xv = harp.view %x <(d0, d1) -> (d0 - d1 + KM1)> : tensor<NPADxf32> -> tensor<NxKxf32>
    %fv = harp.view %f <(d0, d1) -> (d1)> : tensor<Kxf32> -> tensor<NxKxf32>
    %r = harp.map_reduce ins(%xv, %fv : tensor<NxKxf32>, tensor<NxKxf32>) {
    ^bb0(%a: f32, %b: f32):
      %j = harp.index 1
      %ji = arith.index_cast %j : index to i32
      %jf = arith.sitofp %ji : i32 to f32
      %m = arith.mulf %a, %b : f32
      %s = arith.mulf %m, %jf : f32
      harp.yield %s : f32
    } reduce(sum, dims = [1]) : tensor<Nxf32>
    return %r : tensor<Nxf32>
  }
}""".replace("NPAD", str(n + k - 1)).replace("KM1", str(k - 1)).replace(
        "N", str(n)).replace("K", str(k))
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n + k - 1).astype(np.float32)
    f = rng.standard_normal(k).astype(np.float32)
    want = np.array([sum(x[i - j + k - 1] * f[j] * j for j in range(k))
                     for i in range(n)], dtype=np.float32)
    got = harp.ir.call(src, "main", [x, f])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,stride,padding,dilation", [
    ((2, 3, 7, 5), 1, 1, 1), ((1, 4, 9, 9), 2, 2, 1), ((3, 2, 6, 8), 1, 2, 2),
    ((2, 5, 5, 5), 1, 0, 1)])
def test_conv2d_input_gradient_as_one_convolution(shape, stride, padding, dilation):
    # harp-fuse folds the column tensor of a convolution's input gradient
    # into one contraction over the window and the output channels, computed
    # on the image only: against torch on odd sizes, strides and dilations.
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape)
    w = rng.standard_normal((6, shape[1], 3, 3))
    hx = harp.tensor(x)
    hx.requires_grad = True
    out = harp.nn.functional.conv2d(hx, harp.tensor(w), stride=stride,
                                    padding=padding, dilation=dilation)
    g = rng.standard_normal(out.shape)
    (out * harp.tensor(g)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    tout = torch.nn.functional.conv2d(tx, torch.tensor(w), stride=stride,
                                      padding=padding, dilation=dilation)
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-10,
                               atol=1e-10)


@pytest.mark.parametrize("shape,step,padding,stride", [
    ((2, 3, 7, 7), 2, 1, 1), ((1, 4, 9, 8), 2, 2, 1), ((2, 2, 11, 6), 3, 2, 1),
    ((1, 3, 10, 9), 2, 1, 2)])
def test_conv2d_strided_filter_input_gradient(shape, step, padding, stride):
    # A filter read at every `step`-th tap (`w[:, :, ::2, ::2]`): the input
    # gradient's kernel runs the taps backwards and reads the filter from a
    # reversed copy; the copy's map kept the step as if it were 1 (`2 - 2 ky`
    # was not taken as a flip), tiling then sliced the filter too short and
    # the graph of backward() failed to compile.
    rng = np.random.default_rng(sum(shape) + step)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((5, shape[1], 5, 5))
    hx = harp.tensor(x)
    hx.requires_grad = True
    out = harp.nn.functional.conv2d(hx, harp.tensor(w)[:, :, ::step, ::step],
                                    stride=stride, padding=padding)
    g = rng.standard_normal(out.shape)
    (out * harp.tensor(g)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    tout = torch.nn.functional.conv2d(tx, torch.tensor(w)[:, :, ::step, ::step],
                                      stride=stride, padding=padding)
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-10,
                               atol=1e-10)


_PHASE_CASES = [
    # (op, input shape, kwargs, weight shape or None); each window at least
    # 2^15 elements (positions times taps), where harp-autodiff reads it
    # back per phase, but the 1x1 one (a stride and no window: one fold).
    ("conv2d", (4, 8, 33, 29), dict(stride=2, padding=1), (6, 8, 3, 3)),
    ("conv2d", (4, 8, 53, 47), dict(stride=3), (4, 8, 2, 2)),
    ("conv2d", (3, 4, 41, 37), dict(stride=2, padding=2, dilation=2), (3, 4, 3, 3)),
    ("conv2d", (4, 6, 31, 17), dict(stride=(2, 1), padding=(0, 1)), (2, 6, 3, 2)),
    ("conv2d", (4, 16, 24, 23), dict(stride=2, padding=1, groups=16), (16, 1, 3, 3)),
    ("conv2d", (2, 8, 33, 33), dict(stride=2), (3, 8, 1, 1)),
    ("conv1d", (8, 16, 401), dict(stride=2, padding=1), (4, 16, 4)),
    ("conv3d", (2, 4, 17, 18, 17), dict(stride=2, padding=1), (2, 4, 3, 3, 3)),
    ("max_pool2d", (4, 8, 33, 32), dict(kernel_size=3, stride=2, padding=1), None),
    ("max_pool2d", (4, 8, 41, 41), dict(kernel_size=2, stride=2, ceil_mode=True), None),
    ("avg_pool1d", (16, 16, 401), dict(kernel_size=4, stride=3), None),
]


@pytest.mark.parametrize("op,shape,kwargs,wshape", _PHASE_CASES,
                         ids=["%s-%d" % (c[0], i) for i, c in enumerate(_PHASE_CASES)])
def test_strided_window_gradients_per_phase(op, shape, kwargs, wshape):
    # The gradient of a strided window (s = a o + k) is a window sum per
    # phase of s (harp-autodiff's phaseAdjoint), stacked and interleaved; the
    # phases' folds of a convolution's column tensor are fused into
    # convolutions of their own. Against torch in f64, odd sizes, strides 2
    # and 3, a dilation, taps a stride leaves out (1x1 and 2x2 kernels over
    # strides 2 and 3), depthwise, 1-d, 3-d and pooling.
    rng = np.random.default_rng(len(shape) * 100 + sum(shape))
    x = rng.standard_normal(shape)
    hx = harp.tensor(x)
    hx.requires_grad = True
    tx = torch.tensor(x, requires_grad=True)
    hf = getattr(harp.nn.functional, op)
    tf = getattr(torch.nn.functional, op)
    if wshape is None:
        hout, tout = hf(hx, **kwargs), tf(tx, **kwargs)
    else:
        w = rng.standard_normal(wshape)
        hw = harp.tensor(w)
        hw.requires_grad = True
        tw = torch.tensor(w, requires_grad=True)
        hout, tout = hf(hx, hw, **kwargs), tf(tx, tw, **kwargs)
    g = rng.standard_normal(tuple(tout.shape))
    (hout * harp.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-10,
                               atol=1e-10)
    if wshape is not None:
        np.testing.assert_allclose(hw.grad.numpy(), tw.grad.numpy(), rtol=1e-10,
                                   atol=1e-10)


def test_numpy_scalars_are_numbers():
    # np.float32(2) and friends were not Python numbers to the operand
    # coercion, so `t + np.float32(2)` failed with pybind11's "Unable to
    # cast"; they are the number they hold, as in PyTorch, and anything
    # else is a TypeError naming its type.
    x = harp.tensor(np.array([1.0, 2.0], np.float32))
    for number, expected in [(np.float32(2), [3, 4]), (np.int64(3), [4, 5]),
                             (np.float64(0.5), [1.5, 2.5]), (np.bool_(True), [2, 3])]:
        out = x + number
        assert out.dtype == harp.float32
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal((np.float32(3) - x).numpy(), [2, 1])
    with pytest.raises(TypeError, match="an operand must be a harp.Tensor, a NumPy array or a number, not str"):
        x + "a"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_negative_floats_to_unsigned_wrap_as_torch(dtype):
    # A float cast to an unsigned type lowered to LLVM's fptoui, whose
    # result for a negative value is poison: x86-64-v2 and v3 code gave 0,
    # AVX-512 code the wrapped value. It now goes through a signed 64-bit
    # conversion, so every target wraps modulo 2^width, as torch does.
    v = np.array([-1.0, -2.5, 0.5, 3.7, 200.0, -300.0, 255.0, 256.0, 1e5, -0.0] * 3, dtype)
    h = harp.tensor(v)
    for name, hd, td in [("uint8", harp.uint8, torch.uint8)]:
        np.testing.assert_array_equal(h.to(hd).numpy(), torch.tensor(v).to(td).numpy(), err_msg=name)
    np.testing.assert_array_equal(h.byte().numpy(), torch.tensor(v).byte().numpy())
    # The wider unsigned types (torch 1.13 has none): modulo 2^width, and
    # u64 keeps the values of 2^63 and up.
    w = np.array([-1.0, -70000.0, 3.9, 70000.5, 4e9, 1e19][: 5 if dtype == np.float32 else 6], np.float64)
    hw = harp.tensor(w.astype(dtype))
    np.testing.assert_array_equal(hw.to(harp.uint16).numpy().astype(np.uint16),
                                  np.trunc(w).astype(np.int64).astype(np.uint16) if dtype == np.float64
                                  else np.trunc(w.astype(np.float32)).astype(np.int64).astype(np.uint16))
    u64 = hw.to(harp.uint64).numpy().astype(np.uint64)
    assert u64[0] == np.uint64(2**64 - 1) and u64[1] == np.uint64(2**64 - 70000)
    if dtype == np.float64:
        assert u64[5] == np.uint64(10**19)


def test_tensor_of_a_numpy_scalar_keeps_its_dtype():
    # harp.tensor(np.float64(x)) gave float32, as for a Python float; torch
    # keeps a NumPy scalar's dtype, as it keeps a NumPy array's.
    for value in (np.float64(1.5), np.complex128(1 + 2j), np.float32(2.5), np.int16(3)):
        assert harp.tensor(value).dtype.name == torch.tensor(value).dtype.__str__()[6:]
        assert harp.tensor(value).item() == value
    assert harp.tensor(1.5).dtype == harp.float32 and harp.tensor(1j).dtype == harp.complex64


def test_lstm_cells_unrolled_into_a_concatenation_differentiate():
    # pytorch/examples' time_sequence_prediction (two LSTMCells and a linear
    # layer of one output, unrolled, the steps' outputs concatenated): the
    # gradient's kernel read the last step's column of the concatenation
    # broadcast into a vector, a 0-d vector read of a column strided by the
    # sequence length, which no lowering took ("LLVM Translation failed for
    # operation: builtin.unrealized_conversion_cast"). harp-vector-cleanup
    # now reads such an element as a scalar (test/Codegen/CPU/scalar-reads.mlir).
    rng = np.random.default_rng(4)
    data = rng.standard_normal((3, 6))
    weights = [rng.standard_normal(s) * 0.3 for s in
               [(20, 1), (20, 5), (20,), (20,), (20, 5), (20, 5), (20,), (20,), (1, 5), (1,)]]

    def run(lib, tensor):
        w = [tensor(v) for v in weights]
        for v in w:
            v.requires_grad = True
        x = tensor(data)
        h = c = h2 = c2 = lib.zeros(3, 5, dtype=lib.float64)
        outputs = []
        for step in x.split(1, dim=1):
            gates = step @ w[0].T + h @ w[1].T + w[2] + w[3]
            i, f, g, o = gates.chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            gates = h @ w[4].T + h2 @ w[5].T + w[6] + w[7]
            i, f, g, o = gates.chunk(4, 1)
            c2 = f.sigmoid() * c2 + i.sigmoid() * g.tanh()
            h2 = o.sigmoid() * c2.tanh()
            outputs.append(h2 @ w[8].T + w[9])
        loss = ((lib.cat(outputs, dim=1) - x) ** 2).mean()
        loss.backward()
        return [loss.item()] + [v.grad.numpy() for v in w]

    got = run(harp, lambda v: harp.tensor(v))
    expected = run(torch, lambda v: torch.tensor(v))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-13)
