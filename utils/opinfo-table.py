#!/usr/bin/env python3
"""Writes the table of docs/OpInfo.md: for every op test/python/test_opinfo.py
checks, how many of PyTorch's OpInfo samples run (forward and gradient) in
f32 and f64, and why the others are not taken; then the ops it skips.

    PYTHONPATH=build/python /usr/bin/python3 utils/opinfo-table.py > table.md
"""

import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "test", "python"))
import torch  # noqa: E402

import test_opinfo as t  # noqa: E402


def main():
    print("| op (OpInfo name) | gradient | f32 samples run | f64 samples run | samples not taken, and why |")
    print("|---|---|---|---|---|")
    for name in sorted(t.OPS):
        adapter, grads = t.OPS[name]
        op = t._BY_NAME[name]
        cells, reasons = [], collections.Counter()
        for tdtype in (torch.float32, torch.float64):
            if tdtype not in op.supported_dtypes("cpu"):
                cells.append("-")
                continue
            ran = total = 0
            for sample in op.sample_inputs("cpu", tdtype, requires_grad=grads and op.supports_autograd):
                total += 1
                try:
                    t._run_sample(name, adapter, grads and op.supports_autograd, sample, tdtype)
                    ran += 1
                except t.Unsupported as why:
                    reasons[str(why)] += 1
            cells.append("%d / %d" % (ran, total))
        why = "; ".join("%s (%d)" % (r, n) for r, n in sorted(reasons.items())) or "-"
        print("| `%s` | %s | %s | %s | %s |" % (name, "yes" if grads else "no (bool result)",
                                              cells[0], cells[1], why))
    print()
    print("| skipped op | why |")
    print("|---|---|")
    for name, why in sorted(t.SKIPPED.items()):
        print("| `%s` | %s |" % (name, why))


if __name__ == "__main__":
    main()
