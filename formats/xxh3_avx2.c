/* XXH3 with AVX2 (formats/xxh3_int.h): built with -mavx2 on x86-64, run only where the CPU and the
 * OS support AVX2 (xxh3_best). Elsewhere this file holds nothing. */
#if defined(__x86_64__)
#define XXH_VECTOR XXH_AVX2
#define XXH3_IMPL xxh3_impl_avx2
#define XXH3_IMPL_NAME "avx2"
#include "formats/xxh3_impl.h"
#else
typedef int xxh3_avx2_unused;
#endif
