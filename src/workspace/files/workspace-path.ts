/**
 * Path safety for every route that takes a workspace path. Two layers:
 *
 * 1. Lexical ({@link normalizeRelPath}): reject what no portable client should send: empty paths,
 *    NUL and control characters, absolute paths, `.`/`..` components, drive letters and `:`
 *    streams, Windows device names, trailing dots or spaces, over-long components. Backslashes
 *    are read as separators first, so `..\\x` is caught as `..`.
 * 2. Real ({@link resolveExisting}, {@link prepareWriteTarget}): unlike the reference, which only
 *    checks the lexical path, the symlink-resolved location must stay inside the workspace's
 *    real root, for reads and writes alike, including the parent directory of a file that does
 *    not exist yet. Files are opened with `O_NOFOLLOW` and, where `/proc/self/fd` exists, the
 *    opened descriptor's real path is checked again, so a symlink swapped in after the check is
 *    caught too.
 * @module
 */
import { constants } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { ApiError } from '../../core/errors.ts'
import { isInside, isNotFound, TEMP_PREFIX } from '../../storage/fs.ts'

/** A path that failed validation or containment; routes map it to `invalid_path`. */
export class PathError extends ApiError {
  constructor(message: string) {
    super(400, 'invalid_path', message)
  }
}

const MAX_COMPONENT_BYTES = 255
const MAX_PATH_BYTES = 4096
const DEVICE_NAMES = /^(con|prn|aux|nul|clock\$|conin\$|conout\$|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i
const encoder = new TextEncoder()

/**
 * Validates a client path and returns it normalised: components joined by `/`, no leading or
 * trailing slash, no empty components. Throws {@link PathError}.
 */
export function normalizeRelPath(input: unknown, what = 'path'): string {
  if (typeof input !== 'string' || input.length === 0) throw new PathError(`${what} must be a non-empty string`)
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(input)) throw new PathError(`${what} must not contain NUL or control characters`)
  const unified = input.replace(/\\/g, '/')
  if (unified.startsWith('/')) throw new PathError(`${what} must be relative to the workspace`)
  if (/^[A-Za-z]:/.test(unified)) throw new PathError(`${what} must not start with a drive letter`)
  if (encoder.encode(unified).length > MAX_PATH_BYTES) throw new PathError(`${what} is longer than ${MAX_PATH_BYTES} bytes`)
  const parts = unified.split('/').filter((p) => p !== '')
  if (parts.length === 0) throw new PathError(`${what} must name something inside the workspace`)
  for (const part of parts) {
    if (part === '.' || part === '..') throw new PathError(`${what} must not contain . or .. components`)
    if (part.includes(':')) throw new PathError(`${what} must not contain ":"`)
    if (/[. ]$/.test(part)) throw new PathError(`${what} components must not end with a dot or space`)
    if (DEVICE_NAMES.test(part)) throw new PathError(`${what} must not use a reserved device name`)
    if (encoder.encode(part).length > MAX_COMPONENT_BYTES) throw new PathError(`${what} component is longer than ${MAX_COMPONENT_BYTES} bytes`)
  }
  return parts.join('/')
}

/** True for server temp files, which are never listed or addressed by clients. */
export function isTempName(name: string): boolean {
  return name.startsWith(TEMP_PREFIX)
}

/** Rejects paths that name a server temp file (they are not part of the workspace's content). */
export function assertNotTemp(rel: string): void {
  if (rel.split('/').some(isTempName)) throw new PathError('path names a server temp file')
}

async function realOrNull(path: string): Promise<string | null> {
  try {
    return await fsp.realpath(path)
  } catch (error) {
    if (isNotFound(error)) return null
    throw error
  }
}

/** The real path of `rel` under `root` when it exists and stays inside; null when missing. */
export async function resolveExisting(root: string, rel: string): Promise<string | null> {
  const real = await realOrNull(join(root, rel))
  if (real === null) return null
  if (!isInside(root, real)) throw new PathError('path resolves outside the workspace')
  return real
}

/** Whether a descriptor-level re-check is possible (Linux). */
const PROC_FD = process.platform === 'linux'

/** Confirms an open descriptor still refers to a place inside the root (catches swaps after the check). */
export async function assertHandleInside(root: string, handle: fsp.FileHandle): Promise<void> {
  if (!PROC_FD) return
  let real: string
  try {
    real = await fsp.readlink(`/proc/self/fd/${handle.fd}`)
  } catch {
    return
  }
  if (!isInside(root, real)) throw new PathError('path resolves outside the workspace')
}

/**
 * Opens an existing regular file for reading without following a final symlink and with its real
 * location confirmed inside the root. Returns null when it does not exist.
 */
export async function openForRead(root: string, rel: string): Promise<{ handle: fsp.FileHandle; real: string } | null> {
  const real = await resolveExisting(root, rel)
  if (real === null) return null
  let handle: fsp.FileHandle
  try {
    handle = await fsp.open(real, constants.O_RDONLY | constants.O_NOFOLLOW | (constants.O_NONBLOCK ?? 0))
  } catch (error) {
    if (isNotFound(error)) return null
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new PathError('path changed to a symlink while opening')
    throw error
  }
  try {
    await assertHandleInside(root, handle)
  } catch (error) {
    await handle.close()
    throw error
  }
  return { handle, real }
}

/**
 * The real path of directory `relDir` ('' = the root), made one component at a time when
 * `create` is set, never through a symlink that leaves the root. 404 `file_not_found` when a
 * component is missing and `create` is false.
 */
export async function ensureDirectory(root: string, relDir: string, create: boolean, created?: string[]): Promise<string> {
  let dir = root
  const parts = relDir === '' ? [] : relDir.split('/')
  for (const [index, part] of parts.entries()) {
    const next = join(dir, part)
    let real = await realOrNull(next)
    if (real === null) {
      if (!create) throw new ApiError(404, 'file_not_found', `${relDir} does not exist`)
      try {
        await fsp.mkdir(next)
        created?.push(parts.slice(0, index + 1).join('/'))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      real = await realOrNull(next)
      if (real === null) throw new PathError('directory vanished while being created')
    }
    if (!isInside(root, real)) throw new PathError('path resolves outside the workspace')
    if (!(await fsp.stat(real)).isDirectory()) throw new PathError(`${part} is not a directory`)
    dir = real
  }
  return dir
}

/** Splits a normalised path into its parent and last component. */
export function splitRel(rel: string): { parent: string; name: string } {
  const i = rel.lastIndexOf('/')
  return i < 0 ? { parent: '', name: rel } : { parent: rel.slice(0, i), name: rel.slice(i + 1) }
}

/**
 * Makes the parent directories of `rel` and returns the absolute path to write: the real parent
 * plus the file name. When the target exists it must resolve inside the root; a symlink inside is
 * written through to its (inside) target, as a read would follow it.
 */
export async function prepareWriteTarget(root: string, rel: string, options: { create?: boolean; created?: string[] } = {}): Promise<string> {
  const { parent, name } = splitRel(rel)
  const dir = await ensureDirectory(root, parent, options.create !== false, options.created)
  const target = join(dir, name)
  const existing = await realOrNull(target)
  if (existing !== null) {
    if (!isInside(root, existing)) throw new PathError('path resolves outside the workspace')
    return existing
  }
  // A dangling symlink would make the rename replace the link; refuse it rather than guess.
  const link = await fsp.lstat(target).catch(() => null)
  if (link?.isSymbolicLink()) throw new PathError('path is a dangling symlink')
  return target
}

/**
 * The entry `rel` itself (not what a final symlink points to) inside its real, contained parent:
 * for deleting or renaming an entry, which changes only the parent directory.
 */
export async function entryInParent(root: string, rel: string): Promise<{ abs: string; dir: string; stat: import('node:fs').Stats | null }> {
  const { parent, name } = splitRel(rel)
  const dir = await ensureDirectory(root, parent, false)
  const abs = join(dir, name)
  return { abs, dir, stat: await fsp.lstat(abs).catch(() => null) }
}

/** Re-checks, just before a rename, that the directory about to receive a file is still inside. */
export async function assertDirStillInside(root: string, dir: string): Promise<void> {
  const real = await realOrNull(dir)
  if (real === null || real !== dir || !isInside(root, real)) throw new PathError('parent directory changed while writing')
}
