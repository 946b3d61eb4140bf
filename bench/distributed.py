"""harp.distributed against Open MPI's own MPI_Allreduce (through mpi4py) on
the same buffers, and the data-parallel step time of 1 against 2
processes, in one run:

    /usr/bin/python3 bench/distributed.py [--sizes 4096,1048576] [--np 2]

It launches `mpirun -np N` itself (as root it passes Open MPI's
allow-run-as-root variables) and prints one table per measurement, with
the CPU it ran on. Both processes share this machine: the numbers are of
shared memory on loopback, not of a network.

  all-reduce: f32 sums of each size; harp's time is dist.all_reduce on a
    leaf (the shape check, the reduction, the leaf updated in place);
    mpi4py's is comm.Allreduce on NumPy arrays. Bandwidth is the buffer's
    bytes over the time (algorithm bandwidth).
  step: one SGD step (forward, backward, gradient averaging, update) of an
    MLP 784-1024-1024-10 with a global batch of 256, split over the
    processes (DistributedDataParallel); 1 process runs the whole batch.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def worker_allreduce(sizes, reps):
    import numpy as np
    from mpi4py import MPI

    import harp
    import harp.distributed as dist
    dist.init()
    comm = MPI.COMM_WORLD
    rows = []
    for size in sizes:
        n = size // 4
        a = np.ones(n, dtype=np.float32)
        b = np.empty_like(a)
        leaf = harp.tensor(a)

        def harp_call():
            dist.all_reduce(leaf)

        def mpi_call():
            comm.Allreduce(a, b, op=MPI.SUM)

        comm.Barrier()
        h = timed(harp_call, reps)
        comm.Barrier()
        m = timed(mpi_call, reps)
        rows.append({"bytes": size, "harp_s": h, "mpi4py_s": m})
    if comm.rank == 0:
        print("JSON " + json.dumps(rows), flush=True)


def worker_step(batch, reps):
    import numpy as np

    import harp
    import harp.distributed as dist
    import harp.nn as nn
    import harp.nn.functional as F
    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    share = batch // world
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                          nn.ReLU(), nn.Linear(1024, 10))
    model = dist.DistributedDataParallel(model) if world > 1 else model
    opt = harp.optim.SGD(model.parameters(), lr=0.01)
    xs = harp.tensor(x[rank * share:(rank + 1) * share])
    ys = harp.tensor(y[rank * share:(rank + 1) * share])

    def step():
        opt.zero_grad()
        F.cross_entropy(model(xs), ys).backward()
        opt.step()
        for p in model.parameters():  # the update runs now, not lazily later
            p.numpy()

    best, median = timed(step, reps)
    if rank == 0:
        print("JSON " + json.dumps({"world": world, "best_s": best,
                                    "median_s": median}), flush=True)


def launch(np_, args):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        raise SystemExit("distributed.py: mpirun not found (scripts/setup.sh "
                         "installs openmpi-bin)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.path.join(ROOT, "build", "python") + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    cmd = [mpirun, "--oversubscribe", "-np", str(np_), sys.executable,
           os.path.abspath(__file__), "--worker"] + args
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("JSON "):
            return json.loads(line[5:])
    raise SystemExit("distributed.py: the workers failed:\n" + p.stdout + p.stderr)


def cpu_name():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    name = next((l.split(":", 1)[1].strip() for l in text.splitlines()
                 if l.startswith("model name")), "unknown")
    return name, " avx512f" in text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=["allreduce", "step"])
    parser.add_argument("--sizes", default="4096,65536,1048576,16777216",
                        help="all-reduce buffer sizes in bytes")
    parser.add_argument("--np", type=int, default=2, dest="processes")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker == "allreduce":
        return worker_allreduce(sizes, args.reps)
    if args.worker == "step":
        return worker_step(args.batch, args.reps)

    name, avx512 = cpu_name()
    print("machine: %s, %d cores, %s; Open MPI through mpirun -np %d, shared "
          "memory on one machine" % (name, os.cpu_count(),
                                     "AVX-512" if avx512 else "no AVX-512",
                                     args.processes))
    rows = launch(args.processes, ["allreduce", "--sizes", args.sizes,
                                   "--reps", str(args.reps)])
    print("\nall-reduce (f32 sum), best of %d:" % args.reps)
    print("%12s %12s %12s %14s %14s %8s" % ("bytes", "harp", "mpi4py",
                                            "harp GB/s", "mpi4py GB/s", "ratio"))
    for r in rows:
        h, m = r["harp_s"][0], r["mpi4py_s"][0]
        print("%12d %10.1f us %10.1f us %14.2f %14.2f %7.2fx"
              % (r["bytes"], h * 1e6, m * 1e6, r["bytes"] / h / 1e9,
                 r["bytes"] / m / 1e9, m / h))
    print("\nMLP 784-1024-1024-10 SGD step, global batch %d:" % args.batch)
    one = launch(1, ["step", "--batch", str(args.batch), "--reps", "10"])
    many = launch(args.processes, ["step", "--batch", str(args.batch),
                                   "--reps", "10"])
    for r in (one, many):
        print("  %d process%s: %.2f ms (median %.2f ms)"
              % (r["world"], "" if r["world"] == 1 else "es", r["best_s"] * 1e3,
                 r["median_s"] * 1e3))
    print("  speed-up: %.2fx" % (one["best_s"] / many["best_s"]))


if __name__ == "__main__":
    main()
