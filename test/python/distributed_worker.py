"""The processes of test_distributed.py's mpirun tests: each case asserts on
every rank and prints "ok <case> rank <r>" when it passes (a failure is a
non-zero exit, which mpirun reports)."""

import sys

import numpy as np

import harp
import harp.distributed as dist

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
          np.uint32, np.uint64, np.float32, np.float64]
SIZES = [1, 7, 33, 1000]


def data(dtype, n, rank):
    """Rank `rank`'s values: any process can compute any rank's."""
    rng = np.random.default_rng(1000 * rank + n)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(n).astype(dtype)
    # Small enough that no sum or product overflows: Open MPI saturates
    # 8-bit sums where NumPy wraps (docs/Distributed.md).
    low = -9 if np.iinfo(dtype).min < 0 else 0
    return rng.integers(low, 9, n, endpoint=True).astype(dtype)


def expected(op, values):
    stack = np.stack(values)
    if stack.dtype == np.bool_:
        return stack.any(0) if op in ("sum", "max") else stack.all(0)
    if op == "sum":
        return stack.sum(0, dtype=stack.dtype)
    if op == "prod":
        return stack.prod(0, dtype=stack.dtype)
    if op == "max":
        return stack.max(axis=0)
    if op == "min":
        return stack.min(axis=0)
    return stack.mean(0, dtype=stack.dtype)


def case_collectives(rank, world):
    checked = 0
    for dtype in DTYPES:
        for n in SIZES:
            everyone = [data(dtype, n, r) for r in range(world)]
            ops = ["sum", "prod", "max", "min"]
            if np.issubdtype(dtype, np.floating):
                ops.append("mean")
            for op in ops:
                leaf = harp.tensor(everyone[rank])
                result = dist.all_reduce(leaf, op)
                want = expected(op, everyone)
                for got in (result.numpy(), leaf.numpy()):
                    assert got.dtype == want.dtype, (dtype, op, got.dtype)
                    if np.issubdtype(dtype, np.floating):
                        np.testing.assert_allclose(got, want, rtol=1e-6)
                    else:
                        np.testing.assert_array_equal(got, want)
                checked += 1
            # A computed tensor, of rank 2: the result is returned.
            if n == 33 and dtype in (np.float32, np.int32):
                x = harp.tensor(everyone[rank].reshape(3, 11)) + 1
                got = dist.all_reduce(x, dist.ReduceOp.SUM).numpy()
                want = sum(v.reshape(3, 11) + 1 for v in everyone)
                np.testing.assert_allclose(got, want.astype(got.dtype), rtol=1e-6)
                assert x.numpy().shape == (3, 11)
            for root in range(world):
                leaf = harp.tensor(everyone[rank])
                got = dist.broadcast(leaf, src=root).numpy()
                np.testing.assert_array_equal(got, everyone[root])
                np.testing.assert_array_equal(leaf.numpy(), everyone[root])
    assert checked == (len(DTYPES) * 4 + 2 * 1) * len(SIZES), checked
    dist.barrier()


def case_errors(rank, world):
    # Different shapes: every rank raises, naming what each passed.
    try:
        dist.all_reduce(harp.zeros(3 + rank, dtype=harp.float32))
    except harp.HarpError as e:
        text = str(e)
        assert "disagree" in text and "rank 0: all_reduce of f32 [3] (sum)" in text \
            and "rank 1: all_reduce of f32 [4] (sum)" in text, text
    else:
        raise AssertionError("no error for different shapes")
    # Different dtypes.
    try:
        dist.all_reduce(harp.zeros(5, dtype=harp.float32 if rank == 0 else harp.float64))
    except harp.HarpError as e:
        assert "f32 [5]" in str(e) and "f64 [5]" in str(e), str(e)
    else:
        raise AssertionError("no error for different dtypes")
    # Different operations.
    try:
        dist.all_reduce(harp.zeros(2), "sum" if rank == 0 else "max")
    except harp.HarpError as e:
        assert "(sum)" in str(e) and "(max)" in str(e), str(e)
    else:
        raise AssertionError("no error for different reductions")
    # An all-reduce against a broadcast.
    try:
        t = harp.zeros(2)
        dist.all_reduce(t) if rank == 0 else dist.broadcast(t, 0)
    except harp.HarpError as e:
        assert "broadcast of f32 [2] (root 0)" in str(e), str(e)
    else:
        raise AssertionError("no error for different collectives")
    try:
        dist.broadcast(harp.zeros(2), src=world)
    except harp.HarpError as e:
        assert "root %d is not a rank of a world of %d" % (world, world) in str(e)
    else:
        raise AssertionError("no error for a bad root")
    # A local error after the processes agreed: raised by every process.
    try:
        dist.all_reduce(harp.tensor(np.arange(3, dtype=np.int32)), "mean")
    except harp.HarpError as e:
        assert "mean needs a float tensor, got i32 [3]" in str(e), str(e)
    else:
        raise AssertionError("no error for an integer mean")
    # The world still works afterwards.
    total = dist.all_reduce(harp.tensor(np.array([rank + 1.0])))
    assert total.numpy()[0] == world * (world + 1) / 2


def make_model(seed):
    """A float64 MLP whose initial values depend on `seed` only."""
    rng = np.random.default_rng(seed)
    w1 = harp.tensor(rng.standard_normal((16, 6)) * 0.5).requires_grad_()
    b1 = harp.tensor(rng.standard_normal(16) * 0.1).requires_grad_()
    w2 = harp.tensor(rng.standard_normal((3, 16)) * 0.5).requires_grad_()
    b2 = harp.tensor(rng.standard_normal(3) * 0.1).requires_grad_()

    class MLP(harp.nn.Module):
        def __init__(self):
            super().__init__()
            self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2

        def forward(self, x):
            h = (x @ self.w1.T + self.b1).tanh()
            return h @ self.w2.T + self.b2

    return MLP()


def train(model, batches, params, steps, momentum):
    opt = harp.optim.SGD(params, lr=0.1, momentum=momentum)
    for x, y in batches[:steps]:
        opt.zero_grad()
        out = model(harp.tensor(x))
        loss = ((out - harp.tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()


def case_ddp(rank, world, bucket_cap_mb=25.0, expect_messages=1):
    rng = np.random.default_rng(7)
    steps, per_rank = 20, 5
    batches = [(rng.standard_normal((per_rank * world, 6)),
                rng.standard_normal((per_rank * world, 3))) for _ in range(steps)]
    # Each rank starts from its own values: DDP must give all rank 0's.
    model = make_model(seed=100 + rank)
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)
    mine = [(x[rank * per_rank:(rank + 1) * per_rank],
             y[rank * per_rank:(rank + 1) * per_rank]) for x, y in batches]
    train(ddp, mine, list(ddp.parameters()), steps, momentum=0.9)
    assert ddp.last_message_count == expect_messages, ddp.last_message_count
    # One process on the whole batches, from rank 0's initial values.
    reference = make_model(seed=100)
    train(reference, batches, list(reference.parameters()), steps, momentum=0.9)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        diff = np.abs(p.numpy() - q.numpy()).max()
        assert diff < 1e-10, (name, diff)
    # Every rank holds the same parameters.
    for p in model.parameters():
        lo = dist.all_reduce(harp.tensor(p.numpy()), "min").numpy()
        hi = dist.all_reduce(harp.tensor(p.numpy()), "max").numpy()
        np.testing.assert_array_equal(lo, hi)


def case_ddp_buckets(rank, world):
    # 100 bytes: every parameter in a bucket of its own (4 messages).
    case_ddp(rank, world, bucket_cap_mb=100 / (1 << 20), expect_messages=4)


def case_unused(rank, world):
    """A parameter no rank uses keeps no gradient; one rank 0 alone uses is
    averaged with zeros."""
    used = harp.tensor(np.ones(3)).requires_grad_()
    unused = harp.tensor(np.ones(2)).requires_grad_()
    sometimes = harp.tensor(np.ones(4)).requires_grad_()

    class M(harp.nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused, self.sometimes = used, unused, sometimes

    ddp = dist.DistributedDataParallel(M())
    loss = (used * (rank + 1.0)).sum()
    if rank == 0:
        loss = loss + (sometimes * 4.0).sum()
    loss.backward()
    np.testing.assert_allclose(used.grad.numpy(), np.full(3, (world + 1) / 2))
    assert unused.grad is None
    np.testing.assert_allclose(sometimes.grad.numpy(), np.full(4, 4.0 / world))
    assert ddp.last_message_count == 1


def case_ddp_mismatch(rank, world):
    class M(harp.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = harp.tensor(np.ones(n)).requires_grad_()

    try:
        dist.DistributedDataParallel(M(3 + rank))
    except harp.HarpError as e:
        assert "disagree" in str(e) and "f64 [3]" in str(e) and "f64 [4]" in str(e), str(e)
    else:
        raise AssertionError("no error for different parameters")


CASES = {name[5:]: f for name, f in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == int(sys.argv[2]), (world, sys.argv)
    CASES[sys.argv[1]](rank, world)
    print("ok %s rank %d" % (sys.argv[1], rank), flush=True)
