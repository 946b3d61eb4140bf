"""The main job: run examples/mlp.mlir (a two-layer network's forward pass)
with harp-run on fixed inputs and check it against NumPy."""

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
HARP_RUN = os.path.join(HERE, "..", "build", "bin", "harp-run")


def main():
    rng = np.random.default_rng(2026)
    x = rng.normal(size=(8, 64)).astype(np.float32)
    w1 = (rng.normal(size=(64, 32)) / 8).astype(np.float32)
    b1 = rng.normal(size=32).astype(np.float32) * 0.1
    w2 = (rng.normal(size=(32, 10)) / 6).astype(np.float32)
    b2 = rng.normal(size=10).astype(np.float32) * 0.1

    with tempfile.TemporaryDirectory() as tmp:
        args = [HARP_RUN, os.path.join(HERE, "mlp.mlir"), "--stats"]
        for name, value in [("x", x), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]:
            path = os.path.join(tmp, name + ".npy")
            np.save(path, value)
            args += ["--input", path]
        out = os.path.join(tmp, "probs.npy")
        start = time.perf_counter()
        proc = subprocess.run(args + ["--output", out], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit("harp-run failed:\n" + proc.stderr)
        probs = np.load(out)

    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)

    np.set_printoptions(precision=4, suppress=True)
    print("harp-run examples/mlp.mlir: softmax(relu(x @ W1 + b1) @ W2 + b2), x: 8x64")
    print(proc.stderr.strip())
    print("class probabilities (first 3 rows):")
    print(probs[:3])
    print("predicted classes:", probs.argmax(axis=1))
    err = np.abs(probs - expected).max()
    print("max |harp - numpy| = %.3g; rows sum to 1 within %.3g; %.0f ms end to end"
          % (err, np.abs(probs.sum(axis=1) - 1).max(), elapsed * 1e3))
    if err > 1e-5 or (probs.argmax(axis=1) != expected.argmax(axis=1)).any():
        sys.exit("MISMATCH against the NumPy reference")
    print("OK: matches the NumPy reference")


if __name__ == "__main__":
    main()
