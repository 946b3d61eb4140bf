"""F.interpolate (every mode, size or scale_factor, align_corners,
recompute_scale_factor), nn.Upsample and F.pad's reflect / replicate /
circular modes against PyTorch: values and the gradients of sum(out^2)
(f64) on odd sizes, f32 values, and the errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import harp
import harp.nn.functional as F

rng = np.random.default_rng(9)


def check(harp_fn, torch_fn, x, rtol=1e-10, atol=1e-12):
    h = harp.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    out, expected = harp_fn(h), torch_fn(t)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol,
                               atol=atol)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)


CASES = [
    ((2, 3, 7), dict(scale_factor=2)),
    ((2, 3, 7), dict(size=5, mode="linear")),
    ((1, 2, 7), dict(scale_factor=1.7, mode="linear", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=2)),
    ((2, 3, 5, 7), dict(size=(4, 9))),
    ((2, 3, 5, 7), dict(scale_factor=(1.5, 0.6), mode="nearest-exact")),
    ((2, 3, 5, 7), dict(scale_factor=2, mode="bilinear")),
    ((2, 3, 5, 7), dict(scale_factor=1.7, mode="bilinear")),
    ((2, 3, 5, 7), dict(size=(8, 3), mode="bilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=0.6, mode="bilinear",
                        recompute_scale_factor=True)),
    ((2, 3, 5, 7), dict(scale_factor=2.3, mode="bicubic")),
    ((2, 3, 5, 7), dict(size=(6, 11), mode="bicubic", align_corners=True)),
    ((2, 3, 6, 9), dict(size=(3, 4), mode="area")),
    ((1, 2, 3, 4, 5), dict(scale_factor=2, mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(size=(2, 7, 3))),
]


@pytest.mark.parametrize("shape,kwargs", CASES,
                         ids=["%s-%s" % (s, sorted(k.items())) for s, k in CASES])
def test_interpolate(shape, kwargs):
    x = rng.normal(size=shape)
    check(lambda h: F.interpolate(h, **kwargs),
          lambda t: TF.interpolate(t, **kwargs), x)


def test_interpolate_f32_and_upsample_modules():
    x = rng.normal(size=(2, 3, 5, 7)).astype(np.float32)
    for harp_module, torch_module in [
            (harp.nn.Upsample(scale_factor=2, mode="bilinear"),
             torch.nn.Upsample(scale_factor=2, mode="bilinear")),
            (harp.nn.Upsample(size=(3, 8)), torch.nn.Upsample(size=(3, 8))),
            (harp.nn.UpsamplingNearest2d(scale_factor=3),
             torch.nn.UpsamplingNearest2d(scale_factor=3)),
            (harp.nn.UpsamplingBilinear2d(size=(9, 4)),
             torch.nn.UpsamplingBilinear2d(size=(9, 4)))]:
        got = harp_module(harp.tensor(x))
        assert got.dtype == harp.float32
        np.testing.assert_allclose(got.numpy(), torch_module(torch.tensor(x)).numpy(),
                                   rtol=1e-6, atol=1e-6)
    assert "scale_factor=2" in repr(harp.nn.Upsample(scale_factor=2))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(2, 1, 0, 0), (2, 1, 1, 3), (0, 0, 3, 0),
                                 (-2, 1, 0, 0), (3, -4, -1, 2), (-1, -1, -2, 0)])
def test_pad_modes(mode, pad):
    x = rng.normal(size=(2, 3, 5, 7))
    check(lambda h: F.pad(h, pad, mode=mode), lambda t: TF.pad(t, pad, mode=mode), x)


def test_pad_and_interpolate_errors():
    x = harp.zeros(1, 2, 4, 5)
    with pytest.raises(ValueError, match="reflect padding of dim 3 \\(size 5\\) by "
                                         "\\(5, 0\\): the amounts must be at most 4"):
        F.pad(x, (5, 0), mode="reflect")
    with pytest.raises(ValueError, match="circular padding of dim 3 \\(size 5\\) by "
                                         "\\(-3, 3\\): the amounts must be at most 2"):
        F.pad(x, (-3, 3), mode="circular")
    with pytest.raises(ValueError, match="negative ones \\(crops\\) must leave an element"):
        F.pad(x, (-3, -2), mode="replicate")
    with pytest.raises(ValueError, match="mode 'edge' is not one of"):
        F.pad(x, (1, 1), mode="edge")
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="mode 'bilinear' needs 2 spatial dims"):
        F.interpolate(harp.zeros(1, 2, 4), scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners only goes with"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="size \\[2, 3, 4\\] for 2 spatial dims"):
        F.interpolate(x, size=[2, 3, 4])
    with pytest.raises(ValueError, match="has an empty dim"):
        F.interpolate(x, scale_factor=0.1)
