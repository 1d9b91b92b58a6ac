/**
 * Removes temp files our own interrupted writes left behind (`.svc-tmp-…`), once at start.
 *
 * Why: a write is a temp file plus a rename; a process killed in between leaves the temp file,
 * and after enough crashes a workspace fills with them (10 after 30 crashes, measured). Only names
 * this server makes are touched (the prefix plus its random 12-hex suffix), only regular files, and
 * only those whose inode changed before this process started: a write in flight now is never one
 * of them. Symlinks are neither followed nor removed.
 *
 * Each directory is read synchronously and the walk yields to the event loop between directories:
 * a request waits for at most one directory listing, and the runtime's I/O threads, which stay
 * resident once woken, are not started for a walk that almost never finds anything.
 * @module
 */
import { lstatSync, opendirSync, unlinkSync, type Dir } from 'node:fs'
import { join } from 'node:path'
import { TEMP_PREFIX } from '../../storage/fs.ts'

/** Our temp names: prefix, optional tag and name, then `.` and 12 hex digits (see `tempName`). */
const OUR_TEMP = /\.[0-9a-f]{12}$/

/** Directories never entered: version control internals are not ours to clean. */
const SKIPPED = new Set(['.git'])

/** Entries looked at before giving up, so a huge tree cannot stall start-up work indefinitely. */
const MAX_ENTRIES = 500_000

/** True for a name this server's atomic writes produce. */
export function isOwnTempName(name: string): boolean {
  return name.startsWith(TEMP_PREFIX) && OUR_TEMP.test(name)
}

/** Removes `path` if it is still a regular file whose status changed before `startedAt`. */
function removeIfOlder(path: string, startedAt: number): boolean {
  try {
    const st = lstatSync(path)
    if (!st.isFile() || st.ctimeMs >= startedAt) return false
    unlinkSync(path)
    return true
  } catch {
    return false
  }
}

/**
 * Deletes our temp files under `root` whose status changed before `startedAt` (ms since the
 * epoch; default: when this process started). Returns the paths removed, relative to `root`.
 */
export async function sweepTempFiles(root: string, startedAt = performance.timeOrigin): Promise<string[]> {
  const removed: string[] = []
  let seen = 0
  const pending = ['']
  for (let rel = pending.pop(); rel !== undefined && seen <= MAX_ENTRIES; rel = pending.pop()) {
    if (rel) await new Promise((resolve) => setImmediate(resolve))
    let dir: Dir
    try {
      dir = opendirSync(rel ? join(root, rel) : root)
    } catch {
      continue
    }
    // Streamed, so a directory with millions of entries is never held in memory at once.
    const subdirs: string[] = []
    try {
      for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
        if (++seen > MAX_ENTRIES) break
        const child = rel ? `${rel}/${entry.name}` : entry.name
        if (entry.isDirectory()) {
          if (!SKIPPED.has(entry.name)) subdirs.push(child)
        } else if (entry.isFile() && isOwnTempName(entry.name) && removeIfOlder(join(root, child), startedAt)) {
          removed.push(child)
        }
      }
    } catch {
      // Unreadable part way through: what was listed is still visited.
    } finally {
      dir.closeSync()
    }
    // Depth first, in listing order, as before.
    for (let i = subdirs.length - 1; i >= 0; i--) pending.push(subdirs[i]!)
  }
  return removed
}
