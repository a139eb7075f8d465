/* fc_mel_compute and samples that are not finite: a NaN or an infinity in a frame makes every band
 * of that frame NaN or infinite before the log, and a log config's clamp turned a NaN into the log
 * floor — a silent frame, stored as if the audio were quiet there. The call refuses it now
 * (FC_ERANGE), for every preset, as it refuses samples so large that the power spectrum passes
 * float32's range; a NaN in samples no frame reads (the tail that Kaldi's snip-edges framing
 * drops) changes nothing and is no error; the plan computes the next utterance as a fresh one. */
#include "featcache/fc_mel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "tests/unit/mel_signal.h"

static void test_preset(const char *name, int no_snip) {
  fc_mel_config c;
  CHECK(fc_mel_preset(name, &c) == 0, "preset %s", name);
  c.no_snip_edges = no_snip;
  fc_mel_config_settle_preset(&c);
  fc_mel_plan *p = NULL;
  CHECK(fc_mel_plan_create(&c, &p) == 0, "%s: plan", name);
  if (!p) return;
  const size_t n = c.sample_rate / 2;
  const size_t nv = (size_t)fc_mel_num_frames(&c, n) * c.n_mels;
  float *x = malloc(sizeof *x * n), *clean = malloc(sizeof *clean * nv),
        *out = malloc(sizeof *out * nv);
  make_signal(x, n, 7, c.sample_rate);
  CHECK(fc_mel_compute(p, x, n, clean) == 0, "%s: clean signal", name);

  /* a NaN, +inf, -inf at the first sample, in the middle, at the last one; 1e30 in the middle */
  const float bad[] = {NAN, INFINITY, -INFINITY, 1e30f};
  const size_t at[] = {0, n / 2 + 3, n - 1};
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
      if (bad[b] == 1e30f && k != 1) continue;
      float keep = x[at[k]];
      x[at[k]] = bad[b];
      int rc = fc_mel_compute(p, x, n, out);
      x[at[k]] = keep;
      /* the last sample is in no frame under snip edges (Kaldi drops the tail) */
      int read = !(k == 2 && !strcmp(name, "kaldi") && !no_snip);
      if (read)
        CHECK(rc == FC_ERANGE, "%s%s: sample %zu = %g: rc %d, want FC_ERANGE", name,
              no_snip ? " (unsnipped)" : "", at[k], (double)bad[b], rc);
      else
        CHECK(rc == 0 && memcmp(out, clean, sizeof *out * nv) == 0,
              "%s: a %g in the dropped tail: rc %d or other values", name, (double)bad[b], rc);
    }
  /* the plan is as good as new after a refusal */
  CHECK(fc_mel_compute(p, x, n, out) == 0 && memcmp(out, clean, sizeof *out * nv) == 0,
        "%s: the clean signal after a refusal gives other values", name);
  free(x);
  free(clean);
  free(out);
  fc_mel_plan_free(p);
}

int main(void) {
  for (const char *const *name = fc_mel_preset_names(); *name; name++) test_preset(*name, 0);
  test_preset("kaldi", 1);
  return fc_check_result("test_mel_nonfinite");
}
