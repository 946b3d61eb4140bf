"""Every op family on sizes that leave vector and register-tile remainders
at every vector width: 1, primes (7, 13, 31, 37) and one below and above
each lane count and register-tile width of 128-, 256- and 512-bit vectors
(3, 5, 9, 15, 17, 33, 63, 65), forward against torch in f32 and f64 and
gradients in f64. The test command runs this file under every CPU profile
(HARP_CPU), so each size is a remainder for some width."""

import numpy as np
import pytest
import torch

import harp

SIZES = [1, 3, 5, 7, 9, 13, 15, 17, 31, 33, 37, 63, 65]
DTYPES = {"f32": (np.float32, harp.float32, 2e-5), "f64": (np.float64, harp.float64, 1e-10)}


def uniform(shape, np_dtype, seed):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, size=shape).astype(np_dtype)


def pair(shape, dtype, seed):
    np_dtype, h_dtype, _ = DTYPES[dtype]
    data = uniform(shape, np_dtype, seed)
    h = harp.tensor(data, h_dtype)
    t = torch.tensor(data)
    if dtype == "f64":
        h.requires_grad = True
        t.requires_grad = True
    return h, t


def check(dtype, fn_h, fn_t, *shapes, seed=0, tol_scale=1.0):
    pairs = [pair(s, dtype, seed + i) for i, s in enumerate(shapes)]
    hs, ts = [p[0] for p in pairs], [p[1] for p in pairs]
    out_h, out_t = fn_h(*hs), fn_t(*ts)
    tol = DTYPES[dtype][2] * tol_scale
    np.testing.assert_allclose(out_h.numpy(), out_t.detach().numpy(), rtol=tol, atol=tol)
    if dtype != "f64":
        return
    weight = np.random.default_rng(99).uniform(0.5, 1.5, size=tuple(out_t.shape))
    (out_h * harp.tensor(weight)).sum().backward()
    (out_t * torch.tensor(weight)).sum().backward()
    for i, (h, t) in enumerate(zip(hs, ts)):
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-10,
                                   err_msg="gradient %d" % i)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_elementwise_and_broadcast(dtype, n):
    check(dtype, lambda a, b: (a * b + a.tanh()) / (b * b + 1.0),
          lambda a, b: (a * b + a.tanh()) / (b * b + 1.0), (3, n), (n,), seed=n)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["sum", "max", "prod"])
def test_row_and_column_reductions(dtype, n, kind):
    torch_kind = {"sum": "sum", "max": "amax", "prod": "prod"}[kind]
    for dim in (0, 1):
        check(dtype, lambda a: getattr(a, kind)(axis=[dim], keepdim=False),
              lambda a: getattr(a, torch_kind)(dim), (n, n + 2), seed=n + dim,
              tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_matmul(dtype, n):
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (n, 17), (17, n + 1), seed=n,
          tol_scale=10)
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (5, n), (n, 3), seed=n + 1,
          tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [10, 20, 28, 52, 57, 500])
def test_matmul_partial_vectors(dtype, n):
    # n columns whose last register tile is between one and two vectors
    # wide at some width (harp-vectorize splits those off the kernel).
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (9, 19), (19, n), seed=n,
          tol_scale=10)
    check(dtype, lambda a, b, c: (a @ b) @ c, lambda a, b, c: (a @ b) @ c,
          (3, 5, 7), (3, 7, n), (3, n, 4), seed=n + 1, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [257, 270])
def test_matmul_wide_with_tail_columns(dtype, n):
    # A right operand wider than an n block (K = 1031 leaves room for at
    # most ~250 columns in a 2 MiB L2) whose n is no multiple of any
    # register tile's width: harp-pack-contractions packs the whole panels
    # and computes the last columns apart (one column as dot products).
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (13, 1031), (1031, n), seed=n,
          tol_scale=30)
    check(dtype, lambda a, w: a @ w.transpose(0, 1), lambda a, w: a @ w.transpose(0, 1),
          (13, 1031), (n, 1031), seed=n + 1, tol_scale=30)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("m,k,n", [(64, 19, 61), (67, 37, 270), (130, 23, 97), (48, 17, 33)])
def test_matmul_misaligned_rows(dtype, m, k, n):
    # Rows of B no multiple of a vector long and at least 8 register tiles
    # of rows (48 with 6-row tiles, 64 with 8): harp-pack-contractions
    # packs B's whole panels wherever the target's k loop issues a load per
    # cycle or more (x86-64-v2/v3/v4), and reads it in place elsewhere.
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (m, k), (k, n), seed=n,
          tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("m,k,n", [(64, 19, 1024), (67, 23, 1040), (48, 5, 1031), (70, 3, 512)])
def test_matmul_page_apart_rows(dtype, m, k, n):
    # Rows of B a page (4 KiB) or more apart and at least 8 register tiles
    # of rows: B is packed even where its columns fit one n block (all
    # panels then one block, their loop inside the row tiles'); 1040 and
    # 1031 columns split off the last ones; 512 floats share pages and stay
    # in place, 512 doubles do not. Also B a slice of wider rows.
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (m, k), (k, n), seed=n,
          tol_scale=10)
    check(dtype, lambda a, b: a @ b[:, 2:n - 3], lambda a, b: a @ b[:, 2:n - 3],
          (m, k), (k, n), seed=n + 1, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("m,k,n", [(15, 37, 33), (16, 37, 33), (65, 9, 17), (70, 64, 100),
                                   (1, 31, 17), (130, 5, 1)])
def test_matmul_transposed_left(dtype, m, k, n):
    # A left operand read transposed (a weight gradient's x^T @ dY) is
    # copied with k innermost where consecutive k are a cache line or more
    # apart (16 floats, 8 doubles), else read in place; batched too.
    check(dtype, lambda a, b: a.transpose(0, 1) @ b, lambda a, b: a.transpose(0, 1) @ b,
          (k, m), (k, n), seed=m + n, tol_scale=10)
    check(dtype, lambda a, b: a.transpose(1, 2) @ b, lambda a, b: a.transpose(1, 2) @ b,
          (3, k, m), (3, k, n), seed=m + n + 1, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("m", [1, 7, 33])
def test_matrix_vector_products(dtype, m):
    # A single column, contiguous along k: rows of dot products along k.
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (m, 517), (517, 1), seed=m,
          tol_scale=10)
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (m, 517), (517,), seed=m + 1,
          tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("k,n", [(64, 1031), (517, 520), (97, 2053), (1, 1031)])
def test_vector_matrix_products(dtype, k, n):
    # A single row: x @ B streams B's rows (reduced outside the vector
    # dim), x @ W^T is rows of dot products along k, neither packed; as a
    # 1-d x and batched over a unit dim too.
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (1, k), (k, n), seed=n,
          tol_scale=10)
    check(dtype, lambda a, w: a @ w.transpose(0, 1), lambda a, w: a @ w.transpose(0, 1),
          (1, k), (n, k), seed=n + 1, tol_scale=10)
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (k,), (k, n), seed=n + 2,
          tol_scale=10)
    check(dtype, lambda a, b: a @ b, lambda a, b: a @ b, (3, 1, k), (3, k, n), seed=n + 3,
          tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("kind", ["sum", "max", "prod"])
@pytest.mark.parametrize("rows,cols", [(64, 1031), (300, 517), (65, 4099), (70, 33)])
def test_long_column_reductions(dtype, kind, rows, cols):
    # Reduced down at least 64 rows that span 8 vector tiles or more: the
    # rows are streamed, the result's slice read and written per row; 33
    # columns keep their accumulators in registers.
    torch_kind = {"sum": "sum", "max": "amax", "prod": "prod"}[kind]
    scale = 0.01 if kind == "prod" else 1.0
    check(dtype, lambda a: getattr(a * scale + 1.0 if kind == "prod" else a, kind)(axis=[0], keepdim=False),
          lambda a: getattr(a * scale + 1.0 if kind == "prod" else a, torch_kind)(0),
          (rows, cols), seed=rows + cols, tol_scale=100)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_matmul_of_split_heads(dtype, n):
    # Attention's heads: [B, L, H * D] viewed as [B, H, L, D]; the lowering
    # reads the merged dim as two (h, d), so these stay contractions.
    heads, width = 3, max(1, n // 3 + 1)

    def split(t):
        return t.reshape(2, n, heads, width).permute(0, 2, 1, 3)

    check(dtype, lambda x: split(x) @ split(x).transpose(-2, -1),
          lambda x: split(x) @ split(x).transpose(-2, -1), (2, n, heads * width),
          seed=n, tol_scale=10)
    check(dtype, lambda a, x: a @ split(x), lambda a, x: a @ split(x),
          (2, heads, n, n), (2, n, heads * width), seed=n + 1, tol_scale=10)
    # And back: [B, H, L, D] merged to [B, L, H * D] and projected.
    check(dtype, lambda o, w: o.permute(0, 2, 1, 3).reshape(2, n, heads * width) @ w,
          lambda o, w: o.permute(0, 2, 1, 3).reshape(2, n, heads * width) @ w,
          (2, heads, n, width), (heads * width, 5), seed=n + 2, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_views(dtype, n):
    # Transposes, shifted slices, strided slices, flips, reshapes.
    check(dtype, lambda a: a.transpose(0, 1) * 2.0, lambda a: a.transpose(0, 1) * 2.0,
          (n, n + 3), seed=n)
    check(dtype, lambda a: a[1:, ::2].flip([1]) + 1.0, lambda a: a[1:, ::2].flip([1]) + 1.0,
          (n + 1, n), seed=n + 1)
    check(dtype, lambda a: a.reshape([-1]).exp(), lambda a: a.reshape(-1).exp(),
          (2, n), seed=n + 2)
    # Merged dims of a permuted tensor (floordiv and mod in the view, which
    # the lowering turns into split loops), element-wise and reduced.
    check(dtype, lambda a: a.permute(1, 0, 2).reshape(3, 2 * n) * 3.0,
          lambda a: a.permute(1, 0, 2).reshape(3, 2 * n) * 3.0, (n, 3, 2), seed=n + 3)
    check(dtype, lambda a: a.permute(2, 0, 1).reshape(2, 3 * n).sum(1, True),
          lambda a: a.permute(2, 0, 1).reshape(2, 3 * n).sum(1, True), (n, 3, 2),
          seed=n + 4, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_softmax(dtype, n):
    check(dtype, lambda a: a.softmax(1), lambda a: torch.softmax(a, 1), (4, n), seed=n)
    check(dtype, lambda a: a.softmax(0), lambda a: torch.softmax(a, 0), (n, 3), seed=n + 1)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_concat_and_gather(dtype, n):
    check(dtype, lambda a, b: harp.concat([a, b], 1).sin(),
          lambda a, b: torch.cat([a, b], 1).sin(), (3, n), (3, 2), seed=n)
    index = np.random.default_rng(n).integers(0, n, size=(2, n))
    check(dtype, lambda a: harp.gather(a, harp.tensor(index), 1),
          lambda a: torch.gather(a, 1, torch.tensor(index)), (2, n), seed=n)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [1, 5, 7, 9, 13, 17])
def test_conv2d(dtype, n):
    check(dtype, lambda x, w: harp.conv(x, w, [1, 1], [1, 1], [1, 1]),
          lambda x, w: torch.nn.functional.conv2d(x, w, padding=1),
          (1, 3, n, n + 2), (5, 3, 3, 3), seed=n, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("pads,k,w", [((1, 2, 0, 1), 3, 13), ((2, 1, 1, 0), 3, 17),
                                      ((3, 1, 2, 2), 5, 9), ((1, 3, 1, 1), 4, 33),
                                      ((1, 1, 1, 1), 3, 14)])
@pytest.mark.parametrize("value", [0.0, 2.5])
def test_conv2d_of_padded_rows(dtype, pads, k, w, value):
    # An image padded on both sides of its rows (here by F.pad, with a
    # value) is flattened with rows W + max(left, right) wide: a row's right
    # padding is the next row's left padding.
    import torch.nn.functional as TF
    import harp.nn.functional as HF
    check(dtype, lambda x, f: HF.conv2d(HF.pad(x, pads, value=value), f),
          lambda x, f: TF.conv2d(TF.pad(x, pads, value=value), f),
          (2, 3, 11, w), (4, 3, k, k), seed=w + k, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("batch,c,f,n,k,pad", [(1, 24, 16, 14, 3, 1), (2, 8, 12, 17, 5, 2),
                                               (1, 6, 20, 12, 3, 0), (1, 16, 16, 7, 3, 1),
                                               (3, 5, 7, 23, 3, 1)])
def test_conv2d_window_planes(dtype, batch, c, f, n, k, pad):
    # Windows flattened onto one copy of the image per tap column (rows as
    # wide as the output's) where the grid's extra outputs cost more vector
    # FMAs than the copies cost stores, else onto a grid as wide as the
    # padded rows (7 x 7 outputs: both take the same vectors); which one
    # depends on the profile's lanes and FMA rate. Gradients in f64.
    check(dtype, lambda x, w: harp.conv(x, w, [1, 1], [pad, pad], [1, 1]),
          lambda x, w: torch.nn.functional.conv2d(x, w, padding=pad),
          (batch, c, n, n + 1), (f, c, k, k), seed=n + k + c, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("pads,n", [((1, 1, 1, 1), 14), ((2, 1, 0, 3), 13), ((0, 2, 1, 1), 17),
                                    ((3, 3, 2, 0), 20)])
@pytest.mark.parametrize("value", [0.0, -2.5])
def test_conv2d_window_planes_of_padded_image(dtype, pads, n, value):
    # Planes are copied from the image a pad pads, each plane's padding
    # rows and columns filled with the pad's value (24 -> 16 channels:
    # planes where the grid wastes a vector).
    import torch.nn.functional as TF
    import harp.nn.functional as HF
    check(dtype, lambda x, f: HF.conv2d(HF.pad(x, pads, value=value), f),
          lambda x, f: TF.conv2d(TF.pad(x, pads, value=value), f),
          (1, 24, n, n + 1), (16, 24, 3, 3), seed=n, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [1, 3, 5, 6])
def test_conv2d_filter_larger_than_image(dtype, n):
    # 20 -> 24 channels on n x n images: the filter is the largest input,
    # the kernel still gets register rows over the output channels.
    check(dtype, lambda x, w: harp.conv(x, w, [1, 1], [1, 1], [1, 1]),
          lambda x, w: torch.nn.functional.conv2d(x, w, padding=1),
          (1, 20, n, n), (24, 20, 3, 3), seed=n, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("stride,kernel,pad,n", [(2, 7, 3, 17), (2, 3, 1, 9), (3, 4, 1, 13),
                                                 (2, 1, 0, 8), (2, 5, 2, 33)])
def test_conv2d_strided(dtype, stride, kernel, pad, n):
    # Strided windows are de-interleaved by phase before vectorizing (the
    # filter padded to whole phases); the image widths leave remainders.
    check(dtype, lambda x, w: harp.conv(x, w, [stride, stride], [pad, pad], [1, 1]),
          lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=pad),
          (1, 3, n, n + 1), (6, 3, kernel, kernel), seed=n + kernel, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_strided_slices(dtype, n):
    # Slices with a step read their rows a stride apart: each vector tile
    # reads a strided slice (harp-tile-and-vectorize), from an offset and
    # along an outer dim too; the gradient writes through the same view.
    check(dtype, lambda a: (a[:, 1::2] * 2.0 + 1.0).tanh(),
          lambda a: (a[:, 1::2] * 2.0 + 1.0).tanh(), (3, 2 * n + 1), seed=n)
    check(dtype, lambda a: a[1::3, ::3] * a[1::3, 1::3],
          lambda a: a[1::3, ::3] * a[1::3, 1::3], (7, 3 * n + 2), seed=n + 1)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("hs,t", [(32, 5), (16, 7), (8, 3), (4, 9), (3, 5)])
def test_split_heads_gradient(dtype, hs, t):
    # nanoGPT's q, k, v split of one projection into heads: the gradient
    # of the projection concatenates the three through head views
    # (`c floordiv hs`, `c mod hs`); where hs is a multiple of the vector
    # length the kernel's last dim is split by hs and read with vector
    # loads (harp-tile-and-vectorize), elsewhere it gathers.
    heads = 4

    def fn(x):
        b = x.shape[0]
        q, k, v = x.split(heads * hs, dim=2)
        q, k, v = (z.view(b, t, heads, hs).transpose(1, 2) for z in (q, k, v))
        return q * 2.0 + k * v

    check(dtype, fn, fn, (3, t, 3 * heads * hs), seed=hs + t)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("stride,n,c,f", [(2, 9, 5, 7), (2, 17, 16, 33), (3, 13, 3, 17),
                                          (2, 1, 4, 9), (2, 32, 16, 32)])
def test_conv2d_strided_1x1(dtype, stride, n, c, f):
    # A 1x1 convolution with a stride (a ResNet shortcut) reads its image
    # with no window: harp-pack-contractions gives it a dense copy of the
    # pixels read, so the contraction and its weight gradient take the
    # register-tiled path; batch 3 and odd sizes leave remainders.
    check(dtype, lambda x, w: harp.conv(x, w, [stride, stride], [0, 0], [1, 1]),
          lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride),
          (3, c, n, n + 1), (f, c, 1, 1), seed=n + c, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n,c,f,k,pad", [(1, 3, 5, 1, 0), (9, 5, 7, 3, 1), (17, 4, 17, 5, 2),
                                         (33, 16, 6, 3, 0)])
def test_conv1d_over_transposed_view(dtype, n, c, f, k, pad):
    # A text model's convolution over a transposed embedding ([batch,
    # length, channels] -> [batch, channels, length]): harp-pack-contractions
    # copies the operand with its window innermost; the weight gradient
    # (a correlation over the transposed view) becomes a matmul.
    import torch.nn.functional as TF
    import harp.nn.functional as HF
    check(dtype, lambda e, w: HF.conv1d(e.transpose(1, 2), w, padding=pad),
          lambda e, w: TF.conv1d(e.transpose(1, 2), w, padding=pad),
          (2, n + k, c), (f, c, k), seed=n + c, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("stride,kernel,pad,n,c,f", [(1, 3, 1, 5, 3, 4), (1, 3, 0, 17, 8, 9),
                                                     (2, 3, 1, 13, 5, 6), (2, 1, 0, 9, 7, 5),
                                                     (1, 5, 2, 31, 2, 17)])
def test_conv2d_weight_gradient(dtype, stride, kernel, pad, n, c, f):
    # Convolutions over a channels-last image (a permuted view), whose
    # weight gradient is a correlation: a column tensor of the image's
    # windows and a matmul (harp-pack-contractions), strided or not.
    import torch.nn.functional as TF
    import harp.nn.functional as HF
    check(dtype, lambda x, w: HF.conv2d(x.permute(0, 3, 1, 2), w, stride=stride, padding=pad),
          lambda x, w: TF.conv2d(x.permute(0, 3, 1, 2), w, stride=stride, padding=pad),
          (2, n, n + 2, c), (f, c, kernel, kernel), seed=n + kernel, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n,c,f,h,w,k,pad", [
    (1, 1, 1, 3, 16, 3, 1), (2, 3, 5, 6, 16, 3, 1), (3, 5, 7, 5, 32, 3, 1),
    (2, 17, 9, 4, 34, 3, 0), (2, 8, 16, 5, 64, 3, 1), (1, 3, 16, 9, 32, 3, 1),
    # 5x5 padded by 2: the weight gradient's window is 64 planes wide
    # (its planes once copied one by one: 150 s to bufferize).
    (2, 8, 16, 5, 64, 5, 2)])
def test_conv2d_weight_gradient_in_place(dtype, n, c, f, h, w, k, pad):
    # Output rows of whole vectors (16, 32, 64 wide): the weight gradient is
    # read in place by register tiles of dot products (correlationTile),
    # channel and filter counts that the tiles do not divide.
    conv_gradients_against_torch(dtype, (n, c, h, w), (f, c, k, k), seed=n + c + w,
                                 padding=pad)


def conv_gradients_against_torch(dtype, x_shape, w_shape, seed, **conv):
    # Forward and both gradients of a convolution, f32 as well as f64: the
    # gradients' kernels are vectorized by lane counts that depend on the
    # element type.
    import torch.nn.functional as TF
    import harp.nn.functional as HF
    np_dtype, h_dtype, tol = DTYPES[dtype]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, size=x_shape).astype(np_dtype)
    w = rng.uniform(-1.5, 1.5, size=w_shape).astype(np_dtype)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ty = TF.conv2d(tx, tw, **conv)
    g = rng.uniform(0.5, 1.5, size=tuple(ty.shape)).astype(np_dtype)
    (ty * torch.tensor(g)).sum().backward()
    hx, hw = harp.tensor(x, h_dtype), harp.tensor(w, h_dtype)
    hx.requires_grad = hw.requires_grad = True
    hy = HF.conv2d(hx, hw, **conv)
    (hy * harp.tensor(g, h_dtype)).sum().backward()
    for name, h, t in [("output", hy, ty), ("input gradient", hx.grad, tx.grad),
                       ("weight gradient", hw.grad, tw.grad)]:
        expected = t.detach().numpy()
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(h.numpy(), expected, rtol=tol * 10, atol=tol * 10 * scale,
                                   err_msg=name)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n,c,h,w,k,stride,pad,mult", [
    (1, 1, 1, 1, 1, 1, 0, 1), (2, 3, 5, 7, 3, 1, 1, 1), (3, 5, 17, 15, 3, 1, 1, 1),
    (2, 4, 16, 16, 3, 1, 1, 1), (2, 7, 33, 31, 3, 2, 1, 1), (1, 2, 9, 65, 5, 1, 2, 2),
    (2, 3, 13, 37, 3, 1, 0, 1), (2, 6, 63, 9, 3, 2, 1, 1)])
def test_depthwise_conv_gradients(dtype, n, c, h, w, k, stride, pad, mult):
    # A depthwise convolution's weight gradient is a correlation summed along
    # the image's rows with vectors of partial sums carried over the batch
    # and the rows (harp-tile-and-vectorize), not flattened onto planes.
    conv_gradients_against_torch(dtype, (n, c, h, w), (c * mult, 1, k, k), seed=n + c + h + w,
                                 stride=stride, padding=pad, groups=c)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n,c,f,h,w,stride", [(1, 1, 1, 1, 1, 1), (2, 3, 5, 7, 9, 1),
                                              (3, 16, 32, 8, 8, 1), (2, 17, 9, 15, 17, 1),
                                              (2, 5, 33, 13, 13, 2), (1, 64, 7, 3, 5, 1)])
def test_pointwise_conv_gradients(dtype, n, c, f, h, w, stride):
    # A 1x1 convolution's taps are loops of one iteration, folded away
    # before harp-vectorize: it and its gradients are contractions.
    conv_gradients_against_torch(dtype, (n, c, h, w), (f, c, 1, 1), seed=n + c + f + h,
                                 stride=stride)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n,c,h", [(1, 3, 5), (4, 5, 17), (3, 16, 33), (2, 7, 65)])
def test_conv_batch_norm_relu(dtype, n, c, h):
    # conv -> batch norm (batch statistics) -> ReLU: the per-channel
    # statistics are read by every (n, h) row of a channel and keep their
    # kernels, and the convolution keeps its own (harp-fuse-epilogues).
    import torch.nn.functional as TF
    import harp.nn.functional as HF

    def block(F, x, w, g, b):
        y = F.conv2d(x, w, padding=1)
        return F.relu(F.batch_norm(y, None, None, g, b, training=True, eps=1e-5))
    check(dtype, lambda x, w, g, b: block(HF, x, w, g, b),
          lambda x, w, g, b: block(TF, x, w, g, b),
          (n, 3, h, h + 1), (c, 3, 3, 3), (c,), (c,), seed=n + c + h, tol_scale=50)


@pytest.mark.parametrize("stride,kernel,pad,n", [(2, 7, 3, 17), (2, 3, 1, 9), (3, 4, 1, 13),
                                                 (3, 5, 0, 16), (2, 5, 2, 33)])
def test_conv2d_strided_infinite_pixel(stride, kernel, pad, n):
    # The filter padded to whole phases adds taps of zero weight; they are
    # not computed, so an infinite pixel reaches exactly the outputs whose
    # windows hold it (inf, weights being positive), as in torch, and no
    # other output reads it through a padded tap (inf * 0 = NaN).
    rng = np.random.default_rng(kernel)
    x = rng.uniform(-1.5, 1.5, size=(1, 3, n, n + 1)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, size=(4, 3, kernel, kernel)).astype(np.float32)
    for col in range(n + 1):
        xi = x.copy()
        xi[0, 1, n // 2, col] = np.inf
        expected = torch.nn.functional.conv2d(torch.tensor(xi), torch.tensor(w),
                                              stride=stride, padding=pad).numpy()
        got = harp.conv(harp.tensor(xi), harp.tensor(w), [stride, stride], [pad, pad],
                        [1, 1]).numpy()
        assert np.isnan(got).sum() == 0, "column %d: NaN outputs" % col
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4,
                                   err_msg="infinite pixel in column %d" % col)


# Long element-wise chains (harp-split-chains): strips of up to L1 / 2 bytes
# of operands along the contiguous dim (1024 f32 elements for a 32 KiB L1,
# rows batched where shorter), each cut in two kernels. Sizes below, at and
# above a strip, remainders of a strip that are split themselves (5000) or
# too short to split (4100), rows shorter than a strip, and a broadcast.
CHAIN_SHAPES = [(1,), (31,), (1023,), (1025,), (4100,), (5000,), (3, 1500),
                (64, 100), (5, 7, 129)]


def gelu_tanh_chain(x):
    return 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())


def softplus_chain(x):
    return x.exp().log1p() * x


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", CHAIN_SHAPES, ids=str)
@pytest.mark.parametrize("chain", ["gelu_tanh", "softplus", "bias_mish"])
def test_long_elementwise_chains(dtype, shape, chain):
    if chain == "gelu_tanh":
        check(dtype, gelu_tanh_chain, gelu_tanh_chain, shape, seed=len(shape))
    elif chain == "softplus":
        check(dtype, softplus_chain, softplus_chain, shape, seed=len(shape))
    else:
        mish = lambda x, b: (x + b) * (x + b).exp().log1p().tanh()
        check(dtype, mish, mish, shape, shape[-1:], seed=len(shape))


@pytest.mark.parametrize("chain", [gelu_tanh_chain, softplus_chain])
def test_split_chains_compute_what_one_kernel_computes(chain):
    # The split kernels compute the body's operations as they are: a long
    # tensor (split, in strips) and its first 31 elements on their own
    # (fewer than eight vectors of every width: not split) agree bitwise.
    x = np.random.default_rng(5).uniform(-4, 4, size=5000).astype(np.float32)
    whole = chain(harp.tensor(x)).numpy()
    head = chain(harp.tensor(x[:31])).numpy()
    np.testing.assert_array_equal(whole[:31], head)



POW_SPECIALS = [-0.0, 0.0, -np.inf, np.inf, np.nan, 1.0, -1.0, -2.5, 3.0, 1e-40,
                -1e-40, 1e30, -1e30, 1e-30, 7.25, 1e-12, 3e12]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 4, -1, -2, -3, -4, 0.5, -0.5, 1.5,
                                      -1.5, 2.5, 3.5, -3.5, 4.5, 1.25])
@pytest.mark.parametrize("n", [1, 7, 33, 1025])
def test_pow_with_a_constant_exponent_keeps_pow_values(dtype, exponent, n):
    """x ** c: an integer or half-integer exponent of magnitude at most 4
    becomes multiplications, a square root and a division in harp's bodies;
    they keep C pow's values at signed zeros, infinities and NaN (NumPy's),
    0, 1, 2 and -1 are bitwise pow's, the others within three ulps of a
    normal result. 4.5 and 1.25 stay pow."""
    rng = np.random.default_rng(n)
    x = rng.uniform(-4, 4, n).astype(dtype)
    k = min(n, len(POW_SPECIALS))
    x[:k] = np.array(POW_SPECIALS, dtype)[:k]
    got = (harp.tensor(x) ** exponent).numpy()
    assert got.dtype == dtype
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), exponent).astype(dtype)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    infinite = np.isinf(want)
    assert np.array_equal(got[infinite], want[infinite])
    # Signed zeros too (pow(-0, 0.5) is +0, pow(-0, 3) is -0).
    assert np.array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
    if exponent in (0, 1, 2, -1):
        with np.errstate(all="ignore"):
            exact = {0: np.ones_like(x), 1: x, 2: x * x, -1: dtype(1) / x}[exponent]
        np.testing.assert_array_equal(got, exact)
        return
    tiny = np.finfo(dtype).tiny
    normal = np.isfinite(want) & (np.abs(want) >= tiny)
    ulp = np.spacing(np.abs(want[normal]))
    assert np.all(np.abs(got[normal] - want[normal]) <= 3 * ulp)
    # Results below the normal range may flush (x^4 overflowing before its
    # reciprocal): never by more than the smallest normal number.
    small = np.isfinite(want) & ~normal
    assert np.all(np.abs(got[small] - want[small]) <= tiny)


@pytest.mark.parametrize("exponent", [2, 3, 4, -1, -2, -3, 0.5, -0.5, 1.5, -2.5, 3.5])
def test_gradient_of_pow_with_a_constant_exponent(exponent):
    x = np.random.default_rng(3).uniform(0.2, 3.0, (5, 13))
    t = harp.tensor(x, requires_grad=True)
    (t ** exponent).sum().backward()
    r = torch.tensor(x, requires_grad=True)
    (r ** exponent).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("n", [1, 7, 33, 1025])
def test_integer_power_is_pytorchs(dtype, n):
    """An integer tensor to an integer power stays an integer power, as in
    PyTorch: products that wrap, and for a negative exponent 1 at 1, +-1 at
    -1, 0 elsewhere (by binary exponentiation over the exponent's bits)."""
    rng = np.random.default_rng(n)
    info = np.iinfo(dtype)
    base = rng.integers(max(info.min, -7), min(info.max, 7), n, endpoint=True).astype(dtype)
    low = -3 if info.min < 0 else 0
    power = rng.integers(low, 45, n).astype(dtype)
    base[: min(n, 4)] = np.array([0, 1, info.max, info.min], dtype)[: min(n, 4)]
    got = (harp.tensor(base) ** harp.tensor(power)).numpy()
    want = (torch.from_numpy(base) ** torch.from_numpy(power)).numpy()
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got, want)
    for k in (0, 1, 2, 3, 4, 5, 13, 40):  # constants up to 4, arguments beyond
        np.testing.assert_array_equal((harp.tensor(base) ** k).numpy(),
                                      (torch.from_numpy(base) ** k).numpy())


def test_integer_power_edges():
    x = np.arange(-3, 4, dtype=np.int64)
    with pytest.raises(ValueError, match=r"pow: an integer tensor \(i64\) to a negative "
                                         r"integer power \(-2\) is not allowed"):
        harp.tensor(x) ** -2
    with pytest.raises(ValueError, match="the integer exponent 1180591620717411303424 "
                                         "does not fit int64"):
        harp.tensor(x) ** 2 ** 70
    b = harp.tensor(np.array([True, False])) ** 2
    assert b.dtype == harp.int64 and b.numpy().tolist() == [1, 0]
    f = harp.tensor(x.astype(np.int32)) ** 2.5  # a float exponent: a float power
    assert f.dtype == harp.float32
    np.testing.assert_allclose(f.numpy(), np.abs(x) ** 2.5 * np.where(x < 0, np.nan, 1))
    r = 2 ** harp.tensor(np.arange(5))
    assert r.dtype == harp.int64 and r.numpy().tolist() == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("t,b,o,c", [(13, 5, 17, 33), (9, 3, 40, 70), (33, 4, 24, 16),
                                     (64, 2, 16, 1)])
def test_weight_gradient_over_transposed_loops(dtype, t, b, o, c):
    # A weight gradient summed over two dims that its operands hold in
    # opposite orders (attention's per-head dW, dY[t, b, o] against
    # x[b, t, c]): the left operand is copied with its k dims in the right
    # one's order and the two become one k loop.
    check(dtype, lambda d, x: harp.einsum("tbo,btc->oc", d, x),
          lambda d, x: torch.einsum("tbo,btc->oc", d, x),
          (t, b, o), (b, t, c), seed=t + o, tol_scale=10)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_embedding_and_index_select_gradients(dtype, n):
    # Gradients that scatter whole rows (harp.scatter_add with an index
    # broadcast along the row: one index read per row, the row added as
    # vectors), tokens repeated and the table rows n wide.
    np_dtype, h_dtype, tol = DTYPES[dtype]
    rng = np.random.default_rng(n)
    tokens = rng.integers(0, 11, size=(3, 7))
    tokens[0, :3] = 4
    picks = np.array([2, 0, 2, 1, 2])

    def grads(lib, tensor):
        table = uniform((11, n), np_dtype, n)
        cube = uniform((3, 4, n), np_dtype, n + 1)
        t = tensor(table)
        c = tensor(cube)
        t.requires_grad = True
        c.requires_grad = True
        out = lib.nn.functional.embedding(tensor(tokens), t)
        sel = lib.index_select(c, 0, tensor(picks))
        w1 = tensor(np.linspace(0.5, 1.5, out.numel()).reshape(out.shape).astype(np_dtype))
        w2 = tensor(np.linspace(1.5, 0.5, sel.numel()).reshape(sel.shape).astype(np_dtype))
        ((out * w1).sum() + (sel * w2).sum()).backward()
        return t.grad.numpy(), c.grad.numpy()

    h = grads(harp, lambda a: harp.tensor(a))
    t = grads(torch, lambda a: torch.tensor(a))
    for got, want in zip(h, t):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", SIZES)
def test_sums_over_outer_and_inner_dims(dtype, n):
    # The middle dim kept, the outer and innermost summed (a bias gradient
    # over batch and time): rows of n, n + 76 and 3n + 1 are vector tiles
    # and a peeled remainder.
    for shape in [(5, 3, n), (n, 4, n + 76), (2, n, 3 * n + 1)]:
        check(dtype, lambda a: a.sum(axis=[0, 2], keepdim=False),
              lambda a: a.sum(dim=(0, 2)), shape, seed=n, tol_scale=10)
