"""pytest plugin (-p pytest_failure_log, with scripts/ on PYTHONPATH):
writes each outcome to $HARP_FAILURE_LOG_DIR/outcomes.txt and each
failure's report to failures.txt as it happens, so a run stopped at a time
limit still says what failed. Used by scripts/gpu-check.sh."""
import os

_out = os.environ.get("HARP_FAILURE_LOG_DIR", ".")


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller writes
    if report.when != "call" and not report.failed:
        return
    with open(os.path.join(_out, "outcomes.txt"), "a") as f:
        f.write("%s %s %.2f\n" % (report.outcome, report.nodeid, report.duration))
    if report.failed:
        text = str(report.longrepr)
        lines = text.splitlines()
        with open(os.path.join(_out, "failures.txt"), "a") as f:
            f.write("=== %s (%s)\n" % (report.nodeid, report.when))
            f.write("\n".join(lines[-40:])[-4000:] + "\n")
