/* featcache — the whole public C API. Link with -lfeatcache (pkg-config featcache). */
#ifndef FEATCACHE_H
#define FEATCACHE_H

#include "featcache/fc_base.h"
#include "featcache/fc_config.h"
#include "featcache/fc_format.h"
#include "featcache/fc_codec.h"
#include "featcache/fc_store.h"
#include "featcache/fc_mel.h"
#include "featcache/fc_audio.h"
#include "featcache/fc_manifest.h"
#include "featcache/fc_shard.h"
#include "featcache/fc_merge.h"
#include "featcache/fc_featurize.h"
#include "featcache/fc_tokenize.h"
#include "featcache/fc_profiler.h"
#include "featcache/fc_verify.h"
#include "featcache/fc_loader.h"
#include "featcache/fc_outfile.h"

#endif
