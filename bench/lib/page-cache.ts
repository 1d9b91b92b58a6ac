/**
 * Reads a file once so all of it sits in the kernel's page cache.
 *
 * Why: a compiled binary's resident memory and start time depend on which of its pages are
 * already cached. The kernel maps cached neighbours of a faulting page along with it (fault-
 * around), so the same binary measured several MB higher right after a copy (fully cached) than
 * after a build that left parts uncached. Reading every compared binary in full first puts them
 * all in the same state, whatever their history on this machine.
 */
import { closeSync, openSync, readSync } from 'node:fs'

/** Reads `path` end to end, discarding the bytes. */
export function warmPageCache(path: string): void {
  const fd = openSync(path, 'r')
  try {
    const buffer = Buffer.allocUnsafe(1 << 20)
    while (readSync(fd, buffer, 0, buffer.length, null) > 0) { /* reading is the point */ }
  } finally {
    closeSync(fd)
  }
}
