/* A stand-in for the NVIDIA driver's NVML (libnvidia-ml.so.1), for tests on machines without a
 * GPU: the five functions fc_gpu_sampler calls, and three a test calls to steer them. Built as
 * tests/stub/libnvidia-ml.so.1 (its soname the driver's); a test loads it by path before
 * starting a sampler, and the sampler's dlopen("libnvidia-ml.so.1") then finds it by soname.
 * Never installed. */
#include <stdatomic.h>

typedef struct fake_util {
  unsigned int gpu, memory;
} fake_util;

static atomic_uint util_pct; /* what nvmlDeviceGetUtilizationRates reports */
static atomic_uint calls; /* how often it was called */
static atomic_int init_error; /* nvmlInit_v2's return: 0, or an NVML error code */
static int devices = 1; /* GPUs this fake driver has */
static const char handle_of[8]; /* a device handle: the address of its byte */

/* the test's levers */
void fake_nvml_set_util(unsigned pct);
unsigned fake_nvml_calls(void);
void fake_nvml_set_init_error(int code);

void fake_nvml_set_util(unsigned pct) { atomic_store(&util_pct, pct); }
unsigned fake_nvml_calls(void) { return atomic_load(&calls); }
void fake_nvml_set_init_error(int code) { atomic_store(&init_error, code); }

/* the driver's, as nvml.h declares them (nvmlReturn_t is an int; 0: NVML_SUCCESS) */
int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByIndex_v2(unsigned index, const void **device);
int nvmlDeviceGetUtilizationRates(const void *device, fake_util *u);
const char *nvmlErrorString(int r);

int nvmlInit_v2(void) { return atomic_load(&init_error); }
int nvmlShutdown(void) { return 0; }

int nvmlDeviceGetHandleByIndex_v2(unsigned index, const void **device) {
  if (index >= (unsigned)devices) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = &handle_of[index];
  return 0;
}

int nvmlDeviceGetUtilizationRates(const void *device, fake_util *u) {
  if (device != &handle_of[0]) return 2;
  u->gpu = atomic_load(&util_pct);
  u->memory = 0;
  atomic_fetch_add(&calls, 1);
  return 0;
}

const char *nvmlErrorString(int r) {
  switch (r) {
  case 2: return "Invalid Argument";
  case 9: return "Driver Not Loaded";
  default: return "Unknown Error";
  }
}
