"""Trains a small causal transformer language model on the characters of
the GNU GPL version 3 (/usr/share/common-licenses/GPL-3, shipped by Debian's
base-files) with harp.nn and harp.optim, the way a PyTorch user writes it:
token and position embeddings, pre-norm TransformerEncoder layers under a
causal mask, a final LayerNorm and a linear head, cross entropy on the next
character, AdamW with a cosine schedule. The last 10% of the text is held
out for validation. Prints the training and validation loss at every
evaluation, the time per training step next to the same model in PyTorch
(same thread count), a sample generated from a fixed seed, and writes the
loss curves to examples/out/char_transformer_loss.png."""

import argparse
import math
import os
import sys
import time

import numpy as np

import harp
import harp.nn as nn
import harp.nn.functional as F

CORPUS = "/usr/share/common-licenses/GPL-3"


def load(path=CORPUS):
    """The text, its sorted alphabet, and the training and validation ids
    (the last 10% of the text)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = np.array([index[c] for c in text], np.int64)
    split = int(0.9 * len(ids))
    return text, chars, ids[:split], ids[split:]


def unigram_entropy(ids, vocab):
    """The entropy (nats) of the character frequencies: the loss of the
    best model that ignores context."""
    p = np.bincount(ids, minlength=vocab) / len(ids)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def bigram_loss(train, val, vocab, alpha=0.1):
    """The validation loss (nats) of next-character frequencies given the
    previous character, counted on the training text (add-alpha smoothed):
    what one character of context is worth."""
    counts = np.full((vocab, vocab), alpha)
    np.add.at(counts, (train[:-1], train[1:]), 1)
    p = counts / counts.sum(axis=1, keepdims=True)
    return float(-np.log(p[val[:-1], val[1:]]).mean())


def model(lib, vocab, context, d_model, heads, layers, dropout):
    """The same network in harp.nn or torch.nn (`lib`): the input is [N, T]
    character ids (T <= context), `mask` the [T, T] causal mask (True hides
    a later position); the output is [N, T, vocab] logits of the next
    character."""

    class CharTransformer(lib.Module):
        def __init__(self):
            super().__init__()
            self.tokens = lib.Embedding(vocab, d_model)
            self.positions = lib.Embedding(context, d_model)
            layer = lib.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model,
                                                dropout=dropout, batch_first=True,
                                                norm_first=True)
            self.encoder = lib.TransformerEncoder(layer, layers, norm=lib.LayerNorm(d_model))
            self.head = lib.Linear(d_model, vocab)

        def forward(self, x, positions, mask):
            h = self.tokens(x) + self.positions(positions)
            return self.head(self.encoder(h, mask=mask))

    return CharTransformer()


def causal_mask(length):
    """True above the diagonal: query i does not see key j > i."""
    return np.triu(np.ones((length, length), bool), k=1)


def windows(ids, starts, context):
    """Inputs [len(starts), context] and their next characters."""
    idx = np.asarray(starts)[:, None] + np.arange(context)
    return ids[idx], ids[idx + 1]


def progress(step, steps, done, total, loss, width=30):
    filled = int(width * done / total)
    sys.stdout.write("\rstep %4d/%d [%s%s] train loss %.4f"
                     % (step, steps, "#" * filled, "." * (width - filled), loss))
    sys.stdout.flush()


class Runner:
    """The harp model with the constant inputs each call needs."""

    def __init__(self, net, context):
        self.net = net
        self.context = context
        self.positions = harp.tensor(np.arange(context, dtype=np.int64))
        self.mask = harp.tensor(causal_mask(context))

    def logits(self, x):
        return self.net(harp.tensor(x), self.positions, self.mask)

    def loss(self, x, y):
        logits = self.logits(x)
        vocab = logits.shape[-1]
        return F.cross_entropy(logits.reshape(-1, vocab), harp.tensor(y.reshape(-1)))

    def evaluate(self, x, y):
        """The mean loss over windows x (eval mode: no dropout)."""
        self.net.eval()
        value = self.loss(x, y).item()
        self.net.train()
        return value


def train_harp(train, val, vocab, args):
    harp.manual_seed(args.seed)
    net = model(nn, vocab, args.context, args.d_model, args.heads, args.layers,
                args.dropout)
    run = Runner(net, args.context)
    opt = harp.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=0.01)
    sched = harp.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps, eta_min=args.lr / 10)
    rng = np.random.default_rng(args.seed)
    # Validation: the held-out text cut into consecutive windows, each
    # character predicted from the ones before it in its window.
    val_x, val_y = windows(val, np.arange(0, len(val) - args.context, args.context),
                           args.context)
    history = {"step": [], "train": [], "val": []}
    times = []
    total, count = 0.0, 0
    for step in range(1, args.steps + 1):
        x, y = windows(train, rng.integers(0, len(train) - args.context, size=args.batch),
                       args.context)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = run.loss(x, y)
        loss.backward()
        value = loss.item()  # before the step changes the parameters it reads
        opt.step()
        sched.step()
        times.append(time.perf_counter() - t0)
        total += value
        count += 1
        done = (step - 1) % args.eval_every + 1
        progress(step, args.steps, done, min(args.eval_every, args.steps), total / count)
        if step % args.eval_every == 0 or step == args.steps:
            history["step"].append(step)
            history["train"].append(total / count)
            history["val"].append(run.evaluate(val_x, val_y))
            sys.stdout.write("  val %.4f  %.1f ms/step\n"
                             % (history["val"][-1], 1e3 * float(np.median(times[-count:]))))
            total, count = 0.0, 0
    return net, run, history, times, (val_x, val_y)


def sample(run, chars, prompt, length, temperature, seed):
    """`length` characters after `prompt`, drawn from the model's softmax at
    `temperature` (0: the most likely one). The model always reads a full
    window of `context` characters, so one compiled graph serves every
    call: while the text is shorter, the window is padded after it with
    spaces, which the causal mask hides from the position read."""
    rng = np.random.default_rng(seed)
    index = {c: i for i, c in enumerate(chars)}
    ids = [index[c] for c in prompt]
    context = run.context
    pad = index.get(" ", 0)
    run.net.eval()
    for _ in range(length):
        window = ids[-context:]
        at = len(window) - 1
        x = np.array([window + [pad] * (context - len(window))], np.int64)
        # Index in NumPy: an index taken in harp would be part of the graph,
        # one compile per position.
        logits = run.logits(x).numpy()[0, at].astype(np.float64)
        if temperature <= 0:
            nxt = int(np.argmax(logits))
        else:
            p = np.exp((logits - logits.max()) / temperature)
            nxt = int(rng.choice(len(p), p=p / p.sum()))
        ids.append(nxt)
    run.net.train()
    return "".join(chars[i] for i in ids)


def torch_check(net, train, val_xy, vocab, args, threads):
    """The validation loss of harp's trained weights loaded into the same
    model in PyTorch, and PyTorch's time per training step (same thread
    count)."""
    import torch
    torch.manual_seed(args.seed)
    torch.set_num_threads(threads)
    tnet = model(torch.nn, vocab, args.context, args.d_model, args.heads, args.layers,
                args.dropout)
    tnet.load_state_dict({k: torch.tensor(v) for k, v in net.state_dict().items()})
    positions = torch.arange(args.context)
    mask = torch.tensor(causal_mask(args.context))

    def loss_of(x, y):
        logits = tnet(torch.tensor(x), positions, mask)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                                 torch.tensor(y.reshape(-1)))

    tnet.eval()
    with torch.no_grad():
        val_loss = float(loss_of(*val_xy))
    tnet.train()
    opt = torch.optim.AdamW(tnet.parameters(), lr=args.lr, weight_decay=0.01)
    rng = np.random.default_rng(args.seed)
    times = []
    for _ in range(40):
        x, y = windows(train, rng.integers(0, len(train) - args.context, size=args.batch),
                       args.context)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter() - t0)
    return val_loss, float(np.median(times[10:]))


def plot(history, entropy, bigram, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(history["step"], history["train"], marker="o", label="train (mean since the last evaluation)")
    ax.plot(history["step"], history["val"], marker="o", label="validation")
    ax.axhline(entropy, color="gray", linestyle="--", label="unigram entropy")
    ax.axhline(bigram, color="gray", linestyle=":", label="bigram model (validation)")
    ax.set_xlabel("step")
    ax.set_ylabel("cross entropy (nats per character)")
    ax.set_title("harp: character-level transformer on the GPL")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out_dir, "char_transformer_loss.png")
    fig.savefig(path, dpi=120)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample-length", type=int, default=300)
    parser.add_argument("--temperature", type=float, default=0.7,
                        help="sampling temperature (0: always the most likely character)")
    parser.add_argument("--max-val-loss", type=float, default=2.3,
                        help="exit with status 1 if the final validation loss is above this")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    parser.add_argument("--no-plot", action="store_true", help="write no PNG file")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    args = parser.parse_args()

    start = time.perf_counter()
    text, chars, train, val = load()
    vocab = len(chars)
    entropy = unigram_entropy(np.concatenate([train, val]), vocab)
    bigram = bigram_loss(train, val, vocab)
    print("%s: %d characters (%d distinct), %d for training and %d for validation"
          % (CORPUS, len(text), vocab, len(train), len(val)))
    print("without context: unigram entropy %.3f nats per character; a bigram model's "
          "validation loss %.3f" % (entropy, bigram))
    print("model: d_model %d, %d heads, %d layers, context %d, batch %d, %d steps"
          % (args.d_model, args.heads, args.layers, args.context, args.batch, args.steps))
    net, run, history, times, val_xy = train_harp(train, val, vocab, args)
    warm = times[min(len(times) - 1, 10):]  # the first steps compile
    step = float(np.median(warm))
    final = history["val"][-1]
    print("final loss: train %.4f, validation %.4f nats per character (unigram entropy %.3f, "
          "bigram %.3f)" % (history["train"][-1], final, entropy, bigram))
    print("harp:    %.2f ms per training step (median after the first 10)" % (1e3 * step))
    if not args.no_torch:
        import torch
        threads = os.cpu_count() if harp.get_options()["threads"] else 1
        torch_val, torch_step = torch_check(net, train, val_xy, vocab, args, threads)
        print("PyTorch: %.2f ms per training step (%d threads): harp takes %.2fx its time"
              % (1e3 * torch_step, torch.get_num_threads(), step / torch_step))
        print("PyTorch: validation loss %.4f with harp's trained weights" % torch_val)
    prompt = "The licenses for most software"
    print("sample (temperature %g, seed %d):" % (args.temperature, args.seed))
    print(sample(run, chars, prompt, args.sample_length, args.temperature, args.seed))
    if not args.no_plot:
        print("wrote", os.path.relpath(plot(history, entropy, bigram, args.out)))
    print("total %.1f s" % (time.perf_counter() - start))
    if not math.isfinite(final) or final > args.max_val_loss:
        print("validation loss %.4f above %.3f" % (final, args.max_val_loss))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
