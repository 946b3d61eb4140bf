/* The C roofline loops of the benchmark suite, compiled by run.py with
 * `cc -O3 -march=native -fopenmp` and run as
 *
 *   roofline N REPS MAX_SECONDS
 *
 * on OMP_NUM_THREADS threads. It times a STREAM triad a[i] = b[i] + s * c[i]
 * (12 bytes per element: two reads and a write) and a read-reduce sum of a
 * (4 bytes per element) over N floats, one warm-up and then REPS timed runs
 * (at least 3, fewer than REPS when a run takes more than MAX_SECONDS / REPS),
 * and prints one JSON object with best and median seconds and GB/s. */

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
  printf("}\n");
  free(a);
  free(b);
  free(c);
  return 0;
}
