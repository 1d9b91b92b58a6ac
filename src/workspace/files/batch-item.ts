/**
 * One item of a session's file batch: the error an item fails with (a failing item never fails its
 * neighbours) and the per-item path check every read, write and operation passes first.
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import { assertNotTemp, normalizeRelPath } from '../base/workspace-path.ts'

/** A failed item. */
export interface ItemError {
  ok: false
  path: string
  code: string
  message: string
  [extra: string]: unknown
}

export function failedItem(path: string, error: unknown, fallback: string): ItemError {
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
