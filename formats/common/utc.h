/* Internal: a store's file time (nanoseconds since the epoch, as audio entries hold it) as the
 * tools print it. Inline, so that every library component has it without exporting a symbol. */
#ifndef FC_UTC_H
#define FC_UTC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* "2020-01-02 03:04:05 UTC", with frac "2020-01-02 03:04:05.500000000 UTC"; a time gmtime cannot
 * render, "N ns". Two times compared in one line take frac when either has a fraction (a copy
 * that kept whole seconds then reads .000000000 beside the original's). */
static inline void fc_utc(int64_t ns, int frac, char *buf, size_t len) {
  int64_t sec = ns / 1000000000, sub = ns % 1000000000;
  if (sub < 0) sub += 1000000000, sec--;
  const time_t s = (time_t)sec;
  struct tm tm;
  char day[32];
  if (!gmtime_r(&s, &tm) || !strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm))
    snprintf(buf, len, "%lld ns", (long long)ns);
  else if (frac)
    snprintf(buf, len, "%s.%09lld UTC", day, (long long)sub);
  else
    snprintf(buf, len, "%s UTC", day);
}

/* fc_utc of two times compared in one line: both to the nanosecond when either has a fraction */
static inline void fc_utc_pair(int64_t a, int64_t b, char *abuf, char *bbuf, size_t len) {
  const int frac = a % 1000000000 != 0 || b % 1000000000 != 0;
  fc_utc(a, frac, abuf, len);
  fc_utc(b, frac, bbuf, len);
}

#endif
