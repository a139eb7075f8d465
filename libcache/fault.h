/* Fault injection for tests (SQLite's faultsim style). Built in only with FC_FAULT_INJECTION
 * (the default for test builds). FC_FAULT="site:N" makes the N-th call of that site fail, e.g.
 * FC_FAULT=commit:3 fails the third write-transaction commit with EIO. Sites: commit, put, alloc. */
#ifndef FC_FAULT_H
#define FC_FAULT_H

#ifdef FC_FAULT_INJECTION
/* 1 when this call of `site` must fail. Thread-safe. */
int fc_fault_hit(const char *site);
#else
#define fc_fault_hit(site) 0
#endif

#endif
