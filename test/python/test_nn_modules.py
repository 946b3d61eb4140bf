"""harp.nn modules against torch.nn (1.13): every layer gets the torch
layer's state_dict, runs the same input and must give torch's output and
the gradients of a sum-of-squares loss (parameters and input); state_dict
names, load/save, train/eval, default initialisation, containers, errors
and a 20-step SGD training loop against torch's."""

import copy
import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import harp
import harp.nn as nn

RTOL, ATOL = 1e-4, 1e-5


def rand(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def copy_state(tmod, hmod):
    """Loads the torch module's state_dict into the harp module."""
    return hmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})


def pair(name, *args, **kwargs):
    """The torch and the harp module `name` built with the same arguments,
    the harp one holding the torch one's state."""
    torch.manual_seed(0)
    tmod = getattr(torch.nn, name)(*args, **kwargs)
    hmod = getattr(nn, name)(*args, **kwargs)
    assert list(hmod.state_dict()) == list(tmod.state_dict())
    copy_state(tmod, hmod)
    return tmod, hmod


def close(actual, expected, rtol=RTOL, atol=ATOL, what=""):
    actual = actual.numpy() if isinstance(actual, harp.Tensor) else np.asarray(actual)
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def check_module(tmod, hmod, x, input_grad=True, rtol=RTOL, atol=ATOL):
    """Same output as torch on `x`, and the same gradients of the
    sum-of-squares loss sum((output - r)^2), r fixed random values (r keeps
    the loss from being constant, as sum(output^2) is after a norm layer),
    for every parameter (and the input when input_grad)."""
    tx = torch.tensor(x, requires_grad=input_grad)
    hx = harp.tensor(x, requires_grad=input_grad)
    tout, hout = tmod(tx), hmod(hx)
    close(hout, tout, rtol, atol, "output")
    r = np.random.default_rng(123).standard_normal(tuple(tout.shape)).astype(x.dtype)
    ((tout - torch.tensor(r)) ** 2).sum().backward()
    (hout - harp.tensor(r)).square().sum().backward()
    if input_grad:
        close(hx.grad, tx.grad, rtol, atol, "input gradient")
    hparams = dict(hmod.named_parameters())
    tparams = dict(tmod.named_parameters())
    assert sorted(hparams) == sorted(tparams)
    for name, tp in tparams.items():
        close(hparams[name].grad, tp.grad, rtol, atol, "gradient of " + name)
    return hout


#===------------------------------------------------------------------------===#
# Layers against torch: outputs and gradients
#===------------------------------------------------------------------------===#

# (id, module name, args, kwargs, input shape)
LAYERS = [
    ("linear", "Linear", (5, 4), {}, (3, 5)),
    ("linear-nobias", "Linear", (5, 4), dict(bias=False), (3, 5)),
    ("linear-3d", "Linear", (7, 3), {}, (2, 3, 7)),
    ("conv1d", "Conv1d", (5, 4, 3), {}, (3, 5, 7)),
    ("conv1d-options", "Conv1d", (4, 6, 3), dict(stride=2, padding=2, dilation=2, groups=2),
     (3, 4, 9)),
    ("conv1d-same", "Conv1d", (5, 3, 4), dict(padding="same"), (3, 5, 7)),
    ("conv2d", "Conv2d", (5, 4, 3), {}, (3, 5, 7, 7)),
    ("conv2d-options", "Conv2d", (5, 4, (3, 2)), dict(stride=(2, 1), padding=(1, 2),
                                                      bias=False), (3, 5, 7, 6)),
    ("conv2d-groups", "Conv2d", (6, 9, 3), dict(groups=3, padding=1), (2, 6, 5, 7)),
    ("conv2d-depthwise", "Conv2d", (5, 5, 3), dict(groups=5), (3, 5, 7, 7)),
    ("conv2d-same", "Conv2d", (5, 4, 3), dict(padding="same", dilation=2), (3, 5, 7, 7)),
    ("conv2d-valid", "Conv2d", (5, 4, 3), dict(padding="valid"), (3, 5, 7, 7)),
    ("conv2d-unbatched", "Conv2d", (5, 4, 3), {}, (5, 7, 7)),
    ("conv3d", "Conv3d", (3, 4, 2), dict(padding=1), (2, 3, 5, 4, 5)),
    ("conv-transpose1d", "ConvTranspose1d", (5, 4, 3), dict(stride=2, padding=1,
                                                           output_padding=1), (3, 5, 7)),
    ("conv-transpose2d", "ConvTranspose2d", (5, 4, 3), {}, (3, 5, 7, 7)),
    ("conv-transpose2d-options", "ConvTranspose2d", (6, 4, (3, 2)),
     dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2, dilation=1),
     (2, 6, 5, 4)),
    ("conv-transpose2d-dilation", "ConvTranspose2d", (3, 2, 3), dict(dilation=2, bias=False),
     (2, 3, 5, 5)),
    ("conv-transpose3d", "ConvTranspose3d", (3, 2, 2), dict(stride=2), (2, 3, 3, 4, 3)),
    ("max-pool1d", "MaxPool1d", (3,), dict(stride=2, padding=1), (3, 5, 7)),
    ("max-pool2d", "MaxPool2d", (2,), {}, (3, 5, 7, 7)),
    ("max-pool2d-options", "MaxPool2d", ((3, 2),), dict(stride=2, padding=1, dilation=(1, 2),
                                                        ceil_mode=True), (3, 5, 7, 8)),
    ("max-pool2d-unbatched", "MaxPool2d", (3,), dict(stride=2), (5, 7, 7)),
    ("max-pool3d", "MaxPool3d", (2,), {}, (2, 3, 5, 4, 5)),
    ("avg-pool1d", "AvgPool1d", (3,), dict(stride=2, padding=1), (3, 5, 7)),
    ("avg-pool1d-no-pad", "AvgPool1d", (3,), dict(stride=2, padding=1, ceil_mode=True,
                                                  count_include_pad=False), (3, 5, 8)),
    ("avg-pool2d", "AvgPool2d", (2,), {}, (3, 5, 7, 7)),
    ("avg-pool2d-options", "AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True,
                                                   count_include_pad=False), (3, 5, 7, 8)),
    ("avg-pool2d-divisor", "AvgPool2d", ((3, 2),), dict(divisor_override=4), (3, 5, 7, 7)),
    ("avg-pool3d", "AvgPool3d", (2,), dict(stride=1), (2, 3, 4, 4, 5)),
    ("adaptive-avg-pool1d", "AdaptiveAvgPool1d", (3,), {}, (3, 5, 7)),
    ("adaptive-avg-pool2d", "AdaptiveAvgPool2d", ((3, 4),), {}, (3, 5, 7, 7)),
    ("adaptive-avg-pool2d-none", "AdaptiveAvgPool2d", ((None, 2),), {}, (3, 5, 7, 7)),
    ("adaptive-avg-pool2d-global", "AdaptiveAvgPool2d", (1,), {}, (3, 5, 7, 6)),
    ("adaptive-avg-pool3d", "AdaptiveAvgPool3d", (2,), {}, (2, 3, 5, 4, 5)),
    ("adaptive-max-pool1d", "AdaptiveMaxPool1d", (3,), {}, (3, 5, 7)),
    ("adaptive-max-pool2d", "AdaptiveMaxPool2d", ((3, 2),), {}, (3, 5, 7, 7)),
    ("adaptive-max-pool3d", "AdaptiveMaxPool3d", (2,), {}, (2, 3, 5, 4, 5)),
    ("batch-norm1d", "BatchNorm1d", (5,), {}, (3, 5)),
    ("batch-norm1d-3d", "BatchNorm1d", (5,), {}, (3, 5, 7)),
    ("batch-norm2d", "BatchNorm2d", (5,), dict(momentum=0.3, eps=1e-3), (3, 5, 7, 7)),
    ("batch-norm2d-no-affine", "BatchNorm2d", (5,), dict(affine=False), (3, 5, 7, 7)),
    ("batch-norm2d-no-stats", "BatchNorm2d", (5,), dict(track_running_stats=False),
     (3, 5, 7, 7)),
    ("batch-norm3d", "BatchNorm3d", (3,), {}, (2, 3, 4, 3, 5)),
    ("layer-norm", "LayerNorm", (7,), {}, (3, 5, 7)),
    ("layer-norm-2d", "LayerNorm", ([5, 7],), dict(eps=1e-3), (3, 5, 7)),
    ("layer-norm-no-affine", "LayerNorm", (7,), dict(elementwise_affine=False), (3, 5, 7)),
    ("group-norm", "GroupNorm", (3, 6), {}, (3, 6, 7)),
    ("group-norm-2d", "GroupNorm", (2, 6), dict(eps=1e-3), (3, 6, 5, 7)),
    ("group-norm-no-affine", "GroupNorm", (6, 6), dict(affine=False), (3, 6, 5)),
    ("identity", "Identity", (54, "ignored"), {}, (3, 5, 7)),
    ("flatten", "Flatten", (), {}, (3, 5, 7, 2)),
    ("flatten-dims", "Flatten", (0, 1), {}, (3, 5, 7)),
    ("relu", "ReLU", (), {}, (3, 5, 7)),
    ("relu6", "ReLU6", (), {}, (3, 5, 7)),
    ("gelu", "GELU", (), {}, (3, 5, 7)),
    ("gelu-tanh", "GELU", (), dict(approximate="tanh"), (3, 5, 7)),
    ("silu", "SiLU", (), {}, (3, 5, 7)),
    ("elu", "ELU", (0.7,), {}, (3, 5, 7)),
    ("leaky-relu", "LeakyReLU", (0.2,), {}, (3, 5, 7)),
    ("softplus", "Softplus", (2.0, 1.5), {}, (3, 5, 7)),
    ("hardtanh", "Hardtanh", (-0.5, 0.8), {}, (3, 5, 7)),
    ("tanh", "Tanh", (), {}, (3, 5, 7)),
    ("sigmoid", "Sigmoid", (), {}, (3, 5, 7)),
    ("softmax", "Softmax", (1,), {}, (3, 5, 7)),
    ("softmax-last", "Softmax", (-1,), {}, (3, 5, 7)),
    ("log-softmax", "LogSoftmax", (1,), {}, (3, 5, 7)),
    ("dropout-p0", "Dropout", (0.0,), {}, (3, 5, 7)),
]


@pytest.mark.parametrize("case", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(case):
    _, name, args, kwargs, shape = case
    tmod, hmod = pair(name, *args, **kwargs)
    check_module(tmod, hmod, rand(*shape, seed=1))
    # Running statistics move as torch's (BatchNorm in training mode).
    for key, value in tmod.state_dict().items():
        close(hmod.state_dict()[key], value, what=key)


@pytest.mark.parametrize("case", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_repr_matches_torch(case):
    _, name, args, kwargs, _ = case
    tmod, hmod = pair(name, *args, **kwargs)
    assert repr(hmod) == repr(tmod)


def test_layers_in_float64():
    torch.manual_seed(0)
    tmod = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                               torch.nn.GELU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 5 * 5, 2)).double()
    hmod = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.GELU(), nn.Flatten(),
                         nn.Linear(4 * 5 * 5, 2)).double()
    assert all(p.dtype == harp.float64 for p in hmod.parameters())
    assert hmod[1].num_batches_tracked.dtype == harp.int64
    copy_state(tmod, hmod)
    x = np.random.default_rng(2).standard_normal((3, 3, 7, 7))
    check_module(tmod, hmod, x, rtol=1e-10, atol=1e-10)
    hmod.float()
    assert all(p.dtype == harp.float32 for p in hmod.parameters())


def test_conv_transpose_output_size():
    tmod, hmod = pair("ConvTranspose2d", 5, 4, 3, stride=2, padding=1)
    x = rand(3, 5, 7, 7)
    tout = tmod(torch.tensor(x), output_size=[14, 14])
    hout = hmod(harp.tensor(x), output_size=[3, 4, 14, 14])
    close(hout, tout)
    with pytest.raises(ValueError, match="valid sizes range from 13 to 14"):
        hmod(harp.tensor(x), output_size=[15, 15])


def test_embedding_matches_torch():
    tmod, hmod = pair("Embedding", 11, 5, padding_idx=2)
    idx = np.array([[1, 2, 3, 10], [2, 2, 0, 7], [5, 1, 1, 9]], np.int64)
    tout, hout = tmod(torch.tensor(idx)), hmod(harp.tensor(idx))
    close(hout, tout)
    (tout ** 3).sum().backward()
    (hout * hout * hout).sum().backward()
    close(hmod.weight.grad, tmod.weight.grad)
    assert not hmod.weight.grad.numpy()[2].any()  # no gradient for the padding row
    assert repr(hmod) == repr(tmod) == "Embedding(11, 5, padding_idx=2)"


@pytest.mark.parametrize("kwargs", [dict(max_norm=1.0), dict(max_norm=0.5, norm_type=1.0),
                                    dict(scale_grad_by_freq=True),
                                    dict(max_norm=1.2, scale_grad_by_freq=True, padding_idx=0),
                                    dict(sparse=True)], ids=str)
def test_embedding_max_norm_and_scale_grad_by_freq(kwargs):
    # max_norm renormalizes the rows picked in place (the weight itself
    # changes, as torch's); scale_grad_by_freq divides each row's gradient
    # by how often the batch picks it.
    tmod, hmod = pair("Embedding", 6, 3, **kwargs)
    idx = np.array([[1, 2, 2], [4, 1, 0]], np.int64)
    tout, hout = tmod(torch.tensor(idx)), hmod(harp.tensor(idx))
    close(hout, tout)
    close(hmod.weight.detach(), tmod.weight.detach())
    (tout ** 3).sum().backward()
    (hout * hout * hout).sum().backward()
    # sparse=True: torch's gradient is a sparse tensor, harp's dense.
    close(hmod.weight.grad, tmod.weight.grad.to_dense())
    assert repr(hmod) == repr(tmod)


def test_embedding_init_and_from_pretrained():
    nn.init.manual_seed(3)
    emb = nn.Embedding(400, 50, padding_idx=-1)
    assert emb.padding_idx == 399
    w = emb.weight.numpy()
    assert not w[399].any()
    assert abs(w[:399].mean()) < 0.02 and abs(w[:399].std() - 1) < 0.02
    table = rand(6, 3)
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    assert list(frozen.state_dict()) == ["weight"]
    close(frozen(np.array([4, 0])), table[[4, 0]])
    trainable = nn.Embedding.from_pretrained(table, freeze=False)
    assert trainable.weight.requires_grad


#===------------------------------------------------------------------------===#
# Losses
#===------------------------------------------------------------------------===#


def check_loss(name, kwargs, x, target):
    targs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    hargs = {k: harp.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tloss = getattr(torch.nn, name)(**targs)
    hloss = getattr(nn, name)(**hargs)
    assert list(hloss.state_dict()) == list(tloss.state_dict())
    tx, hx = torch.tensor(x, requires_grad=True), harp.tensor(x, requires_grad=True)
    tout = tloss(tx, torch.tensor(target))
    hout = hloss(hx, harp.tensor(target))
    close(hout, tout)
    (tout * tout).sum().backward()
    (hout * hout).sum().backward()
    close(hx.grad, tx.grad)


LABELS = np.array([0, 4, 2, 1, 4, 3, 0], np.int64)
LABELS_IGNORED = np.array([0, 4, -100, 1, 4, 7, 0], np.int64)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_loss(reduction):
    check_loss("CrossEntropyLoss", dict(reduction=reduction), rand(7, 5), LABELS)


def test_cross_entropy_loss_options():
    check_loss("CrossEntropyLoss", dict(ignore_index=7, label_smoothing=0.2),
               rand(7, 5), np.where(LABELS_IGNORED == -100, 2, LABELS_IGNORED))
    check_loss("CrossEntropyLoss", {}, rand(7, 5), LABELS_IGNORED.clip(0, 4))
    # Spatial targets [N, d] and class probabilities.
    check_loss("CrossEntropyLoss", dict(label_smoothing=0.1), rand(3, 5, 4),
               np.random.default_rng(1).integers(0, 5, (3, 4)))
    probs = np.random.default_rng(2).dirichlet(np.ones(5), 7).astype(np.float32)
    check_loss("CrossEntropyLoss", dict(label_smoothing=0.3), rand(7, 5), probs)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    logp = torch.log_softmax(torch.tensor(rand(7, 5)), 1).numpy()
    check_loss("NLLLoss", dict(reduction=reduction), logp, LABELS)
    check_loss("NLLLoss", dict(reduction=reduction, ignore_index=4), logp, LABELS)


@pytest.mark.parametrize("name", ["MSELoss", "L1Loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(name, reduction):
    check_loss(name, dict(reduction=reduction), rand(3, 5, 7), rand(3, 5, 7, seed=4))


def test_legacy_reduction_arguments():
    assert nn.MSELoss(size_average=False).reduction == "sum"
    assert nn.MSELoss(reduce=False).reduction == "none"
    assert nn.L1Loss(size_average=True, reduce=True).reduction == "mean"
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="average")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_losses(reduction):
    p = 1 / (1 + np.exp(-rand(3, 5, 7)))
    t = (np.random.default_rng(5).random((3, 5, 7)) > 0.4).astype(np.float32)
    check_loss("BCELoss", dict(reduction=reduction), p, t)
    check_loss("BCELoss", dict(reduction=reduction, weight=rand(7, seed=6) ** 2), p, t)
    x = rand(3, 5, 7, scale=3)
    check_loss("BCEWithLogitsLoss", dict(reduction=reduction), x, t)
    check_loss("BCEWithLogitsLoss", dict(reduction=reduction, weight=rand(5, 7, seed=7) ** 2,
                                         pos_weight=rand(7, seed=8) ** 2 + 0.5), x, t)
    check_loss("BCEWithLogitsLoss", dict(reduction=reduction, pos_weight=np.float32([3.0])),
               x, t)


def test_class_weights_are_a_buffer():
    # Values against torch: test_losses_reductions.py::test_class_weights.
    loss = nn.CrossEntropyLoss(weight=harp.tensor(np.array([1.0, 2.0, 3.0], np.float32)))
    np.testing.assert_array_equal(dict(loss.named_buffers())["weight"].numpy(), [1, 2, 3])


#===------------------------------------------------------------------------===#
# Attention and transformers
#===------------------------------------------------------------------------===#


def mha_pair(*args, **kwargs):
    torch.manual_seed(0)
    tmod = torch.nn.MultiheadAttention(*args, **kwargs)
    hmod = nn.MultiheadAttention(*args, **kwargs)
    assert list(hmod.state_dict()) == list(tmod.state_dict())
    # torch zeroes the biases: give them values so that they are tested.
    state = {k: v.detach().numpy() + (rand(*v.shape, seed=9) * 0.1 if "bias" in k else 0)
             for k, v in tmod.state_dict().items()}
    tmod.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    hmod.load_state_dict(state)
    return tmod, hmod


def check_attention(tmod, hmod, q, k, v, targs=None, hargs=None):
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    hq, hk, hv = (harp.tensor(a, requires_grad=True) for a in (q, k, v))
    tout, tw = tmod(tq, tk, tv, **(targs or {}))
    hout, hw = hmod(hq, hk, hv, **(hargs if hargs is not None else targs or {}))
    close(hout, tout, what="output")
    loss_t = (tout ** 2).sum()
    loss_h = (hout * hout).sum()
    if tw is None:
        assert hw is None
    else:
        close(hw, tw, what="weights")
        loss_t = loss_t + (tw ** 2).sum()
        loss_h = loss_h + (hw * hw).sum()
    loss_t.backward()
    loss_h.backward()
    for name, ht, tt in (("query", hq, tq), ("key", hk, tk), ("value", hv, tv)):
        close(ht.grad, tt.grad, what=name + " gradient")
    hparams = dict(hmod.named_parameters())
    for name, tp in tmod.named_parameters():
        close(hparams[name].grad, tp.grad, what="gradient of " + name)


def test_multihead_attention_self():
    tmod, hmod = mha_pair(8, 2)
    x = rand(5, 3, 8)
    check_attention(tmod, hmod, x, x, x)


def test_multihead_attention_dropout():
    tmod, hmod = mha_pair(8, 2, dropout=0.4)
    x = rand(5, 3, 8)
    tmod.eval()
    hmod.eval()
    check_attention(tmod, hmod, x, x, x)  # eval mode: no dropout
    hmod.train()
    _, weights = hmod(harp.tensor(x), harp.tensor(x), harp.tensor(x),
                      average_attn_weights=False)
    weights = weights.numpy()  # returned after dropout, as torch's
    assert (weights == 0).mean() > 0.2
    _, plain = tmod(torch.tensor(x), torch.tensor(x), torch.tensor(x),
                    average_attn_weights=False)
    kept = weights != 0
    np.testing.assert_allclose(weights[kept], plain.detach().numpy()[kept] / 0.6, rtol=1e-4)


def test_multihead_attention_cross_batch_first_per_head_weights():
    tmod, hmod = mha_pair(12, 3, batch_first=True)
    check_attention(tmod, hmod, rand(3, 5, 12), rand(3, 4, 12, seed=2), rand(3, 4, 12, seed=3),
                    dict(average_attn_weights=False))


def test_multihead_attention_masks():
    tmod, hmod = mha_pair(8, 2, batch_first=True)
    q, k, v = rand(3, 5, 8), rand(3, 6, 8, seed=2), rand(3, 6, 8, seed=3)
    padding = np.zeros((3, 6), bool)
    padding[0, 4:] = True
    padding[2, 0] = True
    causal = np.triu(np.ones((5, 6), bool), k=1)
    check_attention(tmod, hmod, q, k, v, dict(key_padding_mask=torch.tensor(padding),
                                              attn_mask=torch.tensor(causal)),
                    dict(key_padding_mask=padding, attn_mask=harp.tensor(causal)))
    additive = rand(6, 5, 6, seed=4)  # [N * heads, L, S]
    check_attention(tmod, hmod, q, k, v, dict(attn_mask=torch.tensor(additive)),
                    dict(attn_mask=harp.tensor(additive)))
    check_attention(tmod, hmod, q, k, v, dict(key_padding_mask=torch.tensor(padding),
                                              need_weights=False),
                    dict(key_padding_mask=harp.tensor(padding), need_weights=False))


def test_multihead_attention_is_causal():
    tmod, hmod = mha_pair(8, 4)
    x = rand(5, 2, 8)
    causal = np.triu(np.ones((5, 5), bool), k=1)
    check_attention(tmod, hmod, x, x, x, dict(attn_mask=torch.tensor(causal)),
                    dict(is_causal=True))


def test_multihead_attention_kdim_vdim_no_bias_unbatched():
    tmod, hmod = mha_pair(8, 2, kdim=5, vdim=3, bias=False)
    assert hmod.in_proj_weight is None and hmod.in_proj_bias is None
    check_attention(tmod, hmod, rand(4, 8), rand(6, 5, seed=2), rand(6, 3, seed=3))


def test_multihead_attention_init_and_errors():
    nn.init.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4)
    w = mha.in_proj_weight.numpy()
    assert w.shape == (48, 16)
    assert np.abs(w).max() <= math.sqrt(6 / (16 + 48))
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    assert np.abs(mha.out_proj.weight.numpy()).max() <= 1 / 4
    assert repr(mha) == repr(torch.nn.MultiheadAttention(16, 4))
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(10, 4)
    with pytest.raises(ValueError, match=r"MultiheadAttention: expected query \[L, N, 16\], "
                                         r"got \[5, 2, 15\]"):
        x = harp.tensor(rand(5, 2, 15))
        mha(x, x, x)


@pytest.mark.parametrize("options", [
    dict(),
    dict(norm_first=True, activation="gelu"),
    dict(batch_first=True, layer_norm_eps=1e-3),
], ids=["post-norm", "pre-norm-gelu", "batch-first"])
def test_transformer_encoder_layer(options):
    torch.manual_seed(0)
    tmod = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0, **options)
    hmod = nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0, **options)
    assert list(hmod.state_dict()) == list(tmod.state_dict())
    assert [n for n, _ in hmod.named_children()] == [n for n, _ in tmod.named_children()]
    copy_state(tmod, hmod)
    check_module(tmod, hmod, rand(5, 3, 8))


def test_transformer_encoder_masks():
    torch.manual_seed(0)
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                              batch_first=True)
    tmod = torch.nn.TransformerEncoder(tlayer, 2, norm=torch.nn.LayerNorm(8),
                                       enable_nested_tensor=False)
    hmod = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True),
                                 2, norm=nn.LayerNorm(8))
    assert list(hmod.state_dict()) == list(tmod.state_dict())
    copy_state(tmod, hmod)
    # The layers are copies: equal values, independent parameters.
    assert hmod.layers[0].linear1.weight is not hmod.layers[1].linear1.weight
    x = rand(3, 5, 8)
    padding = np.zeros((3, 5), bool)
    padding[1, 3:] = True
    causal = np.triu(np.ones((5, 5), bool), k=1)
    tx, hx = torch.tensor(x, requires_grad=True), harp.tensor(x, requires_grad=True)
    tout = tmod(tx, mask=torch.tensor(causal), src_key_padding_mask=torch.tensor(padding))
    hout = hmod(hx, mask=causal, src_key_padding_mask=padding)
    close(hout, tout)
    (tout ** 2).sum().backward()
    (hout * hout).sum().backward()
    close(hx.grad, tx.grad)
    hparams = dict(hmod.named_parameters())
    for name, tp in tmod.named_parameters():
        close(hparams[name].grad, tp.grad, what=name)


@pytest.mark.parametrize("options", [dict(), dict(norm_first=True, batch_first=True)],
                         ids=["post-norm", "pre-norm-batch-first"])
def test_transformer_decoder_layer_with_masks(options):
    torch.manual_seed(0)
    tmod = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, **options)
    hmod = nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, **options)
    assert list(hmod.state_dict()) == list(tmod.state_dict())
    assert [n for n, _ in hmod.named_children()] == [n for n, _ in tmod.named_children()]
    copy_state(tmod, hmod)
    batch_first = options.get("batch_first", False)
    tgt = rand(*((2, 4, 8) if batch_first else (4, 2, 8)))
    memory = rand(*((2, 5, 8) if batch_first else (5, 2, 8)))
    causal = np.triu(np.ones((4, 4), bool), k=1)
    padding = np.zeros((2, 5), bool)
    padding[0, 4:] = True
    hs = [harp.tensor(a, requires_grad=True) for a in (tgt, memory)]
    ts = [torch.tensor(a, requires_grad=True) for a in (tgt, memory)]
    tout = tmod(*ts, tgt_mask=torch.tensor(causal),
                memory_key_padding_mask=torch.tensor(padding))
    hout = hmod(*hs, tgt_mask=causal, memory_key_padding_mask=padding)
    close(hout, tout)
    (tout ** 2).sum().backward()
    (hout * hout).sum().backward()
    for h, t in zip(hs, ts):
        close(h.grad, t.grad)
    hparams = dict(hmod.named_parameters())
    for name, tp in tmod.named_parameters():
        close(hparams[name].grad, tp.grad, what=name)


def test_transformer_encoder_decoder():
    # nn.Transformer: names, xavier initialisation bounds, the square
    # subsequent mask, outputs and gradients against torch's.
    torch.manual_seed(0)
    kwargs = dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                  dim_feedforward=16, dropout=0.0)
    tmod = torch.nn.Transformer(**kwargs)
    hmod = nn.Transformer(**kwargs)
    assert list(hmod.state_dict()) == list(tmod.state_dict())
    w = hmod.encoder.layers[0].linear1.weight.numpy()
    bound = math.sqrt(6 / (8 + 16))
    assert np.abs(w).max() <= bound and np.abs(w).max() > bound / 2
    copy_state(tmod, hmod)
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask.numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(3).numpy())
    src, tgt = rand(4, 2, 8), rand(3, 2, 8)
    hs = harp.tensor(src, requires_grad=True)
    ts = torch.tensor(src, requires_grad=True)
    tout = tmod(ts, torch.tensor(tgt), tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3))
    hout = hmod(hs, harp.tensor(tgt), tgt_mask=mask)
    close(hout, tout)
    (tout ** 2).sum().backward()
    (hout * hout).sum().backward()
    close(hs.grad, ts.grad)
    with pytest.raises(ValueError, match="Transformer: the batch sizes of src and tgt differ"):
        hmod(harp.tensor(rand(4, 2, 8)), harp.tensor(rand(3, 1, 8)))


def test_transformer_dropout_train_eval():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = harp.tensor(rand(4, 2, 8))
    layer.eval()
    a, b = layer(x).numpy(), layer(x).numpy()
    np.testing.assert_array_equal(a, b)
    layer.train()
    assert all(m.training for m in layer.modules())
    assert not np.allclose(layer(x).numpy(), a)


#===------------------------------------------------------------------------===#
# train / eval: Dropout and BatchNorm
#===------------------------------------------------------------------------===#


def test_dropout_train_and_eval():
    drop = nn.Dropout(0.3)
    assert drop.training and repr(drop) == "Dropout(p=0.3, inplace=False)"
    x = np.abs(rand(40, 50)) + 0.1
    out = drop(harp.tensor(x)).numpy()
    dropped = out == 0
    assert 0.25 < dropped.mean() < 0.35
    np.testing.assert_allclose(out[~dropped], x[~dropped] / 0.7, rtol=1e-6)
    drop.eval()
    assert not drop.training
    np.testing.assert_array_equal(drop(harp.tensor(x)).numpy(), x)
    assert not nn.Dropout(1.0)(harp.tensor(x)).numpy().any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_dropout_gradient():
    drop = nn.Dropout(0.5)
    x = harp.tensor(np.ones((20, 30), np.float32), requires_grad=True)
    out = drop(x)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), out.numpy())  # 0 or 1 / (1 - p)


def realizations():
    stats = harp.compile_stats()
    return stats["compiles"] + stats["memory_hits"] + stats["disk_hits"]


def test_batch_norm_statistics_computed_with_the_loss():
    # Three conv -> batch norm -> ReLU blocks in training: the six running
    # statistics are written when backward() runs, computed with the loss
    # and the gradients in one compiled call (no forward of their own per
    # statistic), and equal torch's after each step.
    torch.manual_seed(0)
    layers = lambda lib: lib.Sequential(
        lib.Conv2d(3, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(),
        lib.Conv2d(4, 5, 3, padding=1), lib.BatchNorm2d(5), lib.ReLU(),
        lib.Conv2d(5, 3, 3, padding=1), lib.BatchNorm2d(3), lib.ReLU())
    tmod, hmod = layers(torch.nn), layers(nn)
    copy_state(tmod, hmod)
    for step in range(2):
        x = rand(2, 3, 7, 5, seed=step, scale=step + 1)
        before = realizations()
        hloss = (hmod(harp.tensor(x)) ** 2).sum()
        assert realizations() == before, "the forward realized something"
        hloss.backward()
        assert realizations() == before + 1
        tloss = (tmod(torch.tensor(x)) ** 2).sum()
        tloss.backward()
        close(hloss, tloss, rtol=1e-4, what="loss")
        for key, value in tmod.state_dict().items():
            close(hmod.state_dict()[key], value, what=key)
        assert realizations() == before + 1, "the statistics were computed again"
        close(hmod[0].weight.grad, tmod[0].weight.grad, rtol=1e-3, atol=1e-4)


def test_batch_norm_deferred_statistics_read_in_order():
    # Without backward(), the deferred writes happen when the statistics are
    # read: an eval-mode forward right after a training one normalizes with
    # the new statistics; a tensor built on them before keeps the old ones.
    tmod, hmod = pair("BatchNorm1d", 3)
    old = hmod.running_mean * 1.0
    x = rand(6, 3, seed=1) + 2
    close(hmod(harp.tensor(x)), tmod(torch.tensor(x)))
    hmod.eval()
    tmod.eval()
    y = rand(4, 3, seed=2)
    close(hmod(harp.tensor(y)), tmod(torch.tensor(y)))
    close(old, np.zeros(3, np.float32))
    close(hmod.running_var, tmod.running_var)
    # A detached view of a buffer shares its storage and sees the write.
    hmod.train()
    tmod.train()
    alias = hmod.running_mean.detach()
    close(hmod(harp.tensor(x)), tmod(torch.tensor(x)))
    close(alias, tmod.running_mean)


def test_batch_norm_statistics_survive_a_failed_backward():
    # backward() takes the deferred writes to compute them with its loss; a
    # backward() that fails gives them back, and a read does them.
    tmod, hmod = pair("BatchNorm1d", 3)
    x = rand(6, 3, seed=3)
    hmod(harp.tensor(x))
    tmod(torch.tensor(x))
    with pytest.raises(harp.HarpError, match="requires a gradient"):
        (harp.tensor(x) * 2.0).sum().backward()
    close(hmod.running_mean, tmod.running_mean)
    close(hmod.running_var, tmod.running_var)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_and_eval(momentum):
    tmod, hmod = pair("BatchNorm2d", 5, momentum=momentum)
    for step in range(3):
        x = rand(3, 5, 7, 6, seed=step, scale=step + 1) + step
        close(hmod(harp.tensor(x)), tmod(torch.tensor(x)))
    assert int(hmod.num_batches_tracked.item()) == 3
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        close(hmod.state_dict()[key], tmod.state_dict()[key], what=key)
    tmod.eval()
    hmod.eval()
    x = rand(2, 5, 4, 4, seed=10)
    check_module(tmod, hmod, x)
    # Eval mode neither uses nor changes the batch statistics.
    assert int(hmod.num_batches_tracked.item()) == 3
    close(hmod.running_mean, tmod.running_mean)
    single = rand(1, 5, 1, 1)
    close(hmod(harp.tensor(single)), tmod(torch.tensor(single)))


def test_batch_norm_in_training_needs_two_values():
    bn = nn.BatchNorm1d(4)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(harp.tensor(rand(1, 4)))


def test_train_eval_propagate():
    model = nn.Sequential(nn.Linear(3, 3), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(3)))
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model[1].train(False)
    assert model.training and model[0].training and not model[1][1].training


#===------------------------------------------------------------------------===#
# state_dict, load_state_dict, npz
#===------------------------------------------------------------------------===#


def cnn(lib):
    return lib.nn.Sequential(
        lib.nn.Conv2d(3, 4, 3, padding=1), lib.nn.BatchNorm2d(4), lib.nn.ReLU(),
        lib.nn.MaxPool2d(2), lib.nn.Flatten(), lib.nn.Linear(4 * 3 * 3, 5))


def test_state_dict_keys_shapes_and_round_trip_with_torch():
    torch.manual_seed(0)
    tmod, hmod = cnn(torch), cnn(harp)
    tstate, hstate = tmod.state_dict(), hmod.state_dict()
    assert isinstance(hstate, OrderedDict)
    assert list(hstate) == list(tstate) == [
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
        "1.num_batches_tracked", "5.weight", "5.bias"]
    for key in tstate:
        assert hstate[key].shape == tuple(tstate[key].shape), key
        assert hstate[key].dtype == tstate[key].numpy().dtype, key
    assert [n for n, _ in hmod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    assert [n for n, _ in hmod.named_buffers()] == [n for n, _ in tmod.named_buffers()]
    # torch -> harp
    result = copy_state(tmod, hmod)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for key, value in hmod.state_dict().items():
        np.testing.assert_array_equal(value, tstate[key].numpy())
    # harp -> torch
    hmod2 = cnn(harp)
    torch2 = cnn(torch)
    torch2.load_state_dict({k: torch.tensor(v) for k, v in hmod2.state_dict().items()})
    x = rand(2, 3, 6, 6)
    hmod2.eval()
    torch2.eval()
    close(hmod2(harp.tensor(x)), torch2(torch.tensor(x)))
    # state_dict holds copies.
    state = hmod2.state_dict()
    state["0.weight"][:] = 0
    assert hmod2[0].weight.numpy().any()


def test_load_state_dict_errors():
    model = cnn(harp)
    before = model.state_dict()
    state = cnn(harp).state_dict()
    state["5.weight"] = np.zeros((5, 35), np.float32)
    state["0.bias"] = np.zeros(5, np.float32)
    with pytest.raises(RuntimeError) as error:
        model.load_state_dict(state)
    message = str(error.value)
    assert "size mismatch for 5.weight" in message and "[5, 35]" in message
    assert "[5, 36]" in message
    assert "size mismatch for 0.bias" in message and "[5]" in message and "[4]" in message
    # Nothing was written.
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[key])

    state = cnn(harp).state_dict()
    del state["1.running_var"]
    state["extra.weight"] = np.zeros(3, np.float32)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "1.running_var"'):
        model.load_state_dict(state)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra.weight"'):
        model.load_state_dict(state)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["1.running_var"]
    assert result.unexpected_keys == ["extra.weight"]
    np.testing.assert_array_equal(model.state_dict()["0.weight"], state["0.weight"])
    np.testing.assert_array_equal(model.state_dict()["1.running_var"], before["1.running_var"])
    # A shape mismatch is an error even when not strict.
    state["0.weight"] = np.zeros((1, 1), np.float32)
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        model.load_state_dict(state, strict=False)


def test_load_state_dict_keeps_leaves():
    model = nn.Linear(3, 2)
    weight = model.weight
    opt = harp.optim.SGD(model.parameters(), lr=0.1)
    model.load_state_dict({"weight": np.ones((2, 3)), "bias": np.zeros(2)})
    assert model.weight is weight and weight.dtype == harp.float32
    model(harp.tensor(np.ones((1, 3), np.float32))).sum().backward()
    opt.step()
    np.testing.assert_allclose(model.weight.numpy(), np.full((2, 3), 0.9), rtol=1e-6)


def test_npz_round_trip(tmp_path):
    torch.manual_seed(0)
    model = cnn(harp)
    model.train()
    model(harp.tensor(rand(3, 3, 6, 6)))  # running statistics move
    path = str(tmp_path / "model.npz")
    model.save_npz(path)
    other = cnn(harp)
    assert not np.array_equal(other.state_dict()["0.weight"], model.state_dict()["0.weight"])
    result = other.load_npz(path)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[key], value)
    x = harp.tensor(rand(2, 3, 6, 6, seed=3))
    model.eval()
    other.eval()
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
    third = nn.load(path, cnn(harp))
    np.testing.assert_array_equal(third.state_dict()["5.bias"], model.state_dict()["5.bias"])
    # A torch model loads the same file.
    tmod = cnn(torch)
    with np.load(path) as data:
        tmod.load_state_dict({k: torch.tensor(data[k]) for k in data.files})
    tmod.eval()
    close(model(x), tmod(torch.tensor(x.numpy())))


#===------------------------------------------------------------------------===#
# Default initialisation and harp.nn.init
#===------------------------------------------------------------------------===#


def test_default_init_bounds():
    nn.init.manual_seed(0)
    lin = nn.Linear(50, 40)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    bound = 1 / math.sqrt(50)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.95 * bound  # uniform over the whole range
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert lin.weight.dtype == harp.float32 and lin.weight.requires_grad
    conv = nn.Conv2d(6, 8, 3, groups=2)
    bound = 1 / math.sqrt(3 * 3 * 3)
    assert np.abs(conv.weight.numpy()).max() <= bound
    assert np.abs(conv.bias.numpy()).max() <= bound
    convt = nn.ConvTranspose2d(6, 8, 3, groups=2)
    assert convt.weight.shape == (6, 4, 3, 3)
    bound = 1 / math.sqrt(4 * 3 * 3)
    assert np.abs(convt.weight.numpy()).max() <= bound
    for norm in (nn.BatchNorm2d(5), nn.LayerNorm(5), nn.GroupNorm(1, 5)):
        np.testing.assert_array_equal(norm.weight.numpy(), np.ones(5))
        np.testing.assert_array_equal(norm.bias.numpy(), np.zeros(5))
    bn = nn.BatchNorm1d(5)
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(5))
    assert not bn.running_mean.requires_grad and bn.num_batches_tracked.dtype == harp.int64


def test_manual_seed_reproducible():
    nn.init.manual_seed(7)
    a = nn.Linear(4, 3).weight.numpy()
    b = nn.Linear(4, 3).weight.numpy()
    nn.init.manual_seed(7)
    np.testing.assert_array_equal(nn.Linear(4, 3).weight.numpy(), a)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("nonlinearity,param", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain(nonlinearity, param):
    assert nn.init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param))


def test_init_functions():
    init = nn.init
    init.manual_seed(1)
    t = harp.tensor(np.zeros((300, 200), np.float32), requires_grad=True)
    assert init.uniform_(t, -2, 3) is t
    v = t.numpy()
    assert v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.05
    init.normal_(t, 1.5, 0.5)
    assert abs(t.numpy().mean() - 1.5) < 0.01 and abs(t.numpy().std() - 0.5) < 0.01
    init.constant_(t, 0.25)
    assert (t.numpy() == 0.25).all()
    init.zeros_(t)
    assert not t.numpy().any()
    init.ones_(t)
    assert (t.numpy() == 1).all()
    init.kaiming_uniform_(t, nonlinearity="relu")
    bound = math.sqrt(2) * math.sqrt(3 / 200)
    assert np.abs(t.numpy()).max() <= bound
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert abs(t.numpy().std() - math.sqrt(2 / 300)) < 0.02 * math.sqrt(2 / 300)
    init.xavier_uniform_(t, gain=2.0)
    assert np.abs(t.numpy()).max() <= 2 * math.sqrt(6 / 500)
    init.xavier_normal_(t)
    assert abs(t.numpy().std() - math.sqrt(2 / 500)) < 0.02 * math.sqrt(2 / 500)
    init.trunc_normal_(t, std=2.0, a=-1.0, b=1.0)
    assert np.abs(t.numpy()).max() <= 1
    d = harp.tensor(np.zeros((3, 2)), harp.float64)
    init.normal_(d)
    assert d.dtype == harp.float64 and d.numpy().any()
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_uniform_(harp.tensor(np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")


#===------------------------------------------------------------------------===#
# Module machinery and containers
#===------------------------------------------------------------------------===#


class Block(nn.Module):
    """A user module: parameters, a buffer, a non-persistent buffer, a
    shared submodule and a plain attribute."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.full(4, 2.0, np.float32))
        self.register_buffer("offset", np.arange(4, dtype=np.float32))
        self.register_buffer("cache", np.zeros(4, np.float32), persistent=False)
        self.inner = nn.Linear(4, 4)
        self.alias = self.inner
        self.constant = harp.tensor(np.ones(4, np.float32))  # no gradient: plain attribute
        self.name = "block"

    def forward(self, x):
        return self.inner(x) * self.scale + self.offset


def test_module_registration():
    block = Block()
    assert [n for n, _ in block.named_parameters()] == ["scale", "inner.weight", "inner.bias"]
    assert len(list(block.parameters())) == 3  # the shared Linear counts once
    assert [n for n, _ in block.named_buffers()] == ["offset", "cache"]
    assert list(block.state_dict()) == ["scale", "offset", "inner.weight", "inner.bias",
                                        "alias.weight", "alias.bias"]
    assert [n for n, _ in block.named_children()] == ["inner"]
    assert [n for n, _ in block.named_modules()] == ["", "inner"]
    assert block.name == "block" and "constant" not in dict(block.named_buffers())
    block.inner = None
    assert "inner" not in dict(block.named_children()) and block.inner is None
    with pytest.raises(TypeError, match="cannot assign"):
        block.scale = 3.0
    block.scale = None
    assert [n for n, _ in block.named_parameters()] == ["alias.weight", "alias.bias"]
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        block.missing
    del block.offset
    assert "offset" not in block.state_dict()


def test_parameter_helper():
    p = nn.Parameter(np.ones((2, 3), np.float64))
    assert isinstance(p, harp.Tensor) and p.requires_grad and p.dtype == harp.float64
    q = nn.Parameter([1.0, 2.0])
    assert q.dtype == harp.float32
    src = harp.tensor(np.ones(3, np.float32))
    r = nn.Parameter(src * 2, requires_grad=False)
    assert not r.requires_grad and r.numpy().tolist() == [2, 2, 2]


def test_module_before_init_and_forward():
    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.ones(2, np.float32))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Broken()
    with pytest.raises(NotImplementedError):
        nn.Module()(1)


def test_apply_zero_grad_requires_grad():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    seen = []
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "Tanh", "Linear", "Sequential"]
    model.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
    assert not model[2].bias.numpy().any()
    model(harp.tensor(rand(5, 3))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    assert len(list(model.parameters())) == 4  # still parameters


def test_to_dtype_makes_new_leaves_and_keeps_sharing():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.ReLU(), shared, nn.BatchNorm1d(2))
    old = shared.weight
    assert model.to(harp.float64) is model
    assert shared.weight is not old and shared.weight.requires_grad
    assert model[0].weight is model[2].weight
    assert model[3].running_mean.dtype == harp.float64
    assert model[3].num_batches_tracked.dtype == harp.int64
    np.testing.assert_array_equal(shared.weight.numpy(), old.numpy().astype(np.float64))
    with pytest.raises(TypeError, match="floating-point"):
        model.to(harp.int32)


def test_deepcopy():
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    clone = copy.deepcopy(model)
    assert clone[0].weight is not model[0].weight
    np.testing.assert_array_equal(clone[0].weight.numpy(), model[0].weight.numpy())
    assert clone[0].weight.requires_grad and not clone[1].running_mean.requires_grad
    nn.init.zeros_(clone[0].weight)
    assert model[0].weight.numpy().any()


def test_sequential():
    torch.manual_seed(0)
    a, b, c = nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [a, b]
    x = harp.tensor(rand(5, 3))
    np.testing.assert_allclose(seq(x).numpy(), c(b(a(x))).numpy())
    d = nn.Tanh()
    assert seq.append(d) is seq and seq[3] is d and "3.weight" not in seq.state_dict()
    del seq[1]
    assert list(seq) == [a, c, d]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    seq[2] = nn.Sigmoid()
    assert isinstance(seq[2], nn.Sigmoid)
    with pytest.raises(IndexError):
        seq[3]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    tnamed = torch.nn.Sequential(OrderedDict([("fc", torch.nn.Linear(2, 2)),
                                              ("act", torch.nn.ReLU())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]
    assert repr(named) == repr(tnamed)
    assert named.fc is named[0]


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    tlayers = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])
    assert list(layers.state_dict()) == list(tlayers.state_dict())
    assert repr(layers) == repr(tlayers)
    assert len(layers) == 3 and layers[-1] is layers[2]
    layers.append(nn.ReLU())
    layers.extend([nn.Tanh()])
    layers.insert(0, nn.Sigmoid())
    assert [type(m).__name__ for m in layers] == ["Sigmoid", "Linear", "Linear", "Linear",
                                                 "ReLU", "Tanh"]
    assert list(layers.state_dict())[:2] == ["1.weight", "1.bias"]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    del layers[0]
    assert list(layers.state_dict())[:2] == ["0.weight", "0.bias"]

    heads = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.Linear(2, 1)})
    theads = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 3), "b": torch.nn.Linear(2, 1)})
    assert list(heads.state_dict()) == list(theads.state_dict())
    assert repr(heads) == repr(theads)
    assert "a" in heads and list(heads) == ["a", "b"] and len(heads) == 2
    heads["c"] = nn.ReLU()
    assert list(heads.keys()) == ["a", "b", "c"]
    assert heads.pop("b") is not None and list(heads) == ["a", "c"]


def test_repr_of_a_model():
    torch.manual_seed(0)
    tmod = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1, bias=False),
        torch.nn.BatchNorm2d(8, momentum=None), torch.nn.LeakyReLU(0.1),
        torch.nn.AdaptiveAvgPool2d((1, 1)), torch.nn.Flatten(), torch.nn.Dropout(0.25),
        torch.nn.Linear(8, 4), torch.nn.LogSoftmax(dim=1),
        torch.nn.TransformerEncoderLayer(4, 2, 8))
    hmod = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1, bias=False),
        nn.BatchNorm2d(8, momentum=None), nn.LeakyReLU(0.1), nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(8, 4), nn.LogSoftmax(dim=1),
        nn.TransformerEncoderLayer(4, 2, 8))
    assert repr(hmod) == repr(tmod)


#===------------------------------------------------------------------------===#
# Errors
#===------------------------------------------------------------------------===#


def test_input_errors():
    conv = nn.Conv2d(3, 4, 3)
    with pytest.raises(ValueError, match=r"^Conv2d: expected input \[N, 3, H, W\], "
                                         r"got \[2, 4, 8, 8\]$"):
        conv(harp.tensor(np.zeros((2, 4, 8, 8), np.float32)))
    with pytest.raises(ValueError, match=r"Conv2d: expected input \[N, 3, H, W\] or "
                                         r"\[3, H, W\], got \[8, 8\]"):
        conv(harp.tensor(np.zeros((8, 8), np.float32)))
    with pytest.raises(ValueError, match=r"Conv1d: expected input \[5, L\], got \[4, 7\]"):
        nn.Conv1d(5, 2, 3)(harp.tensor(np.zeros((4, 7), np.float32)))
    with pytest.raises(ValueError, match=r"ConvTranspose2d: expected input \[N, 3, H, W\]"):
        nn.ConvTranspose2d(3, 2, 3)(harp.tensor(np.zeros((1, 2, 5, 5), np.float32)))
    with pytest.raises(ValueError, match=r"Linear: expected input \[\.\.\., 5\], got \[3, 4\]"):
        nn.Linear(5, 2)(harp.tensor(np.zeros((3, 4), np.float32)))
    with pytest.raises(ValueError, match=r"BatchNorm2d: expected input \[N, 5, H, W\], "
                                         r"got \[3, 5, 7\]"):
        nn.BatchNorm2d(5)(harp.tensor(rand(3, 5, 7)))
    with pytest.raises(ValueError, match=r"BatchNorm1d: expected input \[N, 4\] or "
                                         r"\[N, 4, L\], got \[3, 5\]"):
        nn.BatchNorm1d(4)(harp.tensor(rand(3, 5)))
    with pytest.raises(ValueError, match=r"LayerNorm: expected input \[\.\.\., 5, 7\], "
                                         r"got \[3, 7, 5\]"):
        nn.LayerNorm([5, 7])(harp.tensor(rand(3, 7, 5)))
    with pytest.raises(ValueError, match=r"GroupNorm: expected input \[N, 6, \*\]"):
        nn.GroupNorm(2, 6)(harp.tensor(rand(3, 4, 5)))
    with pytest.raises(ValueError, match=r"MaxPool2d: expected input \[N, C, H, W\] or "
                                         r"\[C, H, W\], got \[3, 5\]"):
        nn.MaxPool2d(2)(harp.tensor(rand(3, 5)))


def test_constructor_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(5, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv1d(4, 5, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 3, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode 'reflect' is not supported"):
        nn.Conv2d(3, 3, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="num_channels \\(5\\) must be divisible"):
        nn.GroupNorm(2, 5)
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(4, 2, padding_idx=4)


#===------------------------------------------------------------------------===#
# Training loops against torch
#===------------------------------------------------------------------------===#


def train(lib, model, loss_fn, opt, xs, ys, steps=20):
    for step in range(steps):
        x, y = xs[step % len(xs)], ys[step % len(ys)]
        opt.zero_grad()
        if lib is torch:
            loss = loss_fn(model(torch.tensor(x)), torch.tensor(y))
        else:
            loss = loss_fn(model(harp.tensor(x)), harp.tensor(y))
        loss.backward()
        value = float(loss.item())  # before the step changes the parameters
        opt.step()
    return value


def test_mlp_sgd_training_matches_torch():
    def make(lib):
        return lib.nn.Sequential(lib.nn.Linear(5, 16), lib.nn.Tanh(), lib.nn.Linear(16, 8),
                                 lib.nn.GELU(), lib.nn.Linear(8, 3))
    torch.manual_seed(0)
    tmod, hmod = make(torch), make(harp)
    copy_state(tmod, hmod)
    xs = [rand(7, 5, seed=s) for s in range(4)]
    ys = [rand(7, 3, seed=10 + s) for s in range(4)]
    tloss = train(torch, tmod, torch.nn.MSELoss(),
                  torch.optim.SGD(tmod.parameters(), lr=0.1, momentum=0.9), xs, ys)
    hloss = train(harp, hmod, nn.MSELoss(),
                  harp.optim.SGD(hmod.parameters(), lr=0.1, momentum=0.9), xs, ys)
    assert hloss == pytest.approx(tloss, rel=1e-5, abs=1e-6)
    initial = make(torch)
    for key, value in tmod.state_dict().items():
        close(hmod.state_dict()[key], value, rtol=1e-5, atol=1e-5, what=key)
    assert not np.allclose(hmod.state_dict()["0.weight"], initial.state_dict()["0.weight"])


def test_cnn_sgd_training_matches_torch():
    torch.manual_seed(0)
    tmod, hmod = cnn(torch), cnn(harp)
    copy_state(tmod, hmod)
    start = hmod.state_dict()
    xs = [rand(4, 3, 6, 6, seed=s) for s in range(3)]
    ys = [np.random.default_rng(20 + s).integers(0, 5, 4) for s in range(3)]
    train(torch, tmod, torch.nn.CrossEntropyLoss(label_smoothing=0.1),
          torch.optim.SGD(tmod.parameters(), lr=0.05, momentum=0.5), xs, ys)
    train(harp, hmod, nn.CrossEntropyLoss(label_smoothing=0.1),
          harp.optim.SGD(hmod.parameters(), lr=0.05, momentum=0.5), xs, ys)
    for key, value in tmod.state_dict().items():
        close(hmod.state_dict()[key], value, rtol=1e-5, atol=1e-5, what=key)
    assert not np.allclose(hmod.state_dict()["0.weight"], start["0.weight"])
    assert int(hmod[1].num_batches_tracked.item()) == 20
    tmod.eval()
    hmod.eval()
    x = rand(2, 3, 6, 6, seed=99)
    close(hmod(harp.tensor(x)), tmod(torch.tensor(x)))


def test_max_pool_module_returns_indices_as_torch():
    x = np.random.default_rng(3).normal(size=(2, 3, 6, 7))
    for shape in [x, x[0]]:
        out, idx = harp.nn.MaxPool2d(3, 2, 1, return_indices=True)(harp.tensor(shape))
        t_out, t_idx = torch.nn.MaxPool2d(3, 2, 1, return_indices=True)(torch.tensor(shape))
        np.testing.assert_array_equal(out.numpy(), t_out.numpy())
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())


@pytest.mark.parametrize("name,size,shape", [
    ("AdaptiveMaxPool1d", 5, (2, 3, 13)), ("AdaptiveMaxPool2d", (3, None), (2, 3, 7, 13)),
    ("AdaptiveMaxPool3d", (2, 1, 3), (2, 3, 5, 7, 4))])
def test_adaptive_max_pool_module_returns_indices_as_torch(name, size, shape):
    x = np.random.default_rng(4).integers(0, 4, size=shape).astype(np.float64)  # ties
    for data in [x, x[0]]:
        out, idx = getattr(harp.nn, name)(size, return_indices=True)(harp.tensor(data))
        t_out, t_idx = getattr(torch.nn, name)(size, return_indices=True)(torch.tensor(data))
        np.testing.assert_array_equal(out.numpy(), t_out.numpy())
        np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    assert getattr(harp.nn, name)(size, return_indices=True).return_indices
    with pytest.raises(ValueError, match="%s: expected input" % name):
        getattr(harp.nn, name)(size, return_indices=True)(harp.tensor(np.ones(3)))


def test_load_state_dict_into_a_computed_buffer():
    # nanoGPT registers tril(ones(...)).view(...) as a buffer: a computed
    # tensor with no storage of its own. Loading replaces it by the values,
    # and every key is checked before anything is written.
    class Masked(harp.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = harp.nn.Linear(3, 2)
            self.register_buffer("bias", harp.tril(harp.ones(4, 4)).reshape(1, 1, 4, 4))

    m = Masked()
    assert not m.bias.is_leaf and m.lin.weight.is_leaf
    state = m.state_dict()
    state["bias"] = np.triu(np.ones((4, 4), np.float32)).reshape(1, 1, 4, 4)
    state["lin.weight"] = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert m.load_state_dict(state) == ([], [])
    np.testing.assert_array_equal(m.bias.numpy(), state["bias"])
    np.testing.assert_array_equal(m.lin.weight.numpy(), state["lin.weight"])
    assert m.bias.is_leaf and dict(m.named_buffers())["bias"] is m.bias
    before = m.lin.weight.numpy().copy()
    bad = dict(state, bias=np.zeros((4, 4), np.float32), **{"lin.weight": before + 1})
    with pytest.raises(RuntimeError, match=r"for Masked:\n\tsize mismatch for bias"):
        m.load_state_dict(bad)
    np.testing.assert_array_equal(m.lin.weight.numpy(), before)  # nothing written


# torch.nn's modules over one functional form (harp/nn/modules.py,
# _FUNCTIONAL_MODULES): constructed with the same settings, on the same
# inputs, as torch's; name -> (constructor args, kwargs, input builder).
def _x(*shape, positive=False, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return np.abs(a) + 0.1 if positive else a


def _signs(n, seed=1):
    return np.where(np.random.default_rng(seed).random(n) < 0.5, -1.0, 1.0)


_FUNCTIONAL_CASES = {
    "CELU": ((0.7,), {}, lambda: [_x(3, 5)]),
    "GLU": ((), {"dim": 1}, lambda: [_x(3, 6)]),
    "Hardshrink": ((0.3,), {}, lambda: [_x(4, 5)]),
    "Hardsigmoid": ((), {}, lambda: [_x(4, 5) * 4]),
    "Hardswish": ((), {}, lambda: [_x(4, 5) * 4]),
    "LogSigmoid": ((), {}, lambda: [_x(4, 5)]),
    "Mish": ((), {}, lambda: [_x(4, 5)]),
    "SELU": ((), {}, lambda: [_x(4, 5)]),
    "Softmin": ((), {"dim": 1}, lambda: [_x(3, 7)]),
    "Softshrink": ((0.2,), {}, lambda: [_x(4, 5)]),
    "Softsign": ((), {}, lambda: [_x(4, 5)]),
    "Tanhshrink": ((), {}, lambda: [_x(4, 5)]),
    "Threshold": ((0.1, 20.0), {}, lambda: [_x(4, 5)]),
    "CosineSimilarity": ((), {"dim": 1}, lambda: [_x(3, 4), _x(3, 4, seed=1)]),
    "PairwiseDistance": ((), {"p": 3.0, "keepdim": True}, lambda: [_x(3, 4), _x(3, 4, seed=1)]),
    "PixelShuffle": ((2,), {}, lambda: [_x(1, 8, 3, 3)]),
    "PixelUnshuffle": ((2,), {}, lambda: [_x(1, 2, 4, 6)]),
    "LocalResponseNorm": ((3,), {"alpha": 0.1}, lambda: [_x(2, 5, 4, 3)]),
    "Dropout2d": ((0.5,), {}, lambda: [_x(2, 3, 4, 4)]),  # in eval mode: the identity
    "Dropout3d": ((0.5,), {}, lambda: [_x(2, 3, 2, 4, 4)]),
    "Dropout1d": ((0.5,), {}, lambda: [_x(2, 3, 5)]),
    "AlphaDropout": ((0.5,), {}, lambda: [_x(2, 3, 5)]),
    "FeatureAlphaDropout": ((0.5,), {}, lambda: [_x(2, 3, 5)]),
    "MaxUnpool1d": ((2,), {}, lambda: _pooled(torch.nn.functional.max_pool1d, _x(1, 2, 6), 2)),
    "MaxUnpool2d": ((2,), {}, lambda: _pooled(torch.nn.functional.max_pool2d, _x(1, 2, 4, 6), 2)),
    "MaxUnpool3d": ((2,), {}, lambda: _pooled(torch.nn.functional.max_pool3d,
                                              _x(1, 1, 2, 4, 4), 2)),
    "LPPool1d": ((2, 3), {"stride": 2}, lambda: [_x(2, 3, 7)]),
    "LPPool2d": ((3, (2, 2)), {}, lambda: [_x(1, 2, 4, 6, positive=True)]),
    "ChannelShuffle": ((2,), {}, lambda: [_x(1, 6, 2, 2)]),
    "Fold": (((4, 5), (2, 2)), {}, lambda: [_x(1, 12, 12)]),
    "Unfold": (((2, 3),), {"stride": 1}, lambda: [_x(1, 2, 4, 5)]),
    "CosineEmbeddingLoss": ((0.2,), {}, lambda: [_x(4, 3), _x(4, 3, seed=1), _signs(4)]),
    "GaussianNLLLoss": ((), {"full": True}, lambda: [_x(4, 3), _x(4, 3, seed=1),
                                                     _x(4, 3, positive=True, seed=2)]),
    "HingeEmbeddingLoss": ((0.5,), {}, lambda: [_x(6), _signs(6)]),
    "MarginRankingLoss": ((0.1,), {"reduction": "sum"}, lambda: [_x(5), _x(5, seed=1), _signs(5)]),
    "MultiLabelMarginLoss": ((), {}, lambda: [_x(2, 4), np.array([[3, 0, -1, 1], [1, 2, 3, -1]])]),
    "MultiLabelSoftMarginLoss": ((), {}, lambda: [_x(3, 4), (_x(3, 4, seed=1) > 0) * 1.0]),
    "MultiMarginLoss": ((), {"p": 2, "margin": 0.5}, lambda: [_x(3, 4), np.array([0, 3, 1])]),
    "PoissonNLLLoss": ((), {"full": True}, lambda: [_x(4, 3), _x(4, 3, positive=True, seed=1)]),
    "SoftMarginLoss": ((), {"reduction": "none"}, lambda: [_x(5), _signs(5)]),
    "TripletMarginLoss": ((), {"margin": 0.3, "swap": True},
                          lambda: [_x(3, 4), _x(3, 4, seed=1), _x(3, 4, seed=2)]),
    "TripletMarginWithDistanceLoss": ((), {"margin": 0.3},
                                      lambda: [_x(3, 4), _x(3, 4, seed=1), _x(3, 4, seed=2)]),
}


def _pooled(pool, x, kernel):
    values, indices = pool(torch.tensor(x), kernel, return_indices=True)
    return [values.numpy(), indices.numpy()]


def test_every_functional_module_has_a_case():
    from harp.nn.modules import _FUNCTIONAL_MODULES
    assert sorted(_FUNCTIONAL_CASES) == sorted(_FUNCTIONAL_MODULES)


@pytest.mark.parametrize("name", sorted(_FUNCTIONAL_CASES))
def test_functional_module_matches_torch(name):
    torch = pytest.importorskip("torch")
    args, kwargs, inputs = _FUNCTIONAL_CASES[name]
    arrays = inputs()
    ours = getattr(harp.nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    if "Dropout" in name:
        ours.eval()
        theirs.eval()
    integer = name in ("MultiLabelMarginLoss", "MultiMarginLoss") or name.startswith("MaxUnpool")
    h = [harp.tensor(a) if not (integer and i == 1) else harp.tensor(a.astype(np.int64))
         for i, a in enumerate(arrays)]
    t = [torch.tensor(a) for a in arrays]
    h[0].requires_grad = True
    t[0].requires_grad_(True)
    got, want = ours(*h), theirs(*t)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    if name == "ChannelShuffle":  # torch 1.13 has no derivative for it: the inverse shuffle
        w = _x(*arrays[0].shape, seed=3)
        (got * harp.tensor(w)).sum().backward()
        inverse = torch.nn.ChannelShuffle(arrays[0].shape[1] // args[0])(torch.tensor(w))
        np.testing.assert_array_equal(h[0].grad.numpy(), inverse.numpy())
        return
    got.sum().backward()
    want.sum().backward()
    # (torch's hardsigmoid and celu backward scale by f32 constants: 4e-8)
    np.testing.assert_allclose(h[0].grad.numpy(), t[0].grad.numpy(), rtol=1e-7, atol=1e-12)
    assert repr(ours).startswith(name + "(")


@pytest.mark.parametrize("name, args, shape", [
    ("ConstantPad1d", ((1, 2), 3.5), (2, 3, 4)), ("ConstantPad2d", (1, -1.0), (1, 2, 3, 3)),
    ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 0.5), (1, 1, 2, 3, 3)),
    ("ReflectionPad1d", ((2, 1),), (2, 3, 5)), ("ReflectionPad2d", (1,), (1, 2, 3, 4)),
    ("ReflectionPad3d", (1,), (1, 1, 3, 3, 3)), ("ReplicationPad1d", ((0, 3),), (2, 3, 4)),
    ("ReplicationPad2d", ((1, 0, 2, 1),), (1, 2, 3, 3)), ("ReplicationPad3d", (1,), (1, 1, 2, 2, 2)),
    ("ZeroPad2d", ((1, 2, 0, 1),), (1, 2, 3, 3)), ("Unflatten", (1, (2, 3)), (2, 6, 2)),
    ("Softmax2d", (), (2, 3, 2, 2)),
])
def test_shape_modules_match_torch(name, args, shape):
    x = _x(*shape)
    got = getattr(harp.nn, name)(*args)(harp.tensor(x))
    want = getattr(torch.nn, name)(*args)(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["PReLU", "Bilinear", "InstanceNorm1d", "InstanceNorm2d",
                                  "InstanceNorm3d"])
def test_parameterized_modules_match_torch(name):
    make = {"PReLU": lambda m: m.PReLU(3, 0.1), "Bilinear": lambda m: m.Bilinear(4, 3, 2),
            "InstanceNorm1d": lambda m: m.InstanceNorm1d(3, affine=True),
            "InstanceNorm2d": lambda m: m.InstanceNorm2d(3),
            "InstanceNorm3d": lambda m: m.InstanceNorm3d(3, affine=True)}[name]
    shapes = {"PReLU": [(2, 3, 4)], "Bilinear": [(5, 4), (5, 3)], "InstanceNorm1d": [(2, 3, 6)],
              "InstanceNorm2d": [(3, 4, 5)], "InstanceNorm3d": [(2, 3, 2, 3, 3)]}[name]
    ours, theirs = make(harp.nn), make(torch.nn).double()
    for (key, p), q in zip(theirs.named_parameters(), ours.parameters()):
        assert tuple(p.shape) == tuple(q.shape), key
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    arrays = [_x(*shape, seed=i) for i, shape in enumerate(shapes)]
    got = ours(*[harp.tensor(a) for a in arrays])
    want = theirs(*[torch.tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    if name.startswith("InstanceNorm"):
        with pytest.raises(ValueError, match="track_running_stats=True is not supported"):
            getattr(harp.nn, name)(3, track_running_stats=True)
