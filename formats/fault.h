/* Fault injection for tests (SQLite's faultsim style), in the lowest layer so that every layer
 * may use it. Built in only with FC_FAULT_INJECTION (on by default; -DFC_FAULT_INJECTION=OFF for a
 * release). FC_FAULT="site:N" makes the N-th call of that site fail, e.g. FC_FAULT=commit:3 fails
 * the third write-transaction commit with EIO. Sites: commit, put (store), cuda (CUDA calls). */
#ifndef FC_FAULT_H
#define FC_FAULT_H

#ifdef FC_FAULT_INJECTION
/* 1 when this call of `site` must fail. Thread-safe. */
int fc_fault_hit(const char *site);
#else
#define fc_fault_hit(site) 0
#endif

#endif
