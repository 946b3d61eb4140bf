"""Trains a two-layer MLP on scikit-learn's handwritten digits (shipped with
Debian's python3-sklearn, no download) with harp: the model is built with
harp's Python API, gradients come from the harp-autodiff pass, and Adam runs
in NumPy. Prints the loss per epoch, the test accuracy, and the time per step
next to the same model in PyTorch."""

import argparse
import sys
import time

import numpy as np

import harp


def load(seed=0):
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    return x[:split], y[:split], x[split:], y[split:]


def init(rng, hidden=64):
    return [(rng.normal(size=(64, hidden)) * np.sqrt(2 / 64)).astype(np.float32),
            np.zeros((1, hidden), np.float32),
            (rng.normal(size=(hidden, 10)) * np.sqrt(1 / hidden)).astype(np.float32),
            np.zeros((1, 10), np.float32)]


def forward(params, x):
    w1, b1, w2, b2 = params
    return ((x @ w1 + b1).relu() @ w2) + b2


def cross_entropy(logits, onehot, n):
    # mean over the batch of -sum(onehot * log_softmax(logits))
    m = logits.max(axis=1, keepdim=True)
    shifted = logits - m
    lse = shifted.exp().sum(axis=1, keepdim=True).log()
    return ((lse - shifted) * onehot).sum() * (1.0 / n)


class Adam:
    def __init__(self, params, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            mh = m / (1 - self.b1 ** self.t)
            vh = v / (1 - self.b2 ** self.t)
            p -= self.lr * mh / (np.sqrt(vh) + self.eps)


def train_harp(x, y, epochs, batch, seed=0):
    rng = np.random.default_rng(seed)
    params = init(rng)
    opt = Adam(params)
    onehot = np.eye(10, dtype=np.float32)[y]
    steps, times = 0, []
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, len(x) - batch + 1, batch):
            idx = order[start:start + batch]
            t0 = time.perf_counter()
            ts = [harp.tensor(p) for p in params]
            for t in ts:
                t.requires_grad = True
            loss = cross_entropy(forward(ts, harp.tensor(x[idx])),
                                 harp.tensor(onehot[idx]), batch)
            loss.backward()
            opt.step(params, [t.grad.numpy() for t in ts])
            times.append(time.perf_counter() - t0)
            total += loss.item()
            steps += 1
        print("epoch %2d  loss %.4f" % (epoch + 1, total / (len(x) // batch)))
    return params, times


def accuracy(params, x, y):
    logits = forward([harp.tensor(p) for p in params], harp.tensor(x)).numpy()
    return float((logits.argmax(axis=1) == y).mean())


def torch_step_time(x, y, batch, steps=100):
    import torch
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    xt, yt = torch.tensor(x[:batch]), torch.tensor(y[:batch])
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return float(np.median(times[10:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--min-accuracy", type=float, default=0.95)
    args = ap.parse_args()
    xtr, ytr, xte, yte = load()
    print("digits: %d train, %d test, 64 features, 10 classes; MLP 64-64-10, Adam"
          % (len(xtr), len(xte)))
    params, times = train_harp(xtr, ytr, args.epochs, args.batch)
    acc = accuracy(params, xte, yte)
    harp_step = float(np.median(times[10:])) if len(times) > 10 else float(np.median(times))
    print("test accuracy %.2f%%" % (100 * acc))
    torch_step = torch_step_time(xtr, ytr, args.batch)
    print("time per step (batch %d, median): harp %.2f ms, PyTorch %.2f ms (1 thread)"
          % (args.batch, harp_step * 1e3, torch_step * 1e3))
    if acc < args.min_accuracy:
        sys.exit("accuracy %.4f is below %.2f" % (acc, args.min_accuracy))


if __name__ == "__main__":
    main()
