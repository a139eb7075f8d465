/* cache-bench's device facts for a filesystem without a block device: what "cold" can mean there.
 * posix_fadvise empties this machine's page cache only: a store in RAM cannot be read cold at all,
 * and ZFS's ARC or a network server's cache keeps serving what the page cache dropped, so a cold
 * pass there may read from RAM. The note (the table's "note:" line, JSON "note") says so. */
#include "cmd/cache-bench/bench.h"

#include <string.h>

#include "tests/check.h"

static const bench_device *describe(const char *fs) {
  static bench_device d;
  memset(&d, 0, sizeof d);
  d.rotational = -1;
  snprintf(d.fs_type, sizeof d.fs_type, "%s", fs);
  bench_device_no_block(&d);
  return &d;
}

int main(void) {
  const bench_device *d = describe("tmpfs");
  CHECK(!strcmp(d->kind, "tmpfs") && d->rotational == 0 && strstr(d->note, "cold equals warm"),
        "%s: %s", d->kind, d->note);
  d = describe("overlay");
  CHECK(!strcmp(d->kind, "overlay"), "%s", d->kind);
  d = describe("zfs");
  CHECK(!strcmp(d->kind, "other") && strstr(d->note, "ARC") &&
            strstr(d->note, "cold passes may read from RAM"),
        "zfs: %s", d->note);
  static const char *const net[] = {"nfs", "nfs4", "cifs", "fuse.sshfs", "fuse", "9p", "ceph"};
  for (size_t i = 0; i < sizeof net / sizeof net[0]; i++) {
    d = describe(net[i]);
    CHECK(!strcmp(d->kind, "other") && strstr(d->note, "not in this machine's page cache"),
          "%s: %s", net[i], d->note);
  }
  d = describe("xfs"); /* a local filesystem seen without its block device: no caveat to add */
  CHECK(!strcmp(d->note, "xfs: no local block device behind this filesystem"), "%s", d->note);
  d = describe("");
  CHECK(!strcmp(d->note, "unknown filesystem: no local block device behind this filesystem"), "%s",
        d->note);
  return fc_check_result("test_bench_device");
}
