"""Machine notes: what a reader needs to weigh a benchmark's figures, printed the same way by every
benchmark — the CPU, cores, memory, kernel, the load average when the run started and when the
notes were printed (other jobs share the machine), the date and the commit measured.

    notes = MachineNotes()          # at the start: the load average before any work
    ...
    print(notes.line())             # machine: AMD EPYC 7B13, 2 cores, 7.8 GB, Linux 6.1.0;
                                    # load 3.10 2.95 2.40 at the start, 3.52 at the end;
                                    # 2025-06-01 14:05 UTC; commit b32828e
"""

import os
import platform
import subprocess
import time

from .build import ROOT


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def memory_gb():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024 / 1e9
    except (OSError, ValueError):
        pass
    return None


def commit():
    """The tree's commit, `+ changes` when tracked files differ from it; None outside git."""
    def git(*args):
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    try:
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
        return head.stdout.strip() + (" + changes" if dirty else "")
    except OSError:
        return None


class MachineNotes:
    """Taken at the start of a run; line() / json() add the load average at the time they are
    called (the end of the run when printed with the results)."""

    def __init__(self):
        self.start = time.time()
        self.load_start = os.getloadavg()
        self.cpu = cpu_model()
        self.cores = os.cpu_count() or 1
        self.memory_gb = memory_gb()
        self.kernel = platform.release()
        self.commit = commit()

    def line(self):
        load = " ".join(f"{x:.2f}" for x in self.load_start) + " at the start"
        if time.time() - self.start >= 1:
            load += f", {os.getloadavg()[0]:.2f} at the end"
        mem = f", {self.memory_gb:.1f} GB" if self.memory_gb else ""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.start))
        return (f"machine: {self.cpu}, {self.cores} cores{mem}, Linux {self.kernel}; load {load}; "
                f"{when}; commit {self.commit or 'unknown'}")

    def json(self):
        return {"cpu": self.cpu, "cores": self.cores, "memory_gb": self.memory_gb,
                "kernel": self.kernel, "commit": self.commit,
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.start)),
                "load_start": list(self.load_start), "load_end": list(os.getloadavg())}
