/**
 * Drops a binary from the kernel's page cache, so the next start faults it in from disk the way
 * a start on a user's machine does.
 *
 * Why: a compiled binary's resident memory depends on how its pages entered the page cache. The
 * kernel maps cached neighbours of a faulting page along with it (fault-around, whole large
 * folios), so the same bytes gave idle-RSS ratios of 1.56 right after `bun build` wrote them,
 * 1.78 once read back in full and 1.90 when faulted in on demand (2026-11-23, this machine). A
 * ratio that moves with the binary's history here measures nothing; evicting every compared
 * binary first and letting one unmeasured start fault in what it uses puts all of them in the
 * state an installed binary is in, and makes the figure repeat (1.900 and 1.911 in two runs).
 */
import { spawnSync } from 'node:child_process'
import { closeSync, fsyncSync, openSync } from 'node:fs'

/** Flushes `path` and asks the kernel to drop its cached pages; false if that was not possible. */
export function evictFromPageCache(path: string): boolean {
  const fd = openSync(path, 'r')
  try {
    // Dirty pages cannot be dropped; a fresh build's are dirty until written back.
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  // GNU dd's `iflag=nocache count=0` drops the whole file from the cache (posix_fadvise
  // DONTNEED), which node cannot call.
  return spawnSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'ignore' }).status === 0
}
