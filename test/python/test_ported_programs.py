"""Public PyTorch programs ported to harp as a PyTorch user would: each is
pytorch/examples' program (mnist, regression, vae, time_sequence_prediction)
written once over a `torch` namespace, so that the import line is the only
change, with data of our own instead of a download (sklearn's digits made
28 x 28, NumPy's sine waves and random batches). Each trains a few steps on
both sides from torch's initial weights and must match torch's losses.

Where the original draws random numbers inside the program (the VAE's
reparameterization noise, dropout), both sides draw them from one NumPy
stream (dropout is set to p=0): the draws are data, and the test compares
the arithmetic. Ported from the originals' code in pytorch/examples
(main.py / train.py of each directory), read, not copied: the structure,
layers, losses, optimizers and schedules are theirs."""

import types

import numpy as np
import pytest
import torch as real_torch

import harp

# ---------------------------------------------------------------------------
# The two libraries as the programs import them.


def _library(name):
    if name == "torch":
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim as optim
    else:
        import harp as torch
        import harp.nn as nn
        import harp.nn.functional as F
        import harp.optim as optim
    return torch, nn, F, optim


class _Draws:
    """A `torch` namespace whose random draws come from a NumPy stream
    shared by both sides (the rest is the library's own)."""

    def __init__(self, torch, seed):
        self._torch = torch
        self._rng = np.random.default_rng(seed)

    def __getattr__(self, name):
        return getattr(self._torch, name)

    def randn_like(self, t):
        values = self._rng.standard_normal(tuple(t.shape)).astype(
            np.float64 if t.dtype == self._torch.float64 else np.float32)
        return self._torch.tensor(values)


class _Weights:
    """Copies torch's initial weights into harp's model: `init(model)` is
    called by each program right after it builds its model."""

    def __init__(self):
        self.state = None

    def __call__(self, model):
        if self.state is None:  # torch's side: remember them
            self.state = {k: v.detach().clone().numpy()
                          for k, v in model.state_dict().items()}
        else:
            model.load_state_dict({k: harp.tensor(v) for k, v in self.state.items()})


def _no_dropout(model, nn):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0


def _digits28(count, seed=0):
    """sklearn's 8 x 8 digits as MNIST's 1 x 28 x 28 images in [0, 1]
    (each pixel a 3 x 3 block, a border of 2) and their labels."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    order = np.random.default_rng(seed).permutation(len(digits.images))[:count]
    images = np.kron(digits.images[order] / 16.0, np.ones((3, 3)))
    images = np.pad(images, ((0, 0), (2, 2), (2, 2)))[:, None].astype(np.float32)
    return images, digits.target[order].astype(np.int64)


def _compare(port, rtol, atol=0.0, **kwargs):
    """Runs `port` on torch, then on harp from torch's initial weights;
    returns both sides' losses after checking they agree."""
    weights = _Weights()
    real_torch.manual_seed(1)
    expected = port(*_library("torch"), init=weights, **kwargs)
    harp.manual_seed(1)
    got = port(*_library("harp"), init=weights, **kwargs)
    assert len(got) == len(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    return got, expected


# ---------------------------------------------------------------------------
# pytorch/examples/regression: a polynomial fitted by hand-written SGD on
# `param.data`.


def regression(torch, nn, F, optim, init, batches):
    POLY_DEGREE = 4
    rng = np.random.default_rng(7)
    W_target = torch.tensor(rng.standard_normal((POLY_DEGREE, 1)) * 5).float()
    b_target = torch.tensor(rng.standard_normal(1) * 5).float()

    def make_features(x):
        """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
        x = x.unsqueeze(1)
        return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)

    def f(x):
        """Approximated function."""
        return x.mm(W_target) + b_target.item()

    def get_batch(batch_size=32):
        """Builds a batch i.e. (x, f(x)) pair."""
        random = torch.tensor(rng.standard_normal(batch_size).astype(np.float32))
        x = make_features(random)
        y = f(x)
        return x, y

    fc = torch.nn.Linear(W_target.size(0), 1)
    init(fc)
    losses = []
    for batch_idx in range(1, batches + 1):
        batch_x, batch_y = get_batch()
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        losses.append(loss)
    return losses


def test_regression():
    got, _ = _compare(regression, rtol=1e-4, atol=1e-5, batches=12)
    assert got[-1] < got[0]


# ---------------------------------------------------------------------------
# pytorch/examples/mnist: a CNN with dropout trained by Adadelta with a
# StepLR schedule, then evaluated (summed NLL loss, accuracy).


def mnist(torch, nn, F, optim, init, epochs, batches, batch_size):

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(x)
            x = self.conv2(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.dropout2(x)
            x = self.fc2(x)
            output = F.log_softmax(x, dim=1)
            return output

    images, labels = _digits28(batches * batch_size + 2 * batch_size)
    images = (images - 0.1307) / 0.3081  # transforms.Normalize((0.1307,), (0.3081,))
    dataset = torch.utils.data.TensorDataset(torch.tensor(images[:batches * batch_size]),
                                             torch.tensor(labels[:batches * batch_size]))
    test_set = torch.utils.data.TensorDataset(torch.tensor(images[batches * batch_size:]),
                                              torch.tensor(labels[batches * batch_size:]))
    train_loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=batch_size)
    device = torch.device("cpu")
    model = Net().to(device)
    init(model)
    _no_dropout(model, nn)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    results = []
    for epoch in range(1, epochs + 1):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            results.append(loss.item())
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction='sum').item()
                pred = output.argmax(dim=1, keepdim=True)
                correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        results += [test_loss, correct]
        scheduler.step()
    return results


def test_mnist():
    got, expected = _compare(mnist, rtol=2e-4, atol=1e-5, epochs=2, batches=3,
                             batch_size=16)
    # The accuracies are counts: equal.
    assert got[4] == expected[4] and got[-1] == expected[-1]


# ---------------------------------------------------------------------------
# pytorch/examples/vae: a variational autoencoder on flattened images
# (reparameterization noise from the shared stream), Adam, the summed BCE
# plus KL divergence.


def vae(torch, nn, F, optim, init, batches, batch_size):

    class VAE(nn.Module):
        def __init__(self):
            super(VAE, self).__init__()
            self.fc1 = nn.Linear(784, 400)
            self.fc21 = nn.Linear(400, 20)
            self.fc22 = nn.Linear(400, 20)
            self.fc3 = nn.Linear(20, 400)
            self.fc4 = nn.Linear(400, 784)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar):
            std = torch.exp(0.5 * logvar)
            eps = torch.randn_like(std)
            return mu + eps * std

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return torch.sigmoid(self.fc4(h3))

        def forward(self, x):
            mu, logvar = self.encode(x.view(-1, 784))
            z = self.reparameterize(mu, logvar)
            return self.decode(z), mu, logvar

    torch = _Draws(torch, seed=3)
    images, _ = _digits28(batches * batch_size)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(images)), batch_size=batch_size)
    model = VAE()
    init(model)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)

    def loss_function(recon_x, x, mu, logvar):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
        KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return BCE + KLD

    model.train()
    losses = []
    for batch_idx, (data,) in enumerate(train_loader):
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        losses.append(loss.item() / len(data))
        optimizer.step()
    model.eval()
    with torch.no_grad():
        recon_batch, mu, logvar = model(torch.tensor(images[:batch_size]))
        losses.append(loss_function(recon_batch, torch.tensor(images[:batch_size]),
                                    mu, logvar).item())
    return losses


def test_vae():
    got, _ = _compare(vae, rtol=2e-4, batches=4, batch_size=24)
    assert got[3] < got[0]


# ---------------------------------------------------------------------------
# pytorch/examples/time_sequence_prediction: two LSTMCells and a linear
# layer unrolled over sine waves in float64, trained by LBFGS with a
# closure, then predicting the future under no_grad.


def time_sequence_prediction(torch, nn, F, optim, init, steps, length, future):

    class Sequence(nn.Module):
        def __init__(self):
            super(Sequence, self).__init__()
            self.lstm1 = nn.LSTMCell(1, 51)
            self.lstm2 = nn.LSTMCell(51, 51)
            self.linear = nn.Linear(51, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
            c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
            h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
            c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)

            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for i in range(future):  # if we should predict the future
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            outputs = torch.cat(outputs, dim=1)
            return outputs

    # generate_sine_wave.py's data, fewer and shorter waves.
    rs = np.random.RandomState(2)
    T, N = 20, 6
    x = np.empty((N, length), 'int64')
    x[:] = np.array(range(length)) + rs.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype('float64')
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    seq = Sequence()
    seq.double()
    init(seq)
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    losses = []
    for i in range(steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            losses.append(loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            losses.append(loss.item())
            y = pred.detach().numpy()
            assert y.shape == (3, length - 1 + future)
    return losses


@pytest.mark.heavy
def test_time_sequence_prediction():
    got, _ = _compare(time_sequence_prediction, rtol=1e-7, atol=1e-10, steps=2,
                      length=9, future=3)
    assert got[-1] < got[0]


@pytest.mark.parametrize("port", [regression, mnist, vae])
def test_ports_read_only_the_torch_namespace(port):
    """The programs above name no harp function: everything comes through
    the `torch`, `nn`, `F` and `optim` they import (what a user changes is
    the import line)."""
    import inspect
    source = inspect.getsource(port)
    assert "harp" not in source and "real_torch" not in source
    assert isinstance(port, types.FunctionType)
