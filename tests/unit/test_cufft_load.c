/* cuFFT is loaded at run time (kernels/cuda/cufft_load.c): with the CUDA backend built, the stubs
 * load this machine's libcufft and call through (cufftGetVersion needs no GPU); a library that is
 * not there gives a clear error, not a crash; without the backend the loader says so. */
#include "featcache/fc_base.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cufft_load.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  char why[512] = "";
  if (!cuda_built()) {
    CHECK(cufft_load(why, sizeof why) == FC_ENODEVICE);
    CHECK(strstr(why, "built without CUDA") != NULL, "why: %s", why);
    int version = 1;
    CHECK(cufft_version(&version) == FC_ENODEVICE && version == 0);
    return fc_check_result("test_cufft_load (no CUDA backend)");
  }

  /* a library that is not there: the reason names it (a child: the load happens once) */
  pid_t pid = fork();
  if (pid == 0) {
    setenv("FC_CUFFT_LIBRARY", "/nonexistent/libcufft.so.99", 1);
    char w[512] = "";
    int rc = cufft_load(w, sizeof w);
    int version = 0;
    int ok = rc == FC_ENODEVICE && strstr(w, "cuFFT not loaded") && strstr(w, "/nonexistent") &&
             strcmp(cufft_load_error(), w) == 0 && cufft_version(&version) == FC_ENODEVICE;
    if (!ok) fprintf(stderr, "missing library: rc %d, why '%s'\n", rc, w);
    _exit(ok ? 0 : 1);
  }
  int st = 0;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the missing-library child failed (status %d)", st);

  if (cufft_load(why, sizeof why) != 0) {
    if (failures) return fc_check_result("test_cufft_load");
    printf("skip: the CUDA backend is built but this machine has no cuFFT: %s\n", why);
    return 77;
  }
  CHECK(cufft_load_error()[0] == '\0', "error '%s' after a good load", cufft_load_error());
  int version = 0;
  CHECK(cufft_version(&version) == 0 && version >= 10000, "cufftGetVersion: %d", version);
  printf("cuFFT %d loaded at run time\n", version);
  return fc_check_result("test_cufft_load");
}
