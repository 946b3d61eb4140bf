#!/usr/bin/env python3
"""harp's Python API on a GPU (device="cuda"): each case computes on the
GPU and compares with NumPy or PyTorch in float64 by relative error.
Run by scripts/gpu-check.sh; exits 1 if any case fails."""

import sys
import traceback

import numpy as np
import torch

import harp

RNG = np.random.default_rng(0)
X = RNG.standard_normal((67, 131)).astype(np.float32)
W = RNG.standard_normal((131, 29)).astype(np.float32)


def rel(mine, reference):
    mine = np.asarray(mine, np.float64)
    reference = np.asarray(reference, np.float64)
    return float(np.linalg.norm(mine - reference)
                 / max(np.linalg.norm(reference), 1e-30))


def elementwise_and_row_sum():
    t = harp.tensor(X, device="cuda")
    y = (t * 2.0 + 1.0).exp().sum(axis=1)
    assert y.device == "cuda", y.device
    return rel(y.numpy(), np.exp(X * 2 + 1).sum(1))


def matmul():
    y = harp.matmul(harp.tensor(X, device="cuda"), harp.tensor(W, device="cuda"))
    return rel(y.numpy(), X.astype(np.float64) @ W)


def softmax():
    y = harp.softmax(harp.tensor(X, device="cuda"), 1)
    return rel(y.numpy(), torch.softmax(torch.tensor(X, dtype=torch.float64), 1).numpy())


def gradient():
    t = harp.tensor(X.astype(np.float64), device="cuda", requires_grad=True)
    (t.tanh() * t).sum().backward()
    r = torch.tensor(X.astype(np.float64), requires_grad=True)
    (r.tanh() * r).sum().backward()
    return rel(t.grad.numpy(), r.grad.numpy())


def to_cuda_and_back():
    t = harp.tensor(X).to("cuda")
    return rel((t * t).to("cpu").numpy(), X * X)


def ir_call():
    module = (harp.tensor(X) * 3.0).sum(axis=1).mlir()
    (r,) = harp.ir.call(module, "main", [X, np.array(3, np.float32)], device="cuda")
    return rel(r, (X * 3).sum(1))


def main():
    failed = 0
    for case in [elementwise_and_row_sum, matmul, softmax, gradient,
                 to_cuda_and_back, ir_call]:
        try:
            error = case()
            ok = error < 1e-4
            print("%-26s %s relative error %.3g" % (case.__name__, "ok" if ok else "FAIL", error))
        except Exception:  # reported, and counted as a failure
            ok = False
            print("%-26s EXCEPTION" % case.__name__)
            traceback.print_exc(limit=3)
        failed += not ok
    print("gpu-api-check: %d of 6 failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
