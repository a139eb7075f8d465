/* Canonical JSON of a feature config and its digest (docs/FORMAT.md, "Configs").
 * Canonical = keys sorted bytewise, no spaces, numbers in their shortest round-trip form, effective
 * values (fmax resolved). Same parameters → same bytes → same digest, on every host. */
#include "formats/common/why.h"
#include "formats/common/args.h"
#include "featcache/fc_config.h"

#include "formats/common/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const scale_names[] = {"slaney", "htk", "kaldi"};
static const char *const norm_names[] = {"none", "slaney"};
static const char *const window_names[] = {"hann", "povey", "hamming"};
static const char *const align_names[] = {"center", "left"};
static const char *const pad_names[] = {"reflect", "constant"};
static const char *const log_names[] = {"none", "ln", "log10", "db", "whisper"};
#define NAMES(a) (sizeof(a) / sizeof((a)[0]))

/* Shortest %g that reads back as the same double. */
static void fmt_num(char *out, size_t len, double v) {
  if (v > -1e15 && v < 1e15 && v == (double)(long long)v) { /* integral: no exponent form */
    snprintf(out, len, "%lld", (long long)v);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(out, len, "%.*g", prec, v);
    if (strtod(out, NULL) == v) return;
  }
}

typedef struct {
  char *buf;
  size_t len, pos;
  int overflow;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = b->pos < b->len ? b->len - b->pos : 0;
  int n = vsnprintf(b->buf + (room ? b->pos : 0), room, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= room) b->overflow = 1;
  b->pos += n > 0 ? (size_t)n : 0;
}

static const char *name_of(const char *const *names, size_t n, int v) {
  return (v >= 0 && (size_t)v < n) ? names[v] : "invalid";
}

int fc_mel_config_json(const fc_mel_config *cfg, char *buf, size_t buf_len) {
  FC_ARGS_OR(FC_ECONFIG, cfg, buf || !buf_len);
  const fc_mel_config *c = cfg;
  char fmax[32], fmin[32], floor_[32], eps[32], power[32], pre[32], top[32];
  double fm = fc_mel_config_fmax(c);
  fmt_num(fmax, sizeof fmax, fm);
  fmt_num(fmin, sizeof fmin, c->fmin);
  fmt_num(floor_, sizeof floor_, c->log_floor);
  fmt_num(eps, sizeof eps, c->mag_eps);
  fmt_num(power, sizeof power, c->power);
  fmt_num(pre, sizeof pre, c->preemph);
  fmt_num(top, sizeof top, c->top_db);
  const char *dt = fc_dtype_name(c->dtype);
  sbuf b = {buf, buf_len, 0, 0};
  if (buf_len) buf[0] = '\0';
  put(&b, "{\"center\":%s,\"drop_last_frame\":%s,\"dtype\":\"%s\",\"fmax\":%s,\"fmin\":%s,",
      c->center ? "true" : "false", c->drop_last_frame ? "true" : "false", dt ? dt : "invalid",
      fmax, fmin);
  put(&b, "\"hop_length\":%u,\"int16_scale\":%s,\"kernel_version\":%d,\"kind\":\"mel\",",
      c->hop_length, c->int16_scale ? "true" : "false", FC_KERNEL_VERSION);
  put(&b, "\"log\":\"%s\",\"log_floor\":%s,\"mag_eps\":%s,\"mel_scale\":\"%s\",",
      name_of(log_names, NAMES(log_names), c->log), floor_, eps,
      name_of(scale_names, NAMES(scale_names), c->mel_scale));
  put(&b, "\"n_fft\":%u,\"n_mels\":%u,\"norm\":\"%s\",\"pad\":%u,\"pad_mode\":\"%s\",", c->n_fft,
      c->n_mels, name_of(norm_names, NAMES(norm_names), c->norm), c->pad,
      name_of(pad_names, NAMES(pad_names), c->pad_mode));
  /* preset names are [a-z0-9_-] (validated by the CLI), so no escaping is needed */
  if (c->preset[0])
    put(&b, "\"power\":%s,\"preemph\":%s,\"preset\":\"%s\",", power, pre, c->preset);
  else
    put(&b, "\"power\":%s,\"preemph\":%s,\"preset\":null,", power, pre);
  put(&b, "\"remove_dc\":%s,\"sample_rate\":%u,", c->remove_dc ? "true" : "false", c->sample_rate);
  /* Only when off: every config stored before the key existed keeps its JSON, so its digest */
  if (c->no_snip_edges) put(&b, "\"snip_edges\":false,");
  put(&b, "\"top_db\":%s,\"win_length\":%u,", top, c->win_length);
  put(&b, "\"window\":\"%s\",\"window_align\":\"%s\"}",
      name_of(window_names, NAMES(window_names), c->window),
      name_of(align_names, NAMES(align_names), c->window_align));
  if (b.overflow) return FC_ECONFIG;
  return (int)b.pos;
}

void fc_mel_config_digest(const fc_mel_config *cfg, fc_digest *out) {
  FC_ARGS_OR(, cfg, out);
  char buf[1024];
  int n = fc_mel_config_json(cfg, buf, sizeof buf);
  fc_digest_buffer(buf, n > 0 ? (size_t)n : 0, out);
}

static int get_enum(json_t *o, const char *key, const char *const *names, size_t n, int *out) {
  const char *s = json_string_value(json_object_get(o, key));
  for (size_t i = 0; s && i < n; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (int)i;
      return 0;
    }
  return -1;
}

static int get_num(json_t *o, const char *key, double *out) {
  json_t *v = json_object_get(o, key);
  if (!json_is_number(v)) return -1;
  *out = json_number_value(v);
  return 0;
}

static int get_u32(json_t *o, const char *key, uint32_t *out) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
    return -1;
  *out = (uint32_t)json_integer_value(v);
  return 0;
}

static int get_bool(json_t *o, const char *key, int *out) {
  json_t *v = json_object_get(o, key);
  if (!json_is_boolean(v)) return -1;
  *out = json_is_true(v);
  return 0;
}

int fc_mel_config_from_json(const char *json, size_t len, fc_mel_config *cfg, char *why,
                            size_t why_len) {
  FC_ARGS_WHY(json || !len, cfg);
  fc_mel_config *c = cfg;
  json_error_t jerr;
  int nomem;
  json_t *o = fc_json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr, &nomem);
  if (nomem) {
    fc_why(why, why_len, "out of memory reading the config");
    return ENOMEM;
  }
  if (!o || !json_is_object(o)) {
    char t[4 * sizeof jerr.text + 8];
    fc_why(why, why_len, "config is not a JSON object: %s",
           o ? "not an object" : fc_json_error_text(&jerr, t, sizeof t));
    json_decref(o);
    return FC_ECONFIG;
  }
  memset(c, 0, sizeof *c);
  int rc = FC_ECONFIG;
  const char *bad = NULL;
  const char *kind = json_string_value(json_object_get(o, "kind"));
  int e;
  if (!kind || strcmp(kind, "mel") != 0) {
    bad = "kind";
    goto out;
  }
  json_t *kv = json_object_get(o, "kernel_version");
  if (!json_is_integer(kv)) {
    bad = "kernel_version";
    goto out;
  }
  if (json_integer_value(kv) != FC_KERNEL_VERSION) {
    fc_why(why, why_len, "config made by kernel version %lld, this build is version %d",
           (long long)json_integer_value(kv), FC_KERNEL_VERSION);
    goto out_quiet;
  }
  json_t *pr = json_object_get(o, "preset");
  if (json_is_string(pr))
    snprintf(c->preset, sizeof c->preset, "%s", json_string_value(pr));
  else if (!json_is_null(pr)) {
    bad = "preset";
    goto out;
  }
  const char *dt = json_string_value(json_object_get(o, "dtype"));
  c->dtype = (fc_dtype)fc_dtype_from_name(dt);
  if (!c->dtype) {
    bad = "dtype";
    goto out;
  }
  if (get_u32(o, "sample_rate", &c->sample_rate)) {
    bad = "sample_rate";
    goto out;
  }
  if (get_u32(o, "n_fft", &c->n_fft)) {
    bad = "n_fft";
    goto out;
  }
  if (get_u32(o, "win_length", &c->win_length)) {
    bad = "win_length";
    goto out;
  }
  if (get_u32(o, "hop_length", &c->hop_length)) {
    bad = "hop_length";
    goto out;
  }
  if (get_u32(o, "n_mels", &c->n_mels)) {
    bad = "n_mels";
    goto out;
  }
  if (get_u32(o, "pad", &c->pad)) {
    bad = "pad";
    goto out;
  }
  if (get_num(o, "fmin", &c->fmin)) {
    bad = "fmin";
    goto out;
  }
  if (get_num(o, "fmax", &c->fmax)) {
    bad = "fmax";
    goto out;
  }
  if (get_num(o, "power", &c->power)) {
    bad = "power";
    goto out;
  }
  if (get_num(o, "mag_eps", &c->mag_eps)) {
    bad = "mag_eps";
    goto out;
  }
  if (get_num(o, "log_floor", &c->log_floor)) {
    bad = "log_floor";
    goto out;
  }
  if (get_num(o, "top_db", &c->top_db)) {
    bad = "top_db";
    goto out;
  }
  if (get_num(o, "preemph", &c->preemph)) {
    bad = "preemph";
    goto out;
  }
  if (get_bool(o, "center", &c->center)) {
    bad = "center";
    goto out;
  }
  if (get_bool(o, "drop_last_frame", &c->drop_last_frame)) {
    bad = "drop_last_frame";
    goto out;
  }
  if (get_bool(o, "int16_scale", &c->int16_scale)) {
    bad = "int16_scale";
    goto out;
  }
  if (get_bool(o, "remove_dc", &c->remove_dc)) {
    bad = "remove_dc";
    goto out;
  }
  json_t *snip = json_object_get(o, "snip_edges"); /* absent: true, as before the key */
  if (snip && !json_is_boolean(snip)) {
    bad = "snip_edges";
    goto out;
  }
  c->no_snip_edges = snip && !json_is_true(snip);
  if (get_enum(o, "mel_scale", scale_names, NAMES(scale_names), &e)) {
    bad = "mel_scale";
    goto out;
  }
  c->mel_scale = (fc_mel_scale)e;
  if (get_enum(o, "norm", norm_names, NAMES(norm_names), &e)) {
    bad = "norm";
    goto out;
  }
  c->norm = (fc_mel_norm)e;
  if (get_enum(o, "window", window_names, NAMES(window_names), &e)) {
    bad = "window";
    goto out;
  }
  c->window = (fc_window)e;
  if (get_enum(o, "window_align", align_names, NAMES(align_names), &e)) {
    bad = "window_align";
    goto out;
  }
  c->window_align = (fc_window_align)e;
  if (get_enum(o, "pad_mode", pad_names, NAMES(pad_names), &e)) {
    bad = "pad_mode";
    goto out;
  }
  c->pad_mode = (fc_pad_mode)e;
  if (get_enum(o, "log", log_names, NAMES(log_names), &e)) {
    bad = "log";
    goto out;
  }
  c->log = (fc_log)e;
  rc = 0;
out:
  if (bad) fc_why(why, why_len, "config: missing or invalid \"%s\"", bad);
out_quiet:
  json_decref(o);
  return rc;
}
