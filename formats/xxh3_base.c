/* XXH3 for the build's baseline instruction set (formats/xxh3_int.h): every CPU runs it. */
#define XXH3_IMPL xxh3_impl_base
#define XXH3_IMPL_NAME "base"
#include "formats/xxh3_impl.h"
