/* NeMo's segment fields of a JSON line, "offset" and "duration" (seconds): what manifest.c's JSON
 * lines reader fills an item's offset and duration from. A number, or a string that reads whole as
 * one ("3.2", what a CSV turned JSON by pandas or csv.DictReader holds: NeMo reads it with
 * float()); null or absent is none. Anything else fails the line naming the field. */
#include <ctype.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/json.h"
#include "formats/manifest_int.h"

/* What a JSON value is, for a line whose field wants another kind: "a string (\"2.5s\")" (its
 * text where short and printable), "a real number (1.5)", "an object", ... into buf (n bytes). */
const char *mf_json_kind(const json_t *v, char *buf, size_t n) {
  switch (json_typeof(v)) {
  case JSON_REAL: snprintf(buf, n, "a real number (%.17g)", json_real_value(v)); return buf;
  case JSON_INTEGER:
    snprintf(buf, n, "an integer (%" JSON_INTEGER_FORMAT ")", json_integer_value(v));
    return buf;
  case JSON_STRING: {
    const char *t = json_string_value(v);
    size_t k = json_string_length(v), i = 0;
    while (i < k && (unsigned char)t[i] >= 0x20 && (unsigned char)t[i] < 0x7F) i++;
    if (k == 0) return "an empty string";
    if (i < k || k > 32) return "a string";
    snprintf(buf, n, "a string (\"%s\")", t);
    return buf;
  }
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

/* A string that is a decimal number and nothing else, as Python's float() reads one: blanks
 * around it, a sign, digits with a point ("3.2", ".5", "5."), an exponent. Hexadecimal, "inf",
 * "nan", a unit ("3.2s"), a comma are not. Into *out; 0, or -1 when it is none or not finite. */
static int seconds_from_string(const char *s, size_t n, double *out) {
  char buf[64];
  size_t i = 0, j = 0, digits = 0;
  while (i < n && isspace((unsigned char)s[i])) i++;
  while (n > i && isspace((unsigned char)s[n - 1])) n--;
  if (n - i >= sizeof buf) return -1;
  if (i < n && (s[i] == '+' || s[i] == '-')) buf[j++] = s[i++];
  for (; i < n && isdigit((unsigned char)s[i]); digits++) buf[j++] = s[i++];
  if (i < n && s[i] == '.') {
    /* strtod reads the locale's decimal point: a program that set LC_NUMERIC (de_DE: ',') */
    buf[j++] = localeconv()->decimal_point[0];
    for (i++; i < n && isdigit((unsigned char)s[i]); digits++) buf[j++] = s[i++];
  }
  if (!digits) return -1;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t e = 0;
    buf[j++] = s[i++];
    if (i < n && (s[i] == '+' || s[i] == '-')) buf[j++] = s[i++];
    for (; i < n && isdigit((unsigned char)s[i]); e++) buf[j++] = s[i++];
    if (!e) return -1;
  }
  if (i != n) return -1;
  buf[j] = '\0';
  char *end;
  const double v = strtod(buf, &end);
  if (*end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int mf_json_segment(fc_item *it, const json_t *root) {
  static const char *const keys[2] = {"offset", "duration"};
  double *vals[2] = {&it->offset, &it->duration};
  for (int k = 0; k < 2; k++) {
    const json_t *v = json_object_get(root, keys[k]);
    double x;
    if (!v || json_is_null(v)) continue;
    if (json_is_number(v)) {
      x = json_number_value(v);
    } else if (!json_is_string(v) ||
               seconds_from_string(json_string_value(v), json_string_length(v), &x) != 0) {
      char kind[48];
      return mf_item_fail(it, FC_EMANIFEST, "\"%s\" must be a number (seconds), got %s", keys[k],
                          mf_json_kind(v, kind, sizeof kind));
    }
    if (x < 0)
      return mf_item_fail(it, FC_EMANIFEST, "\"%s\" must be 0 or more seconds, got %g", keys[k], x);
    *vals[k] = x;
  }
  return 0;
}
