/*===- FakeCuda.c - a stand-in CUDA driver for testing harp's runtime ----===*
 *
 * Built as libcuda.so.1 under build/test/fake-cuda and put first on
 * LD_LIBRARY_PATH by the runtime tests (never installed): it implements the
 * driver calls harp's CUDA runtime makes with host memory standing in for
 * device memory, and logs every module load, function lookup, launch,
 * allocation and copy to $HARP_FAKE_CUDA_LOG (else stderr), so the tests
 * can check what the runtime and the generated host code ask of a driver on
 * a machine without a GPU. Kernels are not executed, but a launch whose
 * pointer parameter (`.ptr` in the PTX) points outside every live device
 * allocation fails with CUDA_ERROR_ILLEGAL_ADDRESS, as the kernel would on a
 * GPU: host memory handed to a kernel shows without one.
 *
 *   HARP_FAKE_CUDA_DEVICES=n   how many devices there are (default 1)
 *   HARP_FAKE_CUDA_FAIL=name   the driver call that fails (e.g. cuLaunchKernel)
 *   HARP_FAKE_CUDA_PTXAS=path  assembles every PTX module with this ptxas for
 *                              its `.target`, as a driver's JIT would: a
 *                              module ptxas refuses fails to load with
 *                              CUDA_ERROR_INVALID_PTX and ptxas's messages
 *                              in the JIT error log (a check of the PTX in
 *                              the same process that runs its host code,
 *                              instead of a second compile to cubin)
 *   HARP_FAKE_CUDA_PTXAS_CACHE=dir  a directory of the PTX texts ptxas has
 *                              assembled (by a 128-bit hash of the text and
 *                              the ptxas path): a text assembled before is
 *                              not assembled again
 *
 *===----------------------------------------------------------------------===*/

#include <cuda.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static FILE *logFile(void) {
  static FILE *file = NULL;
  if (!file) {
    const char *path = getenv("HARP_FAKE_CUDA_LOG");
    file = path ? fopen(path, "a") : NULL;
    if (!file)
      file = stderr;
  }
  return file;
}

static void say(const char *format, ...) {
  va_list args;
  va_start(args, format);
  vfprintf(logFile(), format, args);
  va_end(args);
  fputc('\n', logFile());
  fflush(logFile());
}

static int fails(const char *name) {
  const char *fail = getenv("HARP_FAKE_CUDA_FAIL");
  return fail && strcmp(fail, name) == 0;
}

static long liveAllocations = 0;

/* The live allocations, to tell device memory from host memory. */
struct Allocation {
  const char *base;
  size_t bytes;
  struct Allocation *next;
};
static struct Allocation *allocations = NULL;

static int isDeviceMemory(const char *pointer) {
  for (struct Allocation *a = allocations; a; a = a->next)
    if (pointer >= a->base && pointer <= a->base + a->bytes)
      return 1;
  return 0;
}

static void report(void) { say("exit live-allocations=%ld", liveAllocations); }

CUresult cuInit(unsigned flags) {
  (void)flags;
  atexit(report);
  say("init");
  return fails("cuInit") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_ERROR_INVALID_PTX:
    *name = "CUDA_ERROR_INVALID_PTX";
    break;
  case CUDA_ERROR_LAUNCH_FAILED:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    break;
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    break;
  default:
    *name = "CUDA_ERROR_UNKNOWN";
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  (void)error;
  *text = "failure injected by the fake driver";
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  const char *env = getenv("HARP_FAKE_CUDA_DEVICES");
  *count = env ? atoi(env) : 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  snprintf(name, (size_t)length, "harp fake device %d", (int)device);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice device) {
  (void)device;
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}

static int theContext;

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  (void)device;
  *context = (CUcontext)&theContext;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  (void)context;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }

/* A module: the PTX or ELF image, kept to look kernels up by name. */
struct Function;

struct Module {
  char *text;
  /* The functions looked up in it, freed with it. */
  struct Function *functions;
};

/* FNV-1a over `text` and `salt`, from `basis`. */
static unsigned long long hash(const char *text, const char *salt,
                               unsigned long long basis) {
  unsigned long long h = basis;
  for (const char *p = text; *p; ++p)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
  for (const char *p = salt; *p; ++p)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
  return h;
}

/* Assembles the PTX `text` with $HARP_FAKE_CUDA_PTXAS (if set) for the
   architecture its `.target` names; returns 0 when it assembles, else
   copies ptxas's messages to `log` (of `size` bytes, if any). */
static int assemble(const char *text, char *log, size_t size) {
  const char *ptxas = getenv("HARP_FAKE_CUDA_PTXAS");
  if (!ptxas || !*ptxas)
    return 0;
  char arch[32] = "";
  const char *target = strstr(text, "\n.target ");
  if (!target || sscanf(target, "\n.target %31[a-z0-9_]", arch) != 1) {
    if (log)
      snprintf(log, size, "fake driver: the PTX names no .target");
    return 1;
  }
  /* Where the cache (if any) records that this text assembled. */
  char checked[4096] = "";
  const char *cache = getenv("HARP_FAKE_CUDA_PTXAS_CACHE");
  if (cache && *cache) {
    snprintf(checked, sizeof(checked), "%s/%016llx%016llx.ok", cache,
             hash(text, ptxas, 0xcbf29ce484222325ULL),
             hash(text, ptxas, 0x84222325cbf29ce4ULL));
    if (access(checked, F_OK) == 0) {
      say("  ptxas -arch=%s: ok (assembled before)", arch);
      return 0;
    }
  }
  char ptx[] = "/tmp/harp-fake-cuda-XXXXXX";
  int fd = mkstemp(ptx);
  if (fd < 0)
    return 1;
  size_t length = strlen(text);
  int written = write(fd, text, length) == (ssize_t)length;
  close(fd);
  char command[4096];
  snprintf(command, sizeof(command), "'%s' -arch=%s -o /dev/null '%s' 2>&1",
           ptxas, arch, ptx);
  FILE *out = written ? popen(command, "r") : NULL;
  size_t used = 0;
  if (out) {
    char line[1024];
    while (fgets(line, sizeof(line), out)) {
      line[strcspn(line, "\n")] = '\0';
      say("  ptxas: %s", line);
      if (log && used + 1 < size) {
        snprintf(log + used, size - used, "%s\n", line);
        used += strlen(log + used);
      }
    }
  }
  int status = out ? pclose(out) : -1;
  unlink(ptx);
  int ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  say("  ptxas -arch=%s: %s", arch, ok ? "ok" : "failed");
  if (ok && checked[0]) {
    FILE *mark = fopen(checked, "w");
    if (mark)
      fclose(mark);
  }
  return !ok;
}

static CUresult loadModule(CUmodule *module, const void *image, const char *how,
                           char *log, size_t size) {
  const char *text = (const char *)image;
  int isElf = memcmp(text, "\177ELF", 4) == 0;
  say("module-load %s %s", how, isElf ? "cubin" : "ptx");
  if (!isElf) {
    for (const char *at = strstr(text, ".entry "); at;
         at = strstr(at + 1, ".entry ")) {
      const char *end = strchr(at, '(');
      say("  entry %.*s", (int)(end - at - 7), at + 7);
    }
    if (assemble(text, log, size))
      return CUDA_ERROR_INVALID_PTX;
  }
  struct Module *m = calloc(1, sizeof(struct Module));
  m->text = isElf ? strdup("") : strdup(text);
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (fails("cuModuleLoadData"))
    return CUDA_ERROR_INVALID_PTX;
  return loadModule(module, image, "data", NULL, 0);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned numOptions, CUjit_option *options,
                            void **values) {
  char *log = NULL;
  size_t size = 0;
  for (unsigned i = 0; i < numOptions; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      log = (char *)values[i];
    else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      size = (size_t)values[i];
  }
  if (!size)
    log = NULL;
  if (fails("cuModuleLoadDataEx")) {
    if (log)
      snprintf(log, size, "ptxas fatal: fake error log");
    return CUDA_ERROR_INVALID_PTX;
  }
  return loadModule(module, image, "jit", log, size);
}

enum { kMaxParams = 256 };

struct Function {
  char name[256];
  /* From the PTX entry: how many parameters, which are pointers. */
  int numParams;
  unsigned char isPointer[kMaxParams];
  struct Function *next;
};

/* Reads the parameter list of `.entry name(...)` in `text`; leaves the
   function unchecked (numParams 0) when the entry is not found. */
static void readParams(struct Function *f, const char *text) {
  size_t length = strlen(f->name);
  for (const char *at = strstr(text, ".entry "); at;
       at = strstr(at + 1, ".entry ")) {
    const char *name = at + 7;
    if (strncmp(name, f->name, length) != 0 || name[length] != '(')
      continue;
    const char *end = strchr(name, ')');
    for (const char *param = strstr(name, ".param ");
         param && end && param < end && f->numParams < kMaxParams;
         param = strstr(param + 1, ".param ")) {
      const char *line = strchr(param, '\n');
      const char *ptr = strstr(param, " .ptr ");
      f->isPointer[f->numParams++] = ptr && (!line || ptr < line);
    }
    return;
  }
}

CUresult cuModuleUnload(CUmodule module) {
  struct Module *m = (struct Module *)module;
  say("module-unload");
  while (m->functions) {
    struct Function *next = m->functions->next;
    free(m->functions);
    m->functions = next;
  }
  free(m->text);
  free(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  struct Module *m = (struct Module *)module;
  say("get-function %s", name);
  if (m->text[0] && !strstr(m->text, name))
    return CUDA_ERROR_NOT_FOUND;
  /* Functions live as long as their module. */
  struct Function *f = calloc(1, sizeof(struct Function));
  snprintf(f->name, sizeof(f->name), "%s", name);
  readParams(f, m->text);
  f->next = m->functions;
  m->functions = f;
  *function = (CUfunction)f;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy,
                        unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params,
                        void **extra) {
  (void)stream;
  (void)extra;
  struct Function *f = (struct Function *)function;
  say("launch %s grid=%u,%u,%u block=%u,%u,%u shared=%u params=%s", f->name,
      gx, gy, gz, bx, by, bz, shared, params ? "yes" : "none");
  for (int i = 0; params && i < f->numParams; ++i) {
    if (!f->isPointer[i])
      continue;
    const char *pointer = *(const char **)params[i];
    if (!isDeviceMemory(pointer)) {
      say("launch %s: parameter %d is not device memory", f->name, i);
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
  }
  return fails("cuLaunchKernel") ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}

static int theStream, theEvent;

CUresult cuStreamCreate(CUstream *stream, unsigned flags) {
  (void)flags;
  *stream = (CUstream)&theStream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  (void)stream;
  say("stream-synchronize");
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream stream) {
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  (void)stream;
  (void)event;
  (void)flags;
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned flags) {
  (void)flags;
  *event = (CUevent)&theEvent;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  (void)event;
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) {
  (void)event;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  (void)event;
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  if (fails("cuMemAlloc"))
    return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = (CUdeviceptr)calloc(1, bytes ? bytes : 1);
  struct Allocation *a = malloc(sizeof(struct Allocation));
  a->base = (const char *)*ptr;
  a->bytes = bytes;
  a->next = allocations;
  allocations = a;
  ++liveAllocations;
  say("alloc %zu", bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned flags) {
  (void)flags;
  return cuMemAlloc(ptr, bytes);
}

CUresult cuMemFree(CUdeviceptr ptr) {
  for (struct Allocation **a = &allocations; *a; a = &(*a)->next)
    if ((*a)->base == (const char *)ptr) {
      struct Allocation *dead = *a;
      *a = dead->next;
      free(dead);
      break;
    }
  free((void *)ptr);
  --liveAllocations;
  say("free");
  return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  memcpy((void *)dst, (const void *)src, bytes);
  say("copy %zu", bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       CUstream stream) {
  (void)stream;
  return cuMemcpy(dst, src, bytes);
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  memcpy((void *)dst, src, bytes);
  say("copy-to-device %zu", bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  memcpy(dst, (const void *)src, bytes);
  say("copy-to-host %zu", bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count,
                          CUstream stream) {
  (void)stream;
  for (size_t i = 0; i < count; ++i)
    ((unsigned *)dst)[i] = value;
  return CUDA_SUCCESS;
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          CUstream stream) {
  (void)stream;
  for (size_t i = 0; i < count; ++i)
    ((unsigned short *)dst)[i] = value;
  return CUDA_SUCCESS;
}
