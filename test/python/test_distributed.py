"""harp.distributed: one process (no mpirun: a world of one, no MPI library
loaded), and two processes under `mpirun -np 2 --oversubscribe` on loopback
running distributed_worker.py's cases (collectives on every dtype and
reduction at odd sizes, disagreement errors, the data-parallel equivalence
with one process on the concatenated batches)."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import harp
import harp.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "distributed_worker.py")
LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                 "MPI_LOCALNRANKS")


def launch(program, processes):
    """`program` under mpirun on loopback; returns its stdout."""
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun not found: scripts/setup.sh installs openmpi-bin"
    env = dict(os.environ)
    for name in LAUNCHER_VARS:
        env.pop(name, None)
    # CI runs as root; Open MPI refuses that unless told.
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")
    command = [mpirun, "--oversubscribe", "-np", str(processes)] + program
    result = subprocess.run(command, env=env, capture_output=True, text=True,
                            timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def mpirun(case, processes=2):
    output = launch([sys.executable, WORKER, case, str(processes)], processes)
    for r in range(processes):
        assert "ok %s rank %d" % (case, r) in output, output


@pytest.mark.parametrize("case", ["collectives", "errors", "ddp", "ddp_buckets",
                                  "unused", "ddp_mismatch"])
def test_two_processes(case):
    mpirun(case)


def test_two_processes_cpp():
    """The C++ API's tests (unittests/API/DistributedTest.cpp), written for
    any world size, in two processes."""
    binary = os.path.join(ROOT, "build", "unittests", "HarpAPITests")
    assert os.path.exists(binary), "build the gtest suites first (scripts/build.sh)"
    output = launch([binary, "--gtest_filter=Distributed.*", "--gtest_color=no"], 2)
    assert output.count("[  PASSED  ] 3 tests.") == 2, output


def test_digits_example_two_processes():
    """examples/digits_ddp.py trains in two processes, which end with the
    same parameters (the script checks) and a good model."""
    example = os.path.join(ROOT, "examples", "digits_ddp.py")
    output = launch([sys.executable, example, "--epochs", "3",
                     "--min-accuracy", "0.9"], 2)
    assert "processes: 2 (mpi (OpenMPI)), batch 64 (32 per process)" in output, output
    assert "test accuracy:" in output, output


# One process -----------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def single_process():
    for name in LAUNCHER_VARS:
        assert name not in os.environ, "run the single-process tests without mpirun"
    dist.init()


def test_world_of_one():
    assert dist.is_available() and dist.is_initialized()
    assert not dist.launched_by_mpi()
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "none"
    dist.barrier()
    dist.init_process_group("mpi", rank=0, world_size=1)
    with pytest.raises(ValueError, match="world_size=2, but mpirun started"):
        dist.init_process_group(world_size=2)
    with pytest.raises(ValueError, match="backend is 'mpi', got 'nccl'"):
        dist.init_process_group("nccl")


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_one_process_collectives_are_identity(op, n):
    values = np.random.default_rng(n).standard_normal(n)
    leaf = harp.tensor(values)
    out = dist.all_reduce(leaf, op)
    np.testing.assert_array_equal(out.numpy(), values)
    np.testing.assert_array_equal(dist.broadcast(harp.tensor(values) * 2).numpy(),
                                  values * 2)


def test_all_reduce_errors():
    with pytest.raises(harp.HarpError, match=r"mean needs a float tensor, got i32 \[3\]"):
        dist.all_reduce(harp.tensor(np.arange(3, dtype=np.int32)), dist.ReduceOp.AVG)
    with pytest.raises(harp.HarpError, match="op must be 'sum', 'mean', 'max', 'min' "
                                             "or 'prod', got 'median'"):
        dist.all_reduce(harp.zeros(2), "median")
    with pytest.raises(TypeError, match="expected a harp tensor, got ndarray"):
        dist.all_reduce(np.zeros(2))
    with pytest.raises(harp.HarpError, match="root 1 is not a rank of a world of 1"):
        dist.broadcast(harp.zeros(2), src=1)


def test_ddp_one_process_matches_the_module():
    """In a world of one, DDP is the module: same outputs, same gradients."""
    def model():
        harp.nn.init.manual_seed(3) if hasattr(harp.nn.init, "manual_seed") else None
        m = harp.nn.Linear(5, 2)
        rng = np.random.default_rng(3)
        for p in m.parameters():
            p.copy_(rng.standard_normal(p.shape).astype(np.float32))
        return m

    x = harp.tensor(np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32))
    plain, wrapped = model(), model()
    ddp = dist.DistributedDataParallel(wrapped)
    assert [n for n, _ in ddp.named_parameters()] == ["module.weight", "module.bias"]
    plain(x).sum().backward()
    ddp(x).sum().backward()
    for p, q in zip(plain.parameters(), wrapped.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    assert ddp.last_message_count == 0
    with pytest.raises(TypeError, match="expected a harp.nn.Module, got int"):
        dist.DistributedDataParallel(3)
    with pytest.raises(ValueError, match="bucket_cap_mb must be positive"):
        dist.DistributedDataParallel(plain, bucket_cap_mb=0)


def test_nn_parallel_name():
    assert harp.nn.parallel.DistributedDataParallel is dist.DistributedDataParallel


def test_missing_library_is_a_clear_error():
    """Under a launcher's environment with no MPI library to load, init()
    names what it tried and how to install it (in a fresh process)."""
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="1",
               HARP_MPI_LIBRARY="libharp-no-such-mpi.so")
    code = ("import harp.distributed as d\n"
            "try:\n    d.init()\nexcept Exception as e:\n    print('ERROR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120).stdout
    assert "ERROR distributed.init: this process was started by mpirun, but no MPI " \
           "library could be loaded" in out, out
    assert "libharp-no-such-mpi.so" in out and "apt install openmpi-bin" in out, out
