/* For the C tests that stop a run at a fault site (FC_FAULT_STOP, which raises SIGSTOP) and act
 * from a forked child while it is stopped: the child waits until the parent's state is T. */
#ifndef FC_TESTS_STOPPED_H
#define FC_TESTS_STOPPED_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Wait until process pid has stopped itself (state T in /proc/PID/stat), at most 60 s. */
static inline void fc_test_wait_stopped(pid_t pid) {
  char proc[64], stat[512];
  snprintf(proc, sizeof proc, "/proc/%d/stat", (int)pid);
  for (int i = 0; i < 6000; i++) {
    FILE *sf = fopen(proc, "r");
    size_t got = sf ? fread(stat, 1, sizeof stat - 1, sf) : 0;
    if (sf) fclose(sf);
    stat[got] = '\0';
    const char *state = strrchr(stat, ')');
    if (state && state[1] == ' ' && state[2] == 'T') break;
    usleep(10000);
  }
}

#endif
