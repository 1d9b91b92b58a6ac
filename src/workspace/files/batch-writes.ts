/**
 * The writes of a file batch: planned (path, size, base64, revision checks) before approval, and
 * each applied after it, failing with `conflict` when the file changed meanwhile.
 * @module
 */
import { writeContained } from '../base/atomic-write.ts'
import { openForRead } from '../base/workspace-path.ts'
import { workspaceError } from '../workspace-errors.ts'
import { checkPath, failedItem, type ItemError } from './batch-item.ts'
import { revisionOf } from './catalog-events.ts'

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
      results.push(failedItem(String(w.path), error, 'invalid_path'))
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
      results.push(failedItem(rel, error, 'write_failed'))
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
    return failedItem(w.rel, error, 'write_failed')
  }
}
