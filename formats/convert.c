/* float16 / bfloat16 conversions of the public API, on the shared per-element math so that CPU
 * and CUDA round identically (round to nearest, ties to even). */
#include "featcache/fc_base.h"
#include "formats/common/args.h"
#include "featcache/fc_mel.h"

#include <string.h>

#include "kernels/fc_math.h"

uint16_t fc_f32_to_f16(float f) { return fc_math_f32_to_f16(f); }
float fc_f16_to_f32(uint16_t h) { return fc_math_f16_to_f32(h); }
uint16_t fc_f32_to_bf16(float f) { return fc_math_f32_to_bf16(f); }
float fc_bf16_to_f32(uint16_t b) { return fc_math_bf16_to_f32(b); }

void fc_convert_dtype(const float *src, size_t n, int dtype, void *dst) {
  FC_ARGS_OR(, src || !n, dst || !n);
  /* dst may be unaligned (a record payload being assembled), so halves are stored bytewise; in
   * host byte order, which is the format's little-endian on every host we build for. */
  unsigned char *d = dst;
  switch (dtype) {
  case FC_DTYPE_F16:
    for (size_t i = 0; i < n; i++) {
      uint16_t h = fc_math_f32_to_f16(src[i]);
      memcpy(d + 2 * i, &h, 2);
    }
    break;
  case FC_DTYPE_BF16:
    for (size_t i = 0; i < n; i++) {
      uint16_t h = fc_math_f32_to_bf16(src[i]);
      memcpy(d + 2 * i, &h, 2);
    }
    break;
  case FC_DTYPE_F32: memmove(dst, src, n * sizeof *src); break;
  default: break; /* not a feature dtype: fc_mel_config_validate never lets one through */
  }
}
