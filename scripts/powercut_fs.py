#!/usr/bin/env python3
"""scripts/powercut_fs.py — a FUSE file system that keeps written-but-unsynced data apart, so that
a power cut can be simulated (in the spirit of LazyFS). Used by scripts/crash-trials --power-cut.

    powercut_fs.py BACKING MOUNT STATE --cut MODE [--seed N]

Files live in BACKING (the "disk"). A write(2) through MOUNT goes into this process's memory
(per 4 KiB page, and into one ordered log of every unsynced write and truncation across files);
reads, LMDB's MAP_SHARED map included, see the data as written. fsync(2)/fdatasync(2) of a file
(and msync(2), which the kernel turns into one) writes that file's pending data to BACKING; a
write through a descriptor opened O_SYNC/O_DSYNC is synced with it. Directory operations
(create, mkdir, rename, link, unlink, rmdir) go to BACKING at once, so that every reader sees
them, and into a second log: a change to a directory's entries is lost at the cut (every mode but
keep) unless that directory was fsynced after it (fsync(2) of a descriptor of the directory: POSIX
makes a name durable no other way). One exception, as ext4, XFS and btrfs behave and LMDB relies
on: a file's fsync makes the entry that created it durable, and the directories made above it.
So a rename or link into place whose directory is not synced after it is undone at the cut: the
old name back, the file it replaced back under its name (kept meanwhile by a hard link in
STATE/stash), a new link removed; an unlink undone brings the file back with what was synced.

At unmount the cut is applied to BACKING, by MODE:
  keep     every pending write is kept (a process was killed; the page cache survived)
  drop     every pending write is lost (LazyFS's clear-cache: power lost, nothing written back)
  prefix   the log's first k writes survive, k drawn (seeded) from 0..len: a disk that writes
           in the order it was given
  subset   each pending write survives or not, drawn (seeded) independently: a disk (or a
           page-cache write-back) that writes in any order
and STATE/report.json says how many writes were pending, kept and lost.

STATE/events.log gets a line per event, "<monotonic seconds> <event> <path>": `commit` (a write
into the first two pages of a file named data.mdb: LMDB's meta pages, its commit point), `sync`
(fsync of a data.mdb). After each, a copy of the file as it then was goes to
STATE/committed/<path> (the file as readers saw it: what a SIGKILL keeps) and STATE/synced/<path>
(the file as BACKING held it after the sync: what a power cut must keep), '/' in path as '%'.
"""
import argparse
import errno
import json
import os
import random
import sys
import threading
import time

fuse = None  # the FUSE binding, imported by main once the options are parsed: --help needs none


def import_fuse():
    global fuse
    try:
        import fusepy as fuse  # Debian's python3-fusepy
    except ImportError:  # pragma: no cover - PyPI's fusepy
        import fuse

PAGE = 4096
META_END = 2 * PAGE  # LMDB's two meta pages (page size 4096 on the machines we run on)


class File:
    """Pending state of one backing inode."""

    def __init__(self, fd, size):
        self.fd = fd  # O_RDWR on the backing file
        self.size = size  # current size as readers see it
        self.pages = {}  # page index -> bytearray(PAGE), current contents of dirty pages
        self.dirty = False


class PowerCutFS:  # a fuse.Operations: main mixes that in once the binding is imported
    def __init__(self, backing, state):
        self.root = os.path.realpath(backing)
        self.state = state
        self.files = {}  # backing inode -> File
        self.log = []  # (ino, ("w", off, bytes) | ("t", size)) in the order they happened
        self.dlog = []  # pending directory changes, in order: [kind, dirs not synced, args...]
        self.stashed = 0  # files kept in STATE/stash for an undo (a replaced or unlinked name)
        self.fhs = {}  # fh -> (ino, sync_each_write)
        self.next_fh = 1
        self.mu = threading.Lock()
        for sub in ("committed", "synced"):
            os.makedirs(os.path.join(state, sub), exist_ok=True)
        self.events = open(os.path.join(state, "events.log"), "a", buffering=1)

    # -- helpers -----------------------------------------------------------------------------
    def _b(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def _file(self, ino, bpath=None):
        f = self.files.get(ino)
        if f is None:
            fd = os.open(bpath, os.O_RDWR)
            f = File(fd, os.fstat(fd).st_size)
            self.files[ino] = f
        return f

    def _page(self, f, i):
        p = f.pages.get(i)
        if p is None:
            p = bytearray(os.pread(f.fd, PAGE, i * PAGE).ljust(PAGE, b"\0"))
            # bytes past the current size are zeros whatever the backing file holds
            if (i + 1) * PAGE > f.size:
                keep = max(0, f.size - i * PAGE)
                p[keep:] = bytes(PAGE - keep)
            f.pages[i] = p
        return p

    def _view(self, f, off, size):
        end = min(off + size, f.size)
        if off >= end:
            return b""
        if not f.pages:
            data = os.pread(f.fd, end - off, off)
            return data.ljust(end - off, b"\0")
        out = bytearray()
        pos = off
        while pos < end:
            i, o = divmod(pos, PAGE)
            n = min(PAGE - o, end - pos)
            p = f.pages.get(i)
            if p is not None:
                out += p[o:o + n]
            else:
                out += os.pread(f.fd, n, pos).ljust(n, b"\0")
            pos += n
        return bytes(out)

    def _apply(self, f, op):
        if op[0] == "w":
            os.pwrite(f.fd, op[2], op[1])
        else:
            os.ftruncate(f.fd, op[1])

    def _sync(self, ino):
        f = self.files.get(ino)
        if f is None or not f.dirty:
            return
        os.ftruncate(f.fd, f.size)
        for i, p in sorted(f.pages.items()):
            n = min(PAGE, f.size - i * PAGE)
            if n > 0:
                os.pwrite(f.fd, bytes(p[:n]), i * PAGE)
        f.pages.clear()
        f.dirty = False
        self.log = [e for e in self.log if e[0] != ino]

    # -- directory changes (the second log) ---------------------------------------------------
    def _parent(self, bpath):
        return os.path.dirname(bpath.rstrip("/"))

    def _dchange(self, kind, dirs, *args):
        self.dlog.append([kind, set(dirs)] + list(args))

    def _stash(self, bpath):
        """A hard link to bpath's file in STATE/stash (a copy across file systems), or None."""
        try:
            st = os.lstat(bpath)
        except OSError:
            return None
        if not os.path.isfile(bpath) or os.path.islink(bpath):
            return None
        d = os.path.join(self.state, "stash")
        os.makedirs(d, exist_ok=True)
        self.stashed += 1
        dst = os.path.join(d, "%d" % self.stashed)
        try:
            os.link(bpath, dst)
        except OSError:
            import shutil
            shutil.copy2(bpath, dst)
        return (dst, st.st_ino)

    def _dsynced(self, bdir):
        """fsync of a directory: the changes to its entries are durable."""
        for e in self.dlog:
            e[1].discard(bdir)
        self.dlog = [e for e in self.dlog if e[1]]

    def _created_synced(self, ino):
        """fsync of a file: the entry that created it durable, and the directories above it."""
        made = [e[2] for e in self.dlog if e[0] == "create" and e[3] == ino]
        if not made:
            return
        above = set()
        for bp in made:
            d = self._parent(bp)
            while d.startswith(self.root) and d != self.root:
                above.add(d)
                d = self._parent(d)
        self.dlog = [e for e in self.dlog if not (e[0] == "create" and e[3] == ino) and
                     not (e[0] == "mkdir" and e[2] in above)]

    def _undo(self, e):
        kind, args = e[0], e[2:]
        try:
            if kind == "create":
                bp, ino = args
                if os.path.lexists(bp) and os.lstat(bp).st_ino == ino:
                    os.unlink(bp)
            elif kind == "mkdir":
                import shutil
                shutil.rmtree(args[0], ignore_errors=True)
            elif kind == "rename":
                bold, bnew, stash = args
                if os.path.lexists(bnew):
                    os.rename(bnew, bold)
                if stash and not os.path.lexists(bnew):
                    os.link(stash[0], bnew)
            elif kind == "link":
                if os.path.lexists(args[0]):
                    os.unlink(args[0])
            elif kind == "unlink":
                bp, stash = args
                if stash and not os.path.lexists(bp):
                    os.link(stash[0], bp)
            elif kind == "rmdir":
                os.makedirs(args[0], exist_ok=True)
        except OSError as x:  # reported, not fatal: the rest of the cut is applied
            sys.stderr.write("powercut_fs: cannot undo %s %r: %s\n" % (kind, args, x))

    def _snap(self, kind, path, f):
        dst = os.path.join(self.state, kind, path.strip("/").replace("/", "%"))
        tmp = dst + ".tmp"
        with open(tmp, "wb") as out:
            if kind == "synced":
                out.write(os.pread(f.fd, f.size, 0))
            else:
                out.write(self._view(f, 0, f.size))
        os.rename(tmp, dst)
        self.events.write("%.6f %s %s\n" % (time.monotonic(), kind[:-2] if kind == "synced" else "commit", path))

    # -- file system -------------------------------------------------------------------------
    def getattr(self, path, fh=None):
        with self.mu:
            try:
                st = os.lstat(self._b(path))
            except OSError as e:
                raise fuse.FuseOSError(e.errno)
            d = {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid",
                                              "st_atime", "st_mtime", "st_ctime", "st_ino")}
            f = self.files.get(st.st_ino)
            d["st_size"] = f.size if f is not None else st.st_size
            d["st_blocks"] = (d["st_size"] + 511) // 512
            return d

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._b(path))

    def statfs(self, path):
        s = os.statvfs(self._b(path))
        return {k: getattr(s, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                           "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def access(self, path, mode):
        if not os.access(self._b(path), mode):
            raise fuse.FuseOSError(errno.EACCES)

    def mkdir(self, path, mode):
        with self.mu:
            bp = self._b(path)
            os.mkdir(bp, mode)
            self._dchange("mkdir", [self._parent(bp)], bp)

    def rmdir(self, path):
        with self.mu:
            bp = self._b(path)
            os.rmdir(bp)
            self._dchange("rmdir", [self._parent(bp)], bp)

    def chmod(self, path, mode):
        os.chmod(self._b(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._b(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._b(path), times)

    def rename(self, old, new):
        with self.mu:
            bold, bnew = self._b(old), self._b(new)
            stash = self._stash(bnew)  # the file the rename replaces, back at an undo
            os.rename(bold, bnew)
            self._dchange("rename", [self._parent(bold), self._parent(bnew)], bold, bnew, stash)

    def link(self, target, source):
        with self.mu:
            bnew = self._b(target)
            os.link(self._b(source), bnew)
            self._dchange("link", [self._parent(bnew)], bnew)

    def unlink(self, path):
        with self.mu:
            bp = self._b(path)
            st = os.lstat(bp)
            stash = self._stash(bp)
            os.unlink(bp)
            self._dchange("unlink", [self._parent(bp)], bp, stash)
            if st.st_nlink <= 1 and st.st_ino in self.files:
                f = self.files.pop(st.st_ino)
                os.close(f.fd)
                self.log = [e for e in self.log if e[0] != st.st_ino]

    def _newfh(self, ino, flags):
        fh = self.next_fh
        self.next_fh += 1
        self.fhs[fh] = (ino, bool(flags & (os.O_SYNC | os.O_DSYNC)))
        return fh

    def open(self, path, flags):
        with self.mu:
            bp = self._b(path)
            st = os.stat(bp)
            self._file(st.st_ino, bp)
            fh = self._newfh(st.st_ino, flags)
            if flags & os.O_TRUNC:
                self._truncate(st.st_ino, 0)
            return fh

    def create(self, path, mode, fi=None):
        with self.mu:
            bp = self._b(path)
            existed = os.path.lexists(bp)
            fd = os.open(bp, os.O_CREAT | os.O_RDWR, mode)
            os.close(fd)
            st = os.stat(bp)
            if not existed:
                self._dchange("create", [self._parent(bp)], bp, st.st_ino)
            self._file(st.st_ino, bp)
            return self._newfh(st.st_ino, 0)

    def release(self, path, fh):
        with self.mu:
            self.fhs.pop(fh, None)

    def flush(self, path, fh):
        return 0

    def read(self, path, size, offset, fh):
        with self.mu:
            ino = self.fhs[fh][0]
            return self._view(self.files[ino], offset, size)

    def write(self, path, data, offset, fh):
        with self.mu:
            ino, sync_each = self.fhs[fh]
            f = self.files[ino]
            data = bytes(data)
            pos, end = offset, offset + len(data)
            if offset > f.size:  # a hole: the pages between read as zeros
                for i in range(f.size // PAGE, offset // PAGE + 1):
                    self._page(f, i)
            while pos < end:
                i, o = divmod(pos, PAGE)
                n = min(PAGE - o, end - pos)
                p = self._page(f, i)
                p[o:o + n] = data[pos - offset:pos - offset + n]
                self.log.append((ino, ("w", pos, data[pos - offset:pos - offset + n])))
                pos += n
            f.size = max(f.size, end)
            f.dirty = True
            meta = os.path.basename(path) == "data.mdb" and offset < META_END
            if sync_each:
                self._sync(ino)
                self._created_synced(ino)
            if meta:
                self._snap("committed", path, f)
                if sync_each:
                    self._snap("synced", path, f)
            return len(data)

    def _truncate(self, ino, length):
        f = self.files[ino]
        for i in [i for i in f.pages if i * PAGE >= length]:
            del f.pages[i]
        if length % PAGE and length < f.size:
            p = self._page(f, length // PAGE)
            p[length % PAGE:] = bytes(PAGE - length % PAGE)
        f.size = length
        f.dirty = True
        self.log.append((ino, ("t", length)))

    def truncate(self, path, length, fh=None):
        with self.mu:
            if fh is not None and fh in self.fhs:
                ino = self.fhs[fh][0]
            else:
                bp = self._b(path)
                ino = os.stat(bp).st_ino
                self._file(ino, bp)
            self._truncate(ino, length)

    def fsync(self, path, datasync, fh):
        with self.mu:
            ino = self.fhs[fh][0] if fh in self.fhs else os.stat(self._b(path)).st_ino
            self._sync(ino)
            self._created_synced(ino)
            if os.path.basename(path) == "data.mdb" and ino in self.files:
                self._snap("synced", path, self.files[ino])
            return 0

    def fsyncdir(self, path, datasync, fh):
        with self.mu:
            self._dsynced(self._b(path).rstrip("/") if path != "/" else self.root)
            return 0

    # -- the cut -----------------------------------------------------------------------------
    def cut(self, mode, seed):
        rng = random.Random(seed)
        pending = len(self.log)
        if mode == "keep":
            chosen = self.log
        elif mode == "drop":
            chosen = []
        elif mode == "prefix":
            chosen = self.log[:rng.randint(0, pending)]
        else:
            chosen = [e for e in self.log if rng.random() < 0.5]
        if mode == "keep":
            for ino in list(self.files):
                self._sync(ino)
        else:
            for ino, op in chosen:
                self._apply(self.files[ino], op)
        for f in self.files.values():
            os.close(f.fd)
        self.files.clear()
        names_lost = 0 if mode == "keep" else len(self.dlog)
        if mode != "keep":  # the directory changes never synced, undone newest first
            for e in reversed(self.dlog):
                self._undo(e)
        import shutil
        shutil.rmtree(os.path.join(self.state, "stash"), ignore_errors=True)
        return {"mode": mode, "seed": seed, "pending": pending, "kept": len(chosen),
                "lost": pending - len(chosen), "names_lost": names_lost}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("backing")
    ap.add_argument("mount")
    ap.add_argument("state")
    ap.add_argument("--cut", choices=("keep", "drop", "prefix", "subset"), default="drop")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    import_fuse()
    os.makedirs(a.state, exist_ok=True)
    fs = type("PowerCutFS", (PowerCutFS, fuse.Operations), {})(a.backing, a.state)
    # one thread: requests are served in the order the kernel sends them; no attribute or entry
    # cache beyond what the kernel keeps for open files
    fuse.FUSE(fs, a.mount, foreground=True, nothreads=True, attr_timeout=0, entry_timeout=0,
              big_writes=True, max_write=131072)
    rep = fs.cut(a.cut, a.seed)
    with open(os.path.join(a.state, "report.json"), "w") as f:
        json.dump(rep, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
