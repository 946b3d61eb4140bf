/* A C program linking a library harp-compile wrote from library.mlir
   (test/Runtime/library.test): it calls the entry points with good and bad
   tensors and prints what they return, then whether LLVM, MLIR or harp's
   own libraries are mapped into the process. */
#include "library.h"

#include <stdio.h>
#include <string.h>

static void report(const char *what, int code) {
  printf("%s: %d %s\n", what, code, lib_last_error());
}

int main(void) {
  /* 3 x + 1 on integers: exact. */
  int64_t xi[9] = {-4, -1, 0, 1, 2, 3, 5, 1000000007, -9};
  int64_t yi[9];
  int64_t shape9[] = LIB_AFFINE_INT_INPUT0_SHAPE;
  harp_i64_tensor in = {xi, LIB_AFFINE_INT_INPUT0_RANK, shape9};
  harp_i64_tensor out = {yi, 1, shape9};
  report("affine_int", lib_affine_int(&in, &out));
  for (int i = 0; i < 9; ++i)
    printf("%lld ", (long long)yi[i]);
  printf("\n");

  /* The layer on ones: every output is relu(17 + 1) = 18, exactly. */
  float x[3 * 17], w[17 * 7], b[7], y[3 * 7];
  for (int i = 0; i < 3 * 17; ++i)
    x[i] = 1.0f;
  for (int i = 0; i < 17 * 7; ++i)
    w[i] = 1.0f;
  for (int i = 0; i < 7; ++i)
    b[i] = 1.0f;
  int64_t sx[] = LIB_AFFINE_INPUT0_SHAPE, sw[] = LIB_AFFINE_INPUT1_SHAPE,
          sb[] = LIB_AFFINE_INPUT2_SHAPE, sy[] = LIB_AFFINE_RESULT0_SHAPE;
  harp_f32_tensor tx = {x, 2, sx}, tw = {w, 2, sw}, tb = {b, 1, sb},
                  ty = {y, 2, sy};
  report("affine", lib_affine(&tx, &tw, &tb, &ty));
  int all = 1;
  for (int i = 0; i < 3 * 7; ++i)
    all &= y[i] == 18.0f;
  printf("affine all 18: %d\n", all);

  /* A 0-d result. */
  double m[15], r[15], s = 0;
  for (int i = 0; i < 15; ++i)
    m[i] = 0.0;
  int64_t s15[] = {15};
  harp_f64_tensor tm = {m, 1, s15}, ts = {&s, 0, NULL}, tr = {r, 1, s15};
  report("moments", lib_moments(&tm, &ts, &tr));
  printf("sum of exp(0) over 15: %g\n", s);

  /* The training step: a loss and the weights moved against it. */
  float tx5[15], tw3[3] = {0.5f, -1.0f, 2.0f}, ty5[5], loss, w3[3];
  for (int i = 0; i < 15; ++i)
    tx5[i] = (float)(i % 4) - 1.0f;
  for (int i = 0; i < 5; ++i)
    ty5[i] = (float)i;
  int64_t s53[] = {5, 3}, s3[] = {3}, s5[] = {5};
  harp_f32_tensor a = {tx5, 2, s53}, bw = {tw3, 1, s3}, c = {ty5, 1, s5},
                  l = {&loss, 0, NULL}, nw = {w3, 1, s3};
  report("train_step", lib_train_step(&a, &bw, &c, &l, &nw));
  printf("loss %g, weights moved: %d %d %d\n", loss, w3[0] != tw3[0],
         w3[1] != tw3[1], w3[2] != tw3[2]);

  /* Bad calls: each returns its code and says why; nothing is written. */
  yi[0] = 77;
  report("null tensor", lib_affine_int(NULL, &out));
  harp_i64_tensor rank2 = {xi, 2, shape9};
  report("wrong rank", lib_affine_int(&rank2, &out));
  int64_t eight[] = {8};
  harp_i64_tensor short_ = {xi, 1, eight};
  report("wrong shape", lib_affine_int(&short_, &out));
  harp_i64_tensor noShape = {xi, 1, NULL};
  report("null shape", lib_affine_int(&noShape, &out));
  harp_i64_tensor noData = {NULL, 1, shape9};
  report("null data", lib_affine_int(&in, &noData));
  harp_i64_tensor alias = {xi + 2, 1, shape9};
  report("overlap", lib_affine_int(&in, &alias));
  printf("untouched: %lld\n", (long long)yi[0]);
  report("good again", lib_affine_int(&in, &out));
  printf("first result %lld\n", (long long)yi[0]);

  /* What the process has mapped: libc, libm, the library; no compiler. */
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[4096];
  int compiler = 0;
  while (maps && fgets(line, sizeof(line), maps))
    if (strstr(line, "libLLVM") || strstr(line, "libMLIR") ||
        strstr(line, "libHarp") || strstr(line, "libstdc++"))
      compiler = 1, printf("mapped: %s", line);
  if (maps)
    fclose(maps);
  printf("compiler libraries mapped: %d\n", compiler);
  return 0;
}
