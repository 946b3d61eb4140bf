"""Trains a small CNN (conv, batch norm, pooling, dropout) on scikit-learn's
8x8 handwritten digits (shipped with Debian's python3-sklearn, no download)
with harp.nn and harp.optim, the way a PyTorch user writes it: gradients
come from the harp-autodiff pass, Adam's update is a compiled harp kernel.
Shows a progress bar per epoch, prints the test accuracy and the time per
training step next to the same model in PyTorch (same thread count), and
writes the loss and accuracy curves to examples/out/cnn_digits_*.png."""

import argparse
import os
import sys
import time

import numpy as np

import harp
import harp.nn as nn
import harp.nn.functional as F


def load(seed=0):
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # [N, 1, 8, 8]
    x = (x - x.mean()) / x.std()
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    return x[:split], y[:split], x[split:], y[split:]


def shift(batch, rng):
    """Moves each image by up to one pixel (zeros come in): augmentation."""
    out = np.zeros_like(batch)
    for i, (dy, dx) in enumerate(rng.integers(-1, 2, size=(len(batch), 2))):
        src = batch[i, :, max(0, -dy):8 - max(0, dy), max(0, -dx):8 - max(0, dx)]
        out[i, :, max(0, dy):max(0, dy) + src.shape[1], max(0, dx):max(0, dx) + src.shape[2]] = src
    return out


def model(lib):
    """The same network in harp.nn or torch.nn (`lib`)."""
    return lib.Sequential(
        lib.Conv2d(1, 32, 3, padding=1), lib.BatchNorm2d(32), lib.ReLU(),
        lib.Conv2d(32, 64, 3, padding=1), lib.BatchNorm2d(64), lib.ReLU(),
        lib.MaxPool2d(2), lib.Dropout(0.25), lib.Flatten(),
        lib.Linear(64 * 4 * 4, 128), lib.ReLU(), lib.Dropout(0.25),
        lib.Linear(128, 10))


def progress(epoch, epochs, done, total, loss, width=30):
    filled = int(width * done / total)
    sys.stdout.write("\repoch %2d/%d [%s%s] %3d/%d loss %.4f"
                     % (epoch, epochs, "#" * filled, "." * (width - filled), done, total, loss))
    sys.stdout.flush()


def accuracy(net, x, y, batch=120):
    net.eval()
    correct = 0
    for start in range(0, len(x), batch):
        logits = net(harp.tensor(x[start:start + batch]))
        correct += int((logits.argmax(dim=1).numpy() == y[start:start + batch]).sum())
    net.train()
    return correct / len(x)


def train_harp(x, y, xt, yt, epochs, batch, seed=0):
    harp.manual_seed(seed)
    net = model(nn)
    opt = harp.optim.Adam(net.parameters(), lr=2e-3)
    sched = harp.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    rng = np.random.default_rng(seed)
    steps = len(x) // batch
    history = {"loss": [], "train_acc": [], "test_acc": []}
    times = []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x))
        total = 0.0
        for step in range(steps):
            idx = order[step * batch:(step + 1) * batch]
            xb, yb = harp.tensor(shift(x[idx], rng)), harp.tensor(y[idx])
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = F.cross_entropy(net(xb), yb)
            loss.backward()
            # Read before the step: backward() computed it; afterwards the
            # parameters it depends on change and it would be recomputed.
            value = loss.item()
            opt.step()
            times.append(time.perf_counter() - t0)
            total += value
            progress(epoch, epochs, step + 1, steps, total / (step + 1))
        sched.step()
        history["loss"].append(total / steps)
        history["train_acc"].append(accuracy(net, x, y))
        history["test_acc"].append(accuracy(net, xt, yt))
        sys.stdout.write("  train %.1f%%  test %.1f%%\n"
                         % (100 * history["train_acc"][-1], 100 * history["test_acc"][-1]))
    return net, history, times


def time_torch(x, y, batch, steps, threads, seed=0):
    """Time per step of the same model, loss and optimizer in PyTorch."""
    import torch
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    net = model(torch.nn)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    rng = np.random.default_rng(seed)
    times = []
    for step in range(steps):
        idx = rng.integers(0, len(x), size=batch)
        xb, yb = torch.tensor(shift(x[idx], rng)), torch.tensor(y[idx])
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter() - t0)
    return times


def plot(history, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    epochs = range(1, len(history["loss"]) + 1)
    paths = []
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(epochs, history["loss"], marker="o")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss (cross entropy)")
    ax.set_title("harp: CNN on the digits")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(os.path.join(out_dir, "cnn_digits_loss.png"))
    fig.savefig(paths[-1], dpi=120)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(epochs, [100 * a for a in history["train_acc"]], marker="o", label="train")
    ax.plot(epochs, [100 * a for a in history["test_acc"]], marker="o", label="test")
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("harp: CNN on the digits")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(os.path.join(out_dir, "cnn_digits_accuracy.png"))
    fig.savefig(paths[-1], dpi=120)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    parser.add_argument("--min-accuracy", type=float, default=0.0,
                        help="exit with status 1 below this test accuracy")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch timing")
    args = parser.parse_args()

    x, y, xt, yt = load()
    print("digits: %d training and %d test images of 8x8; a CNN of %s"
          % (len(x), len(xt), "conv-bn-relu x2, max pool, dropout, 2 linear"))
    net, history, times = train_harp(x, y, xt, yt, args.epochs, args.batch)
    warm = times[len(times) // args.epochs:]  # the first epoch compiles
    step = float(np.median(warm))
    print("test accuracy %.2f%% after %d epochs" % (100 * history["test_acc"][-1], args.epochs))
    threads = harp.get_num_threads() if harp.get_options()["threads"] else 1
    print("harp:    %.2f ms per training step (median after the first epoch; %d thread%s)"
          % (1e3 * step, threads, "s" if threads > 1 else ""))
    if not args.no_torch:
        import torch
        torch_times = time_torch(x, y, args.batch, 60, threads)
        torch_step = float(np.median(torch_times[10:]))
        print("PyTorch: %.2f ms per training step (%d thread%s): harp takes %.2fx its time"
              % (1e3 * torch_step, torch.get_num_threads(),
                 "s" if torch.get_num_threads() > 1 else "", step / torch_step))
    for path in plot(history, args.out):
        print("wrote", os.path.relpath(path))
    if history["test_acc"][-1] < args.min_accuracy:
        print("test accuracy below %.1f%%" % (100 * args.min_accuracy))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
