"""harp.nn's recurrent layers (harp/nn/rnn.py) against torch.nn's: the same
parameter names, shapes and initial bounds, and, from torch's weights, the
same outputs, final states and gradients (f64 to 1e-10, f32 to 1e-5) for
every mode, stacked and bidirectional layers, batch_first, unbatched inputs,
given initial states, and the cells."""

import math

import numpy as np
import pytest
import torch

import harp
import harp.nn as nn


def pair(name, *args, dtype=np.float64, **kwargs):
    torch.manual_seed(len(name) + len(kwargs))
    t = getattr(torch.nn, name)(*args, **kwargs)
    h = getattr(nn, name)(*args, **kwargs)
    if dtype == np.float64:
        t, h = t.double(), h.double()
    h.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return t, h


def leaves(shape, dtype, seed):
    x = np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(dtype)
    return torch.tensor(x, requires_grad=True), harp.tensor(x, requires_grad=True)


def flat(value):
    return list(value) if isinstance(value, tuple) else [value]


def compare(t, h, t_inputs, h_inputs, dtype, call=lambda m, *a: m(*a)):
    tol = 1e-10 if dtype == np.float64 else 1e-5
    t_out = [v for item in flat(call(t, *t_inputs)) for v in flat(item)]
    h_out = [v for item in flat(call(h, *h_inputs)) for v in flat(item)]
    assert len(t_out) == len(h_out)
    for a, b in zip(h_out, t_out):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)
    weights = [np.random.default_rng(7 + i).uniform(0.5, 1.5, size=tuple(b.shape)).astype(dtype)
               for i, b in enumerate(t_out)]
    sum(((b * torch.tensor(w)).sum() for b, w in zip(t_out, weights))).backward()
    sum(((a * harp.tensor(w)).sum() for a, w in zip(h_out, weights)), harp.tensor(0.0, dtype=h_out[0].dtype)).backward()
    for (name, hp), (_, tp) in zip(h.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(hp.grad.numpy(), tp.grad.numpy(), rtol=tol, atol=tol,
                                   err_msg=name)
    for a, b in zip(h_inputs, t_inputs):
        if isinstance(a, harp.Tensor) and a.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,kwargs", [("RNN", {}), ("RNN", {"nonlinearity": "relu"}),
                                         ("LSTM", {}), ("GRU", {}),
                                         ("GRU", {"bias": False})])
def test_layer_matches_torch(name, kwargs):
    t, h = pair(name, 3, 4, **kwargs)
    tx, hx = leaves((3, 2, 3), np.float64, 1)  # [L, N, I]
    compare(t, h, [tx], [hx], np.float64)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_stacked_bidirectional_batch_first(name):
    t, h = pair(name, 3, 4, num_layers=2, bidirectional=True, batch_first=True)
    tx, hx = leaves((2, 3, 3), np.float64, 2)  # [N, L, I]
    compare(t, h, [tx], [hx], np.float64)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_given_initial_state_and_unbatched_input(name):
    t, h = pair(name, 3, 5, num_layers=2)
    th0, hh0 = leaves((2, 2, 5), np.float64, 3)
    tc0, hc0 = leaves((2, 2, 5), np.float64, 4)
    tx, hx = leaves((2, 2, 3), np.float64, 5)
    if name == "LSTM":
        compare(t, h, [tx, th0, tc0], [hx, hh0, hc0], np.float64,
                call=lambda m, x, h0, c0: m(x, (h0, c0)))
    else:
        compare(t, h, [tx, th0], [hx, hh0], np.float64)
    t, h = pair(name, 3, 5)
    tx, hx = leaves((4, 3), np.float64, 6)  # [L, I]
    compare(t, h, [tx], [hx], np.float64)


def test_float32():
    t, h = pair("LSTM", 6, 8, dtype=np.float32)
    tx, hx = leaves((3, 2, 6), np.float32, 8)
    compare(t, h, [tx], [hx], np.float32)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells(name):
    t, h = pair(name, 3, 4)
    tx, hx = leaves((2, 3), np.float64, 9)
    compare(t, h, [tx], [hx], np.float64)
    th, hh = leaves((2, 4), np.float64, 10)
    tc, hc = leaves((2, 4), np.float64, 11)
    t, h = pair(name, 3, 4)
    if name == "LSTMCell":
        compare(t, h, [tx, th, tc], [hx, hh, hc], np.float64,
                call=lambda m, x, a, b: m(x, (a, b)))
    else:
        compare(t, h, [tx, th], [hx, hh], np.float64)
    t, h = pair(name, 3, 4)
    tx, hx = leaves((3,), np.float64, 12)  # unbatched
    compare(t, h, [tx], [hx], np.float64)


@pytest.mark.parametrize("name,args,kwargs", [
    ("LSTM", (3, 4), {"num_layers": 2, "bidirectional": True}),
    ("GRU", (5, 2), {"bias": False}), ("RNN", (3, 6), {}),
    ("LSTMCell", (3, 4), {}), ("GRUCell", (2, 3), {}), ("RNNCell", (2, 3), {})])
def test_parameters_as_torch_names_shapes_and_bounds(name, args, kwargs):
    t = getattr(torch.nn, name)(*args, **kwargs)
    harp.manual_seed(0)
    h = getattr(nn, name)(*args, **kwargs)
    assert [(k, tuple(v.shape)) for k, v in h.named_parameters()] == \
        [(k, tuple(v.shape)) for k, v in t.named_parameters()]
    bound = 1 / math.sqrt(args[1])
    pooled = np.concatenate([v.numpy().ravel() for _, v in h.named_parameters()])
    assert np.all(np.abs(pooled) <= bound)
    # U(-b, b) has standard deviation b / sqrt(3).
    assert abs(pooled.std() / (bound / math.sqrt(3)) - 1) < 0.25
    assert repr(h) == repr(t)


def test_dropout_between_layers_only_in_training():
    t, h = pair("GRU", 3, 4, num_layers=2, dropout=0.5)
    x = np.random.default_rng(13).uniform(-1, 1, size=(3, 2, 3))
    h.eval()
    t.eval()
    np.testing.assert_allclose(h(harp.tensor(x))[0].numpy(),
                               t(torch.tensor(x))[0].detach().numpy(), rtol=1e-10, atol=1e-10)
    h.train()
    trained = h(harp.tensor(x))[0].numpy()
    assert np.abs(trained - t(torch.tensor(x))[0].detach().numpy()).max() > 1e-3


def test_errors_name_the_layer_and_shapes():
    lstm = nn.LSTM(3, 4)
    with pytest.raises(ValueError, match=r"LSTM: expected input \[L, N, 3\].*got \[2, 5, 2\]"):
        lstm(harp.zeros(2, 5, 2))
    with pytest.raises(ValueError, match=r"LSTM: expected hx \[1, 5, 4\], got \[1, 4\]"):
        lstm(harp.zeros(2, 5, 3), (harp.zeros(1, 4), harp.zeros(1, 4)))
    with pytest.raises(ValueError, match=r"GRUCell: expected a hidden state \[2, 4\], got \[4\]"):
        nn.GRUCell(3, 4)(harp.zeros(2, 3), harp.zeros(4))
    with pytest.raises(ValueError, match="proj_size is not supported"):
        nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="hidden_size must be a positive integer"):
        nn.GRU(3, 0)
    with pytest.raises(ValueError, match=r"dropout must be a number in \[0, 1\]"):
        nn.LSTM(3, 4, dropout=1.5)
