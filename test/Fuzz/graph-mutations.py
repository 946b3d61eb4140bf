# RUN: %python %s --harp-translate harp-translate --seeds %harp_src_root/test/Frontend --seeds %harp_src_root/examples/graph | FileCheck %s
# CHECK: graph fuzz: {{[0-9]+}} inputs
# CHECK-SAME: 0 crashes

"""Feeds harp-translate --import-graph many mutated graph programs.

Every run must end in exit code 0 (the mutant is still a valid program) or 1
with an `error:` diagnostic, never a signal, a hang or another code. Mutants
are run in batches through --split-input-file (mutations.py's driver); a
batch that fails otherwise is halved until the culprit is found.
"""

import os
import re
import subprocess
import sys

# The command line, the mutant generation, the batch driver and what counts
# as a clean end: mutations.py's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutations import (SPLIT, find_crashes, fuzz_arguments,  # noqa: E402
                       mutants)

NUMBERS = ["-1", "0", "1", "2", "3", "7", "1.5", "-0.0", "1e309",
           "9223372036854775807", "99999999999999999999", "2147483648"]
DTYPES = ["f32", "f64", "i32", "i64", "bool", "u8", "complex", "f16", "N"]
KEYWORDS = ["graph", "let", "if", "else", "true", "false", "main", "x", "N",
            "B"]
BUILTINS = ["relu", "max", "sum", "reshape", "conv", "slice", "matmul",
            "softmax", "expand", "where", "cast", "unfold", "fold", "pad",
            "max_pool", "cumsum", "gather", "arange", "zeros", "concat"]
PUNCT = list("()[]{},:=+-*/%@<>!;\"") + ["->", "**", "==", "&&", "||", "\n"]
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S")


def chunks_of(path):
    with open(path) as f:
        text = f.read()
    out = []
    for chunk in text.split(SPLIT):
        lines = [l for l in chunk.splitlines() if not l.lstrip().startswith("//")]
        body = "\n".join(lines).strip()
        if "graph" in body:
            out.append(body + "\n")
    return out


def mutate(text, rng):
    tokens = list(TOKEN.finditer(text))
    kind = rng.randrange(8)
    if kind == 0 or not tokens:
        return text[:rng.randrange(len(text) + 1)]
    tok = rng.choice(tokens)
    start, end = tok.span()
    if kind == 1:
        return text[:start] + text[end:]
    if kind == 2:
        return text[:start] + rng.choice(NUMBERS) + text[end:]
    if kind == 3:
        return text[:start] + rng.choice(DTYPES) + text[end:]
    if kind == 4:
        pool = KEYWORDS if rng.random() < 0.5 else BUILTINS
        return text[:start] + rng.choice(pool) + text[end:]
    if kind == 5:
        return text[:start] + rng.choice(PUNCT) + text[start:]
    if kind == 6:
        lines = text.splitlines()
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            lines.insert(i, lines[i])
        else:
            lines.pop(i)
        return "\n".join(lines) + "\n"
    other = rng.choice(tokens)
    if other.start() < start:
        tok, other = other, tok
    a, b = tok.span(), other.span()
    if a[1] > b[0]:
        return text
    return (text[:a[0]] + other.group() + text[a[1]:b[0]] + tok.group() +
            text[b[1]:])


def run(tool, text):
    try:
        proc = subprocess.run([tool, "--import-graph", "--split-input-file",
                               "-o", os.devnull, "-"],
                              input=text.encode(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return proc.returncode, proc.stderr.decode(errors="replace")


def main():
    args = fuzz_arguments("harp-translate", 20261126, 500)
    originals, inputs = mutants(args, ".graph", chunks_of, mutate)
    # A mutant must not contain the split marker itself.
    inputs = [m.replace("//", "/ /") for m in inputs]

    errors = []
    crashes = find_crashes(inputs, lambda text: run(args.harp_translate, text),
                           args.batch, errors)
    rejected = sum(len(re.findall(r":\d+:\d+: error:", err)) for err in errors)
    for rc, text, err in crashes[:5]:
        sys.stdout.write("CRASH (exit %s):\n%s\n--- stderr ---\n%s\n" %
                         (rc, text, err[-2000:]))
    print("graph fuzz: %d inputs from %d originals, %d diagnostics, %d crashes"
          % (len(inputs), len(originals), rejected, len(crashes)))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
