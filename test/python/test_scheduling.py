"""The test suites' own scheduling (test/conftest.py): cases marked `heavy`
run first and the pytest-xdist workers hold two cases at a time, so that they
finish together (docs/Testing.md, "Spreading the cases over the workers").
Runs a small suite of its own under `pytest -n 2` in a temporary directory."""

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("xdist")

HERE = os.path.dirname(os.path.abspath(__file__))

SUITE = '''
import os, time, pytest

def log(name, start):
    with open(os.environ["SCHEDULING_LOG"], "a") as f:
        f.write("%s %s %.3f %.3f\\n" % (name, os.environ.get("PYTEST_XDIST_WORKER", "-"),
                                        start, time.time()))

@pytest.mark.parametrize("i", range(16))
def test_short(i):
    start = time.time()
    time.sleep(0.1)
    log("short%d" % i, start)

# Collected last: xdist's own scheduler would start it last, on a worker
# that already holds a run of short cases, while the other ran dry.
@pytest.mark.heavy
def test_long():
    start = time.time()
    time.sleep(1.2)
    log("long", start)
'''


def test_heavy_cases_first_and_workers_finish_together(tmp_path):
    shutil.copy(os.path.join(HERE, "..", "conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = dict(os.environ, SCHEDULING_LOG=str(tmp_path / "log.txt"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "2", "test_suite.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = [line.split() for line in (tmp_path / "log.txt").read_text().splitlines()]
    assert len(runs) == 17
    start = {name: float(s) for name, _, s, _ in runs}
    # The heavy case is the first its worker runs (xdist's own scheduler ran
    # it last, after a run of short ones).
    [worker] = [w for n, w, _, _ in runs if n == "long"]
    assert start["long"] == min(float(s) for _, w, s, _ in runs if w == worker), runs
    # Both workers work, and end together: the other worker takes the short
    # cases while the heavy one runs (without the scheduler they ended 1.2 s
    # apart).
    workers = {w for _, w, _, _ in runs}
    assert len(workers) == 2, runs
    last = [max(float(e) for _, w2, _, e in runs if w2 == w) for w in workers]
    assert abs(last[0] - last[1]) < 0.6, runs
