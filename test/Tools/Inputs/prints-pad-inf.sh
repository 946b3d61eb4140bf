#!/bin/sh
# harp-reduce's interestingness test for reduce.mlir: exit 1 (interesting)
# while harp-opt still prints a view padded with -inf.
harp-opt "$1" 2>&1 | grep -q "pad = -inf" && exit 1
exit 0
