#!/usr/bin/env python3
"""Writes the tables of docs/OpInfo.md from test/python/test_opinfo.py: for
every op of PyTorch's OpInfo database that harp names, how many of its
samples pass (forward and gradient) per dtype and why the others are not
taken; the totals; then the OpInfo ops harp does not name.

    PYTHONPATH=build/python /usr/bin/python3 utils/opinfo-table.py > table.md
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "test", "python"))
import torch  # noqa: E402

import test_opinfo as t  # noqa: E402

_NAMES = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64"}


def main():
    os.environ.pop("HARP_CPU", None)  # every sample, as a native run takes them
    print("| op (OpInfo name) | gradient | f32 | f64 | i64 | samples not taken, and why |")
    print("|---|---|---|---|---|---|")
    passed_all = taken_all = failed_all = skipped_all = 0
    for name in sorted(t.NAMED):
        op = t.NAMED[name]
        cells, reasons = {}, {}
        for tdtype in t._dtypes(op):
            passed, not_taken, failures = t.run_op(name, tdtype)
            total = passed + sum(not_taken.values()) + len(failures)
            cells[tdtype] = "%d / %d" % (passed, total) + (" (%d fail)" % len(failures)
                                                         if failures else "")
            passed_all += passed
            taken_all += passed + len(failures)
            failed_all += len(failures)
            for why, count in not_taken.items():
                reasons[why] = reasons.get(why, 0) + count
                skipped_all += count
        why = "; ".join("%s (%d)" % (r, n) for r, n in sorted(reasons.items())) or "-"
        print("| `%s` | %s | %s | %s | %s | %s |" % (
            name, "yes" if op.supports_autograd else "no",
            cells.get(torch.float32, "-"), cells.get(torch.float64, "-"),
            cells.get(torch.int64, "-"), why))
    print()
    print("%d ops (OpInfo entries, variants apart), %d samples: %d run and pass, %d fail, "
          "%d not taken (%.2f%% of the samples run)." % (
              len(t.NAMED), taken_all + skipped_all, passed_all, failed_all, skipped_all,
              100.0 * passed_all / max(1, taken_all + skipped_all)))
    print()
    print("OpInfo ops harp does not name (%d): %s." % (
        len(t.NOT_NAMED), ", ".join("`%s`" % n for n in t.NOT_NAMED)))


if __name__ == "__main__":
    main()
