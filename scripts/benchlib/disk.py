"""The disk a benchmark reads: a throttle for cold reads (a blkio cgroup), dropping a file from
the page cache and reading files into it.

    with Throttle("bench-codec", store, read_mbps=150) as slow:
        if not slow.ok:
            say(f"no blkio throttling here ({slow.why}): cold runs skipped")
        subprocess.run(slow.prefix() + cmd)     # cmd's reads of that disk at 150 MB/s

Throttling uses cgroup v1's blkio controller (blkio.throttle.read_bps_device/read_iops_device on
the whole disk under PATH), so it needs root and a v1 blkio hierarchy at /sys/fs/cgroup/blkio. It
limits bandwidth and IOPS; it does not emulate seek times. Where it cannot be had, ok is False and
why says which of those is missing.
"""

import atexit
import os

BLKIO = "/sys/fs/cgroup/blkio"


def block_device(path):
    """(major:minor of the whole disk holding PATH, None) or (None, why not)."""
    dev = os.stat(path).st_dev
    mm = f"{os.major(dev)}:{os.minor(dev)}"
    sys_dev = f"/sys/dev/block/{mm}"
    if not os.path.exists(sys_dev):
        return None, f"{path} is on device {mm}, not a block device (tmpfs, overlay?)"
    if os.path.exists(os.path.join(sys_dev, "partition")):  # throttle rules take the whole disk
        with open(os.path.join(os.path.realpath(sys_dev), "..", "dev")) as f:
            mm = f.read().strip()
    return mm, None


class Throttle:
    """A blkio cgroup NAME limiting reads of PATH's disk to READ_MBPS (10^6 bytes/s) and
    READ_IOPS; processes started with prefix() run in it. Removed by close() (or at exit)."""

    def __init__(self, name, path, read_mbps=None, read_iops=None):
        self.dir = os.path.join(BLKIO, name)
        self.read_mbps, self.read_iops = read_mbps, read_iops
        self.ok, self.why, self.device = False, None, None
        if not os.path.isdir(BLKIO):
            v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
            self.why = ("cgroup v2 only, no v1 blkio hierarchy at " + BLKIO if v2
                        else "no cgroup blkio hierarchy at " + BLKIO)
            return
        if os.geteuid() != 0:
            self.why = "not root: the blkio cgroup files are root's"
            return
        self.device, self.why = block_device(path)
        if not self.device:
            return
        try:
            os.makedirs(self.dir, exist_ok=True)
            # 0 clears a limit a killed earlier run may have left in a cgroup of this name
            self._limit("blkio.throttle.read_bps_device", int((read_mbps or 0) * 1e6))
            self._limit("blkio.throttle.read_iops_device", int(read_iops or 0))
        except OSError as e:
            self.why = str(e)
            self.close()
            return
        self.ok = True
        atexit.register(self.close)

    def _limit(self, knob, value):
        with open(os.path.join(self.dir, knob), "w") as f:
            f.write(f"{self.device} {value}")

    def describe(self):
        """`120 MB/s, 150 IOPS`: the limits, as a table's caption says them."""
        parts = ([f"{self.read_mbps:g} MB/s"] if self.read_mbps else []) + \
                ([f"{self.read_iops:g} IOPS"] if self.read_iops else [])
        return ", ".join(parts)

    def prefix(self):
        """The argv prefix that starts a command inside the cgroup ([] when not ok)."""
        if not self.ok:
            return []
        return ["sh", "-c", f'echo $$ > {self.dir}/cgroup.procs && exec "$@"', "sh"]

    def close(self):
        try:
            os.rmdir(self.dir)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def drop_cache(path):
    """Drop PATH's pages from the page cache (written back first: DONTNEED keeps dirty pages)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(paths):
    """Read each file once, so the timed run starts with them in the page cache."""
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass
