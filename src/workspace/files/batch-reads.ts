/**
 * The reads of a file batch: a synchronous fast path for small files on Linux, the general read
 * for the rest, and the results serialised in one buffer. Every path passes {@link checkPath} and
 * the real-path containment checks of `base/workspace-path.ts`.
 * @module
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { isInside } from '../../storage/fs.ts'
import { checkPath, failedItem, type ItemError } from './batch-item.ts'
import { revisionOf } from './catalog-events.ts'
import type { FileContentCache } from './file-content-cache.ts'
import { openForRead, PathError, splitRel } from '../base/workspace-path.ts'

/** A successful read. */
export interface ReadOk {
  ok: true
  path: string
  kind: 'file'
  bytes: number
  updatedAt: number
  revision: string
  contentBase64: string
}

/** Files up to this size are read synchronously (page-cache reads of this size cost less than a thread hop). */
const SYNC_READ_MAX = 256 * 1024
const PROC_FD = process.platform === 'linux'

/**
 * The fast path for small files on Linux: resolve the parent's real path (once per batch) and
 * check it, open the file in it without following a final symlink, confirm the opened descriptor's real path is still inside the root
 * (`/proc/self/fd`, which catches a swap after the check), fstat, read, close; no thread hops. Returns undefined to fall back to the general path (a final
 * symlink, a large file, or no `/proc`).
 */
function readSmallSync(
  root: string,
  rel: string,
  maxBytes: number,
  parents: Map<string, string>,
  cache?: FileContentCache,
): ReadOk | ItemError | undefined {
  if (!PROC_FD) return undefined
  let fd: number
  let full: string
  try {
    // Resolve the parent (once per batch) so nothing outside is even opened (opening some devices
    // has effects); the final component is opened without following a symlink.
    const { parent, name } = splitRel(rel)
    let realParent = parents.get(parent)
    if (realParent === undefined) {
      realParent = realpathSync.native(parent ? join(root, parent) : root)
      if (!isInside(root, realParent)) throw new PathError('path resolves outside the workspace')
      parents.set(parent, realParent)
    }
    full = `${realParent}/${name}`
    if (cache?.enabled) {
      // One lstat proves a cached file unchanged; a final symlink is not a file and reads below.
      const st = lstatSync(full, { throwIfNoEntry: false })
      if (st?.isFile() && st.size <= maxBytes) {
        const hit = cache.get(full, st)
        if (hit !== undefined)
          return {
            ok: true,
            path: rel,
            kind: 'file',
            bytes: st.size,
            updatedAt: st.mtimeMs,
            revision: revisionOf({ mtimeMs: st.mtimeMs, size: st.size }),
            contentBase64: hit,
          }
      }
    }
    fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (error) {
    if (error instanceof PathError) return { ok: false, path: rel, code: error.code, message: error.message }
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR')
      return { ok: false, path: rel, code: 'file_not_found', message: 'File not found' }
    return undefined
  }
  try {
    if (!isInside(root, readlinkSync(`/proc/self/fd/${fd}`))) throw new PathError('path resolves outside the workspace')
    const st = fstatSync(fd)
    if (!st.isFile()) return { ok: false, path: rel, code: 'file_not_found', message: 'Not a regular file' }
    if (st.size > maxBytes)
      return {
        ok: false,
        path: rel,
        code: 'file_too_large',
        message: `File is larger than ${maxBytes} bytes`,
        maxBytes,
        size: st.size,
      }
    if (st.size > SYNC_READ_MAX) return undefined
    const data = Buffer.allocUnsafe(st.size)
    let read = 0
    while (read < st.size) {
      const n = readSync(fd, data, read, st.size - read, read)
      if (n === 0) break
      read += n
    }
    const contentBase64 = data.subarray(0, read).toString('base64')
    if (cache?.enabled && read === st.size) cache.set(full, st, contentBase64)
    return {
      ok: true,
      path: rel,
      kind: 'file',
      bytes: read,
      updatedAt: st.mtimeMs,
      revision: revisionOf({ mtimeMs: st.mtimeMs, size: read }),
      contentBase64,
    }
  } finally {
    closeSync(fd)
  }
}

/**
 * Reads one item synchronously when the fast path can (a small file on Linux), else returns the
 * checked relative path (a string) for {@link readCheckedItem}. Lets a batch loop without a promise
 * per file.
 */
export function readItemSync(
  root: string,
  raw: unknown,
  maxBytes: number,
  parents: Map<string, string>,
  cache?: FileContentCache,
): ReadOk | ItemError | string {
  let rel: string
  try {
    rel = checkPath(raw)
  } catch (error) {
    return failedItem(typeof raw === 'string' ? raw : String(raw), error, 'invalid_path')
  }
  try {
    return readSmallSync(root, rel, maxBytes, parents, cache) ?? rel
  } catch (error) {
    return failedItem(rel, error, 'read_failed')
  }
}

/** The general read of a path {@link readItemSync} left pending: a large file, or no `/proc`. */
export async function readCheckedItem(root: string, rel: string, maxBytes: number): Promise<ReadOk | ItemError> {
  try {
    const opened = await openForRead(root, rel)
    if (!opened) return { ok: false, path: rel, code: 'file_not_found', message: 'File not found' }
    try {
      const st = await opened.handle.stat()
      if (!st.isFile()) return { ok: false, path: rel, code: 'file_not_found', message: 'Not a regular file' }
      if (st.size > maxBytes)
        return {
          ok: false,
          path: rel,
          code: 'file_too_large',
          message: `File is larger than ${maxBytes} bytes`,
          maxBytes,
          size: st.size,
        }
      const data = await opened.handle.readFile()
      return {
        ok: true,
        path: rel,
        kind: 'file',
        bytes: data.byteLength,
        updatedAt: st.mtimeMs,
        revision: revisionOf(st),
        contentBase64: data.toString('base64'),
      }
    } finally {
      await opened.handle.close()
    }
  } catch (error) {
    return failedItem(rel, error, 'read_failed')
  }
}

/**
 * Serialises read results as UTF-8 JSON in one buffer. Base64 needs no escaping, so the (large)
 * content strings are copied in as they are rather than scanned by `JSON.stringify` again, and
 * the body is written once instead of being concatenated as text and then encoded.
 */
export function readResultsBody(items: Array<ReadOk | ItemError>): Uint8Array {
  // Even indexes hold JSON text (metadata may hold any path: UTF-8); odd ones hold base64 (ASCII).
  const pieces: string[] = ['{"items":[']
  let size = 10
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    let head: string
    if (item.ok) {
      // Written out by hand (same keys and order as ReadOk): no object copy or generic stringify per file.
      head = `${i ? ',' : ''}{"ok":true,"path":${JSON.stringify(item.path)},"kind":"file","bytes":${item.bytes},"updatedAt":${item.updatedAt},"revision":${JSON.stringify(item.revision)},"contentBase64":"`
      pieces[pieces.length - 1] += head
      pieces.push(item.contentBase64, '"}')
      size += Buffer.byteLength(head) + item.contentBase64.length + 2
    } else {
      head = `${i ? ',' : ''}${JSON.stringify(item)}`
      pieces[pieces.length - 1] += head
      size += Buffer.byteLength(head)
    }
  }
  pieces[pieces.length - 1] += ']}'
  size += 2
  const body = Buffer.allocUnsafe(size)
  let offset = 0
  for (let i = 0; i < pieces.length; i++) offset += body.write(pieces[i]!, offset, i % 2 ? 'latin1' : 'utf8')
  return body
}
