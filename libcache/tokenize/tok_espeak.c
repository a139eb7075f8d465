/* featcache — phonemization with libespeak-ng.
 *
 * libespeak-ng keeps its state in globals (the voice, the translator, the static buffer that
 * espeak_TextToPhonemes returns) and is not thread-safe. Every call into it in this process goes
 * through espeak_lock, and the result is copied before the lock is released: phonemization runs
 * one text at a time whatever the OpenMP thread count.
 *
 * Text is split at the punctuation marks in tok_phoneme_punct (kept as symbols, as phonemizer's
 * preserve_punctuation does); each piece between them is phonemized with
 * espeak_TextToPhonemes(espeakCHARS_UTF8, espeakPHONEMES_IPA | '_' << 8), the same phonemes
 * `espeak-ng -q --ipa --sep=_ -v LANG` prints. Units: each phoneme, a stress mark (ˈ ˌ) split off
 * the phoneme it precedes, " " between words, each punctuation mark. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <espeak-ng/speak_lib.h>

#include "libcache/tokenize/tok_internal.h"

const char tok_phoneme_punct[] = ".,;:!?\"()[]{}«»“”„…—–¡¿";

static pthread_mutex_t espeak_lock = PTHREAD_MUTEX_INITIALIZER;
static int espeak_ready;         /* > 0 sample rate after espeak_Initialize, < 0 failed */
static char espeak_voice[64];    /* voice currently selected */
static char espeak_version[64];

static int select_voice_locked(const char *lang) {
  if (strcmp(espeak_voice, lang) == 0) return 0;
  /* a voice name ("en-us"), else a language ("en-gb"), as the espeak-ng command line's -v */
  if (espeak_SetVoiceByName(lang) != EE_OK) {
    espeak_VOICE v;
    memset(&v, 0, sizeof v);
    v.languages = lang;
    if (espeak_SetVoiceByProperties(&v) != EE_OK) return FC_ECONFIG;
  }
  snprintf(espeak_voice, sizeof espeak_voice, "%s", lang);
  return 0;
}

int tok_espeak_init(const char *lang, const char **version, char *why, size_t why_len) {
  int rc = 0;
  pthread_mutex_lock(&espeak_lock);
  if (!espeak_ready) {
    espeak_ready = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL,
                                     espeakINITIALIZE_DONT_EXIT);
    if (espeak_ready <= 0) espeak_ready = -1;
    const char *data = NULL;
    snprintf(espeak_version, sizeof espeak_version, "%s", espeak_Info(&data));
  }
  if (espeak_ready < 0) {
    tok_set_why(why, why_len, "espeak-ng could not be initialized (is espeak-ng-data installed?)");
    rc = FC_ECONFIG;
  } else if (strlen(lang) >= sizeof espeak_voice || select_voice_locked(lang)) {
    tok_set_why(why, why_len, "espeak-ng has no voice '%s' (espeak-ng --voices lists them)", lang);
    rc = FC_ECONFIG;
  }
  pthread_mutex_unlock(&espeak_lock);
  if (version) *version = espeak_version;
  return rc;
}

/* espeak-ng's phonemes of one piece of text (no punctuation marks of ours in it), clauses joined
 * by spaces, into out. */
static int espeak_phonemes(const char *lang, const char *text, size_t len, tok_buf *out) {
  char *z = strndup(text, len);
  if (!z) return ENOMEM;
  int rc = 0;
  pthread_mutex_lock(&espeak_lock);
  if (espeak_ready <= 0 || select_voice_locked(lang)) {
    rc = FC_ECONFIG;
  } else {
    const void *p = z;
    while (p && !rc) {
      const char *ph = espeak_TextToPhonemes(&p, espeakCHARS_UTF8, espeakPHONEMES_IPA | '_' << 8);
      if (!ph || !*ph) continue;
      if (out->len) rc = tok_buf_put(out, " ", 1);
      if (!rc) rc = tok_buf_put(out, ph, strlen(ph));
    }
  }
  pthread_mutex_unlock(&espeak_lock);
  free(z);
  return rc;
}

typedef struct emitter {
  fc_tok_symbol_fn cb;
  void *ud;
  int any, pending_space;
} emitter;

static void emit(emitter *e, const char *s, size_t len) {
  if (e->pending_space && e->any) e->cb(" ", 1, e->ud);
  e->pending_space = 0;
  e->cb(s, len, e->ud);
  e->any = 1;
}

static int is_stress(const char *s, size_t len) {
  return len >= 2 && (memcmp(s, "\xCB\x88", 2) == 0 || memcmp(s, "\xCB\x8C", 2) == 0);
}

static void emit_phonemes(emitter *e, const char *ph, size_t len) {
  size_t i = 0;
  while (i < len) {
    if (ph[i] == ' ') {
      e->pending_space = 1;
      i++;
      continue;
    }
    if (ph[i] == '_') {
      i++;
      continue;
    }
    size_t j = i;
    while (j < len && ph[j] != ' ' && ph[j] != '_') j++;
    while (i < j && is_stress(ph + i, j - i)) {
      emit(e, ph + i, 2);
      i += 2;
    }
    if (i < j) emit(e, ph + i, j - i);
    i = j;
  }
}

static int is_split_punct(const char *s, size_t len, size_t *k) {
  int32_t cp;
  *k = tok_utf8_next(s, len, &cp);
  char enc[5] = {0};
  tok_utf8_encode(cp, enc);
  return strstr(tok_phoneme_punct, enc) != NULL;
}

int tok_phonemize(const char *lang, const char *text, size_t len, fc_tok_symbol_fn cb, void *ud) {
  emitter e = {cb, ud, 0, 0};
  tok_buf ph = {0};
  int rc = 0;
  size_t start = 0, i = 0;
  while (i <= len && !rc) {
    size_t k = 1;
    int at_end = i == len, punct = !at_end && is_split_punct(text + i, len - i, &k);
    if (!at_end && !punct) {
      i += k;
      continue;
    }
    /* the piece text[start, i): white space at its ends becomes a word boundary */
    size_t a = start, b = i;
    while (a < b && tok_is_space((unsigned char)text[a])) a++;
    if (a > start) e.pending_space = 1;
    while (b > a && tok_is_space((unsigned char)text[b - 1])) b--;
    if (b > a) {
      ph.len = 0;
      rc = espeak_phonemes(lang, text + a, b - a, &ph);
      if (!rc) emit_phonemes(&e, ph.p ? ph.p : "", ph.len);
    }
    if (b < i) e.pending_space = 1;
    if (punct) emit(&e, text + i, k);
    i += k;
    start = i;
  }
  free(ph.p);
  return rc;
}
