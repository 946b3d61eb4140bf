#!/usr/bin/python3
"""harp's model-step benchmark: training steps of whole models, harp against
PyTorch eager, side by side in one run.

    /usr/bin/python3 bench/models.py [--only cnn,gpt] [--steps N]
        [--threads N|all] [--cpu PROFILE] [--no-cold] [--timeout S]
        [--json PATH]

Each model is written once, as a function of a library namespace (`L.nn`,
`L.F`, `L.T`: harp.nn, harp.nn.functional and harp, or torch.nn,
torch.nn.functional and torch). PyTorch's initial weights are loaded into
harp's model and both sides train on the same batches, so the losses of
the first steps must agree. Every model runs in a subprocess of its own:
first with harp's disk cache pointed at an empty directory (the first
step's time is "cold": it compiles everything), then in a fresh process on
the now-filled directory ("warm": a first step served from the disk cache).
The first process also times the steps of both sides and profiles harp's
kernels. See bench/README.md.
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
BUILD = os.path.join(ROOT, "build")
PYTHON_DIR = os.path.join(BUILD, "python")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, BENCH)
from run import fmt_time  # noqa: E402  (bench/run.py: the suite's formats)

BATCHES = 4        # distinct batches, cycled
LOSS_STEPS = 3     # steps whose losses are compared
WARMUP = 2         # more untimed steps after those
RTOL = 1e-3        # f32 loss agreement
MODEL_ORDER = ["cnn", "resnet", "gpt", "transformer", "mlp", "textcnn",
               "mixer", "mobilenet"]

#===------------------------------------------------------------------------===#
# The models, each written once over a library namespace
#===------------------------------------------------------------------------===#


class Lib:
    """nn, F (functional) and T (the tensor namespace) of harp or torch."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch
            self.T, self.nn, self.F = torch, torch.nn, torch.nn.functional
        else:
            import harp
            import harp.nn.functional
            self.T, self.nn, self.F = harp, harp.nn, harp.nn.functional

    def tensor(self, array):
        if self.name == "torch":
            return self.T.from_numpy(array)
        return self.T.tensor(array)


def no_dropout(net, L):
    """Dropout's masks are random and differ between the libraries: p = 0
    on both sides keeps their losses comparable."""
    for m in net.modules():
        if isinstance(m, L.nn.Dropout):
            m.p = 0.0
    return net


def cnn(L):
    """The main job's CNN (examples/cnn_digits.py), dropout set to 0."""
    from cnn_digits import model
    return no_dropout(model(L.nn), L)


def resnet(L):
    nn, F = L.nn, L.F

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1,
                                   bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                    nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.layer1 = BasicBlock(16, 16)
            self.layer2 = BasicBlock(16, 32, stride=2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(32, classes)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer2(self.layer1(out))
            return self.fc(self.pool(out).flatten(1))

    return ResNet()


def gpt(L, vocab=256, block_size=64, n_embd=128, n_head=4, n_layer=2):
    """A GPT decoder as nanoGPT writes it (dropout 0, tied lm_head)."""
    nn, F, T = L.nn, L.F, L.T

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.n_head = n_head
            self.n_embd = n_embd
            self.register_buffer("bias", T.tril(T.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size))

        def forward(self, x):
            B, Tn, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, Tn, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, Tn, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, Tn, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :Tn, :Tn] == 0,
                                  float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, Tn, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, n_embd),
                wpe=nn.Embedding(block_size, n_embd),
                h=nn.ModuleList([Block() for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # tied
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0,
                                    std=0.02 / math.sqrt(2 * n_layer))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx):
            b, t = idx.size()
            pos = T.arange(0, t, dtype=T.int64)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            return self.lm_head(x)

    return GPT()


def transformer(L):
    nn = L.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d_model=128, nhead=4,
                                               dim_feedforward=256,
                                               dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            return self.head(self.encoder(x).mean(dim=1))

    return Encoder()


def mlp(L):
    nn = L.nn
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(),
                         nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 10))


def textcnn(L, vocab=500, dim=64, filters=96, width=5, classes=4):
    nn, F = L.nn, L.F

    class TextCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, dim)
            self.conv = nn.Conv1d(dim, filters, width)
            self.fc = nn.Linear(filters, classes)

        def forward(self, tokens):
            x = self.embedding(tokens).transpose(1, 2)    # [B, dim, length]
            x = F.relu(self.conv(x))
            # max over time, as the original program writes it
            x = F.max_pool1d(x, x.size(2)).squeeze(2)
            return self.fc(x)

    return TextCNN()


def mixer(L, patches=49, patch_dim=16, channels=64, classes=10):
    nn = L.nn

    class MixerBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(channels)
            self.token_mlp = nn.Sequential(nn.Linear(patches, 2 * patches),
                                           nn.GELU(),
                                           nn.Linear(2 * patches, patches))
            self.norm2 = nn.LayerNorm(channels)
            self.channel_mlp = nn.Sequential(nn.Linear(channels, 2 * channels),
                                             nn.GELU(),
                                             nn.Linear(2 * channels, channels))

        def forward(self, x):                                  # [B, 49, 64]
            x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.channel_mlp(self.norm2(x))

    class Mixer(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Linear(patch_dim, channels)
            self.blocks = nn.Sequential(MixerBlock(), MixerBlock())
            self.head = nn.Linear(channels, classes)

        def forward(self, img):                                # [B, 1, 28, 28]
            b = img.size(0)
            x = img.view(b, 7, 4, 7, 4).permute(0, 1, 3, 2, 4).reshape(b, 49, 16)
            x = self.blocks(self.patch(x))
            return self.head(x.mean(dim=1))

    return Mixer()


def mobilenet(L):
    nn = L.nn

    def separable(cin, cout, stride):
        return [nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin,
                          bias=False), nn.BatchNorm2d(cin), nn.ReLU(),
                nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout),
                nn.ReLU()]

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(16), nn.ReLU(),
        *separable(16, 32, 1), *separable(32, 64, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def images(rng, batch, shape, classes):
    x = rng.standard_normal((batch,) + shape).astype("float32")
    return x, rng.integers(0, classes, size=batch)


def tokens_next(rng, batch, length, vocab):
    seq = rng.integers(0, vocab, size=(batch, length + 1))
    return seq[:, :-1].copy(), seq[:, 1:].copy()


def tokens_class(rng, batch, length, vocab, classes):
    return (rng.integers(0, vocab, size=(batch, length)),
            rng.integers(0, classes, size=batch))


def ce(L, out, y):
    return L.F.cross_entropy(out, y)


def ce_tokens(L, logits, y):
    return L.F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))


# name: (build, data(rng), loss, optimizer(L, params), description)
MODELS = {
    "cnn": (cnn, lambda r: images(r, 64, (1, 8, 8), 10), ce,
            lambda L, p: L.T.optim.Adam(p, lr=2e-3),
            "examples/cnn_digits.py's CNN, 1x8x8, batch 64, Adam"),
    "resnet": (resnet, lambda r: images(r, 32, (3, 32, 32), 10), ce,
               lambda L, p: L.T.optim.SGD(p, lr=0.05, momentum=0.9),
               "ResNet: stem + 2 basic blocks (16->32, stride 2), 3x32x32, "
               "batch 32, SGD momentum"),
    "gpt": (gpt, lambda r: tokens_next(r, 16, 64, 256), ce_tokens,
            lambda L, p: L.T.optim.AdamW(p, lr=1e-3),
            "nanoGPT-style decoder, 2 layers, 128 wide, 4 heads, T 64, "
            "batch 16, vocab 256, AdamW"),
    "transformer": (transformer, lambda r: images(r, 16, (64, 128), 10), ce,
                    lambda L, p: L.T.optim.Adam(p, lr=1e-3),
                    "nn.TransformerEncoder, 2 layers, d 128, 4 heads, ff 256, "
                    "[16, 64, 128], Adam"),
    "mlp": (mlp, lambda r: images(r, 256, (784,), 10), ce,
            lambda L, p: L.T.optim.SGD(p, lr=0.01),
            "MLP 784-1024-1024-10, batch 256, SGD"),
    "textcnn": (textcnn, lambda r: tokens_class(r, 64, 80, 500, 4), ce,
                lambda L, p: L.T.optim.Adam(p, lr=1e-3),
                "TextCNN: embedding 500x64, conv1d 64->96 k5, max over time, "
                "batch 64 x 80, Adam"),
    "mixer": (mixer, lambda r: images(r, 64, (1, 28, 28), 10), ce,
              lambda L, p: L.T.optim.Adam(p, lr=1e-3),
              "MLP-Mixer: 49 patches of 16 -> 64, 2 blocks, batch 64, Adam"),
    "mobilenet": (mobilenet, lambda r: images(r, 32, (3, 32, 32), 10), ce,
                  lambda L, p: L.T.optim.SGD(p, lr=0.05, momentum=0.9),
                  "depthwise-separable CNN 3->16->32->64, 3x32x32, batch 32, "
                  "SGD momentum"),
}

#===------------------------------------------------------------------------===#
# The worker: one model, one process
#===------------------------------------------------------------------------===#


def emit(**fields):
    """One partial result for the driver (a timeout keeps what came)."""
    print("@@ " + json.dumps(fields), flush=True)


class Trainer:
    def __init__(self, L, key, net, batches):
        build, data, loss, optim, _ = MODELS[key]
        self.L, self.net, self.loss = L, net, loss
        self.opt = optim(L, list(net.parameters()))
        self.batches = [(L.tensor(x), L.tensor(y)) for x, y in batches]
        self.i = 0

    def step(self):
        x, y = self.batches[self.i % len(self.batches)]
        self.i += 1
        self.opt.zero_grad()
        loss = self.loss(self.L, self.net(x), y)
        loss.backward()
        # harp: read before the step (backward computed it), as
        # examples/cnn_digits.py does; torch: the same value either way.
        value = loss.item()
        self.opt.step()
        return value


# Longer than the time an OpenMP runtime's idle workers spin before they
# sleep (libomp's KMP_BLOCKTIME default, 200 ms; libgomp's is shorter).
SPIN_PAUSE_S = 0.3


def blocks(steps, size=5):
    """`steps` split into blocks of at most `size`."""
    return [min(size, steps - i) for i in range(0, steps, size)]


def timed(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def worker(key, steps, threads, mode, profile_steps):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    build = MODELS[key][0]
    rng = np.random.default_rng(0)
    batches = [MODELS[key][1](rng) for _ in range(BATCHES)]
    batches = [(x, y.astype(np.int64)) for x, y in batches]

    torch.manual_seed(0)
    T = Lib("torch")
    tnet = build(T)
    tnet.train()
    state = {k: v.detach().numpy().copy() for k, v in tnet.state_dict().items()}

    if mode == "full":
        ttr = Trainer(T, key, tnet, batches)
        tlosses = [ttr.step() for _ in range(LOSS_STEPS)]
        for _ in range(WARMUP):
            ttr.step()

    import harp
    harp.set_num_threads(threads)
    H = Lib("harp")
    harp.manual_seed(0)
    hnet = build(H)
    hnet.train()
    hnet.load_state_dict(state)
    tr = Trainer(H, key, hnet, batches)
    before = harp.compile_stats()
    t0 = time.perf_counter()
    first_loss = tr.step()
    first = time.perf_counter() - t0
    after = harp.compile_stats()
    # The second step compiles what the first only built: the optimizer's
    # update, realized when the next forward reads the parameters.
    t0 = time.perf_counter()
    second_loss = tr.step()
    second = time.perf_counter() - t0
    final = harp.compile_stats()
    emit(harp_first={"seconds": first, "loss": first_loss,
                     "stats": {k: after[k] - before.get(k, 0) for k in after},
                     "second_seconds": second,
                     "second_stats": {k: final[k] - after.get(k, 0)
                                      for k in final}})
    if mode != "full":
        return
    losses = [first_loss, second_loss] + [tr.step()
                                          for _ in range(LOSS_STEPS - 2)]
    for _ in range(WARMUP):
        tr.step()
    compiles = harp.compile_stats()["compiles"]
    # The two sides' steps alternate, so that a change in what else the
    # machine runs (a shared VM's neighbours) moves both medians alike.
    ttimes, times = [], []
    if threads == 1:
        for _ in range(steps):
            ttimes += timed(ttr.step, 1)
            times += timed(tr.step, 1)
    else:
        # With threads each side has its own thread pool (PyTorch's
        # OpenMP, harp's), whose workers spin for a while after each
        # parallel region before they sleep (libomp: 200 ms). Alternated
        # step by step, one side's spinning workers take the cores the
        # other's need: on 2 cores harp's MLP step read 23.9 ms against
        # 9.5 ms alone. So the sides alternate in blocks, each after a
        # pause longer than the other's spin, its first step untimed.
        for block in blocks(steps):
            for side, out in ((ttr, ttimes), (tr, times)):
                time.sleep(SPIN_PAUSE_S)
                side.step()
                out += timed(side.step, block)
    emit(torch={"losses": tlosses, "times": ttimes,
                "median_s": statistics.median(ttimes),
                "threads": torch.get_num_threads()})
    emit(harp={"losses": losses, "times": times,
               "median_s": statistics.median(times),
               "compiles_while_timed": harp.compile_stats()["compiles"] - compiles})
    if profile_steps <= 0:
        return
    # Profiled code is compiled separately (the option is part of the cache
    # key): one untimed step compiles it, then the profiled steps.
    harp.set_options(profile=True)
    tr.step()
    tr.step()
    harp.reset_profile()
    wall = sum(timed(tr.step, profile_steps))
    rows = [dict(kernel=r["kernel"], calls=int(r["calls"]),
                 seconds=float(r["seconds"])) if isinstance(r, dict) else
            dict(kernel=r[0], calls=int(r[1]), seconds=float(r[2]))
            for r in harp.profile()]
    harp.set_options(profile=False)
    emit(profile={"steps": profile_steps, "wall_s": wall, "rows": rows})


#===------------------------------------------------------------------------===#
# The driver
#===------------------------------------------------------------------------===#

T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:5.0f} s] {msg}", file=sys.stderr, flush=True)


def run_worker(key, args, env, mode):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", key, "--mode",
           mode, "--steps", str(args.steps), "--threads", str(args.nthreads),
           "--profile-steps", str(args.profile_steps)]
    out, err, result = "", "", {}
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=args.timeout)
        out, err = p.stdout, p.stderr
        if p.returncode:
            result["error"] = f"exit status {p.returncode}"
    except subprocess.TimeoutExpired as e:
        dec = lambda s: (s.decode(errors="replace") if isinstance(s, bytes)
                         else s or "")
        out, err = dec(e.stdout), dec(e.stderr)
        result["error"] = f"timed out after {args.timeout} s"
        result["timeout"] = True
    result["process_s"] = time.perf_counter() - t0
    for line in out.splitlines():
        if line.startswith("@@ "):
            fields = json.loads(line[3:])
            if "note" in fields:
                result.setdefault("notes", []).append(fields.pop("note"))
            result.update(fields)
    if "error" in result:
        # The last lines of stderr say why (a Python traceback's last line
        # names the exception).
        tail = [l for l in err.strip().splitlines() if l.strip()]
        result["stderr_tail"] = tail[-15:]
        reason = next((l for l in reversed(tail) if re.match(
            r"^[\w.]*(Error|Exception|error)\b", l.strip())), None)
        result["reason"] = (reason or (tail[-1] if tail else "")).strip()
    return result


def copy_bandwidth():
    """GB/s of a NumPy copy of 2^25 floats (read + write), best of 5."""
    import numpy as np
    src = np.ones(1 << 25, np.float32)
    dst = np.empty_like(src)
    best = min(timed(lambda: np.copyto(dst, src), 5))
    return 2 * src.nbytes / best * 1e-9


def fma_peak(march, threads):
    """GFLOP/s of bench/roofline.c's multiply-add chains compiled for
    `march` on `threads` threads (None where no C compiler runs)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    with tempfile.TemporaryDirectory(prefix="harp-models-roofline-") as tmp:
        exe = os.path.join(tmp, "roofline")
        built = subprocess.run([cc, "-O3", f"-march={march}", "-fopenmp", "-o",
                                exe, os.path.join(ROOT, "bench", "roofline.c")],
                               capture_output=True)
        if built.returncode:
            return None
        ran = subprocess.run([exe, str(1 << 20), "3", "1"], capture_output=True,
                             text=True, env=dict(os.environ,
                                                 OMP_NUM_THREADS=str(threads)))
        if ran.returncode:
            return None
        return json.loads(ran.stdout)["fma"]["gflops"]


def machine(args):
    import numpy as np
    import torch
    cpu, flags, mhz = "unknown", "", None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and cpu == "unknown":
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = line
            elif line.startswith("cpu MHz") and mhz is None:
                mhz = float(line.split(":", 1)[1])
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always",
                             "--dirty"], capture_output=True, text=True)
    return {"cpu": cpu, "cores": os.cpu_count(),
            "avx512f": " avx512f" in flags, "cpu_mhz": mhz,
            "profile": args.cpu or "native", "threads": args.nthreads,
            "torch": torch.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0],
            "harp_commit": commit.stdout.strip(),
            "date": time.strftime("%Y-%m-%d %H:%M")}


FLOPS = re.compile(r" \(([0-9.]+) ([kMGTP]?)flop\)")
PREFIX = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
WRITES = re.compile(r"memref<([0-9x?]+)x(f32|f64|i64|i32|i8|i1|i16|f16|bf16)>")
BYTES = {"f32": 4, "f64": 8, "i64": 8, "i32": 4, "i16": 2, "f16": 2,
         "bf16": 2, "i8": 1, "i1": 1}


def written_bytes(kernel):
    """Bytes of the buffers a profile row says its kernel writes (None when
    a dim is dynamic or nothing is named)."""
    part = kernel.split("writes", 1)
    if len(part) < 2:
        return None
    total = 0
    for dims, ty in WRITES.findall(part[1].split(" at ")[0]):
        if "?" in dims:
            return None
        total += math.prod(int(d) for d in dims.split("x")) * BYTES[ty]
    for ty in re.findall(r"memref<(f32|f64|i64|i32)>", part[1].split(" at ")[0]):
        total += BYTES[ty]
    return total or None


def kernel_flops(kernel):
    """The floating-point operations a profile row says its kernel does per
    call (harp-profile-kernels counts them where its loops are static)."""
    m = FLOPS.search(kernel)
    return float(m.group(1)) * PREFIX[m.group(2)] if m else None


def print_profile(res, copy_gbps, top, fma_gflops=None):
    prof = res.get("profile")
    if not prof:
        return
    steps, wall = prof["steps"], prof["wall_s"]
    rows = prof["rows"]
    whole = [r for r in rows if "(whole call)" in r["kernel"]]
    kernels = [r for r in rows if "(whole call)" not in r["kernel"]]
    in_calls = sum(r["seconds"] for r in whole)
    in_kernels = sum(r["seconds"] for r in kernels)
    calls = sum(r["calls"] for r in whole) / steps
    print(f"  harp profile over {steps} step(s): {wall / steps * 1e3:.3g} ms "
          f"per profiled step; {calls:.0f} compiled-function calls per step "
          f"take {100 * in_calls / wall:.0f}% of it, the {len(kernels)} kernel "
          f"rows inside them {100 * in_kernels / wall:.0f}%")
    # A kernel's roofline is the larger of its two bounds: the bytes it
    # writes at the copy's bandwidth, its flops at the FMA peak.
    flops_total = sum(kernel_flops(r["kernel"]) * r["calls"]
                      for r in kernels if kernel_flops(r["kernel"]))
    if fma_gflops:
        print(f"    flops counted: {flops_total / steps * 1e-9:.3g} GFLOP per "
              f"step, {flops_total / max(in_kernels, 1e-12) * 1e-9:.3g} "
              f"GFLOP/s over the kernels' time ({100 * flops_total / max(in_kernels, 1e-12) * 1e-9 / fma_gflops:.0f}% "
              f"of the FMA peak, {fma_gflops:.0f} GFLOP/s)")
    print(f"    {'ms/call':>8} {'calls/st':>8} {'%step':>6} {'MB wr':>7} "
          f"{'GB/s wr':>7} {'%copy':>6} {'GFLOP/s':>7} {'%FMA':>5} "
          f"{'%roof':>5}  kernel")
    for r in sorted(kernels, key=lambda r: -r["seconds"])[:top]:
        per_call = r["seconds"] / max(r["calls"], 1)
        b = written_bytes(r["kernel"])
        gbps = b / per_call * 1e-9 if b and per_call > 0 else None
        flops = kernel_flops(r["kernel"])
        gflops = flops / per_call * 1e-9 if flops and per_call > 0 else None
        copy = gbps / copy_gbps if gbps else None
        fma = gflops / fma_gflops if gflops and fma_gflops else None
        roof = max(x for x in (copy, fma, 0) if x is not None)
        name = r["kernel"]
        if len(name) > 110:
            name = name[:107] + "..."
        print(f"    {per_call * 1e3:8.3f} {r['calls'] / steps:8.1f} "
              f"{100 * r['seconds'] / wall:5.1f}% "
              f"{(b / 1e6 if b else 0):7.2f} "
              f"{(f'{gbps:7.2f}' if gbps else '      -')} "
              f"{(f'{100 * copy:5.1f}%' if copy else '     -')} "
              f"{(f'{gflops:7.1f}' if gflops else '      -')} "
              f"{(f'{100 * fma:4.0f}%' if fma else '    -')} "
              f"{(f'{100 * roof:4.0f}%' if roof else '    -')}  {name}")


def agree(h, t):
    if not h or not t or len(h) != len(t):
        return None
    return all(abs(a - b) <= RTOL * abs(b) + 1e-6 for a, b in zip(h, t))


def print_model(key, res, copy_gbps, top, fma_gflops=None):
    print(f"\n== {key}: {MODELS[key][4]} ==")
    torch, harp = res.get("torch"), res.get("harp")
    cold, warm = res.get("cold_first"), res.get("warm_first")
    plain = res.get("first")
    if res.get("timeout"):
        stage = ("before PyTorch's steps finished" if not torch else
                 "in harp's first step (compiling)" if not (cold or plain) else
                 "in harp's later steps" if not harp else
                 "while profiling harp")
        print(f"  {res['error']} {stage}")
    elif res.get("error"):
        print(f"  harp: {res['error']}: {res.get('reason', '')}")
    for note in res.get("notes", []):
        print(f"  note: {note}")
    if torch:
        print(f"  torch losses (first {LOSS_STEPS}): "
              + " ".join(f"{v:.6f}" for v in torch["losses"]))
    if harp:
        print(f"  harp  losses (first {LOSS_STEPS}): "
              + " ".join(f"{v:.6f}" for v in harp["losses"]))
        ok = res.get("agree")
        if ok:
            worst = max(abs(a - b) / max(abs(b), 1e-12)
                        for a, b in zip(harp["losses"], torch["losses"]))
            print(f"  losses agree (rtol {RTOL:g}; largest relative "
                  f"difference {worst:.2g})")
        else:
            print(f"  !!!!!! LOSSES DISAGREE (rtol {RTOL:g}) !!!!!!")
    if torch and harp:
        print(f"  step (median of {len(harp['times'])}): torch "
              f"{fmt_time(torch['median_s'])}, harp {fmt_time(harp['median_s'])}"
              f", harp speed {torch['median_s'] / harp['median_s']:.2f}x"
              + (f"; harp compiled {harp['compiles_while_timed']} graphs "
                 "during the timed steps" if harp["compiles_while_timed"]
                 else ""))
    elif torch:
        print(f"  step: torch {fmt_time(torch['median_s'])} (median), harp -")
    for label, first in (("cold disk cache", cold), ("warm disk cache", warm),
                         ("disk cache as it was (--no-cold)", plain)):
        if first:
            st = first.get("stats", {})
            print(f"  harp first step, {label}: "
                  f"{fmt_time(first['seconds'])} ({st.get('compiles', '?')} "
                  f"compiles, {st.get('disk_hits', '?')} disk hits; whole "
                  f"process {fmt_time(first.get('process_s'))})")
            if "second_seconds" in first:
                st2 = first.get("second_stats", {})
                print(f"  harp second step, {label}: "
                      f"{fmt_time(first['second_seconds'])} "
                      f"({st2.get('compiles', '?')} compiles, "
                      f"{st2.get('disk_hits', '?')} disk hits)")
    if res.get("warm_error"):
        print(f"  harp warm run: {res['warm_error']}")
    print_profile(res, copy_gbps, top, fma_gflops)


def print_table(results, facts):
    head = ("model", "torch step", "harp step", "harp speed",
            "harp 1st cold", "2nd", "warm", "losses agree")
    lines, speeds = [], []
    for key, res in results.items():
        t, h = res.get("torch"), res.get("harp")
        speed = t["median_s"] / h["median_s"] if t and h else None
        if speed:
            speeds.append(speed)
        cold = res.get("cold_first", res.get("first", {})).get("seconds")
        second = res.get("cold_first", res.get("first", {})).get(
            "second_seconds")
        warm = res.get("warm_first", {}).get("seconds")
        ok = res.get("agree")
        agree_cell = ("yes" if ok else "NO" if ok is False else
                      ("timeout" if res.get("timeout") else "failed"))
        cold_cell = fmt_time(cold) if cold is not None else (
            "timeout" if res.get("timeout") else "-")
        lines.append((key, fmt_time(t["median_s"]) if t else "-",
                      fmt_time(h["median_s"]) if h else
                      ("timeout" if res.get("timeout") else "FAILED"),
                      f"{speed:.2f}x" if speed else "-", cold_cell,
                      fmt_time(second) if second is not None else "-",
                      fmt_time(warm) if warm is not None else "-", agree_cell))
    widths = [max(len(str(l[i])) for l in lines + [head])
              for i in range(len(head))]
    print(f"\n== summary: {facts['threads']} thread(s), profile "
          f"{facts['profile']} ==")
    if facts.get("no_cold"):
        print("(--no-cold: the cold column is the first step on the disk "
              "cache as it was)")
    for line in [head, tuple("-" * w for w in widths)] + lines:
        print("  ".join(str(v).ljust(w) for v, w in zip(line, widths)).rstrip())
    if speeds:
        geo = math.exp(sum(math.log(s) for s in speeds) / len(speeds))
        print(f"geometric mean of harp speed (torch step / harp step) over "
              f"{len(speeds)} model(s): {geo:.2f}x")
        return geo
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated models: "
                    + ",".join(MODEL_ORDER))
    ap.add_argument("--steps", type=int, default=20, help="timed steps (20)")
    ap.add_argument("--threads", default="1",
                    help="threads for both sides: a number or 'all' (1)")
    ap.add_argument("--cpu", default="",
                    help="harp's code for this profile (HARP_CPU); PyTorch "
                         "held to its ISA (ATEN_CPU_CAPABILITY)")
    ap.add_argument("--no-cold", action="store_true",
                    help="one process per model on the usual disk cache, no "
                         "cold/warm first steps")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds per model process (600)")
    ap.add_argument("--profile-steps", type=int, default=None,
                    help="profiled harp steps (default: --steps; 0: none)")
    ap.add_argument("--top", type=int, default=8, help="kernels shown (8)")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="full", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.nthreads = (os.cpu_count() if args.threads == "all"
                     else int(args.threads))
    if args.profile_steps is None:
        args.profile_steps = args.steps
    if args.worker:
        sys.path.insert(0, PYTHON_DIR)
        return worker(args.worker, args.steps, args.nthreads, args.mode,
                      args.profile_steps)
    sys.stdout.reconfigure(line_buffering=True)
    keys = MODEL_ORDER
    if args.only:
        keys = args.only.split(",")
        unknown = [k for k in keys if k not in MODELS]
        if unknown:
            raise SystemExit(f"models.py: unknown model(s) {unknown}; known: "
                             f"{', '.join(MODEL_ORDER)}")
    if not os.path.isdir(os.path.join(PYTHON_DIR, "harp")):
        raise SystemExit(f"models.py: no harp Python package in {PYTHON_DIR}: "
                         "build it first (scripts/build.sh harp-python)")

    # Both sides on the same threads and ISA (bench/run.py's environment).
    import run as suite
    limits = None
    if args.cpu:
        target = suite.describe_cpu(args.cpu)
        if not target.get("runs here", "").startswith("yes"):
            raise SystemExit(f"models.py: this machine cannot run {args.cpu} "
                             f"code ({target.get('runs here')})")
        limits = suite.ISA_LIMITS.get(int(target["vector bits"]))
    # PyTorch's matmuls go to OpenBLAS, held to the profile's first coretype;
    # natively to OpenBLAS's best for the machine's vector width (as
    # bench/run.py's NumPy anchor): left to pick its kernel on a CPU newer
    # than the library (a Sapphire Rapids core), it ran PyTorch's MLP step
    # at half the speed it reaches with AVX2 code.
    native_bits = int(suite.describe_cpu("")["vector bits"])
    coretype = (limits or suite.ISA_LIMITS[native_bits])["coretypes"][0]
    env = suite.thread_env(args.nthreads, coretype, limits, args.cpu or None)
    env["PYTHONPATH"] = PYTHON_DIR + (
        ":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("HARP_PROFILE", None)

    facts = machine(args)
    facts["anchor_limits"] = limits
    facts["openblas_coretype"] = coretype
    facts["no_cold"] = args.no_cold
    facts["copy_gbps"] = copy_bandwidth()
    facts["fma_gflops"] = (fma_peak(args.cpu or "native", args.nthreads)
                           if args.profile_steps > 0 else None)
    print("harp model-step benchmark: training steps (forward, loss, backward, "
          "optimizer step, zero_grad), harp vs PyTorch eager")
    print(f"  CPU: {facts['cpu']} ({facts['cores']} cores), AVX-512: "
          f"{'yes' if facts['avx512f'] else 'no'}")
    print(f"  harp profile: {facts['profile']}"
          + (f"; PyTorch ATEN_CPU_CAPABILITY={limits['aten']}, "
             f"ONEDNN_MAX_CPU_ISA={limits['onednn']}" if limits else
             "; PyTorch: its default ISA")
          + f"; OPENBLAS_CORETYPE={coretype}")
    print(f"  threads: {args.nthreads} (torch.set_num_threads; harp "
          f"set_num_threads({args.nthreads}))")
    print(f"  PyTorch {facts['torch']}, NumPy {facts['numpy']}, Python "
          f"{facts['python']}, harp {facts['harp_commit']}; {facts['date']}")
    print(f"  NumPy copy bandwidth (read + write, 1 thread): "
          f"{facts['copy_gbps']:.1f} GB/s")
    if facts["fma_gflops"]:
        print(f"  FMA peak (bench/roofline.c, -march={args.cpu or 'native'}, "
              f"{args.nthreads} thread(s)): {facts['fma_gflops']:.1f} GFLOP/s")
    print(f"  steps: {LOSS_STEPS} compared, {WARMUP} more warm-up, "
          f"{args.steps} timed (median); {BATCHES} batches cycled; "
          f"timeout {args.timeout:g} s per model process")

    results = {}
    for key in keys:
        res = {}
        with tempfile.TemporaryDirectory(prefix="harp-models-cache-") as cache:
            full_env = dict(env)
            if not args.no_cold:
                full_env["HARP_CACHE_DIR"] = cache
            log(f"{key}: harp and torch" + ("" if args.no_cold
                                             else ", cold disk cache"))
            res = run_worker(key, args, full_env, "full")
            first = res.pop("harp_first", None)
            if first:
                first["process_s"] = res["process_s"]
                res["cold_first" if not args.no_cold else "first"] = first
            if not args.no_cold and first:
                log(f"{key}: harp, warm disk cache")
                warm = run_worker(key, args, full_env, "first")
                if warm.get("harp_first"):
                    warm["harp_first"]["process_s"] = warm["process_s"]
                    res["warm_first"] = warm["harp_first"]
                else:
                    res["warm_error"] = (warm.get("error", "?") + ": "
                                         + warm.get("reason", ""))
        if "torch" in res and "harp" in res:
            res["agree"] = agree(res["harp"]["losses"], res["torch"]["losses"])
        results[key] = res
        print_model(key, res, facts["copy_gbps"], args.top,
                    facts["fma_gflops"])
    geo = print_table(results, facts)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": facts, "args": vars(args), "models": results,
                       "geomean_harp_speed": geo,
                       "runtime_s": time.time() - T0}, f, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
