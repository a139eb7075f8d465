/* cache-merge: a conflict said in one line (merge_conflict.h): what differs between two entries
 * of one id, so that the user can choose a winner. */
#include "libcache/core/merge/merge_conflict.h"

#include "featcache/fc_format.h"
#include "formats/common/utc.h"
#include "formats/common/why.h"

#include <stdio.h>
#include <string.h>

/* A transcript's bytes from `from` (a character's start), at most EXCERPT of them, in double
 * quotes, with C escapes where a name would have them (a tab, a newline, a quote: the line stays
 * one line), "..." where it is cut. */
enum { EXCERPT = 60 };
static const char *excerpt(const char *t, size_t n, size_t from, char *out, size_t len) {
  size_t end = from + EXCERPT < n ? from + EXCERPT : n;
  while (end > from && end < n && ((unsigned char)t[end] & 0xC0) == 0x80) end--;
  char cut[EXCERPT + 1], q[4 * EXCERPT + 3];
  memcpy(cut, t + from, end - from);
  cut[end - from] = '\0';
  fc_quote_name(cut, q, sizeof q);
  const int quoted = q[0] == '"'; /* else q needed no escape, and has no quote in it */
  snprintf(out, len, "\"%s%.*s%s\"", from ? "..." : "", (int)(strlen(q) - 2 * quoted), q + quoted,
           end < n ? "..." : "");
  return out;
}

void merge_describe(int db, const MDB_val *x, const MDB_val *y, char *buf, size_t len) {
  if (db == FC_DB_AUDIO) {
    fc_audio_entry ea, eb;
    if (fc_audio_entry_decode(x->mv_data, x->mv_size, &ea) ||
        fc_audio_entry_decode(y->mv_data, y->mv_size, &eb)) {
      snprintf(buf, len, "audio entries differ (one does not decode)");
      return;
    }
    char ha[33], hb[33]; /* said by their first 12 digits */
    fc_digest_hex(&ea.digest, ha);
    fc_digest_hex(&eb.digest, hb);
    ha[12] = hb[12] = '\0';
    fc_why_name_buf qa, qb; /* the sources quoted as names are (200 bytes of each at most) */
    const char *pa = fc_why_name(ea.path, ea.path_len > 200 ? 200 : ea.path_len, &qa),
               *pb = fc_why_name(eb.path, eb.path_len > 200 ? 200 : eb.path_len, &qb);
    char ta[48], tb[48];
    fc_utc_pair(ea.mtime_ns, eb.mtime_ns, ta, tb, sizeof ta);
    if (memcmp(ea.digest.bytes, eb.digest.bytes, 16)) /* each name cut at 300 bytes */
      snprintf(buf, len, "different audio: digest %s... (%.300s) vs %s... (%.300s)", ha, pa, hb,
               pb);
    else if (ea.path_len != eb.path_len || memcmp(ea.path, eb.path, ea.path_len))
      snprintf(buf, len, "same audio (digest %s...) but the source differs: %.300s vs %.300s", ha,
               pa, pb);
    else if (ea.mtime_ns != eb.mtime_ns) /* a copy of the corpus with other file times */
      snprintf(buf, len,
               "same audio (digest %s...) from the same source %.300s, modified at other "
               "times: %s vs %s",
               ha, pa, ta, tb);
    else /* read otherwise: another version of the decoder */
      snprintf(buf, len,
               "same audio (digest %s...) from the same source %.300s, read otherwise: "
               "%u Hz, %u channels, %llu frames, %llu bytes vs %u Hz, %u channels, %llu frames, "
               "%llu bytes",
               ha, pa, ea.sample_rate, ea.channels, (unsigned long long)ea.frames,
               (unsigned long long)ea.source_size, eb.sample_rate, eb.channels,
               (unsigned long long)eb.frames, (unsigned long long)eb.source_size);
  } else if (db == FC_DB_TEXT) {
    fc_digest da, dbb;
    const char *ta, *tb;
    size_t la, lb;
    if (fc_text_entry_decode(x->mv_data, x->mv_size, &da, &ta, &la) ||
        fc_text_entry_decode(y->mv_data, y->mv_size, &dbb, &tb, &lb)) {
      snprintf(buf, len, "text entries differ (one does not decode)");
      return;
    }
    if (la == lb && memcmp(ta, tb, la) == 0) { /* the digests differ: one damaged (a flipped bit) */
      char why[200] = "", xa[4 * EXCERPT + 16];
      const int bad_x = merge_entry_damaged(FC_DB_TEXT, x, why, sizeof why);
      const int bad_y = !bad_x && merge_entry_damaged(FC_DB_TEXT, y, why, sizeof why);
      snprintf(buf, len, "the same transcript %s with another text digest%s%s%s",
               excerpt(ta, la, 0, xa, sizeof xa),
               bad_x   ? ": this one is damaged ("
               : bad_y ? ": the other is damaged ("
                       : "",
               why, bad_x || bad_y ? ")" : "");
      return;
    }
    /* long ones from near their first difference, so that what differs is shown */
    size_t d = 0, lmax = la > lb ? la : lb;
    while (d < la && d < lb && ta[d] == tb[d]) d++;
    size_t from = d > EXCERPT / 3 ? d - EXCERPT / 3 : 0;
    if (lmax > EXCERPT && from > lmax - EXCERPT) from = lmax - EXCERPT;
    if (lmax <= EXCERPT) from = 0;
    while (from > 0 && ((unsigned char)ta[from] & 0xC0) == 0x80) from--; /* a character's start */
    char xa[4 * EXCERPT + 16], xb[4 * EXCERPT + 16];
    snprintf(buf, len, "different transcripts: %s vs %s", excerpt(ta, la, from, xa, sizeof xa),
             excerpt(tb, lb, from, xb, sizeof xb));
  } else {
    snprintf(buf, len, "meta values differ (%zu vs %zu bytes)", x->mv_size, y->mv_size);
  }
}

int merge_entry_damaged(int db, const MDB_val *v, char *why, size_t len) {
  if (db == FC_DB_AUDIO) {
    fc_audio_entry ae;
    if (fc_audio_entry_decode(v->mv_data, v->mv_size, &ae)) {
      fc_why(why, len, "audio entry of %zu bytes (want at least %d)", v->mv_size,
             FC_AUDIO_ENTRY_FIXED);
      return 1;
    }
    if (ae.sample_rate && ae.channels) return 0;
    fc_why(why, len, "audio entry with sample rate %u and %u channels", ae.sample_rate,
           ae.channels);
    return 1;
  }
  fc_digest td, h;
  const char *txt;
  size_t tl;
  if (fc_text_entry_decode(v->mv_data, v->mv_size, &td, &txt, &tl)) {
    fc_why(why, len, "text entry of %zu bytes (want at least 16)", v->mv_size);
    return 1;
  }
  if (!fc_utf8_valid(txt, tl)) {
    fc_why(why, len, "text is not valid UTF-8");
    return 1;
  }
  fc_digest_buffer(txt, tl, &h);
  if (memcmp(h.bytes, td.bytes, 16) == 0) return 0;
  char hh[33], th[33];
  fc_digest_hex(&h, hh);
  fc_digest_hex(&td, th);
  fc_why(why, len,
         "transcript hashes to %s, the entry's text digest is %s: its tokens were made from "
         "another text",
         hh, th);
  return 1;
}
