"""Threads as PyTorch users know them: harp.set_num_threads /
get_num_threads (torch's names), threaded code by default where there is
more than one thread, and harp-parallelize's work threshold, which keeps
small loops on the calling thread (docs/Lowering.md, "Threads")."""

import os
import subprocess
import sys

import numpy as np
import pytest

import harp
import harp.nn as nn
import harp.nn.functional as F

# An element-wise map over rows x cols f32: 5 lane operations per element
# (two loads, a multiply, an add, a store).
MAP = """
func.func @main(%x: tensor<{r}x{c}xf32>, %y: tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32> {{
  %s = harp.map_reduce ins(%x, %y : tensor<{r}x{c}xf32>, tensor<{r}x{c}xf32>) {{
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %p, %a : f32
    harp.yield %q : f32
  }} : tensor<{r}x{c}xf32>
  return %s : tensor<{r}x{c}xf32>
}}
"""


@pytest.fixture
def threads():
    """Restores the thread count a test changes."""
    saved = harp.get_num_threads()
    yield
    harp.set_num_threads(saved)


@pytest.fixture
def threaded(threads):
    """Threaded code whatever the count (another test may have chosen
    set_options(threads=False)); the option restored after."""
    saved = harp.get_options()["threads"]
    harp.set_options(threads=True)
    yield
    harp.set_options(threads=saved)


def python(code, **env):
    """Runs `code` in a fresh interpreter with `env` over this one's
    (OMP_NUM_THREADS removed unless given); returns its stdout."""
    environ = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    environ.update(env)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=environ)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("value,expected", [("3", "3"), ("4,2", "4"), (" 2 ", "2")])
def test_default_count_follows_omp_num_threads(value, expected):
    out = python("import harp; print(harp.get_num_threads(), "
                 "harp.get_options()['threads'])", OMP_NUM_THREADS=value)
    assert out == "%s True" % expected


@pytest.mark.parametrize("value", [None, "0", "many"])
def test_default_count_is_the_cores_without_a_valid_omp_num_threads(value):
    env = {} if value is None else {"OMP_NUM_THREADS": value}
    out = python("import harp, os; n = harp.get_num_threads(); "
                 "print(n, harp.get_options()['threads'], "
                 "len(os.sched_getaffinity(0)))", **env)
    count, threaded, cores = out.split()
    # Physical cores: at least one, at most the CPUs this process may use.
    assert 1 <= int(count) <= int(cores)
    assert threaded == str(int(count) > 1)


def test_one_thread_compiles_without_threads():
    # In a fresh process: set_options(threads=...) elsewhere in this one
    # would decide instead of the count.
    out = python("import harp; harp.set_num_threads(1); "
                 "print(harp.get_num_threads(), harp.get_options()['threads']); "
                 "harp.set_num_threads(2); "
                 "print(harp.get_num_threads(), harp.get_options()['threads'])")
    assert out.split("\n") == ["1 False", "2 True"]


def test_set_options_threads_wins_over_the_count():
    out = python("import harp; harp.set_num_threads(4); "
                 "harp.set_options(threads=False); "
                 "print(harp.get_options()['threads']); "
                 "harp.set_num_threads(1); harp.set_options(threads=True); "
                 "print(harp.get_options()['threads'])")
    assert out.split() == ["False", "True"]


@pytest.mark.parametrize("count", [0, -3])
def test_count_below_one_raises(threads, count):
    with pytest.raises(harp.HarpError, match="set_num_threads: the count must "
                       "be a positive integer, got %d" % count):
        harp.set_num_threads(count)


@pytest.mark.parametrize("count", [2 ** 40, -2 ** 70])
def test_count_beyond_an_int_raises(threads, count):
    with pytest.raises(harp.HarpError, match="fits an int, got %d" % count):
        harp.set_num_threads(count)


@pytest.mark.parametrize("count", [1.5, "2", None])
def test_count_of_another_type_raises(threads, count):
    with pytest.raises(TypeError, match="set_num_threads"):
        harp.set_num_threads(count)


def _train(steps, seed=0):
    """Losses and final weights of a conv + MLP trained with SGD: every
    kernel large enough to run on threads where they are on."""
    rng = np.random.default_rng(seed)
    harp.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                        nn.Flatten(), nn.Linear(16 * 17 * 17, 67), nn.ReLU(),
                        nn.Linear(67, 10))
    opt = harp.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    x = harp.tensor(rng.standard_normal((29, 3, 17, 17)).astype(np.float32))
    y = harp.tensor(rng.integers(0, 10, 29))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in net.parameters()]


def test_training_on_two_threads_equals_one(threaded):
    # Threads run tiles of parallel dims, each summed as on one thread: the
    # results are bit-identical.
    harp.set_num_threads(1)
    one_losses, one_weights = _train(3)
    harp.set_num_threads(2)
    two_losses, two_weights = _train(3)
    assert one_losses == two_losses
    for a, b in zip(one_weights, two_weights):
        np.testing.assert_array_equal(a, b)


def _forks(rows, cols, **options):
    """Whether the object harp.ir.compile_object makes of MAP forks threads
    (calls the OpenMP runtime's __kmpc_fork_call)."""
    obj = harp.ir.compile_object(MAP.format(r=rows, c=cols), threads=True,
                                 **options)
    return b"__kmpc_fork_call" in obj


def test_small_loops_stay_on_the_calling_thread():
    # 64 x 64 elements: 20,480 lane operations, below the default
    # threshold; 512 x 1024: 2.6 million, above it. With 0 every parallel
    # loop forks.
    assert not _forks(64, 64)
    assert _forks(512, 1024)
    assert _forks(64, 64, parallel_min_work=0)
    assert not _forks(512, 1024, parallel_min_work=10 ** 9)


def test_threaded_map_results_equal_unthreaded(threads):
    rng = np.random.default_rng(5)
    for rows, cols in [(7, 13), (64, 64), (512, 1031)]:
        text = MAP.format(r=rows, c=cols)
        x, y = (rng.standard_normal((rows, cols)).astype(np.float32)
                for _ in range(2))
        (plain,) = harp.ir.call(text, "main", [x, y])
        harp.set_num_threads(2)
        (threaded,) = harp.ir.call(text, "main", [x, y], threads=True,
                                   parallel_min_work=0)
        np.testing.assert_array_equal(plain, threaded)
        np.testing.assert_array_equal(plain, x * y + x)


@pytest.mark.parametrize("kwargs,message", [
    (dict(parallel_min_work=0), "parallel_min_work needs threads=True"),
    (dict(threads=True, parallel_min_work=-1),
     "parallel_min_work must be at least 0, got -1"),
])
def test_parallel_min_work_errors(kwargs, message):
    x = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=message):
        harp.ir.call(MAP.format(r=2, c=2), "main", [x, x], **kwargs)
    with pytest.raises(ValueError, match=message):
        harp.ir.compile_object(MAP.format(r=2, c=2), **kwargs)
