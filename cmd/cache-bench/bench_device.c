/* cache-bench device facts: which block device, disk, filesystem and read-ahead are behind a path.
 *
 * stat(path).st_dev → /proc/self/mountinfo (the mount holding the path: filesystem type, mount
 * point, ro flag) and /sys/dev/block/MAJ:MIN → the block device; a partition's parent directory
 * in sysfs is its disk; dm/md devices name their disks under slaves/. Anonymous devices (major 0)
 * have no block device: tmpfs, overlay, fuse, nfs and friends. */
#include "cmd/cache-bench/bench.h"
#include "featcache/fc_format.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

static void copy_str(char *dst, size_t cap, const char *src) {
  if (!cap) return;
  size_t n = src ? strlen(src) : 0;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

/* First line of a sysfs file, whitespace trimmed; 0 or -1. */
static int read_line(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *ok = fgets(buf, (int)cap, f);
  fclose(f);
  if (!ok) return -1;
  size_t n = strlen(buf);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t')) buf[--n] = '\0';
  char *p = buf;
  while (*p == ' ') p++;
  if (p != buf) memmove(buf, p, strlen(p) + 1);
  return 0;
}

static int read_int(const char *path, int *out) {
  char b[64];
  if (read_line(path, b, sizeof b)) return -1;
  char *end;
  long v = strtol(b, &end, 10);
  if (end == b) return -1;
  *out = (int)v;
  return 0;
}

/* Unescape mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_octal(char *s) {
  char *w = s;
  for (char *r = s; *r; r++) {
    if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
        r[3] <= '7') {
      *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
      r += 3;
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
}

/* The mount whose mount point is the longest prefix of real, of device maj:min unless any_dev;
 * its source (the mount's device, e.g. /dev/sda2) into source[cap]. Returns 1 when found. */
static int probe_mount(const char *real, unsigned maj, unsigned min, int any_dev, bench_device *d,
                       char *source, size_t cap) {
  FILE *f = fopen("/proc/self/mountinfo", "r");
  if (!f) return 0;
  char line[8192];
  size_t best = 0;
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned a, b;
    char mnt[4096], opts[1024];
    if (sscanf(line, "%*u %*u %u:%u %*s %4095s %1023s", &a, &b, mnt, opts) != 4) continue;
    if (!any_dev && (a != maj || b != min)) continue;
    unescape_octal(mnt);
    size_t ml = strlen(mnt);
    int prefix = strcmp(mnt, "/") == 0 ||
                 (strncmp(real, mnt, ml) == 0 && (real[ml] == '/' || real[ml] == '\0'));
    if (!prefix || ml < best) continue;
    char *dash = strstr(line, " - ");
    if (!dash) continue;
    char fstype[64], src[1024] = "";
    if (sscanf(dash + 3, "%63s %1023s", fstype, src) < 1) continue;
    unescape_octal(src);
    best = ml;
    found = 1;
    copy_str(d->mount_point, sizeof d->mount_point, mnt);
    copy_str(d->fs_type, sizeof d->fs_type, fstype);
    copy_str(source, cap, src);
    d->read_only = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
  }
  fclose(f);
  return found;
}

/* Fallback filesystem name from statfs when mountinfo is unavailable. */
static const char *fs_name_from_magic(long type) {
  switch ((unsigned long)type) {
  case 0xEF53: return "ext4";
  case 0x58465342: return "xfs";
  case 0x9123683E: return "btrfs";
  case 0x01021994: return "tmpfs";
  case 0x858458f6: return "ramfs";
  case 0x794c7630: return "overlay";
  case 0x6969: return "nfs";
  case 0x65735546: return "fuse";
  case 0x2FC12FC1: return "zfs";
  case 0x73717368: return "squashfs";
  case 0x01021997: return "9p";
  default: return "";
  }
}

/* Block device facts for sysfs directory dir (a disk), following dm/md slaves one level. */
static void probe_disk(const char *sysdir, bench_device *d) {
  char p[PATH_MAX + 64], real[PATH_MAX];
  if (!realpath(sysdir, real)) return;
  const char *name = strrchr(real, '/');
  copy_str(d->disk, sizeof d->disk, name ? name + 1 : real);
  snprintf(p, sizeof p, "%s/queue/read_ahead_kb", real);
  read_int(p, &d->read_ahead_kb);
  snprintf(p, sizeof p, "%s/queue/rotational", real);
  read_int(p, &d->rotational);
  snprintf(p, sizeof p, "%s/device/model", real);
  if (read_line(p, d->model, sizeof d->model) || !d->model[0]) {
    snprintf(p, sizeof p, "%s/device/vendor", real);
    char vendor[64];
    if (read_line(p, vendor, sizeof vendor) == 0) {
      /* virtio devices name only the PCI vendor: 0x1af4 is Red Hat's virtio. */
      if (strcmp(vendor, "0x1af4") == 0)
        copy_str(d->model, sizeof d->model, "virtio disk");
      else
        snprintf(d->model, sizeof d->model, "vendor %s", vendor);
    }
  }
  /* dm-* and md*: the disks below are under slaves/; take the first one's facts for rotation
   * and model (read-ahead stays the top device's: that is what the page cache uses). */
  snprintf(p, sizeof p, "%s/slaves", real);
  DIR *dir = opendir(p);
  if (!dir) return;
  struct dirent *e;
  while ((e = readdir(dir))) {
    if (e->d_name[0] == '.') continue;
    char sp[PATH_MAX + 320], sreal[PATH_MAX];
    snprintf(sp, sizeof sp, "%s/slaves/%s", real, e->d_name);
    if (!realpath(sp, sreal)) continue;
    /* a slave may be a partition: its disk is the parent directory */
    char part[PATH_MAX + 16];
    snprintf(part, sizeof part, "%s/partition", sreal);
    if (access(part, F_OK) == 0) {
      char *slash = strrchr(sreal, '/');
      if (slash) *slash = '\0';
    }
    char rot[PATH_MAX + 32];
    snprintf(rot, sizeof rot, "%s/queue/rotational", sreal);
    int r;
    if (read_int(rot, &r) == 0) d->rotational = r;
    char model[PATH_MAX + 32];
    snprintf(model, sizeof model, "%s/device/model", sreal);
    char m[128];
    if (read_line(model, m, sizeof m) == 0 && m[0]) {
      const char *sn = strrchr(sreal, '/');
      snprintf(d->model, sizeof d->model, "%.96s (under %.20s)", m, sn ? sn + 1 : "");
    }
    break;
  }
  closedir(dir);
}

int bench_device_probe(const char *path, bench_device *d) {
  memset(d, 0, sizeof *d);
  d->rotational = -1;
  d->read_ahead_kb = -1;
  struct stat st;
  if (stat(path, &st) != 0) return errno;
  d->dev_major = major(st.st_dev);
  d->dev_minor = minor(st.st_dev);
  char real[PATH_MAX], source[1024] = "";
  if (!realpath(path, real)) copy_str(real, sizeof real, path);
  /* On btrfs a file's st_dev is its subvolume's anonymous device, which no mount names: then
   * the mount is the one at the longest prefix of the path */
  if (!probe_mount(real, d->dev_major, d->dev_minor, 0, d, source, sizeof source))
    probe_mount(real, 0, 0, 1, d, source, sizeof source);
  if (!d->fs_type[0]) {
    struct statfs sf;
    if (statfs(path, &sf) == 0)
      copy_str(d->fs_type, sizeof d->fs_type, fs_name_from_magic(sf.f_type));
  }

  /* the block device: st_dev's, or for an anonymous st_dev (btrfs) the mount's source device */
  unsigned bmaj = d->dev_major, bmin = d->dev_minor;
  struct stat bs;
  if (bmaj == 0 && source[0] == '/' && stat(source, &bs) == 0 && S_ISBLK(bs.st_mode)) {
    bmaj = major(bs.st_rdev);
    bmin = minor(bs.st_rdev);
  }
  char sys[128];
  snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", bmaj, bmin);
  char sreal[PATH_MAX];
  if (bmaj != 0 && realpath(sys, sreal)) {
    copy_str(d->kind, sizeof d->kind, "block");
    const char *n = strrchr(sreal, '/');
    copy_str(d->block_device, sizeof d->block_device, n ? n + 1 : sreal);
    char part[PATH_MAX + 16];
    snprintf(part, sizeof part, "%s/partition", sreal);
    if (access(part, F_OK) == 0) { /* a partition: the disk is the parent directory */
      char *slash = strrchr(sreal, '/');
      if (slash) *slash = '\0';
    }
    probe_disk(sreal, d);
    if (strncmp(d->disk, "loop", 4) == 0) {
      char bf[PATH_MAX + 32], back[200], qb[200];
      snprintf(bf, sizeof bf, "/sys/block/%s/loop/backing_file", d->disk);
      if (read_line(bf, back, sizeof back) == 0) /* the file named as names are */
        snprintf(d->note, sizeof d->note, "loop device over the file %s",
                 (fc_quote_name(back, qb, sizeof qb), qb));
    } else if (strncmp(d->disk, "vd", 2) == 0 || strstr(d->model, "virtio")) {
      snprintf(d->note, sizeof d->note,
               "virtual disk (virtio): the host decides the real medium; its rotational flag "
               "is only what the hypervisor reports");
    } else if (strncmp(d->disk, "zram", 4) == 0 || strncmp(d->disk, "ram", 3) == 0) {
      snprintf(d->note, sizeof d->note, "RAM-backed block device");
    }
  } else {
    bench_device_no_block(d);
  }
  return 0;
}

void bench_device_no_block(bench_device *d) {
  const char *fs = d->fs_type;
  if (strcmp(fs, "tmpfs") == 0 || strcmp(fs, "ramfs") == 0) {
    copy_str(d->kind, sizeof d->kind, "tmpfs");
    d->rotational = 0;
    snprintf(d->note, sizeof d->note,
             "%s: the store lives in RAM; nothing can be evicted, cold equals warm", fs);
  } else if (strcmp(fs, "overlay") == 0) {
    copy_str(d->kind, sizeof d->kind, "overlay");
    snprintf(d->note, sizeof d->note,
             "overlay filesystem (a container layer): the data sits on the device of its "
             "upper or lower directory, which this probe does not follow");
  } else {
    /* A cache of their own that posix_fadvise cannot empty: cold passes are cold for this
     * machine's page cache only (mincore sees no more) */
    const char *why = strcmp(fs, "zfs") == 0
                          ? "; ZFS caches reads in its ARC, which eviction cannot empty: cold "
                            "passes may read from RAM"
                      : !strncmp(fs, "nfs", 3) || !strcmp(fs, "cifs") || !strcmp(fs, "smb3") ||
                              !strncmp(fs, "fuse", 4) || !strcmp(fs, "9p") || !strcmp(fs, "ceph") ||
                              !strcmp(fs, "lustre")
                          ? "; the server or daemon behind it may cache what it serves: cold "
                            "means not in this machine's page cache"
                          : "";
    copy_str(d->kind, sizeof d->kind, "other");
    snprintf(d->note, sizeof d->note, "%s: no local block device behind this filesystem%s",
             fs[0] ? fs : "unknown filesystem", why);
  }
}
