/* One audio file → one float mel, without a store (fc_featurize.h: loader-bench's "on the fly"
 * baseline, tests). */
#include "featcache/fc_audio.h"
#include "formats/common/args.h"
#include "featcache/fc_featurize.h"
#include "libcache/mel/featurize/audio_int.h"
#include "libcache/mel/featurize/featurize_int.h"
#include "formats/common/why.h"
#include "formats/common/alloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- one file → one float mel ------------------------------------------------------------------ */
int fc_featurize_memory(fc_mel_plan *plan, const void *bytes, size_t len, double max_seconds,
                        float **mel, uint64_t *frames, char *why, size_t why_len) {
  FC_ARGS_WHY(plan, bytes || !len, mel, frames);
  *mel = NULL;
  *frames = 0;
  if (why && why_len) why[0] = '\0';
  const fc_mel_config *cfg = fc_mel_plan_config(plan);
  float *x = NULL;
  size_t n = 0;
  fc_audio_info info;
  memset(&info, 0, sizeof info);
  int rc = fc_audio_decode(bytes, len, cfg->sample_rate, max_seconds, &x, &n, &info, why, why_len);
  if (rc) {
    if (why && why_len && !why[0]) fc_why(why, why_len, "%s", plain_reason(rc));
    return rc;
  }
  uint64_t nf = fc_mel_num_frames(cfg, n);
  if (nf == 0) {
    free(x);
    fc_why(why, why_len, "too short: %zu samples give no frames", n);
    return FC_EEMPTY;
  }
  if (nf > SIZE_MAX / sizeof(float) / cfg->n_mels) {
    free(x);
    fc_why(why, why_len, "too long for this machine");
    return ENOMEM;
  }
  float *out = fc_malloc((size_t)nf * cfg->n_mels * sizeof *out);
  if (!out) {
    free(x);
    fc_why(why, why_len, "out of memory");
    return ENOMEM;
  }
  rc = fc_mel_compute(plan, x, n, out);
  free(x);
  if (rc) {
    free(out);
    fc_why(why, why_len, "%s", plain_reason(rc));
    return rc;
  }
  *mel = out;
  *frames = nf;
  return 0;
}

int fc_featurize_file(fc_mel_plan *plan, const char *path, double max_seconds, float **mel,
                      uint64_t *frames, char *why, size_t why_len) {
  FC_ARGS_WHY(plan, path, mel, frames);
  *mel = NULL;
  *frames = 0;
  uint8_t *bytes = NULL;
  size_t cap = 0, len = 0;
  fc_audio_info info;
  if (why && why_len) why[0] = 0;
  /* a file whose header states a length over max_seconds is refused from its header */
  int rc = audio_read_checked(path, max_seconds, &bytes, &cap, &len, &info, why, why_len);
  if (rc) {
    free(bytes);
    if (why && why_len && !why[0]) fc_why(why, why_len, "%s", plain_reason(rc));
    return rc;
  }
  rc = fc_featurize_memory(plan, bytes, len, max_seconds, mel, frames, why, why_len);
  free(bytes);
  return rc;
}
