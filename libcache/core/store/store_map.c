/* A store's map (store_int.h "Map growth"): its growth and the adoption of the size another
 * process grew it to, each under map_lock exclusive, and the read transactions each thread holds
 * per store, which pin the map (store_held_add). */
#include "libcache/core/store/store_int.h"

#include "formats/common/alloc.h"
#include "formats/common/fault.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The read transactions (fc_store_read_begin) each thread holds, per store: a thread that holds
 * one keeps map_lock shared, and would wait on itself for the exclusive lock of a resize (LMDB
 * cannot resize under a transaction of this process anyway). The table grows with the stores a
 * thread reads at once (cache-merge reads hundreds of inputs while it writes its output); freed at
 * the thread's exit. `untracked` counts those begun when the table could not grow: then any store
 * may be held. */
typedef struct held_slot {
  const fc_store *s;
  unsigned n;
} held_slot;
static _Thread_local held_slot *held;
static _Thread_local size_t n_held;
static _Thread_local unsigned untracked;
static pthread_key_t held_key;
static pthread_once_t held_once = PTHREAD_ONCE_INIT;
static void held_key_make(void) { pthread_key_create(&held_key, free); }

void store_held_add(const fc_store *s, int d) {
  size_t free_slot = n_held;
  for (size_t i = 0; i < n_held; i++) {
    if (held[i].s == s && held[i].n) {
      if (d < 0 && --held[i].n == 0) held[i].s = NULL;
      if (d > 0) held[i].n++;
      return;
    }
    if (!held[i].n && free_slot == n_held) free_slot = i;
  }
  if (d < 0) {
    if (untracked) untracked--;
    return;
  }
  if (free_slot == n_held) { /* every slot taken: twice as many */
    const size_t n = n_held ? 2 * n_held : 8;
    held_slot *t = fc_realloc(held, n * sizeof *t);
    if (!t) {
      untracked++;
      return;
    }
    memset(t + n_held, 0, (n - n_held) * sizeof *t);
    held = t;
    n_held = n;
    pthread_once(&held_once, held_key_make);
    (void)pthread_setspecific(held_key, t); /* freed at the thread's exit (else at the process's) */
  }
  held[free_slot].s = s;
  held[free_slot].n = 1;
}

static int held_here(const fc_store *s) {
  if (untracked) return 1;
  for (size_t i = 0; i < n_held; i++)
    if (held[i].s == s && held[i].n) return 1;
  return 0;
}

int store_grow_map(fc_store *s, uint64_t at_least) {
  MDB_envinfo info;
  if (held_here(s)) return MDB_MAP_FULL; /* this thread's read transactions pin the map */
  pthread_rwlock_wrlock(&s->map_lock);
  int rc = fault_hit("grow") ? ENOMEM : mdb_env_info(s->env, &info);
  uint64_t size = rc ? 0 : (uint64_t)info.me_mapsize * 2;
  if (!rc) rc = mdb_env_set_mapsize(s->env, size < at_least ? at_least : size);
  pthread_rwlock_unlock(&s->map_lock);
  return rc;
}

int store_adopt_map(fc_store *s) {
  if (held_here(s)) return MDB_MAP_RESIZED; /* this thread's read transactions pin the map */
  pthread_rwlock_wrlock(&s->map_lock);
  /* a loader's snapshot points into the map (arrays of it too): remapping would move it away */
  int rc = atomic_load(&s->pinned) ? MDB_MAP_RESIZED : mdb_env_set_mapsize(s->env, 0);
  pthread_rwlock_unlock(&s->map_lock);
  return rc;
}
