/* The C roofline loops of the benchmark suite, compiled by run.py with
 * `cc -O3 -march=native -fopenmp` and run as
 *
 *   roofline N REPS MAX_SECONDS
 *
 * on OMP_NUM_THREADS threads. It times a STREAM triad a[i] = b[i] + s * c[i]
 * (12 bytes per element: two reads and a write) and a read-reduce sum of a
 * (4 bytes per element) over N floats, one warm-up and then REPS timed runs
 * (at least 3, fewer than REPS when a run takes more than MAX_SECONDS / REPS),
 * and prints one JSON object with best and median seconds and GB/s. It also
 * times the FMA peak: independent chains of vector multiply-adds in
 * registers on every thread, the widest vectors -march allows (64 bytes with
 * AVX-512, else 32), printed as "fma" with its GFLOP/s (a multiply-add is two
 * flops). */

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static void triad(float *restrict a, const float *restrict b,
                  const float *restrict c, long n, float s) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; ++i)
    a[i] = b[i] + s * c[i];
}

static float sum(const float *restrict a, long n) {
  float s = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
  for (long i = 0; i < n; ++i)
    s += a[i];
  return s;
}

static volatile float sink;

#ifdef __AVX512F__
typedef float vfloat __attribute__((vector_size(64)));
#define CHAINS 12
#else
typedef float vfloat __attribute__((vector_size(32)));
#define CHAINS 10
#endif

/* `iters` steps of CHAINS independent multiply-add chains on each thread;
 * returns the flops done. */
static double fmaChains(long iters) {
  double flops = 0;
#pragma omp parallel reduction(+ : flops)
  {
    vfloat acc[CHAINS], m, a;
    for (int j = 0; j < CHAINS; ++j)
      acc[j] = (vfloat){0} + (float)j;
    m = (vfloat){0} + 0.999999f;
    a = (vfloat){0} + 1e-7f;
    for (long i = 0; i < iters; ++i) {
      /* The compiler may not see through the register barrier, so every
       * step is done. */
      __asm__ volatile("" : "+x"(m));
      for (int j = 0; j < CHAINS; ++j)
        acc[j] = acc[j] * m + a;
    }
    vfloat s = acc[0];
    for (int j = 1; j < CHAINS; ++j)
      s += acc[j];
    sink = s[0];
    flops = 2.0 * iters * CHAINS * (sizeof(vfloat) / sizeof(float));
  }
  return flops;
}

/* Prints the FMA peak's JSON fields: the best of `reps` runs. */
static void benchFma(int reps) {
  long iters = 1L << 22;
  double best = 1e30, flops = 0;
  for (int r = -1; r < reps; ++r) {
    double start = now();
    flops = fmaChains(iters);
    double dt = now() - start;
    if (r >= 0 && dt < best)
      best = dt;
  }
  printf("\"fma\": {\"reps\": %d, \"best_s\": %.6g, \"flops\": %.0f, "
         "\"vector_bytes\": %d, \"gflops\": %.3f}",
         reps, best, flops, (int)sizeof(vfloat), flops / best * 1e-9);
}

/* Times `kind` (0: triad, 1: sum) and prints its JSON fields. */
static void bench(int kind, float *a, float *b, float *c, long n, int reps,
                  double maxSeconds) {
  double t[1000];
  for (int r = -1; r < reps; ++r) {
    double start = now();
    if (kind == 0)
      triad(a, b, c, n, 3.0f);
    else
      sink = sum(a, n);
    double dt = now() - start;
    if (r < 0) {
      double fit = maxSeconds / dt;
      if (fit < reps)
        reps = fit < 3 ? 3 : (int)fit;
    } else {
      t[r] = dt;
    }
  }
  qsort(t, reps, sizeof(double), cmp);
  double median = reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
  double bytes = (kind == 0 ? 12.0 : 4.0) * n;
  printf("\"%s\": {\"reps\": %d, \"best_s\": %.6g, \"median_s\": %.6g, "
         "\"bytes\": %.0f, \"gbps\": %.3f}",
         kind == 0 ? "triad" : "read", reps, t[0], median, bytes,
         bytes / t[0] * 1e-9);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1L << 24;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  double maxSeconds = argc > 3 ? atof(argv[3]) : 1e9;
  if (reps < 1 || reps > 1000)
    reps = 10;
  float *a = aligned_alloc(64, n * sizeof(float));
  float *b = aligned_alloc(64, n * sizeof(float));
  float *c = aligned_alloc(64, n * sizeof(float));
  if (!a || !b || !c)
    return 1;
    /* First touch on the threads that use the data. */
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = (float)(i % 65 - 32) / 32;
    c[i] = (float)(i % 63 - 31) / 32;
  }
  printf("{\"n\": %ld, \"threads\": %d, ", n, omp_get_max_threads());
  bench(0, a, b, c, n, reps, maxSeconds);
  printf(", ");
  bench(1, a, b, c, n, reps, maxSeconds);
  printf(", ");
  benchFma(3);
  printf("}\n");
  free(a);
  free(b);
  free(c);
  return 0;
}
