/**
 * The operations of a file batch (mkdir, delete, rename): paths validated when planned, and each
 * applied to the entry itself, never to what a symlink points to.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { ApiError } from '../../core/errors.ts'
import { entryInParent, ensureDirectory, PathError, pinDirectory, splitRel } from '../base/workspace-path.ts'
import { checkPath, failedItem } from './batch-item.ts'

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
    const e = failedItem('', error, 'invalid_path')
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
