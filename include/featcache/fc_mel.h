/* featcache — log-mel computation on the CPU (FFTW, single precision).
 *
 * A plan holds everything derived from a config: window, mel filterbank (sparse: each mel band's
 * first bin and weights), FFTW plans for a block of frames. Plans are made once and reused.
 *
 * Threads: fc_mel_plan_create, fc_mel_plan_clone and fc_mel_plan_free may be called from several
 * threads at once: the library serializes its calls to FFTW's planner (plan creation and
 * destruction) behind a lock of its own. fc_mel_compute runs in parallel on *different* plans; a
 * plan is used by one thread at a time (for OpenMP across utterances make one plan per thread:
 * fc_mel_plan_clone is cheap). The hazard is another user of single-precision FFTW (libfftw3f)
 * in the same process: FFTW's planner is one for the process, and that code plans (fftwf_plan_*,
 * fftwf_destroy_plan) without the library's lock, so its planning while another thread makes or
 * frees a mel plan corrupts FFTW's state (a crash, a wrong transform). A program that plans with
 * fftwf_* itself calls fftwf_make_planner_thread_safe() (libfftw3f_threads, FFTW >= 3.3.5) once,
 * before its threads start: FFTW then locks every planner call, the library's too. Or it makes
 * its plans and mel plans from one thread. It never calls fftwf_cleanup() while a mel plan
 * lives. Double-precision FFTW (libfftw3, fftw_*) has a planner of its own: no hazard. */
#ifndef FC_MEL_H
#define FC_MEL_H

#include "fc_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fc_mel_plan fc_mel_plan;

/* Create a plan for cfg (validated first: FC_ECONFIG). *out owned by the caller. */
FC_API int fc_mel_plan_create(const fc_mel_config *cfg, fc_mel_plan **out);
/* A plan for the same config sharing the read-only tables; safe to use from another thread. */
FC_API int fc_mel_plan_clone(const fc_mel_plan *src, fc_mel_plan **out);
FC_API void fc_mel_plan_free(fc_mel_plan *p);
/* The config the plan was made for (a copy owned by the plan). */
FC_API const fc_mel_config *fc_mel_plan_config(const fc_mel_plan *p);

/* Compute the features of n mono samples (at cfg->sample_rate, in [-1, 1]) into out, time-major
 * [frames][n_mels] float32, frames = fc_mel_num_frames(cfg, n). out holds at least that many
 * floats. Applies int16 scaling, framing/padding, DC removal, pre-emphasis, window, FFT,
 * magnitude/power, mel projection and the log compression (including per-utterance clamps).
 * Returns 0, FC_EEMPTY when the config gives 0 frames for n samples, or FC_ERANGE when a frame
 * reads a sample that is NaN or infinite, or samples so large that a band's power passes float32's
 * range (the references give NaN or an infinity there; a log's clamp would have turned a NaN into
 * the log floor, a silent frame): out's values are then unspecified, the plan as good as before.
 * Samples no frame reads (the tail Kaldi's snip-edges framing drops) are not looked at.
 * fc_audio_decode refuses files with such samples first, naming the sample. */
FC_API int fc_mel_compute(fc_mel_plan *p, const float *samples, size_t n, float *out);

/* Mel bands of cfg (valid: fc_mel_config_validate) that hold no FFT bin — "empty filters", which
 * librosa warns about: such a band is the log floor in every frame, whatever the audio. Returns
 * their count. *n_fft_min (may be NULL; with empty bands it costs a search over n_fft, a few ms):
 * the smallest n_fft, the other parameters kept, at which every band holds a bin (cfg->n_fft
 * when no band is empty); 0 when none up to FC_MEL_MAX_N_FFT does. */
FC_API uint32_t fc_mel_empty_bands(const fc_mel_config *cfg, uint32_t *n_fft_min);

/* The mel filterbank as a dense [n_mels][n_fft/2+1] float32 matrix (for tests); out must hold
 * n_mels * (n_fft/2+1) floats. */
FC_API void fc_mel_filterbank_dense(const fc_mel_plan *p, float *out);
/* The analysis window of length n_fft as applied to each frame (for tests). */
FC_API void fc_mel_window(const fc_mel_plan *p, float *out);

/* Convert a float32 feature array to the config's dtype (f32: copy; f16/bf16: round to nearest
 * even). dst holds n * fc_dtype_size(dtype) bytes. */
FC_API void fc_convert_dtype(const float *src, size_t n, int dtype, void *dst);

#ifdef __cplusplus
}
#endif
#endif
