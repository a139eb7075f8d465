/* featcache — phonemization with libespeak-ng.
 *
 * libespeak-ng keeps its state in globals (the voice, the translator, the static buffer that
 * espeak_TextToPhonemes returns, the character its clause reader has read ahead, the callbacks)
 * and is not thread-safe. Every call into it in this process goes through espeak_lock, a whole
 * line is phonemized under one hold of the lock, and the result is copied before the lock is
 * released: phonemization runs one text at a time whatever the OpenMP thread count.
 *
 * The rule (docs/tokenize.md): a line's phonemes are what `espeak-ng -q --ipa -v LANG` prints for
 * the whole line (espeak-ng splits it into clauses and reads "2.0", "$3,000.50", "Mr.", "e.g."
 * itself), and the mark that ended each clause is kept after it. Two passes over the line:
 *
 * 1. Clauses. espeak_TextToPhonemes returns one clause per call and advances the text pointer
 *    past what it read: the clause, its terminator, the white space after it and one character
 *    more (the first of the next clause, which espeak-ng keeps in its read-ahead slot and reads
 *    first on the next call). libespeak-ng 1.51 (Debian 12) does not say which mark ended the
 *    clause (1.52 adds espeak_TextToPhonemesWithTerminator), so it is read from the consumed text:
 *    drop the read-ahead character, trim white space, and the last character, if it is one of
 *    tok_clause_marks, is the terminator ("..." → "…", a run of ? and ! → its first, as espeak-ng
 *    takes them). The next clause starts at the read-ahead character.
 * 2. Phonemes. espeak_TextToPhonemes skips espeak-ng's intonation pass, which gives a clause
 *    without a primary stress one ("What?" is wˌʌt there, wˈʌt on the command line). So each
 *    clause is spoken the command line's way: espeak_Synth on the text from the clause's start,
 *    its phonemes taken from the phoneme callback (IPA, '_' between phonemes), and synthesis
 *    stopped at the first audio buffer (the synth callback returns 1): only that clause is read.
 *
 * Units: each phoneme, a stress mark (ˈ ˌ) split off the phoneme it precedes, " " between words
 * as espeak-ng gives them, and each clause's terminator after its last phoneme. */
/* fopencookie: _GNU_SOURCE comes from CMakeLists.txt */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <espeak-ng/speak_lib.h>
#include <utf8proc.h>

#include "libcache/text/tokenize/tok_internal.h"
#include "formats/common/alloc.h"

/* Marks on which espeak-ng 1.51 ends a clause (its clause_type_from_codepoint), the common ones;
 * tests/reference/test_tokenize_phonemes.py checks that espeak-ng splits at each. */
const char tok_clause_marks[] = ".,;:!?…–—¡¿。、，！？：；،؛؟۔।॥։՝‼⁇";

static pthread_mutex_t espeak_lock = PTHREAD_MUTEX_INITIALIZER;
static int espeak_ready; /* > 0 sample rate after espeak_Initialize, < 0 failed */
static char espeak_voice[64]; /* voice currently selected */
static char espeak_lang[8]; /* its language ("en"), for espeak_unsafe */
static char espeak_version[64];
static tok_buf *capture; /* where the phoneme callback copies a clause's phonemes */
static int captured; /* callbacks since capture was set */

static int on_phonemes(const char *ph) {
  if (capture && captured++ == 0 && tok_buf_put(capture, ph, strlen(ph))) captured = -1000000;
  return 0;
}

static int stop_synth(short *wav, int n, espeak_EVENT *events) {
  (void)wav, (void)n, (void)events;
  return 1; /* the clause's phonemes are known; no audio wanted */
}

/* espeak-ng writes the phoneme trace to a stream as well as to the callback: a stream that
 * drops it. */
static ssize_t null_write(void *cookie, const char *buf, size_t n) {
  (void)cookie, (void)buf;
  return (ssize_t)n;
}

/* select_voice_locked: lang names a variant, which has no language; an MBROLA voice */
enum { VOICE_VARIANT = 1, VOICE_MBROLA };
static char mbrola_voice[64], mbrola_lang[32]; /* VOICE_MBROLA's identifier and language */
/* The voice selected last was espeak-ng's for a language related to the one named (en-gb for
 * en-zz, de for de-AT): no voice is named so, and none lists that language. */
static int espeak_related;

/* Is the n bytes of s the string t, case aside? */
static int same_name(const char *s, size_t n, const char *t) {
  return t && strlen(t) == n && strncasecmp(s, t, n) == 0;
}

/* Does lang (before a +variant) name an MBROLA voice (by its name, "english-mb-en1", identifier,
 * "mb/mb-en1", or file, "mb-en1")? espeak-ng selecting one loads the mbrola program and its voice
 * file, and says on stderr that they are missing. Sets mbrola_voice and mbrola_lang. */
static int names_mbrola(const char *lang) {
  const size_t n = strcspn(lang, "+");
  espeak_VOICE spec;
  memset(&spec, 0, sizeof spec);
  spec.languages = "mb"; /* the MBROLA voices, as espeak-ng --voices=mb lists them */
  const espeak_VOICE **v = espeak_ListVoices(&spec);
  for (; v && *v; v++) {
    const char *id = (*v)->identifier, *base = id ? strrchr(id, '/') : NULL;
    if (!id || strncmp(id, "mb/", 3) != 0) continue;
    if (same_name(lang, n, (*v)->name) || same_name(lang, n, id) || same_name(lang, n, base + 1)) {
      snprintf(mbrola_voice, sizeof mbrola_voice, "%s", id);
      snprintf(mbrola_lang, sizeof mbrola_lang, "%s",
               (*v)->languages && (*v)->languages[0] ? (*v)->languages + 1 : "");
      return 1;
    }
  }
  return 0;
}

/* Does voice v list lang (before a +variant) among its languages, case aside? */
static int voice_speaks(const espeak_VOICE *v, const char *lang) {
  const size_t n = strcspn(lang, "+");
  for (const char *p = v ? v->languages : NULL; p && *p;
       p += strlen(p + 1) + 2) /* priority, name */
    if (same_name(lang, n, p + 1)) return 1;
  return 0;
}

/* Select the voice lang names: 0, FC_ECONFIG (none), VOICE_VARIANT, VOICE_MBROLA. */
static int select_voice_locked(const char *lang) {
  /* "" names no voice: before the first selection it would also pass as the one selected (none,
   * and espeak-ng then crashes on the first text) */
  if (!*lang) return FC_ECONFIG;
  if (strcmp(espeak_voice, lang) == 0) return 0;
  if (names_mbrola(lang)) return VOICE_MBROLA;
  /* a voice name ("en-us"), else a language ("en-gb"), as the espeak-ng command line's -v */
  espeak_related = 0;
  if (espeak_SetVoiceByName(lang) != EE_OK) {
    espeak_VOICE v;
    memset(&v, 0, sizeof v);
    v.languages = lang;
    if (espeak_SetVoiceByProperties(&v) != EE_OK) return FC_ECONFIG;
    espeak_related = !voice_speaks(espeak_GetCurrentVoice(), lang);
  }
  /* the voice's language, as espeak-ng names it: "\x05en-us" -> "en" */
  const espeak_VOICE *cur = espeak_GetCurrentVoice();
  const char *l = cur && cur->languages && cur->languages[0] ? cur->languages + 1 : "";
  /* a variant (voices/!v) selected alone is a voice without a language or phoneme table:
   * espeak-ng 1.51 crashes on the first text it reads with it, its command line too */
  if (!*l) {
    espeak_voice[0] = '\0'; /* espeak-ng's voice is not the one named there: select anew */
    return VOICE_VARIANT;
  }
  snprintf(espeak_voice, sizeof espeak_voice, "%s", lang);
  size_t n = strcspn(l, "-");
  snprintf(espeak_lang, sizeof espeak_lang, "%.*s", (int)(n < sizeof espeak_lang ? n : 0), l);
  return 0;
}

/* The name the config records for the voice lang selects (under espeak_lock, after a successful
 * select_voice_locked(lang)): the voice's first language as `espeak-ng --voices` lists it ("de"
 * for de, de-DE and German; "en-us"; "en-gb" for en), else, where that name would select another
 * voice, its identifier ("sit/yue-Latn-jyutping"); lang itself where neither selects it back. */
static void canonical_voice_locked(const char *lang, char *out, size_t out_len) {
  snprintf(out, out_len, "%s", lang);
  const espeak_VOICE *cur = espeak_GetCurrentVoice();
  if (!cur || !cur->identifier || !cur->languages || !cur->languages[0]) return;
  char id[64], first[64];
  snprintf(id, sizeof id, "%s", cur->identifier);
  snprintf(first, sizeof first, "%s", cur->languages + 1); /* after the priority byte */
  const char *cands[2] = {first, id};
  for (int i = 0; i < 2; i++) {
    if (!*cands[i] || strlen(cands[i]) >= out_len || strlen(cands[i]) >= sizeof espeak_voice)
      continue;
    espeak_voice[0] = '\0'; /* select anew */
    if (select_voice_locked(cands[i])) continue;
    cur = espeak_GetCurrentVoice();
    if (cur && cur->identifier && strcmp(cur->identifier, id) == 0) {
      snprintf(out, out_len, "%s", cands[i]);
      return;
    }
  }
  espeak_voice[0] = '\0';
  select_voice_locked(lang); /* lang as typed: known to select the voice */
}

int tok_espeak_init(const char *lang, char *canon, size_t canon_len, const char **version,
                    char *why, size_t why_len) {
  int rc = 0;
  pthread_mutex_lock(&espeak_lock);
  if (!espeak_ready) {
    espeak_ready = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL, espeakINITIALIZE_DONT_EXIT);
    FILE *sink = fopencookie(NULL, "w", (cookie_io_functions_t){NULL, null_write, NULL, NULL});
    if (espeak_ready <= 0 || !sink) {
      espeak_ready = -1;
    } else {
      espeak_SetSynthCallback(stop_synth);
      espeak_SetPhonemeCallback(on_phonemes);
      espeak_SetPhonemeTrace(espeakPHONEMES_IPA | '_' << 8, sink); /* kept open for the process */
    }
    const char *data = NULL;
    snprintf(espeak_version, sizeof espeak_version, "%s", espeak_Info(&data));
  }
  if (espeak_ready < 0) {
    tok_set_why(why, why_len, "espeak-ng could not be initialized (is espeak-ng-data installed?)");
    rc = FC_ECONFIG;
  } else if (strlen(lang) < sizeof espeak_voice &&
             (rc = select_voice_locked(lang)) == VOICE_VARIANT) {
    tok_set_why(why, why_len,
                "espeak-ng voice '%s' is a variant of a voice, with no language: give it after "
                "one, as en-us+NAME (espeak-ng --voices=variant lists them)",
                lang);
    rc = FC_ECONFIG;
  } else if (rc == VOICE_MBROLA) {
    char alt[64], id[sizeof mbrola_voice]; /* the voice espeak-ng has for its language */
    snprintf(id, sizeof id, "%s", mbrola_voice);
    snprintf(alt, sizeof alt, "%s", mbrola_lang);
    if (*mbrola_lang && select_voice_locked(alt) == 0)
      canonical_voice_locked(mbrola_lang, alt, sizeof alt);
    tok_set_why(why, why_len,
                "espeak-ng voice '%s' is an MBROLA voice (%s), which speaks through the mbrola "
                "program and its voice file; tokenize takes espeak-ng's own phonemes: give "
                "espeak-ng's voice for its language, --lang %s, or another (espeak-ng "
                "--voices=%.*s lists them)",
                lang, id, alt, (int)strcspn(alt, "-"), alt);
    rc = FC_ECONFIG;
  } else if (strlen(lang) >= sizeof espeak_voice || rc) {
    /* a locale's name (en_US, pt_BR.UTF-8, from $LANG): espeak-ng's is en-us, pt-br */
    char alt[sizeof espeak_voice] = "";
    const size_t n = strcspn(lang, ".@"); /* en_US.UTF-8, ca_ES@valencia */
    for (size_t i = 0; strchr(lang, '_') && n < sizeof alt && i < n; i++)
      alt[i] = lang[i] == '_' ? '-' : (char)tolower((unsigned char)lang[i]);
    if (*alt && select_voice_locked(alt) == 0)
      tok_set_why(why, why_len, "espeak-ng has no voice '%s' (a locale's name: espeak-ng's is %s)",
                  lang, alt);
    else
      tok_set_why(why, why_len, "espeak-ng has no voice '%s' (%sespeak-ng --voices lists them)",
                  lang, *lang ? "" : "an empty name: an unset variable? ");
    rc = FC_ECONFIG;
  } else if (canon) {
    const int related = espeak_related;
    canonical_voice_locked(lang, canon, canon_len);
    if (related) /* as espeak-ng -v does, and its voices.md says: a note, not a refusal */
      tok_set_why(why, why_len,
                  "note: espeak-ng has no voice for '%s': it reads it with %s, the voice it "
                  "picks for a related language, as espeak-ng -v %s does (recorded as %s; "
                  "espeak-ng --voices=%.*s lists the voices of %.*s)",
                  lang, canon, lang, canon, (int)strcspn(lang, "-+"), lang,
                  (int)strcspn(lang, "-+"), lang);
  }
  pthread_mutex_unlock(&espeak_lock);
  if (version) *version = espeak_version;
  return rc;
}

static int is_mark(int32_t cp) {
  char enc[5] = {0};
  tok_utf8_encode(cp, enc);
  return cp > 0 && strstr(tok_clause_marks, enc) != NULL;
}

static size_t utf8_back(const char *s, size_t i) { /* start of the code point ending at s[i-1] */
  while (i > 0 && ((unsigned char)s[--i] & 0xC0) == 0x80) {}
  return i;
}

/* The terminator of the clause z[from, end) (read-ahead character excluded): appended to out, or
 * nothing when it ended without one (at the end of the line, or a very long clause). */
static int clause_mark(const char *z, size_t from, size_t end, tok_buf *out) {
  size_t i;
  int32_t cp;
  for (;;) {
    if (end <= from) return 0;
    i = utf8_back(z, end);
    tok_utf8_next(z + i, end - i, &cp);
    if (!tok_is_space(cp)) break;
    end = i;
  }
  if (!is_mark(cp)) return 0;
  if (cp == '.') {
    size_t dots = 0;
    while (end > from && z[end - 1] == '.') end--, dots++;
    return dots >= 3 ? tok_buf_put(out, "\xE2\x80\xA6", 3) : tok_buf_put(out, ".", 1);
  }
  if (cp == '?' || cp == '!') /* espeak-ng reads "?!" by its first mark */
    while (i > from && (z[i - 1] == '?' || z[i - 1] == '!')) i--;
  return tok_buf_put(out, z + i, tok_utf8_next(z + i, end - i, &cp));
}

/* One clause read the command line's way, from its first character to the end of the line:
 * "PHONEMES\n" into out. */
static int speak_clause(const char *clause, tok_buf *out) {
  size_t before = out->len;
  capture = out;
  captured = 0;
  espeak_Synth(clause, strlen(clause) + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, NULL);
  int rc = captured < 0 ? ENOMEM : 0;
  capture = NULL;
  if (rc) out->len = before;
  return rc ? rc : tok_buf_put(out, "\n", 1);
}

/* Reading an empty text takes a character left in espeak-ng's read-ahead slot (1.51 leaves one
 * after "a.m..", for one), which would otherwise start the next text ("dot ..."). */
static void drain_locked(void) {
  const void *q = "";
  for (int k = 0; q && k < 4; k++) espeak_TextToPhonemes(&q, espeakCHARS_UTF8, espeakPHONEMES_IPA);
}

typedef struct clause_span {
  size_t start, end; /* text of the clause (its read-ahead character excluded) */
} clause_span;

/* The longest run of bytes without white space that espeak-ng is given (see espeak_text). */
#define TOK_ESPEAK_MAX_RUN 100

/* The scripts for which espeak-ng 1.51 switches to another language's translator (its alphabets
 * table: Armenian -> hy, Devanagari -> hi, Bengali -> bn, ..., Hangul jamo -> ko). A character of
 * such a script that the language's rules do not cover, met in a word the second translator
 * reads (a word after another word, as in "x \u09E7"), sends espeak-ng's LookupLetter to switch
 * the second translator to English, which frees the translator still reading the word: a read of
 * freed memory (ASan: heap-use-after-free in memcmp under espeak_TextToPhonemes; the command line
 * too, under valgrind). Found by tests/fuzz/fuzz_phonemes.c (U+11FB in CI, then U+09F6 after a
 * dot); trying every code point from U+0080 to U+2FFFF alone and in words after an English word,
 * each in a child process under ASan (tests/fuzz/scan-espeak.sh), found the digits of most of
 * these scripts, other numbers (U+09F6 only after a dot), old Hangul jamo and some letters and
 * signs newer than the language's rules. So in a line of another language, the numbers (N*) of
 * these scripts and the letters of espeak_unsafe_letters are taken out; a line in the script's
 * own language (--lang bn) reads them with its first translator, which is safe: kept there. */
typedef struct script_range {
  int32_t lo, hi;
  char lang[3]; /* the script's language in espeak-ng ("" for espeak_unsafe_letters) */
} script_range;

static const script_range espeak_switching_scripts[] = {
    {0x0530, 0x058F, "hy"}, {0x0900, 0x097F, "hi"}, {0x0980, 0x09FF, "bn"}, {0x0A00, 0x0A7F, "pa"},
    {0x0A80, 0x0AFF, "gu"}, {0x0B80, 0x0BFF, "ta"}, {0x0C00, 0x0C7F, "te"}, {0x0C80, 0x0CFF, "kn"},
    {0x0D00, 0x0D7F, "ml"}, {0x0D80, 0x0DFF, "si"}, {0x10A0, 0x10FF, "ka"}, {0x1100, 0x11FF, "ko"},
    {0xA700, 0xD7FF, "ko"}, /* espeak-ng's second Hangul range (syllables): for needs_child */
};

/* Letters and marks of those scripts that the scan found (its numbers are taken out whole). */
static const script_range espeak_unsafe_letters[] = {
    {0x09FE, 0x09FE, ""}, {0x0AFD, 0x0AFF, ""}, {0x0C80, 0x0C80, ""}, {0x0D00, 0x0D01, ""},
    {0x0D04, 0x0D04, ""}, {0x0D55, 0x0D56, ""}, {0x0D5F, 0x0D5F, ""}, {0x0D62, 0x0D62, ""},
    {0x1180, 0x11A7, ""}, {0x11C3, 0x11FF, ""},
};

static const script_range *in_ranges(const script_range *r, size_t n, int32_t cp) {
  for (size_t k = 0; k < n; k++)
    if (cp >= r[k].lo && cp <= r[k].hi) return &r[k];
  return NULL;
}

/* Is cp a character espeak-ng 1.51 cannot take in a line of the voice's language? */
static int espeak_unsafe(int32_t cp, utf8proc_category_t cat) {
  /* unassigned, and the punctuation and symbols of the scripts in U+0370-U+1FFF (see below) */
  if (cat == UTF8PROC_CATEGORY_CN ||
      (cp >= 0x370 && cp < 0x2000 && cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_SO))
    return 1;
  if (cp < 0x530 || cp >= 0x1200) return 0;
  const script_range *s =
      in_ranges(espeak_switching_scripts,
                sizeof espeak_switching_scripts / sizeof *espeak_switching_scripts, cp);
  if (!s || strcmp(s->lang, espeak_lang) == 0) return 0;
  return (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO) ||
         in_ranges(espeak_unsafe_letters,
                   sizeof espeak_unsafe_letters / sizeof *espeak_unsafe_letters, cp) != NULL;
}

/* The line as espeak-ng is given it, NUL-terminated, into z (room for len + len / MAX_RUN + 1
 * bytes and the NUL); its length. What espeak-ng 1.51 cannot take is taken out (all found by
 * fuzzing, tests/fuzz/fuzz_phonemes.c); the espeak-ng command line stumbles on the same:
 *  - control characters: a NUL would end the text, and the other C0 controls but tab, LF and CR
 *    are espeak-ng's own escapes (0x01 starts an embedded command: "\x01B..." reads a punctuation
 *    list up to the next white space, past the end of the text when there is none, and sets a
 *    global option later lines keep). They become spaces, as they are to a reader;
 *  - very long words: a letter, a dot and some 165 more letters ("s.ooo…"), or "s'" 68 times,
 *    overflow stack buffers (the espeak-ng command line aborts on them too; 132 bytes of the
 *    latter do not). A run of more than TOK_ESPEAK_MAX_RUN bytes without white space gets a space
 *    before the character that would pass it;
 *  - characters that make it read freed memory: unassigned code points (Unicode category Cn,
 *    noncharacters included), the punctuation and symbols (P*, S*) of the scripts between U+0370
 *    and U+1FFF (alone, U+055A, U+058B-U+058F, U+0970, U+09F2, U+0AF1, U+0D79 or U+10FB do it;
 *    Latin-1, general punctuation and currency signs are not affected and are kept), and in a line
 *    of another language the numbers and some letters of the scripts espeak-ng reads with that
 *    script's language (espeak_unsafe). Each becomes one space.
 * (The text is valid UTF-8: tok_phonemize's callers check.) Called under espeak_lock, after the
 * voice is selected (espeak_lang). */
static size_t espeak_text(const char *text, size_t len, char *z) {
  size_t zl = 0, run = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)text[i];
    if (ch >= 0xC0) { /* a character's first byte */
      utf8proc_int32_t cp;
      utf8proc_ssize_t k =
          utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &cp);
      if (k > 0 && espeak_unsafe(cp, utf8proc_category(cp))) {
        i += (size_t)k - 1;
        ch = ' ';
      }
    }
    if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') ch = ' ';
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      run = 0;
    } else if (run >= TOK_ESPEAK_MAX_RUN && (ch & 0xC0) != 0x80) { /* not inside a character */
      z[zl++] = ' ';
      run = 1;
    } else {
      run++;
    }
    z[zl++] = (char)ch;
  }
  z[zl] = 0;
  return zl;
}

typedef struct line_job {
  char *z; /* the line as espeak-ng is given it (espeak_text) */
  size_t len;
  clause_span *cl; /* room for len + 2 clauses */
} line_job;

/* The two passes over the line (under espeak_lock, the voice selected): "PHONEMES\nMARK\n" per
 * clause into out. A tok_contained_fn. */
static int clauses_locked(void *arg, tok_buf *out) {
  const line_job *j = arg;
  const char *z = j->z;
  size_t len = j->len, n = 0;
  clause_span *cl = j->cl;
  int rc = 0;
  /* pass 1: where espeak-ng's clauses start and end; each call reads at least a character */
  const void *p = z;
  size_t start = 0;
  while (p && n < len + 2) {
    size_t from = (size_t)((const char *)p - z);
    if (!espeak_TextToPhonemes(&p, espeakCHARS_UTF8, espeakPHONEMES_IPA)) {
      rc = ENOMEM; /* its text decoder could not start: nothing was read */
      break;
    }
    if (p && ((const char *)p <= z + from || (const char *)p > z + len))
      p = NULL; /* it read nothing, or (never seen since) past the end: the line is done */
    size_t end = p ? (size_t)((const char *)p - z) : len;
    if (p && end > from) end = utf8_back(z, end); /* the read-ahead character */
    cl[n++] = (clause_span){start, end};
    start = end;
  }
  drain_locked();
  /* pass 2: each clause's phonemes, then its mark */
  for (size_t k = 0; k < n && !rc; k++) {
    rc = speak_clause(z + cl[k].start, out);
    if (!rc) rc = clause_mark(z, cl[k].start, cl[k].end, out);
    if (!rc) rc = tok_buf_put(out, "\n", 1);
  }
  drain_locked();
  return rc;
}

/* Must the line be read in a child process? Every read of freed memory espeak-ng 1.51 was seen
 * to make (fuzzing, tests/fuzz/scan-espeak.sh) came from a second translator reading a word of one
 * of espeak_switching_scripts other than the voice's own; espeak_unsafe takes out what is known,
 * and a line with such a word is read in a child (tok_contained) in case more is unknown: if
 * espeak-ng dies there, the line fails alone. Other lines stay in this process: a line in a
 * child costs ~2 ms more (fork, copy-on-write of espeak-ng's pages; ~0.3 ms a line here), and
 * English corpora have few such lines. FC_PHONEMIZE_CHILD=all sends every line to a child,
 * =none none (for measurements). */
static int needs_child(const char *z, size_t len) {
  static int mode = -1; /* 0 none, 1 lines with other scripts, 2 all */
  if (mode < 0) {
    const char *e = getenv("FC_PHONEMIZE_CHILD");
    mode = !e ? 1 : strcmp(e, "all") == 0 ? 2 : strcmp(e, "none") == 0 ? 0 : 1;
  }
  if (mode != 1) return mode == 2;
  for (size_t i = 0; i < len;) {
    int32_t cp;
    i += tok_utf8_next(z + i, len - i, &cp);
    if (cp < 0x530) continue;
    const script_range *s =
        in_ranges(espeak_switching_scripts,
                  sizeof espeak_switching_scripts / sizeof *espeak_switching_scripts, cp);
    if (s && strcmp(s->lang, espeak_lang) != 0) return 1;
  }
  return 0;
}

/* tok_internal.h */
int tok_espeak_clauses(const char *lang, const char *text, size_t len, tok_buf *out) {
  line_job j = {fc_malloc(len + len / TOK_ESPEAK_MAX_RUN + 2), 0,
                fc_malloc((len + len / TOK_ESPEAK_MAX_RUN + 3) * sizeof(clause_span))};
  if (!j.z || !j.cl) {
    free(j.z);
    free(j.cl);
    return ENOMEM;
  }
  int rc = 0;
  pthread_mutex_lock(&espeak_lock);
  if (espeak_ready <= 0 || select_voice_locked(lang)) {
    rc = FC_ECONFIG;
  } else {
    j.len = espeak_text(text, len, j.z);
    int status;
    rc = needs_child(j.z, j.len) ? tok_contained(clauses_locked, &j, out, &status)
                                 : clauses_locked(&j, out);
  }
  pthread_mutex_unlock(&espeak_lock);
  free(j.cl);
  free(j.z);
  return rc;
}

typedef struct emitter {
  fc_tok_symbol_fn cb;
  void *ud;
  int any, pending_space;
  size_t n; /* units emitted */
} emitter;

static void emit(emitter *e, const char *s, size_t len) {
  if (e->pending_space && e->any) e->cb(" ", 1, e->ud);
  e->pending_space = 0;
  e->cb(s, len, e->ud);
  e->any = 1;
  e->n++;
}

static int is_stress(const char *s, size_t len) {
  return len >= 2 && (memcmp(s, "\xCB\x88", 2) == 0 || memcmp(s, "\xCB\x8C", 2) == 0);
}

/* The length of espeak-ng's language-switch flag at s ("(en)", "(en-us)", "(ko)": a word it read
 * with another language's rules, "(ru)" where it goes back), else 0. No phoneme: dropped, as
 * phonemizer's remove-flags and piper drop it (under a vocab of single characters its letters
 * were phantom phonemes, k o e n; tokenizer_version 5). IPA holds no parentheses. */
static size_t switch_flag(const char *s, size_t len) {
  if (len < 3 || s[0] != '(') return 0;
  size_t k = 1;
  while (k < len && k < 32 && (isalnum((unsigned char)s[k]) || s[k] == '-')) k++;
  return k > 1 && k < len && s[k] == ')' ? k + 1 : 0;
}

static void emit_phonemes(emitter *e, const char *ph, size_t len) {
  size_t i = 0;
  while (i < len) {
    size_t flag = switch_flag(ph + i, len - i);
    if (flag) {
      i += flag;
      continue;
    }
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
    while (j < len && ph[j] != ' ' && ph[j] != '_' && !switch_flag(ph + j, len - j)) j++;
    while (i < j && is_stress(ph + i, j - i)) {
      emit(e, ph + i, 2);
      i += 2;
    }
    if (i < j) emit(e, ph + i, j - i);
    i = j;
  }
}

void tok_phoneme_units(const char *cl, size_t len, fc_tok_symbol_fn cb, void *ud) {
  emitter e = {cb, ud, 0, 0, 0};
  for (size_t i = 0; i < len;) {
    const char *ph = cl + i, *nl = memchr(ph, '\n', len - i);
    const char *mark = nl + 1, *nl2 = memchr(mark, '\n', len - (size_t)(mark - cl));
    size_t n0 = e.n;
    e.pending_space = 1; /* a clause starts a word */
    emit_phonemes(&e, ph, (size_t)(nl - ph));
    if (e.n > n0 && nl2 > mark) { /* a clause that said nothing gets no mark */
      e.pending_space = 0;
      emit(&e, mark, (size_t)(nl2 - mark));
    }
    i = (size_t)(nl2 + 1 - cl);
  }
}

int tok_phonemize(const char *lang, const char *text, size_t len, fc_tok_symbol_fn cb, void *ud) {
  tok_buf cl = {0};
  int rc = tok_espeak_clauses(lang, text, len, &cl);
  if (!rc) tok_phoneme_units(cl.p, cl.len, cb, ud);
  free(cl.p);
  return rc;
}
