/**
 * Batched file work of a session: reads, planned writes (checked before approval, re-checked
 * after) and operations (mkdir, delete, rename). Plain data in, per-item results out; a failing
 * item never fails its neighbours. Every path passes {@link normalizeRelPath} and the real-path
 * containment checks of `workspace-path.ts`.
 * @module
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { isInside } from '../../storage/fs.ts'
import { ApiError } from '../../core/errors.ts'
import { writeContained } from '../base/atomic-write.ts'
import { revisionOf } from './catalog-events.ts'
import type { FileContentCache } from './file-content-cache.ts'
import {
  assertNotTemp,
  entryInParent,
  ensureDirectory,
  normalizeRelPath,
  openForRead,
  PathError,
  pinDirectory,
  splitRel,
} from '../base/workspace-path.ts'
import { workspaceError } from '../workspace-errors.ts'

/** A failed item. */
export interface ItemError {
  ok: false
  path: string
  code: string
  message: string
  [extra: string]: unknown
}

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

function fail(path: string, error: unknown, fallback: string): ItemError {
  if (error instanceof ApiError)
    return {
      ok: false,
      path,
      code: error.code,
      message: error.message,
      ...(error.details && typeof error.details === 'object' ? (error.details as Record<string, unknown>) : {}),
    }
  const code = (error as NodeJS.ErrnoException)?.code
  if (code === 'ENOENT' || code === 'ENOTDIR')
    return { ok: false, path, code: 'file_not_found', message: 'File not found' }
  if (code === 'ELOOP')
    return { ok: false, path, code: 'invalid_path', message: 'path resolves through a symlink loop' }
  return { ok: false, path, code: fallback, message: code ? `Operation failed (${code})` : 'Operation failed' }
}

/** Validates one client path (per item: invalid → an item error, not a 400 for the batch). */
export function checkPath(raw: unknown): string {
  const rel = normalizeRelPath(raw)
  assertNotTemp(rel)
  return rel
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
    return fail(typeof raw === 'string' ? raw : String(raw), error, 'invalid_path')
  }
  try {
    return readSmallSync(root, rel, maxBytes, parents, cache) ?? rel
  } catch (error) {
    return fail(rel, error, 'read_failed')
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
    return fail(rel, error, 'read_failed')
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

/** The current revision of a file, null when it does not exist; throws for non-files. */
export async function currentRevision(
  root: string,
  rel: string,
): Promise<{ revision: string; size: number; mtimeMs: number } | null> {
  const opened = await openForRead(root, rel)
  if (!opened) return null
  try {
    const st = await opened.handle.stat()
    if (!st.isFile()) throw workspaceError('not_a_file', 'Path exists and is not a regular file')
    return { revision: revisionOf(st), size: st.size, mtimeMs: st.mtimeMs }
  } finally {
    await opened.handle.close()
  }
}

async function sameContent(root: string, rel: string, data: Uint8Array): Promise<boolean> {
  const opened = await openForRead(root, rel)
  if (!opened) return false
  try {
    const current = await opened.handle.readFile()
    return Buffer.from(data).equals(current)
  } finally {
    await opened.handle.close()
  }
}

/** One requested write. */
export interface WriteRequest {
  path: string
  contentBase64: string
  ifMatchRevision?: string
  force?: boolean
}

/** A write that passed its pre-checks. */
export interface PlannedWrite {
  index: number
  rel: string
  data: Uint8Array
  /** Revision seen when planning (null: file did not exist). */
  seen: string | null
  force: boolean
  /** True when the file already holds exactly these bytes. */
  unchanged: boolean
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** Pre-checks writes: path, size, base64, not-a-file, and `ifMatchRevision` conflicts. */
export async function planWrites(
  root: string,
  writes: WriteRequest[],
  maxBytes: number,
  /** Rewrites the bytes to write before they are compared and planned (the config secret rule). */
  transform?: (rel: string, data: Uint8Array) => Promise<Uint8Array>,
): Promise<{ results: Array<ItemError | null>; planned: PlannedWrite[] }> {
  const results: Array<ItemError | null> = []
  const planned: PlannedWrite[] = []
  const seenPaths = new Set<string>()
  for (const [index, w] of writes.entries()) {
    let rel: string
    try {
      rel = checkPath(w.path)
    } catch (error) {
      results.push(fail(String(w.path), error, 'invalid_path'))
      continue
    }
    if (seenPaths.has(rel)) {
      results.push({
        ok: false,
        path: rel,
        code: 'invalid_operation',
        message: 'The same path appears twice in this batch',
      })
      continue
    }
    seenPaths.add(rel)
    const clean = w.contentBase64.replace(/\s+/g, '')
    if (!BASE64.test(clean) || clean.length % 4 === 1) {
      results.push({ ok: false, path: rel, code: 'invalid_payload', message: 'contentBase64 is not valid base64' })
      continue
    }
    if (Math.floor((clean.length * 3) / 4) > maxBytes + 2) {
      results.push({
        ok: false,
        path: rel,
        code: 'file_too_large',
        message: `File is larger than ${maxBytes} bytes`,
        maxBytes,
        size: Math.floor((clean.length * 3) / 4),
      })
      continue
    }
    const decoded = Buffer.from(clean, 'base64')
    const data = transform ? Buffer.from(await transform(rel, decoded)) : decoded
    if (data.byteLength > maxBytes) {
      results.push({
        ok: false,
        path: rel,
        code: 'file_too_large',
        message: `File is larger than ${maxBytes} bytes`,
        maxBytes,
        size: data.byteLength,
      })
      continue
    }
    try {
      const current = await currentRevision(root, rel)
      const force = w.force === true
      if (!force && w.ifMatchRevision !== undefined && w.ifMatchRevision !== (current?.revision ?? null)) {
        results.push({
          ok: false,
          path: rel,
          code: 'conflict',
          message: 'The file changed since that revision',
          expectedRevision: w.ifMatchRevision,
          currentRevision: current?.revision ?? null,
        })
        continue
      }
      const unchanged = current !== null && current.size === data.byteLength && (await sameContent(root, rel, data))
      planned.push({ index, rel, data, seen: current?.revision ?? null, force, unchanged })
      results.push(null)
    } catch (error) {
      results.push(fail(rel, error, 'write_failed'))
    }
  }
  return { results, planned }
}

/** A successful write. */
export interface WriteOk {
  ok: true
  path: string
  bytes: number
  updatedAt: number
  revision: string
  previousRevision: string | null
}

/** Applies one planned write after approval, failing with `conflict` if the file changed meanwhile. */
export async function applyWrite(root: string, w: PlannedWrite, created: string[] = []): Promise<WriteOk | ItemError> {
  try {
    const now = await currentRevision(root, w.rel)
    if (!w.force && (now?.revision ?? null) !== w.seen) {
      return {
        ok: false,
        path: w.rel,
        code: 'conflict',
        message: 'The file changed while the write awaited approval',
        expectedRevision: w.seen,
        currentRevision: now?.revision ?? null,
      }
    }
    if (!w.unchanged) await writeContained(root, w.rel, w.data, created)
    const after = await currentRevision(root, w.rel)
    if (!after)
      return { ok: false, path: w.rel, code: 'write_failed', message: 'The file vanished right after the write' }
    return {
      ok: true,
      path: w.rel,
      bytes: w.data.byteLength,
      updatedAt: after.mtimeMs,
      revision: after.revision,
      previousRevision: w.seen,
    }
  } catch (error) {
    return fail(w.rel, error, 'write_failed')
  }
}

/** One requested operation. */
export type OperationRequest =
  | { type: 'mkdir'; path: string }
  | { type: 'delete'; path: string; recursive?: boolean }
  | { type: 'rename'; from: string; to: string }

/** A validated operation. */
export type PlannedOperation =
  | { type: 'mkdir'; path: string }
  | { type: 'delete'; path: string; recursive: boolean }
  | { type: 'rename'; from: string; to: string }

/** An operation's result. */
export type OperationResult = {
  ok: boolean
  type: string
  path?: string
  from?: string
  to?: string
  code?: string
  message?: string
}

/** Validates the paths of an operation. */
export function planOperation(op: OperationRequest): PlannedOperation | OperationResult {
  try {
    if (op.type === 'rename') return { type: 'rename', from: checkPath(op.from), to: checkPath(op.to) }
    if (op.type === 'delete') return { type: 'delete', path: checkPath(op.path), recursive: op.recursive === true }
    return { type: 'mkdir', path: checkPath(op.path) }
  } catch (error) {
    const e = fail('', error, 'invalid_path')
    return op.type === 'rename'
      ? { ok: false, type: op.type, from: String(op.from), to: String(op.to), code: e.code, message: e.message }
      : { ok: false, type: op.type, path: String(op.path), code: e.code, message: e.message }
  }
}

/** Applies one operation; the entry itself is changed, never what a symlink points to. */
export async function applyOperation(
  root: string,
  op: PlannedOperation,
  created: string[] = [],
): Promise<OperationResult> {
  const where = op.type === 'rename' ? { from: op.from, to: op.to } : { path: op.path }
  try {
    if (op.type === 'mkdir') {
      await ensureDirectory(root, op.path, true, created)
    } else if (op.type === 'delete') {
      const entry = await entryInParent(root, op.path)
      try {
        if (!entry.stat)
          return { ok: false, type: op.type, ...where, code: 'file_not_found', message: 'Nothing at that path' }
        if (entry.stat.isDirectory()) {
          if (op.recursive) await fsp.rm(entry.abs, { recursive: true, force: false })
          else await fsp.rmdir(entry.abs)
        } else {
          await fsp.unlink(entry.abs)
        }
        await entry.dir.sync()
      } finally {
        await entry.dir.close()
      }
    } else {
      if (op.to === op.from || op.to.startsWith(op.from + '/'))
        return {
          ok: false,
          type: op.type,
          ...where,
          code: 'invalid_operation',
          message: 'Cannot move a path into itself',
        }
      const from = await entryInParent(root, op.from)
      try {
        if (!from.stat)
          return { ok: false, type: op.type, ...where, code: 'file_not_found', message: 'Nothing at the source path' }
        const { parent, name } = splitRel(op.to)
        const dir = await pinDirectory(root, parent, true, created)
        try {
          if (
            await fsp.lstat(`${dir.path}/${name}`).then(
              () => true,
              () => false,
            )
          )
            return {
              ok: false,
              type: op.type,
              ...where,
              code: 'invalid_operation',
              message: 'The target path already exists',
            }
          await fsp.rename(from.abs, `${dir.path}/${name}`)
          await dir.sync()
          await from.dir.sync()
        } finally {
          await dir.close()
        }
      } finally {
        await from.dir.close()
      }
    }
    return { ok: true, type: op.type, ...where }
  } catch (error) {
    if (error instanceof PathError)
      return { ok: false, type: op.type, ...where, code: error.code, message: error.message }
    const code = (error as NodeJS.ErrnoException)?.code
    if (error instanceof ApiError)
      return { ok: false, type: op.type, ...where, code: error.code, message: error.message }
    if (code === 'ENOTEMPTY' || code === 'EEXIST')
      return {
        ok: false,
        type: op.type,
        ...where,
        code: 'invalid_operation',
        message: 'Directory is not empty (use recursive)',
      }
    return {
      ok: false,
      type: op.type,
      ...where,
      code: 'operation_failed',
      message: code ? `Operation failed (${code})` : 'Operation failed',
    }
  }
}
