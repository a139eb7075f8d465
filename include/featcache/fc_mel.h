/* featcache — log-mel computation on the CPU (FFTW, single precision).
 *
 * A plan holds everything derived from a config: window, mel filterbank (sparse: each mel band's
 * first bin and weights), FFTW plans for a block of frames. Plans are made once and reused.
 * fc_mel_plan_create is NOT thread-safe (FFTW planning); fc_mel_compute on *different* plans is.
 * For OpenMP across utterances make one plan per thread (fc_mel_plan_clone is cheap). */
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
FC_API int fc_mel_plan_clone(const fc_mel_plan *p, fc_mel_plan **out);
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
