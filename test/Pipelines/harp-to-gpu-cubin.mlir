// REQUIRES: ptxas
// RUN: harp-opt %S/harp-to-gpu.mlir --pass-pipeline='builtin.module(harp-to-gpu{format=cubin})' | FileCheck %s
// RUN: harp-opt %S/harp-to-gpu.mlir --harp-to-gpu | %extract_ptx --split %t
// RUN: %ptxas -arch=sm_90 %t/gelu_kernel.ptx -o %t/kernels.cubin

// format=cubin: ptxas assembles every kernel module now (and would reject
// invalid PTX); the host code embeds the ELF.
// CHECK: gpu.binary @gelu_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}bin = "\7FELF
// CHECK-NOT: gpu.binary
