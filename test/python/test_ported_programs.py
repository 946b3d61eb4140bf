"""Public PyTorch programs ported to harp as a PyTorch user would: each is
pytorch/examples' program (mnist, regression, vae, dcgan,
time_sequence_prediction, word_language_model) or nanoGPT's model and training loop
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

    def randn(self, *size, device=None):
        return self._torch.tensor(self._rng.standard_normal(size).astype(np.float32))

    def randint(self, high, size):
        return self._torch.tensor(self._rng.integers(0, high, size))


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
            # A buffer only one library's path registers (nanoGPT's causal
            # mask where there is no scaled_dot_product_attention) is not
            # loaded; every key harp's model has must be there.
            keys = model.state_dict().keys()
            model.load_state_dict({k: harp.tensor(v) for k, v in self.state.items()
                                   if k in keys})


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


# ---------------------------------------------------------------------------
# pytorch/examples/dcgan: a generator of transposed convolutions and a
# discriminator of strided ones, both with batch norm, trained against each
# other with BCELoss and Adam (`--ngf 8 --ndf 8 --nz 16 --batchSize 4` on
# its "fake" dataset: images of our own).


def dcgan(torch, nn, F, optim, init, iterations):
    nz, ngf, ndf, nc, batchSize = 16, 8, 8, 3, 4
    device = torch.device("cpu")
    torch = _Draws(torch, seed=5)

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            torch.nn.init.normal_(m.weight, 0.0, 0.02)
        elif classname.find('BatchNorm') != -1:
            torch.nn.init.normal_(m.weight, 1.0, 0.02)
            torch.nn.init.zeros_(m.bias)

    class Generator(nn.Module):
        def __init__(self, ngpu):
            super(Generator, self).__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
                nn.BatchNorm2d(ngf * 8),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 4),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 2),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
                nn.Tanh()
            )

        def forward(self, input):
            if input.is_cuda and self.ngpu > 1:
                output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            else:
                output = self.main(input)
            return output

    class Discriminator(nn.Module):
        def __init__(self, ngpu):
            super(Discriminator, self).__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ndf * 4),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ndf * 8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
                nn.Sigmoid()
            )

        def forward(self, input):
            if input.is_cuda and self.ngpu > 1:
                output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            else:
                output = self.main(input)
            return output.view(-1, 1).squeeze(1)

    images = np.random.default_rng(6).uniform(
        -1, 1, (iterations * batchSize, nc, 64, 64)).astype(np.float32)
    dataloader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(images)), batch_size=batchSize)
    netG = Generator(1).to(device)
    netG.apply(weights_init)
    netD = Discriminator(1).to(device)
    netD.apply(weights_init)
    init(nn.ModuleList([netG, netD]))
    criterion = nn.BCELoss()
    real_label = 1
    fake_label = 0
    optimizerD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    results = []
    for i, data in enumerate(dataloader, 0):
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = data[0].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label,
                           dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        noise = torch.randn(batch_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        results += [errD.item(), errG.item(), D_x, D_G_z1, D_G_z2]
    return results


@pytest.mark.heavy
def test_dcgan():
    _compare(dcgan, rtol=5e-4, atol=1e-6, iterations=3)


# ---------------------------------------------------------------------------
# pytorch/examples/word_language_model: an LSTM (nn.LSTM, two layers) or a
# transformer encoder (a subclass of nn.Transformer, a positional encoding
# written with slice assignment, a causal mask of log(tril)) over a word
# corpus, trained by hand (clip_grad_norm_, p.data.add_) and evaluated
# (`--emsize 16 --nhid 16 --bptt 8 --batch_size 4 --dropout 0`; the corpus
# a text file Debian ships instead of Wikitext-2).


def word_language_model(torch, nn, F, optim, init, model_type, batches):
    import math
    emsize, nhid, nlayers, nhead, bptt, batch_size, lr, clip = 16, 16, 2, 2, 8, 4, 20.0, 0.25

    class RNNModel(nn.Module):
        """Container module with an encoder, a recurrent module, and a decoder."""

        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
            super(RNNModel, self).__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type = rnn_type
            self.nhid = nhid
            self.nlayers = nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == 'LSTM':
                return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                        weight.new_zeros(self.nlayers, bsz, self.nhid))
            else:
                return weight.new_zeros(self.nlayers, bsz, self.nhid)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super(PositionalEncoding, self).__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer('pe', pe)

        def forward(self, x):
            x = x + self.pe[:x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Transformer):
        """Container module with an encoder, a recurrent or transformer module, and a decoder."""

        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
            super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                                                   num_encoder_layers=nlayers, dropout=dropout)
            self.model_type = 'Transformer'
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout, max_len=64)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def _generate_square_subsequent_mask(self, sz):
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                device = src.device
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    mask = self._generate_square_subsequent_mask(len(src)).to(device)
                    self.src_mask = mask
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask)
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)

    # data.Corpus over a text of Debian's: words of each line and <eos>.
    words = []
    with open("/usr/share/common-licenses/GPL-3") as text:
        for line in text.read().splitlines()[:60]:
            words += line.split() + ['<eos>']
    dictionary = {}
    ids = [dictionary.setdefault(w, len(dictionary)) for w in words]
    device = torch.device("cpu")

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        data = data.view(bsz, -1).t().contiguous()
        return data.to(device)

    train_data = batchify(torch.tensor(ids[:batches * bptt * batch_size + batch_size]), batch_size)
    val_data = batchify(torch.tensor(ids[-(2 * bptt * 3 + 3):]), 3)
    ntokens = len(dictionary)
    if model_type == 'Transformer':
        model = TransformerModel(ntokens, emsize, nhead, nhid, nlayers, 0.0).to(device)
    else:
        model = RNNModel(model_type, ntokens, emsize, nhid, nlayers, 0.0, False).to(device)
    init(model)
    criterion = nn.NLLLoss()

    def repackage_hidden(h):
        """Wraps hidden states in new Tensors, to detach them from their history."""
        if isinstance(h, torch.Tensor):
            return h.detach()
        else:
            return tuple(repackage_hidden(v) for v in h)

    def get_batch(source, i):
        seq_len = min(bptt, len(source) - 1 - i)
        data = source[i:i + seq_len]
        target = source[i + 1:i + 1 + seq_len].view(-1)
        return data, target

    def evaluate(data_source, eval_batch_size):
        model.eval()
        total_loss = 0.
        if model_type != 'Transformer':
            hidden = model.init_hidden(eval_batch_size)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i)
                if model_type == 'Transformer':
                    output = model(data)
                    output = output.view(-1, ntokens)
                else:
                    output, hidden = model(data, hidden)
                    hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    model.train()
    losses = []
    if model_type != 'Transformer':
        hidden = model.init_hidden(batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        if model_type == 'Transformer':
            output = model(data)
            output = output.view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    losses.append(evaluate(val_data, 3))
    return losses


@pytest.mark.heavy
@pytest.mark.parametrize("model_type", ["LSTM", "Transformer"])
def test_word_language_model(model_type):
    _compare(word_language_model, rtol=5e-4, atol=1e-6, model_type=model_type,
             batches=2)


# ---------------------------------------------------------------------------
# karpathy/nanoGPT: model.py's GPT (its own LayerNorm with an optional bias,
# causal self-attention over a tril buffer or scaled_dot_product_attention
# where the library has it, weight tying, the scaled init of c_proj) and
# train.py's loop (AdamW with decayed and undecayed groups, the warmup and
# cosine schedule set per group, gradient accumulation, clip_grad_norm_,
# zero_grad(set_to_none=True), estimate_loss under no_grad), with
# config/train_shakespeare_char.py's settings made small and its character
# data a text of Debian's. Left out: train.py's GradScaler lines (on the CPU
# torch's disables itself; harp has none yet: the mixed-precision issue).


def nanogpt(torch, nn, F, optim, init, iterations):
    import math
    from dataclasses import dataclass

    class LayerNorm(nn.Module):
        """ LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False """

        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):

        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head = config.n_head
            self.n_embd = config.n_embd
            self.dropout = config.dropout
            self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')
            if not self.flash:
                self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                     .view(1, 1, config.block_size, config.block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            if self.flash:
                y = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                    is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
                att = F.softmax(att, dim=-1)
                att = self.attn_dropout(att)
                y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            y = self.resid_dropout(self.c_proj(y))
            return y

    class MLP(nn.Module):

        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            x = self.c_fc(x)
            x = self.gelu(x)
            x = self.c_proj(x)
            x = self.dropout(x)
            return x

    class Block(nn.Module):

        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50304
        n_layer: int = 12
        n_head: int = 12
        n_embd: int = 768
        dropout: float = 0.0
        bias: bool = True

    class GPT(nn.Module):

        def __init__(self, config):
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith('c_proj.weight'):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size
            pos = torch.arange(0, t, dtype=torch.long, device=device)
            tok_emb = self.transformer.wte(idx)
            pos_emb = self.transformer.wpe(pos)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            param_dict = {pn: p for pn, p in self.named_parameters()}
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {'params': decay_params, 'weight_decay': weight_decay},
                {'params': nodecay_params, 'weight_decay': 0.0}
            ]
            optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)
            return optimizer

    # config/train_shakespeare_char.py, small, on characters of a Debian text.
    gradient_accumulation_steps, batch_size, block_size = 2, 4, 16
    n_layer, n_head, n_embd, dropout = 2, 2, 32, 0.0
    learning_rate, min_lr, warmup_iters, lr_decay_iters = 1e-3, 1e-4, 2, 6
    weight_decay, beta1, beta2, grad_clip, eval_iters = 1e-1, 0.9, 0.99, 1.0, 2
    text = open("/usr/share/common-licenses/GPL-3").read()[:4000]
    chars = sorted(list(set(text)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    train_ids = np.array([stoi[c] for c in text[:3600]], dtype=np.uint16)
    val_ids = np.array([stoi[c] for c in text[3600:]], dtype=np.uint16)
    torch = _Draws(torch, seed=9)
    device, device_type = 'cpu', 'cpu'

    def get_batch(split):
        data = train_ids if split == 'train' else val_ids
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([torch.from_numpy((data[i:i + block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
        x, y = x.to(device), y.to(device)
        return x, y

    model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                      bias=False, vocab_size=len(chars), dropout=dropout)
    gptconf = GPTConfig(**model_args)
    model = GPT(gptconf)
    init(model)
    model.to(device)
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)

    def estimate_loss():
        out = {}
        model.eval()
        with torch.no_grad():
            for split in ['train', 'val']:
                losses = torch.zeros(eval_iters)
                for k in range(eval_iters):
                    X, Y = get_batch(split)
                    logits, loss = model(X, Y)
                    losses[k] = loss.item()
                out[split] = losses.mean()
        model.train()
        return out

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        assert 0 <= decay_ratio <= 1
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (learning_rate - min_lr)

    results = []
    X, Y = get_batch('train')
    for iter_num in range(iterations):
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
        if iter_num == 0:
            losses = estimate_loss()
            results += [losses['train'].item(), losses['val'].item()]
        for micro_step in range(gradient_accumulation_steps):
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
            X, Y = get_batch('train')
            loss.backward()
        if grad_clip != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        results.append(loss.item() * gradient_accumulation_steps)
    logits, _ = model(X)
    results += list(logits.detach().numpy().ravel()[:8])
    return results


@pytest.mark.heavy
def test_nanogpt():
    _compare(nanogpt, rtol=5e-4, atol=1e-5, iterations=4)


@pytest.mark.parametrize("port", [regression, mnist, vae, dcgan,
                                  word_language_model, nanogpt])
def test_ports_read_only_the_torch_namespace(port):
    """The programs above name no harp function: everything comes through
    the `torch`, `nn`, `F` and `optim` they import (what a user changes is
    the import line)."""
    import inspect
    source = inspect.getsource(port)
    assert "harp" not in source and "real_torch" not in source
    assert isinstance(port, types.FunctionType)
