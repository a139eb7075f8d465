/* Fault injection for tests (SQLite's faultsim style), in the lowest layer so that every layer
 * may use it. Built in only with -DFC_FAULT_INJECTION=ON (off by default, so a release library
 * neither reads FC_FAULT nor takes a lock on every checked call; scripts/test builds both its
 * builds with it). FC_FAULT="site:N" makes the N-th call of that site fail, e.g.
 * FC_FAULT=commit:3 fails the third write-transaction commit with EIO. Sites: env (LMDB
 * environment open), put, commit, grow (map growth) in the store; open, read (input files), emfile (an input's open
 * fails with EMFILE, out of file descriptors), decode
 * (libsndfile), resample (soxr) in audio decoding; plan (FFTW planning); cuda (CUDA calls); alloc
 * (every allocation of the library: formats/common/alloc.h); write (the open, write, sync, close and
 * rename of an exported file: fc_outfile.h); espeak (the child process that phonemizes a line
 * of other scripts dies: libcache/text/tokenize/tok_child.c), espeakexit (it writes its answer, then
 * exits 1), espeakhang (it never answers: killed after FC_PHONEMIZE_TIMEOUT seconds); writeback (a pass of
 * cache-merge's write-back thread: libcache/core/merge/writeback.c); compact (cache-prune --compact's
 * copy of data.mdb fails: libcache/core/store/compact.c); directopen, directread (cache-bench's
 * open of data.mdb with O_DIRECT, and its O_DIRECT reads, fail with EINVAL: cmd/cache-bench/bench.c,
 * a tool's engine built with the countdowns too).
 * FC_FAULT_LOG=FILE appends "site:N" to FILE when the failure is injected (a run may absorb it).
 * FC_FAULT_MAPSIZE=BYTES (libcache/core/store/store.c) starts a new store's map that small, so that a
 * small job reaches map growth (grow). FC_FAULT_NOSYNC=1 (libcache/core/store/store.c) opens the
 * stores the writers open FC_STORE_NOMETASYNC with FC_STORE_NOSYNC instead: their former sync
 * policy, for scripts/crash-trials --nosync and scripts/bench-durability.
 * tests/cli/fault_sites.sh drives each one through the tools. Tests that need it ask
 * fault_built() and skip (exit 77) when it is 0. */
#ifndef FC_FAULT_H
#define FC_FAULT_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this library was built with the countdowns, else 0 (every build has this function). */
int fault_built(void);

#ifdef FC_FAULT_INJECTION
/* 1 when this call of `site` must fail. Thread-safe. One countdown per process: defined in the core
 * component and exported from it (in fault-injection builds only) so that the mel and text
 * components count against the same FC_FAULT; not part of the public API. */
__attribute__((visibility("default"))) int fault_hit(const char *site);
/* Hold (1) and release (0) the countdown in the calling thread; holds nest. While held,
 * fault_hit neither counts nor fails: for calls into a library whose own code cannot survive
 * the failure we would inject (jansson's parser: formats/common/json.h). Exported beside fault_hit. */
__attribute__((visibility("default"))) void fault_hold(int on);
/* FC_FAULT_STOP="site:N": the N-th call of fault_stop(site) (counted from when FC_FAULT_STOP took
 * this value: a test may set another site later in one process) stops the process (SIGSTOP), so
 * that a test can act at that point of a run — another process's commit between two of cache-prune's
 * steps (site `prune`: before each of its write transactions; site `compact`: 1 with the compact
 * copy written and synced, 2 once it is renamed over data.mdb), a signal at a known point of a
 * run (site `store_open`: each fc_store_open, e.g. cache-bench's reopening of a store it evicted
 * before a cold pass; site `bench_warm`: cache-bench's warm pass, its store read into the page
 * cache, before the pass reads; site `tokenize_batch`: each batch of tokenize between its lookups and its
 * write, for another writer to store the same lines first; site `featurize_batch`: each batch of a
 * featurize writer between its lookups and its commit, for another run to commit the same ids
 * first; site `tokenize_merge`: a bulk load's config
 * stored, its records not yet) — and then let it go on (SIGCONT).
 * Nothing is failed. Exported beside fault_hit. */
__attribute__((visibility("default"))) void fault_stop(const char *site);
/* FC_FAULT_WAIT=site: each call of fault_wait(site, flag) waits until *flag is nonzero (up to 30
 * s), so that a test's signal is seen at that point of a run however fast the run is (site
 * `check_pages`: each page of the page walk, libcache/core/verify/verify_pages.c, waits for its
 * stop flag, which the Python loader sets when Ctrl-C comes:
 * tests/python/test_loader_check_pages.py). For the core component's own sites: not exported. */
void fault_wait(const char *site, volatile const int *flag);
#else
#define fault_hit(site) 0
#define fault_hold(on) ((void)0)
#define fault_stop(site) ((void)0)
#define fault_wait(site, flag) ((void)0)
#endif

#ifdef __cplusplus
}
#endif

#endif
