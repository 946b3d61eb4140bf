# RUN: %python %s | FileCheck %s
# CHECK: driver: ok

"""The fuzz scripts' batch driver (mutations.find_crashes) against a stand-in
tool: it must name every input that crashes, and only those, however the
crashes fall in the batches; a batch that fails while each of its halves
passes is named whole; the stderr of every batch that passed is kept."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutations import SPLIT, find_crashes  # noqa: E402

runs = []


def tool(text):
    """Exit 139 where an input says "crash", or where a batch holds both
    halves of a "pair"; 1 with an error for every input, as harp-opt does
    for invalid ones."""
    runs.append(text)
    chunks = text.split("\n" + SPLIT + "\n")
    if any("crash" in c for c in chunks) or ("pair-a" in text and "pair-b" in text):
        return 139, "Segmentation fault"
    return 1, "".join("<stdin>:1:1: error: %s\n" % c for c in chunks)


inputs = ["input %d" % i for i in range(1000)]
for i in (0, 17, 18, 999, 512):
    inputs[i] = "crash %d" % i
for batch in (1, 7, 100, 600, 5000):
    runs.clear()
    errors = []
    crashes = find_crashes(inputs, tool, batch, errors)
    named = sorted(text for _, text, _ in crashes)
    assert named == sorted("crash %d" % i for i in (0, 17, 18, 999, 512)), (batch, named)
    assert all(rc == 139 for rc, _, _ in crashes)
    # Every input that passed was counted once, in some passing batch.
    assert sum(e.count("error:") for e in errors) == len(inputs) - 5, batch
    # Bisection: far fewer runs than inputs where batches are large.
    if batch >= 100:
        assert len(runs) < 200, (batch, len(runs))

# Inputs that crash only together: the smallest batch that still fails.
pair = ["x"] * 10 + ["pair-a"] + ["y"] * 5 + ["pair-b"] + ["z"] * 10
crashes = find_crashes(pair, tool, 100)
assert len(crashes) == 1, crashes
assert "pair-a" in crashes[0][1] and "pair-b" in crashes[0][1]
print("driver: ok")
