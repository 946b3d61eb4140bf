"""pytest configuration shared by harp's Python suites (test/python,
test/Integration): how their cases are spread over pytest-xdist's workers.

The test command runs every pass on all cores (`-n`). xdist's default
scheduler hands each worker long runs of consecutive cases up front (a
quarter of its share at first), so cases that are slow and collected next
to each other (the max-pool OpInfo entries, 40-90 s each) end up queued on
one worker while the other runs out of work: on the AMD EPYC Zen 5 of
2026-12-02 one worker of the x86-64-v4 pass finished 88 s before the other
(445 s in all). Here a worker holds at most `QUEUE` cases at a time,
so no worker waits on another for longer than about one case, and cases
marked `heavy` run first, when the other worker still has many short ones
to balance them (docs/Testing.md, "Spreading the cases over the workers").
"""

import os

import pytest

# The workers share the cores: each runs compiled code (and PyTorch) on one
# thread, as harp did by default before it followed torch.get_num_threads().
# Tests of threads set their count themselves (harptest.THREADS,
# harp.set_num_threads); OMP_NUM_THREADS set by the caller wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Cases a worker holds besides the one it runs: one, so that it never waits
# for the controller between cases.
QUEUE = 2


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "heavy: a case that takes tens of seconds; run before the others so "
        "that the workers finish together (scheduling only)")


def pytest_collection_modifyitems(session, config, items):
    # Stable: within each group the collection order stays, the same on
    # every worker (xdist requires identical collections).
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScheduling

    class ShortQueues(LoadScheduling):
        """xdist's load scheduling with every worker's queue kept at
        `QUEUE` cases, from the first distribution to the last."""

        def schedule(self):
            assert self.collection_is_completed
            if self.collection is not None:
                for node in self.nodes:
                    self.check_schedule(node)
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(self.node2collection.values())[0]
            self.pending[:] = range(len(self.collection))
            for node in self.nodes:
                self._send_tests(node, QUEUE)
            if not self.pending:
                for node in self.nodes:
                    node.shutdown()

        def check_schedule(self, node, duration=0):
            if node.shutting_down:
                return
            if self.pending:
                missing = QUEUE - len(self.node2pending[node])
                if missing > 0:
                    self._send_tests(node, missing)
            else:
                node.shutdown()

    return ShortQueues(config, log)
