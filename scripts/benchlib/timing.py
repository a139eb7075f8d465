"""Small timing helpers: medians over repetitions, a child process's wall and CPU time, and the
order of interleaved rounds (so a busy neighbour slows every contender alike)."""

import resource
import statistics
import subprocess
import time

median = statistics.median


def quartiles(values):
    """(first quartile, median, third quartile); one value gives it three times."""
    v = sorted(values)
    if len(v) < 2:
        return v[0], v[0], v[0]
    q = statistics.quantiles(v, n=4)
    return q[0], statistics.median(v), q[2]


def times(fn, reps, warm=0):
    """Wall seconds of fn() for each of REPS calls, after WARM untimed calls."""
    for _ in range(warm):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def median_of(fn, reps, warm=0):
    """Median wall seconds of REPS calls of fn() (after WARM untimed calls)."""
    return statistics.median(times(fn, reps, warm))


def best_of(fn, reps, warm=0):
    """Fastest wall seconds of REPS calls of fn()."""
    return min(times(fn, reps, warm))


def median_value(fn, reps):
    """Median of what fn() returns over REPS calls (a figure a run measures itself)."""
    return statistics.median(fn() for _ in range(reps))


class Timed:
    """A finished child: wall seconds, CPU seconds (user + system of it and its children), the
    subprocess.CompletedProcess."""

    def __init__(self, wall, cpu, proc):
        self.wall, self.cpu, self.proc = wall, cpu, proc


def run_timed(cmd, **kw):
    """subprocess.run(cmd, **kw) timed: wall clock and the CPU time of the children it reaped
    (getrusage RUSAGE_CHILDREN before and after, as the shell's `time`)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, **kw)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Timed(wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p)


def cpu_children():
    """User + system CPU seconds of all reaped children so far (for timing several commands)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def rounds(n, names, alternate=False):
    """(round, name) for N rounds over NAMES, every name once a round; ALTERNATE reverses the
    order every other round, so no name always goes first."""
    names = list(names)
    for r in range(n):
        for name in (names[::-1] if alternate and r % 2 else names):
            yield r, name
