#!/usr/bin/env python3
"""Prints the device code embedded in the gpu.binary ops of MLIR text (the
output of `harp-opt --harp-to-gpu`), one object after another: PTX as text,
cubin and fatbin as a note with their size. Reads a file or stdin; with
--split DIR, writes each object to DIR/<module>.ptx (or .cubin) instead, one
file per gpu.binary, ready for ptxas or cuobjdump.

  harp-opt model.mlir --harp-to-gpu | utils/extract-ptx.py > model.ptx
  harp-opt model.mlir --harp-to-gpu | utils/extract-ptx.py --split out/
"""

import os

import re
import sys



def unescape(text):
    """MLIR string attributes escape bytes as \\XX and quotes as \\"."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "\\\"":
                out.append(ord(nxt))
                i += 2
                continue
            out += bytes.fromhex(text[i + 1:i + 3])
            i += 3
            continue
        out += text[i].encode()
        i += 1
    return bytes(out)


BINARY = re.compile(r'gpu\.binary @(\w+)')
OBJECT = re.compile(r'(assembly|bin)\s*=\s*"((?:[^"\\]|\\.)*)"')


def main():
    args = sys.argv[1:]
    split = None
    if args[:1] == ["--split"]:
        if len(args) < 2:
            sys.exit("extract-ptx: --split needs a directory")
        split, args = args[1], args[2:]
        os.makedirs(split, exist_ok=True)
    text = open(args[0]).read() if args else sys.stdin.read()
    found = 0
    for line in text.splitlines():
        name = BINARY.search(line)
        for kind, body in OBJECT.findall(line):
            found += 1
            data = unescape(body)
            if split:
                stem = name.group(1) if name else "object%d" % found
                ext = ".ptx" if kind == "assembly" else ".cubin"
                with open(os.path.join(split, stem + ext), "wb") as f:
                    f.write(data)
            elif kind == "assembly":
                sys.stdout.write(data.decode())
            else:
                sys.stdout.write("// binary object: %d bytes\n" % len(data))
    if not found:
        sys.exit("extract-ptx: no gpu.object with device code in the input")


if __name__ == "__main__":
    main()
