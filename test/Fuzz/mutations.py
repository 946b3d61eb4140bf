# RUN: %python %s --harp-opt harp-opt --seeds %harp_src_root/test/Dialect/Harp --seeds %harp_src_root/test/Conversion/HarpToLinalg --seeds %harp_src_root/examples | FileCheck %s
# CHECK: fuzz: {{[0-9]+}} inputs
# CHECK-SAME: 0 crashes

"""Feeds harp-opt many malformed and mutated versions of valid harp IR.

Every run must end in exit code 0 (the mutant is still valid IR) or 1 with an
`error:` diagnostic, never a signal or another code. Each mutant is parsed and
verified, then canonicalized and lowered to LLVM (folders and lowering must
survive strange but valid IR).
Mutants are run in batches through --split-input-file; a batch that crashes is
halved until the culprit is found.
"""

import argparse
import os
import random
import re
import subprocess
import sys

SPLIT = "// -----"

NUMBERS = ["-1", "0", "1", "2", "3", "7", "100", "2147483648",
           "9223372036854775807", "-9223372036854775808",
           "99999999999999999999", "0.5", "-0.0", "1e309"]
TYPES = ["f32", "f64", "f16", "bf16", "i1", "i8", "i32", "i64", "index",
         "complex<f32>", "ui8", "i128", "none", "vector<4xf32>"]
KEYWORDS = ["sum", "prod", "max", "min", "umax", "umin", "keepdim",
            "mask_ge", "mask_eq", "pad", "zero", "one", "-inf", "+inf",
            "dims", "seed", "wrt", "dim", "into", "ins", "reduce"]
OPS = ["harp.view", "harp.map_reduce", "harp.concat", "harp.gather",
       "harp.scatter_add", "harp.rand", "harp.arange", "harp.contiguous",
       "harp.autodiff", "harp.index", "harp.yield", "arith.addf",
       "func.return"]
PUNCT = list("()[]{}<>,:=%^#@-") + ["->", "floordiv", "mod", "ceildiv"]
TOKEN = re.compile(r"[A-Za-z_][\w.$-]*|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S")


def strip_checks(text):
    # Drop test directives so a mutant carries no expected-error markers.
    lines = [l for l in text.splitlines()
             if not l.lstrip().startswith("//")]
    return "\n".join(lines) + "\n"


def chunks_of(path):
    with open(path) as f:
        text = f.read()
    return [strip_checks(c) for c in text.split(SPLIT) if "func.func" in c]


def mutate(text, rng):
    if not text:
        return text
    tokens = list(TOKEN.finditer(text))
    kind = rng.randrange(9)
    if kind == 0:  # truncate anywhere
        return text[:rng.randrange(len(text))]
    if not tokens:
        return text
    tok = rng.choice(tokens)
    start, end = tok.span()
    if kind == 1:  # delete a token
        return text[:start] + text[end:]
    if kind == 2:  # change a number
        nums = [t for t in tokens if re.fullmatch(r"-?\d+(\.\d+)?", t.group())]
        if nums:
            t = rng.choice(nums)
            return text[:t.start()] + rng.choice(NUMBERS) + text[t.end():]
        return text[:start] + rng.choice(NUMBERS) + text[end:]
    if kind == 3:  # change an element type
        types = [m for m in re.finditer(r"\b(f16|bf16|f32|f64|i1|i8|i16|i32|i64)\b", text)]
        if types:
            t = rng.choice(types)
            return text[:t.start()] + rng.choice(TYPES) + text[t.end():]
        return text
    if kind == 4:  # change a shape
        shapes = list(re.finditer(r"tensor<([\dx?]*)", text))
        if shapes:
            t = rng.choice(shapes)
            dims = [d for d in t.group(1).split("x") if d]
            op = rng.randrange(3)
            if op == 0 and dims:
                dims[rng.randrange(len(dims))] = rng.choice(["0", "1", "5", "?", "9"])
            elif op == 1 and dims:
                dims.pop(rng.randrange(len(dims)))
            else:
                dims.insert(rng.randrange(len(dims) + 1), rng.choice(["1", "3"]))
            new = "tensor<" + "".join(d + "x" for d in dims)
            return text[:t.start()] + new + text[t.end():]
        return text
    if kind == 5:  # swap a keyword or op name
        pool = KEYWORDS if rng.random() < 0.5 else OPS
        return text[:start] + rng.choice(pool) + text[end:]
    if kind == 6:  # insert punctuation
        return text[:start] + rng.choice(PUNCT) + text[start:]
    if kind == 7:  # duplicate or drop a line
        lines = text.splitlines()
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            lines.insert(i, lines[i])
        else:
            lines.pop(i)
        return "\n".join(lines) + "\n"
    # swap two tokens
    other = rng.choice(tokens)
    if other.start() < start:
        tok, other = other, tok
    a, b = tok.span(), other.span()
    if a[1] > b[0]:
        return text
    return (text[:a[0]] + other.group() + text[a[1]:b[0]] + tok.group() +
            text[b[1]:])


def run(harp_opt, text, extra):
    proc = subprocess.run([harp_opt, "-", "--split-input-file"] + extra,
                          input=text.encode(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=120)
    return proc.returncode, proc.stderr.decode(errors="replace")


def acceptable(rc, stderr):
    return rc == 0 or (rc == 1 and "error:" in stderr)


def find_crashes(inputs, run_text, batch, errors=None):
    """Runs `inputs` in batches joined by the split marker through
    `run_text(text) -> (rc, stderr)`; a batch that ends otherwise than
    acceptably is halved until the inputs that do are found (a batch whose
    halves both pass is itself the culprit). Returns (rc, text, stderr) of
    each culprit. `errors`, a list, gets the stderr of each batch that
    passed.

    A batch is a process: each costs about 80 ms before it parses anything
    (loading harp-opt's libraries), several times that under the
    sanitizers, so batches are large and a crash is found by bisection."""
    crashes = []

    def check(chunk):
        rc, err = run_text(("\n" + SPLIT + "\n").join(chunk))
        if acceptable(rc, err):
            if errors is not None:
                errors.append(err)
            return False
        if len(chunk) > 1:
            half = len(chunk) // 2
            found = check(chunk[:half])
            found = check(chunk[half:]) or found
            if found:
                return True
        crashes.append((rc, ("\n" + SPLIT + "\n").join(chunk), err))
        return True

    for i in range(0, len(inputs), batch):
        check(inputs[i:i + batch])
    return crashes


def fuzz_arguments(tool, seed, batch):
    """The command line of a fuzz script: `--TOOL` (its path), `--seeds`
    directories, mutants per input, the random seed and the batch size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--" + tool, required=True)
    ap.add_argument("--seeds", action="append", required=True)
    ap.add_argument("--mutants-per-input", type=int,
                    default=int(os.environ.get("HARP_FUZZ_MUTANTS", "40")))
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("HARP_FUZZ_SEED", str(seed))))
    ap.add_argument("--batch", type=int, default=batch)
    return ap.parse_args()


def mutants(args, extension, chunks, mutate_text):
    """The seed files' chunks (`chunks(path)` of each file ending in
    `extension`) and `args.mutants_per_input` mutants of each, mutated once
    or (30%) twice by `mutate_text(text, rng)`. Returns (originals,
    mutants)."""
    rng = random.Random(args.seed)
    originals = []
    for d in args.seeds:
        for name in sorted(os.listdir(d)):
            if name.endswith(extension):
                originals += chunks(os.path.join(d, name))
    inputs = []
    for text in originals:
        for _ in range(args.mutants_per_input):
            m = mutate_text(text, rng)
            if rng.random() < 0.3:
                m = mutate_text(m, rng)
            inputs.append(m)
    return originals, inputs


def main():
    args = fuzz_arguments("harp-opt", 20261122, 600)
    originals, inputs = mutants(args, ".mlir", chunks_of, mutate)

    crashes = []
    # The plain (parse and verify) run also counts the diagnostics produced.
    errors = []
    for extra in ([], ["--canonicalize"], ["--harp-to-llvm"]):
        crashes += [(rc, extra, text, err) for rc, text, err in find_crashes(
            inputs, lambda text: run(args.harp_opt, text, extra), args.batch,
            errors if not extra else None)]
    rejected = sum(len(re.findall(r"^<stdin>:\d+:\d+: error:", err, re.M))
                   for err in errors)
    for rc, extra, text, err in crashes[:5]:
        sys.stdout.write("CRASH (exit %d, %s):\n%s\n--- stderr ---\n%s\n" %
                         (rc, " ".join(extra) or "parse", text, err[-2000:]))
    print("fuzz: %d inputs from %d originals, %d diagnostics, %d crashes" %
          (len(inputs), len(originals), rejected, len(crashes)))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
