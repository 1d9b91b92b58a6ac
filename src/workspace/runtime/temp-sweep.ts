/**
 * Removes temp files our own interrupted writes left behind (`.svc-tmp-…`), once at start.
 *
 * Why: a write is a temp file plus a rename; a process killed in between leaves the temp file,
 * and after enough crashes a workspace fills with them (10 after 30 crashes, measured). Only names
 * this server makes are touched (the prefix plus its random 12-hex suffix), only regular files, and
 * only those whose inode changed before this process started: a write in flight now is never one
 * of them. Symlinks are neither followed nor removed.
 *
 * Each directory is listed synchronously (one `readdir`, held whole while it is visited) and the walk
 * yields to the event loop before each directory, the first included, so it never delays listening
 * and a request waits for at most one listing. The runtime's I/O threads, which stay resident once
 * woken, are not started for a walk that almost never finds anything. The walk stays on the
 * workspace's own filesystems: a directory something else is mounted on is not entered (Linux, from
 * `/proc/self/mountinfo`), since a network mount that stops answering would stall the event loop;
 * temp files left inside such a mount stay.
 * @module
 */
import { lstatSync, readdirSync, readFileSync, unlinkSync, type Dirent } from 'node:fs'
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
 * The mount points strictly inside `root`, relative to it, from the text of `/proc/self/mountinfo`
 * (its fifth field, with the kernel's octal escapes for space, tab, newline and backslash).
 */
export function mountPointsUnder(root: string, mountinfo: string): Set<string> {
  const prefix = root.endsWith('/') ? root : `${root}/`
  const inside = new Set<string>()
  for (const line of mountinfo.split('\n')) {
    const field = line.split(' ')[4]
    if (!field) continue
    const point = field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)))
    if (point.startsWith(prefix) && point.length > prefix.length)
      inside.add(point.slice(prefix.length).replace(/\/+$/, ''))
  }
  return inside
}

/** The mount points inside `root` (none where `/proc/self/mountinfo` does not exist). */
function mountsInside(root: string): Set<string> {
  try {
    return mountPointsUnder(root, readFileSync('/proc/self/mountinfo', 'utf8'))
  } catch {
    return new Set()
  }
}

/**
 * Deletes our temp files under `root` whose status changed before `startedAt` (ms since the
 * epoch; default: when this process started). Returns the paths removed, relative to `root`.
 * `mounts` (relative paths) are not entered; by default, what is mounted inside `root`.
 */
export async function sweepTempFiles(
  root: string,
  startedAt = performance.timeOrigin,
  mounts: ReadonlySet<string> = mountsInside(root),
): Promise<string[]> {
  const removed: string[] = []
  let seen = 0
  const pending = ['']
  for (let rel = pending.pop(); rel !== undefined && seen <= MAX_ENTRIES; rel = pending.pop()) {
    await new Promise((resolve) => setImmediate(resolve))
    let entries: Dirent[]
    try {
      entries = readdirSync(rel ? join(root, rel) : root, { withFileTypes: true })
    } catch {
      continue
    }
    const subdirs: string[] = []
    for (const entry of entries) {
      if (++seen > MAX_ENTRIES) break
      const child = rel ? `${rel}/${entry.name}` : entry.name
      if (entry.isDirectory()) {
        if (!SKIPPED.has(entry.name) && !mounts.has(child)) subdirs.push(child)
      } else if (entry.isFile() && isOwnTempName(entry.name) && removeIfOlder(join(root, child), startedAt)) {
        removed.push(child)
      }
    }
    // Depth first, in listing order, as before.
    for (let i = subdirs.length - 1; i >= 0; i--) pending.push(subdirs[i]!)
  }
  return removed
}
