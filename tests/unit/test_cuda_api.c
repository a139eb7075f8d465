/* The CUDA backend's API where there is no usable GPU (this machine, CI) — and in a build without
 * the backend: every entry point says why, in the documented words, and nothing is half made.
 * On a machine with a GPU the device checks run instead (the numbers are test_cuda_parity's). */
#include <stdio.h>
#include <string.h>

#include "kernels/cuda/cuda_api.h"

#include "tests/check.h"

static const char PREFIX[] = "no CUDA device: ";

int main(void) {
  fc_mel_config cfg;
  CHECK(fc_mel_preset("hifigan", &cfg) == 0, "preset");
  int n = -1;
  char why[256] = "unchanged";
  int rc = cuda_device_count(&n, why, sizeof why);
  printf("built: %d; cuda_device_count: %d (%s), n = %d, why = \"%s\"\n", cuda_built(), rc,
         fc_strerror(rc), n, why);

  if (rc == 0) {
    CHECK(cuda_built() == 1, "a device was counted in a build without the backend");
    CHECK(n >= 1, "device count %d", n);
    char desc[256];
    CHECK(cuda_device_describe(0, desc, sizeof desc) == 0, "describe: %s", cuda_last_error());
    printf("device 0: %s\n", desc);
    CHECK(cuda_device_describe(n, desc, sizeof desc) == FC_ENODEVICE, "describe(%d)", n);
    fc_cuda_plan *p = NULL;
    CHECK(cuda_plan_create(&cfg, n, 0, &p) == FC_ENODEVICE && !p, "plan on device %d", n);
    fc_mel_config bad = cfg;
    bad.n_fft = 0;
    CHECK(cuda_plan_create(&bad, 0, 0, &p) == FC_ECONFIG && !p, "invalid config");
    CHECK(failures == 0, "see above");
    return failures ? 1 : 0;
  }

  /* No usable device: the reason is the runtime's (or the build's), prefixed as featurize prints it. */
  CHECK(rc == FC_ENODEVICE, "rc %d, want FC_ENODEVICE", rc);
  CHECK(n == 0, "n = %d", n);
  CHECK(strncmp(why, PREFIX, sizeof PREFIX - 1) == 0 && strlen(why) > sizeof PREFIX, "why = \"%s\"",
        why);
  CHECK(strcmp(cuda_last_error(), why) == 0, "last error \"%s\" vs why \"%s\"", cuda_last_error(),
        why);
  if (!cuda_built())
    CHECK(strcmp(why, "no CUDA device: this build has no CUDA backend") == 0, "why = \"%s\"", why);
  /* Without a driver (this machine): the runtime's words for it. */
  if (cuda_built() && strstr(why, "driver"))
    CHECK(strstr(why, "CUDA driver version is insufficient for CUDA runtime version") != NULL,
          "why = \"%s\"", why);
  /* NULL why is allowed. */
  CHECK(cuda_device_count(&n, NULL, 0) == FC_ENODEVICE, "NULL why");

  char desc[256];
  CHECK(cuda_device_describe(0, desc, sizeof desc) == FC_ENODEVICE, "describe");
  CHECK(strncmp(desc, PREFIX, sizeof PREFIX - 1) == 0, "describe: \"%s\"", desc);

  fc_cuda_plan *p = (fc_cuda_plan *)&cfg; /* must be reset to NULL */
  CHECK(cuda_plan_create(&cfg, 0, 0, &p) == FC_ENODEVICE, "plan_create");
  CHECK(p == NULL, "plan_create left *out set");
  CHECK(strncmp(cuda_last_error(), PREFIX, sizeof PREFIX - 1) == 0, "last error \"%s\"",
        cuda_last_error());
  fc_cuda_gather *g = (fc_cuda_gather *)&cfg;
  CHECK(cuda_gather_create(&cfg, 0, 0, 4, 0, &g) == FC_ENODEVICE, "gather_create");
  CHECK(g == NULL, "gather_create left *out set");
  cuda_plan_free(NULL);
  cuda_gather_free(NULL);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("ok: without a GPU every entry point fails with FC_ENODEVICE and the reason\n");
  return 0;
}
