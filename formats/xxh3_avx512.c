/* XXH3 with AVX-512 (formats/xxh3_int.h): built with -mavx512f on x86-64, run only where the CPU
 * and the OS support AVX-512F (xxh3_best). Elsewhere this file holds nothing. */
#if defined(__x86_64__)
#define XXH_VECTOR XXH_AVX512
#define XXH3_IMPL xxh3_impl_avx512
#define XXH3_IMPL_NAME "avx512"
#include "formats/xxh3_impl.h"
#else
typedef int xxh3_avx512_unused;
#endif
