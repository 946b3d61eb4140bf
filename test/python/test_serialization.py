"""harp.save / harp.load and pickling of tensors, modules and optimizer
state (harp/serialization.py), against what torch.save / torch.load give."""

import copy
import io
import pickle

import numpy as np
import pytest
import torch

import harp
import harp.nn as nn
import harp.optim as optim


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_,
                                   np.uint8, np.complex64])
def test_tensor_round_trip_keeps_values_dtype_shape(dtype, tmp_path):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal((3, 5)) * 4).astype(dtype)
    t = harp.tensor(values)
    path = tmp_path / "t.pt"
    harp.save(t, path)
    back = harp.load(path)
    assert isinstance(back, harp.Tensor)
    assert back.dtype == t.dtype and tuple(back.shape) == (3, 5)
    np.testing.assert_array_equal(back.numpy(), values)
    assert not back.requires_grad


def test_computed_tensor_is_saved_by_value_as_a_leaf():
    a = harp.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    b = (a * 2 + 1).sum(1)
    back = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(back.numpy(), [9.0, 27.0])
    assert back.is_leaf and back.requires_grad == b.requires_grad
    # A new leaf: its gradient is its own.
    back.requires_grad = True
    (back * back).sum().backward()
    np.testing.assert_array_equal(back.grad.numpy(), [18.0, 54.0])


def test_zero_d_empty_and_views():
    for t in (harp.tensor(3.5), harp.zeros(0, 4), harp.tensor(np.arange(12.0)).reshape(3, 4).t()):
        back = pickle.loads(pickle.dumps(t))
        assert tuple(back.shape) == tuple(t.shape)
        np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_deepcopy_is_independent():
    p = nn.Parameter(np.ones((2, 2), np.float32))
    q = copy.deepcopy(p)
    assert q is not p and q.requires_grad
    with harp.no_grad():
        p.add_(1.0)
    np.testing.assert_array_equal(q.numpy(), np.ones((2, 2)))
    # Shared references stay shared inside one deepcopy, as pickle's memo.
    pair = copy.deepcopy([p, p])
    assert pair[0] is pair[1]


def small_models():
    torch.manual_seed(0)
    tnet = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 5 * 5, 3))
    hnet = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 5 * 5, 3))
    hnet.load_state_dict({k: v.detach().numpy() for k, v in tnet.state_dict().items()})
    return tnet, hnet


def test_state_dict_checkpoint_matches_torch(tmp_path):
    tnet, hnet = small_models()
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 7)).astype(np.float32)
    path = tmp_path / "model.pt"
    harp.save(hnet.state_dict(), path)
    torch.save(tnet.state_dict(), tmp_path / "torch.pt")
    fresh = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 5 * 5, 3))
    state = harp.load(path, weights_only=True)
    assert list(state.keys()) == list(torch.load(tmp_path / "torch.pt").keys())
    fresh.load_state_dict(state)
    fresh.eval()
    tnet.eval()
    np.testing.assert_allclose(fresh(harp.tensor(x)).numpy(),
                               tnet(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_whole_module_and_optimizer_state_resume_training(tmp_path):
    # Save the module and Adam's state after two steps, load both, take the
    # third step: the same parameters as the run that never stopped.
    _, hnet = small_models()
    x = harp.tensor(np.random.default_rng(2).standard_normal((2, 3, 7, 7)).astype(np.float32))
    opt = optim.Adam(hnet.parameters(), lr=0.01)

    def step(net, o):
        o.zero_grad()
        net(x).square().sum().backward()
        o.step()

    for _ in range(2):
        step(hnet, opt)
    buffer = io.BytesIO()
    harp.save({"model": hnet, "optim": opt.state_dict()}, buffer)
    step(hnet, opt)
    buffer.seek(0)
    saved = harp.load(buffer)
    net2 = saved["model"]
    opt2 = optim.Adam(net2.parameters(), lr=0.01)
    opt2.load_state_dict(saved["optim"])
    step(net2, opt2)
    for (name, a), (_, b) in zip(hnet.state_dict().items(), net2.state_dict().items()):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-7,
                                   err_msg=name)


def test_map_location():
    t = harp.tensor([1.0, 2.0])
    data = pickle.dumps(t)
    for where in ("cpu", harp.device("cpu"), {"cpu": "cpu"}):
        back = harp.load(io.BytesIO(data), map_location=where)
        assert back.device == "cpu"
    seen = []

    def move(tensor, device):
        seen.append(device)
        return tensor * 2

    back = harp.load(io.BytesIO(data), map_location=move)
    assert seen == ["cpu"]
    np.testing.assert_array_equal(back.numpy(), [2.0, 4.0])
    with pytest.raises(harp.HarpError, match="map_location returned int"):
        harp.load(io.BytesIO(data), map_location=lambda t, d: 3)
    with pytest.raises(harp.HarpError, match="map_location must be"):
        harp.load(io.BytesIO(data), map_location=3)


class Danger:
    def __reduce__(self):
        return (print, ("unpickled code ran",))


def test_weights_only_refuses_other_objects():
    data = pickle.dumps({"w": harp.tensor([1.0]), "x": Danger()})
    with pytest.raises(harp.HarpError, match="weights_only=True refuses builtins.print"):
        harp.load(io.BytesIO(data), weights_only=True)
    assert harp.load(io.BytesIO(pickle.dumps([1, 2.5, "a", (np.arange(3),)])),
                     weights_only=True)[1] == 2.5


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(harp.HarpError, match="load: cannot open"):
        harp.load(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a pickle")
    with pytest.raises(harp.HarpError, match="load: not a file harp.save wrote"):
        harp.load(tmp_path / "junk.pt")
    with pytest.raises(harp.HarpError, match="save: f must be a path or a file object"):
        harp.save(harp.ones(1), 42)
