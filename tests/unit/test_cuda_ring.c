/* The CUDA ring plan (kernels/cuda/cuda_ring.h), on a GPU, used as featurize's staging pipeline
 * uses it: one thread packs chunks straight into the pinned staging buffers (16-bit utterances as
 * int16 from the start, float ones from the end, mixed in one chunk) and launches them without
 * waiting, while another finishes them in launch order; three chunks in flight. Checked: every
 * utterance's features against the CPU backend on the same floats (exact frame counts; ln values
 * within 1e-4, or within 1e-6 of their frame's largest band in the linear domain, the parity
 * test's rule); the misuse errors (EINVAL: a chunk over its limits, launched twice, finished
 * without a launch) leave the plan usable. The ring is made as featurize makes it: its first
 * chunk at create, the others by cuda_ring_grow in turn (a chunk not made yet has no staging
 * buffer and cannot be launched; one made out of turn is refused). The ring is traced
 * (FC_CUDA_TRACE): a line for the plan, each chunk grown, each chunk finished (its utterances and
 * samples as launched, its device times in order between its launch and its finish) and the
 * plan freed, in the documented columns. Without a usable GPU: exit 77 with the reason. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cuda/cuda_api.h"
#include "featcache/fc_mel.h"
#include "kernels/cuda/cuda_ring.h"
#include "kernels/cuda/mel_kernels.h"
#include "tests/check.h"
#include "tests/unit/mel_signal.h"

enum { N_UTTS = 40, SLOTS = 3, CAPACITY = 60000 };

static fc_mel_config cfg;
static fc_cuda_plan *ring;
static size_t lens[N_UTTS];
static int is16[N_UTTS];
static float *pcm[N_UTTS], *got[N_UTTS];
static int16_t *pcm16[N_UTTS];

/* The chunks as the launch thread made them: first utterance and count, per ring use. */
typedef struct launched {
  size_t first, count;
  int rc;
} launched;
static launched uses[N_UTTS];

/* The trace the ring wrote (docs/cuda.md "Tracing a run"): its lines checked against what ran:
 * `chunks` chunks finished holding `utts` utterances and `samples` samples. */
static void check_trace(const char *path, size_t chunks, uint64_t utts, uint64_t samples) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "no trace at %s", path);
  if (!f) return;
  char line[1024];
  CHECK(fgets(line, sizeof line, f) &&
            strcmp(line,
                   "kind,slot,utterances,samples_int16,samples_float,output_bytes,t0,t1,t2,"
                   "t3,t4,t5\n") == 0,
        "trace header: %s", line);
  size_t n_plan = 0, n_grow = 0, n_chunk = 0, n_free = 0, lineno = 1;
  uint64_t u_sum = 0, s_sum = 0;
  double plan_done = 0, last = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char kind[16] = "";
    int which = 0;
    unsigned long long c[4] = {0};
    double t[6] = {0};
    int fields =
        sscanf(line, "%15[a-z],%d,%llu,%llu,%llu,%llu,%lf,%lf,%lf,%lf,%lf,%lf", kind, &which, &c[0],
               &c[1], &c[2], &c[3], &t[0], &t[1], &t[2], &t[3], &t[4], &t[5]);
    CHECK(n_free == 0, "line %zu after the plan was freed: %s", lineno, line);
    if (strcmp(kind, "chunk") == 0) {
      n_chunk++;
      u_sum += c[0];
      s_sum += c[1] + c[2];
      CHECK(fields == 12 && which >= 0 && which < SLOTS && c[0] > 0 && c[3] > 0, "chunk line: %s",
            line);
      /* launched after the plan was made; on the device in stream order; seen after its copy back */
      CHECK(t[0] >= plan_done && t[1] <= t[2] && t[2] <= t[3] && t[3] <= t[4] && t[5] >= t[0] &&
                t[5] + 1e-3 >= t[4],
            "chunk times out of order: %s", line);
    } else {
      CHECK(fields == 8 && t[1] >= t[0], "%s line: %s", kind, line);
      if (strcmp(kind, "plan") == 0) {
        n_plan++;
        plan_done = t[1];
        CHECK(c[0] == 1 && c[1] == SLOTS && c[2] == CAPACITY, "plan line: %s", line);
      } else if (strcmp(kind, "grow") == 0) {
        CHECK(which == (int)(1 + n_grow++), "grow of chunk %d out of turn", which);
      } else {
        CHECK(strcmp(kind, "free") == 0 && t[0] >= last, "line %zu: %s", lineno, line);
        n_free++;
      }
    }
    last = t[5] > t[1] ? t[5] : t[1];
  }
  fclose(f);
  CHECK(n_plan == 1 && n_grow == SLOTS - 1 && n_free == 1,
        "trace: %zu plan, %zu grow, %zu free lines", n_plan, n_grow, n_free);
  CHECK(n_chunk == chunks && u_sum == utts && s_sum == samples,
        "trace: %zu chunks of %llu utterances, %llu samples; ran %zu of %llu, %llu", n_chunk,
        (unsigned long long)u_sum, (unsigned long long)s_sum, chunks, (unsigned long long)utts,
        (unsigned long long)samples);
}
static size_t n_uses;
static unsigned free_slots = SLOTS, done_uses;
static int launcher_done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *launcher(void *arg) {
  (void)arg;
  uint64_t off[N_UTTS], len[N_UTTS];
  size_t i = 0;
  while (i < N_UTTS) {
    pthread_mutex_lock(&mu);
    while (free_slots == 0) pthread_cond_wait(&cv, &mu);
    free_slots--;
    pthread_mutex_unlock(&mu);
    const unsigned slot = (unsigned)(n_uses % SLOTS);
    char *staging = cuda_ring_staging(ring, slot);
    size_t n16 = 0, nf = 0, first = i, count = 0;
    uint64_t frames = 0;
    for (; i < N_UTTS; i++, count++) {
      uint64_t f = fc_mel_num_frames(&cfg, lens[i]);
      if (n16 + nf + lens[i] > CAPACITY || frames + f > cuda_ring_plan_frames(ring)) break;
      frames += f;
      if (is16[i]) {
        memcpy(staging + 2 * n16, pcm16[i], 2 * lens[i]);
        off[count] = n16;
        n16 += lens[i];
      } else {
        nf += lens[i];
        memcpy(staging + 4 * ((size_t)CAPACITY - nf), pcm[i], 4 * lens[i]);
        off[count] = nf; /* floats from the end: fixed up below */
      }
      len[count] = lens[i];
    }
    for (size_t k = 0; k < count; k++)
      if (!is16[first + k]) off[k] = n16 + (nf - off[k]);
    int rc = cuda_ring_launch(ring, slot, count, off, len, n16, nf, FC_DTYPE_F32);
    CHECK(rc == 0, "launch of chunk %zu: %s", n_uses, cuda_last_error());
    pthread_mutex_lock(&mu);
    uses[n_uses++] = (launched){first, count, rc};
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  pthread_mutex_lock(&mu);
  launcher_done = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* The ring made one chunk at a time after the first. */
static void grow(void) {
  uint64_t off = 0, len = 4096;
  CHECK(cuda_ring_staging(ring, 0) != NULL && cuda_ring_staging(ring, 1) == NULL,
        "made at create: chunk 0 only");
  CHECK(cuda_ring_launch(ring, 1, 1, &off, &len, 4096, 0, FC_DTYPE_F32) == EINVAL,
        "a chunk not made yet launched");
  CHECK(cuda_ring_grow(ring, 2) == EINVAL, "chunk 2 made before chunk 1");
  for (unsigned k = 1; k < SLOTS; k++)
    CHECK(cuda_ring_grow(ring, k) == 0 && cuda_ring_staging(ring, k) != NULL, "grow %u: %s", k,
          cuda_last_error());
  CHECK(cuda_ring_grow(ring, SLOTS) == EINVAL, "a chunk past the ring made");
}

static void misuse(void) {
  uint64_t off = 0, len = 4096;
  char *staging = cuda_ring_staging(ring, 0);
  memset(staging, 0, 4 * 4096);
  const void *out;
  CHECK(cuda_ring_finish(ring, 0, &out) == EINVAL, "finish without a launch");
  CHECK(cuda_ring_launch(ring, 0, 1, &off, &len, CAPACITY, 1, FC_DTYPE_F32) == EINVAL,
        "more samples than the chunk holds");
  CHECK(cuda_ring_launch(ring, 0, 0, &off, &len, 4096, 0, FC_DTYPE_F32) == EINVAL, "no utts");
  CHECK(cuda_ring_launch(ring, SLOTS, 1, &off, &len, 4096, 0, FC_DTYPE_F32) == EINVAL,
        "no such chunk");
  CHECK(cuda_ring_launch(ring, 0, 1, &off, &len, 4096, 0, FC_DTYPE_F32) == 0, "launch: %s",
        cuda_last_error());
  CHECK(cuda_ring_launch(ring, 0, 1, &off, &len, 4096, 0, FC_DTYPE_F32) == EINVAL,
        "launched twice");
  CHECK(cuda_ring_finish(ring, 0, &out) == 0 && out, "finish: %s", cuda_last_error());
}

int main(void) {
  int n = 0;
  char why[256];
  if (cuda_device_count(&n, why, sizeof why) != 0) {
    printf("%s\n", why);
    return 77;
  }
  fc_mel_preset("hifigan", &cfg);
  fc_mel_plan *cpu;
  CHECK(fc_mel_plan_create(&cfg, &cpu) == 0, "cpu plan");
  char trace[] = "/tmp/fc_cuda_trace_XXXXXX";
  int tfd = mkstemp(trace);
  CHECK(tfd >= 0, "mkstemp");
  close(tfd);
  setenv("FC_CUDA_TRACE", trace, 1);
  CHECK(cuda_ring_create(&cfg, 0, CAPACITY, SLOTS, 1, &ring) == 0, "ring: %s", cuda_last_error());
  unsetenv("FC_CUDA_TRACE");
  if (!ring) return fc_check_result("test_cuda_ring");
  CHECK(cuda_ring_slots(ring) == SLOTS && cuda_plan_max_samples(ring) == CAPACITY,
        "ring of %u chunks of %zu samples", cuda_ring_slots(ring), cuda_plan_max_samples(ring));
  grow();
  misuse();
  for (int i = 0; i < N_UTTS; i++) {
    lens[i] = 256 + (size_t)((i * 7919) % 30000);
    is16[i] = i % 3 != 1;
    pcm[i] = malloc(sizeof(float) * lens[i]);
    pcm16[i] = malloc(sizeof(int16_t) * lens[i]);
    got[i] = malloc(sizeof(float) * fc_mel_num_frames(&cfg, lens[i]) * cfg.n_mels);
    make_signal(pcm[i], lens[i], (uint32_t)i + 3, cfg.sample_rate);
    if (is16[i])
      for (size_t k = 0; k < lens[i]; k++) {
        pcm16[i][k] = (int16_t)lrintf(pcm[i][k] * 32767.0f);
        pcm[i][k] = fc_cu_i16_to_f32(pcm16[i][k]);
      }
  }
  pthread_t th;
  pthread_create(&th, NULL, launcher, NULL);
  const size_t row = sizeof(float) * cfg.n_mels;
  for (;;) { /* finish in launch order, give the chunk back */
    pthread_mutex_lock(&mu);
    while (done_uses == n_uses && !launcher_done) pthread_cond_wait(&cv, &mu);
    if (done_uses == n_uses) {
      pthread_mutex_unlock(&mu);
      break;
    }
    launched u = uses[done_uses];
    pthread_mutex_unlock(&mu);
    const void *out = NULL;
    int rc = u.rc ? u.rc : cuda_ring_finish(ring, done_uses % SLOTS, &out);
    CHECK(rc == 0, "finish of chunk %u: %s", done_uses, cuda_last_error());
    uint64_t frame = 0;
    for (size_t k = u.first; k < u.first + u.count && rc == 0; k++) {
      uint64_t f = fc_mel_num_frames(&cfg, lens[k]);
      memcpy(got[k], (const char *)out + frame * row, f * row);
      frame += f;
    }
    pthread_mutex_lock(&mu);
    done_uses++;
    free_slots++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  pthread_join(th, NULL);
  uint64_t beyond = 0, total = 0;
  double worst = 0;
  for (int i = 0; i < N_UTTS; i++) {
    uint64_t f = fc_mel_num_frames(&cfg, lens[i]);
    float *ref = malloc(f * row);
    CHECK(fc_mel_compute(cpu, pcm[i], lens[i], ref) == 0, "cpu");
    for (uint64_t t = 0; t < f; t++) {
      double peak = 0;
      for (uint32_t m = 0; m < cfg.n_mels; m++) peak = fmax(peak, exp(ref[t * cfg.n_mels + m]));
      for (uint32_t m = 0; m < cfg.n_mels; m++) {
        double g = got[i][t * cfg.n_mels + m], r = ref[t * cfg.n_mels + m], e = fabs(g - r);
        total++;
        if (e <= 1e-4) {
          worst = fmax(worst, e);
        } else if (!(fabs(exp(g) - exp(r)) / peak <= 1e-6)) {
          if (beyond++ < 5)
            fprintf(stderr, "utterance %d (%s) frame %llu band %u: GPU %.7g, CPU %.7g\n", i,
                    is16[i] ? "int16" : "float", (unsigned long long)t, m, g, r);
        }
      }
    }
    free(ref);
  }
  CHECK(beyond == 0, "%llu of %llu values outside the tolerance", (unsigned long long)beyond,
        (unsigned long long)total);
  printf("ring: %d utterances (%d int16) in %zu chunks over %d slots, max error %.2e\n", N_UTTS,
         (N_UTTS * 2 + 2) / 3, n_uses, SLOTS, worst);
  for (int i = 0; i < N_UTTS; i++) {
    free(pcm[i]);
    free(pcm16[i]);
    free(got[i]);
  }
  cuda_plan_free(ring);
  /* misuse() ran one more chunk: one utterance of 4096 samples */
  uint64_t samples = 4096;
  for (int i = 0; i < N_UTTS; i++) samples += lens[i];
  check_trace(trace, n_uses + 1, N_UTTS + 1, samples);
  unlink(trace);
  fc_mel_plan_free(cpu);
  return fc_check_result("test_cuda_ring");
}
