/* The ring plan's trace (FC_CUDA_TRACE=FILE; docs/cuda.md "Tracing a run"): one CSV line per event
 * of a plan's life, every time on the host's CLOCK_MONOTONIC, device times put on it through an
 * event waited for when the trace was opened. Private to kernels/cuda/ (cuda_host.c). Compiled
 * into CUDA builds only. */
#ifndef FC_CUDA_TRACE_H
#define FC_CUDA_TRACE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

typedef struct cuda_trace cuda_trace;

/* The host's CLOCK_MONOTONIC in seconds. */
double cuda_trace_now(void);
/* The trace FC_CUDA_TRACE names, opened on the current device (its header written, its base
 * event recorded and waited for); NULL when the variable is unset or empty, or when the file
 * cannot be made or the event fails (said on stderr: a diagnostic never stops a run). */
cuda_trace *cuda_trace_open(void);
/* A line of kind (plan, grow, free; opened, sealed, released: cuda_ring_note) for `which` (a
 * chunk, or -1), with counts c (NULL: zeros) and its begin and end times (negative: left empty). */
void cuda_trace_span(cuda_trace *t, const char *kind, int which, const uint64_t c[4], double t0,
                     double t1);
/* A chunk finished: its counts (utterances, int16 and float samples, output bytes), its launch,
 * its four events (before the copy up, after it and the conversion, after the kernels, after the
 * copy back) and when the host saw it done. */
void cuda_trace_chunk(cuda_trace *t, int slot, const uint64_t c[4], double launched,
                      const cudaEvent_t ev[4], double seen);
/* The plan freed (begun at t0, done now): its line, then the file closed and t freed. */
void cuda_trace_close(cuda_trace *t, double t0);

#endif
