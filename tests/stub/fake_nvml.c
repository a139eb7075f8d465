/* A stand-in for the NVIDIA driver's NVML (libnvidia-ml.so.1), for tests on machines without a
 * GPU: the five functions fc_gpu_sampler calls, the two featcache.profiler calls to find a GPU
 * by the UUID in CUDA_VISIBLE_DEVICES, and five a test calls to steer them. Built as
 * tests/stub/libnvidia-ml.so.1 (its soname the driver's); a test loads it by path before
 * starting a sampler, and the sampler's dlopen("libnvidia-ml.so.1") then finds it by soname.
 * Never installed. */
#include <stdatomic.h>

typedef struct fake_util {
  unsigned int gpu, memory;
} fake_util;

#define FAKE_MAX 8
static atomic_uint util_pct[FAKE_MAX]; /* what nvmlDeviceGetUtilizationRates reports, per GPU */
static atomic_uint calls; /* how often it was called */
static atomic_int init_error; /* nvmlInit_v2's return: 0, or an NVML error code */
static atomic_int devices = 1; /* GPUs this fake driver has */
static const char handle_of[FAKE_MAX]; /* a device handle: the address of its byte */

/* the test's levers */
void fake_nvml_set_util(unsigned pct);
void fake_nvml_set_util_of(unsigned index, unsigned pct);
unsigned fake_nvml_calls(void);
void fake_nvml_set_init_error(int code);
void fake_nvml_set_devices(int n);

void fake_nvml_set_util(unsigned pct) {
  for (int i = 0; i < FAKE_MAX; i++) atomic_store(&util_pct[i], pct);
}
void fake_nvml_set_util_of(unsigned index, unsigned pct) {
  if (index < FAKE_MAX) atomic_store(&util_pct[index], pct);
}
unsigned fake_nvml_calls(void) { return atomic_load(&calls); }
void fake_nvml_set_init_error(int code) { atomic_store(&init_error, code); }
void fake_nvml_set_devices(int n) {
  atomic_store(&devices, n < 0 ? 0 : n > FAKE_MAX ? FAKE_MAX : n);
}

/* the driver's, as nvml.h declares them (nvmlReturn_t is an int; 0: NVML_SUCCESS) */
int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByIndex_v2(unsigned index, const void **device);
int nvmlDeviceGetUtilizationRates(const void *device, fake_util *u);
int nvmlDeviceGetCount_v2(unsigned *count);
int nvmlDeviceGetUUID(const void *device, char *uuid, unsigned length);
const char *nvmlErrorString(int r);

int nvmlInit_v2(void) { return atomic_load(&init_error); }
int nvmlShutdown(void) { return 0; }

int nvmlDeviceGetHandleByIndex_v2(unsigned index, const void **device) {
  if (index >= (unsigned)atomic_load(&devices)) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = &handle_of[index];
  return 0;
}

static int index_of(const void *device) {
  const char *d = device;
  return d >= handle_of && d < handle_of + atomic_load(&devices) ? (int)(d - handle_of) : -1;
}

int nvmlDeviceGetUtilizationRates(const void *device, fake_util *u) {
  int i = index_of(device);
  if (i < 0) return 2;
  u->gpu = atomic_load(&util_pct[i]);
  u->memory = 0;
  atomic_fetch_add(&calls, 1);
  return 0;
}

int nvmlDeviceGetCount_v2(unsigned *count) {
  *count = (unsigned)atomic_load(&devices);
  return 0;
}

/* GPU i's UUID: GPU-0000000i-fa4e-4e11-8000-00000000000i, as nvidia-smi -L writes them */
int nvmlDeviceGetUUID(const void *device, char *uuid, unsigned length) {
  static const char form[] = "GPU-0000000?-fa4e-4e11-8000-00000000000?";
  int i = index_of(device);
  if (i < 0) return 2;
  if (length < sizeof form) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  for (unsigned k = 0; k < sizeof form; k++) uuid[k] = form[k] == '?' ? (char)('0' + i) : form[k];
  return 0;
}

const char *nvmlErrorString(int r) {
  switch (r) {
  case 2: return "Invalid Argument";
  case 7: return "Insufficient Size";
  case 9: return "Driver Not Loaded";
  default: return "Unknown Error";
  }
}
