"""Trains an MLP on scikit-learn's handwritten digits data-parallel with
harp.distributed: every process takes its share of each batch, and
DistributedDataParallel averages the gradients after backward().

    mpirun -np 2 /usr/bin/python3 examples/digits_ddp.py
    /usr/bin/python3 examples/digits_ddp.py          # one process

(as root, Open MPI also wants --allow-run-as-root). Rank 0 prints the loss
per epoch, the test accuracy and the time per step; every process ends with
the same parameters, which the script checks."""

import argparse
import sys
import time

import numpy as np

import harp
import harp.distributed as dist
import harp.nn as nn
import harp.nn.functional as F
from digits import load  # the same data and split as examples/digits.py


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64,
                        help="global batch size, split over the processes")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--min-accuracy", type=float, default=0.0,
                        help="exit 1 if the test accuracy is lower")
    args = parser.parse_args(argv)

    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        sys.exit("--batch %d does not split over %d processes" % (args.batch, world))
    share = args.batch // world
    x_train, y_train, x_test, y_test = load()

    # Each process draws its own initial values; DDP replaces them with
    # rank 0's.
    harp.nn.init.manual_seed(rank)
    model = dist.DistributedDataParallel(
        nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)))
    opt = harp.optim.Adam(model.parameters(), lr=args.lr)

    rng = np.random.default_rng(1)  # the same batches on every process
    steps, start = 0, None
    for epoch in range(args.epochs):
        order = rng.permutation(len(x_train))
        total = 0.0
        for b in range(len(order) // args.batch):
            batch = order[b * args.batch:(b + 1) * args.batch]
            mine = batch[rank * share:(rank + 1) * share]
            opt.zero_grad()
            loss = F.cross_entropy(model(harp.tensor(x_train[mine])),
                                   harp.tensor(y_train[mine]))
            loss.backward()
            opt.step()
            total += float(loss.item())
            steps += 1
            if start is None:  # the first step compiles
                start, steps = time.perf_counter(), 0
        mean = dist.all_reduce(harp.tensor(np.array([total / (b + 1)])), "mean")
        if rank == 0:
            print("epoch %d: loss %.4f" % (epoch + 1, mean.numpy()[0]), flush=True)
    per_step = (time.perf_counter() - start) / max(steps, 1) * 1e3

    logits = model(harp.tensor(x_test)).numpy()
    accuracy = float((logits.argmax(1) == y_test).mean())
    for p in model.parameters():
        lo = dist.all_reduce(harp.tensor(p.numpy()), "min").numpy()
        hi = dist.all_reduce(harp.tensor(p.numpy()), "max").numpy()
        if not np.array_equal(lo, hi):
            sys.exit("rank %d: the processes ended with different parameters" % rank)
    if rank == 0:
        print("processes: %d (%s), batch %d (%d per process)"
              % (world, dist.get_backend(), args.batch, share))
        print("test accuracy: %.2f%%" % (100 * accuracy))
        print("time per step: %.3f ms" % per_step)
    if accuracy < args.min_accuracy:
        sys.exit("test accuracy %.4f is below %.4f" % (accuracy, args.min_accuracy))


if __name__ == "__main__":
    main()
