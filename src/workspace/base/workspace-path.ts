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
 *    opened descriptor's real path is checked again; directories that receive files are held
 *    open and addressed through `/proc/self/fd/N` (an `openat` equivalent), so a component swapped
 *    for a symlink after the check cannot redirect a read or a write.
 * @module
 */
import { constants } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { ApiError } from '../../core/errors.ts'
import { isInside, isNotFound, TEMP_PREFIX } from '../../storage/fs.ts'
import { workspaceError } from '../workspace-errors.ts'

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
  if (encoder.encode(unified).length > MAX_PATH_BYTES)
    throw new PathError(`${what} is longer than ${MAX_PATH_BYTES} bytes`)
  const parts = unified.split('/').filter((p) => p !== '')
  if (parts.length === 0) throw new PathError(`${what} must name something inside the workspace`)
  for (const part of parts) {
    if (part === '.' || part === '..') throw new PathError(`${what} must not contain . or .. components`)
    if (part.includes(':')) throw new PathError(`${what} must not contain ":"`)
    if (/[. ]$/.test(part)) throw new PathError(`${what} components must not end with a dot or space`)
    if (DEVICE_NAMES.test(part)) throw new PathError(`${what} must not use a reserved device name`)
    if (encoder.encode(part).length > MAX_COMPONENT_BYTES)
      throw new PathError(`${what} component is longer than ${MAX_COMPONENT_BYTES} bytes`)
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
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new PathError('path resolves through a symlink loop')
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
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      throw new PathError('path changed to a symlink while opening')
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
 * A directory held open while files are made in it. On Linux `path` is `/proc/self/fd/N`, which
 * names the opened directory itself, like `openat`: a component swapped for a symlink after the
 * check cannot redirect what is created, renamed or removed through it. Elsewhere `path` is the
 * checked real path.
 */
export interface PinnedDir {
  /** Path to use for children (`${path}/${name}`). */
  readonly path: string
  /** The directory's real path (inside the root). */
  readonly real: string
  /** fsyncs the directory (after renames, so they survive a crash). */
  sync(): Promise<void>
  close(): Promise<void>
}

const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0)

async function realOfHandle(handle: fsp.FileHandle, fallback: string): Promise<string> {
  return PROC_FD ? await fsp.readlink(`/proc/self/fd/${handle.fd}`) : await fsp.realpath(fallback)
}

function pinned(handle: fsp.FileHandle, real: string): PinnedDir {
  return {
    path: PROC_FD ? `/proc/self/fd/${handle.fd}` : real,
    real,
    sync: async () => {
      try {
        await handle.sync()
      } catch {
        /* not supported for directories here */
      }
    },
    close: () => handle.close().catch(() => {}),
  }
}

/**
 * Opens directory `relDir` ('' = the root), walking one component at a time through the
 * previously opened directory and checking each opened directory's real location, so neither a
 * symlink nor a swap leads outside the root. Missing components are made when `create` is set
 * (their paths are pushed to `created`); otherwise 404 `file_not_found`.
 */
export async function pinDirectory(
  root: string,
  relDir: string,
  create: boolean,
  created?: string[],
): Promise<PinnedDir> {
  let handle = await fsp.open(root, DIR_FLAGS)
  let real = root
  try {
    const parts = relDir === '' ? [] : relDir.split('/')
    for (const [index, part] of parts.entries()) {
      const child = `${PROC_FD ? `/proc/self/fd/${handle.fd}` : real}/${part}`
      let next: fsp.FileHandle
      try {
        next = await fsp.open(child, DIR_FLAGS)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOTDIR') throw new PathError(`${part} is not a directory`)
        if (code === 'ELOOP') throw new PathError('path resolves through a symlink loop')
        if (code !== 'ENOENT') throw error
        if (!create) throw workspaceError('file_not_found', `${relDir} does not exist`)
        try {
          // mkdir never follows a final symlink: a dangling link out makes EEXIST, then ENOENT below.
          await fsp.mkdir(child)
          created?.push(parts.slice(0, index + 1).join('/'))
        } catch (mkdirError) {
          if ((mkdirError as NodeJS.ErrnoException).code !== 'EEXIST') throw mkdirError
        }
        try {
          next = await fsp.open(child, DIR_FLAGS)
        } catch (openError) {
          if (isNotFound(openError)) throw new PathError('path resolves outside the workspace or vanished')
          throw openError
        }
      }
      let nextReal: string
      try {
        nextReal = await realOfHandle(next, child)
      } catch (error) {
        await next.close()
        throw error
      }
      if (!isInside(root, nextReal)) {
        await next.close()
        throw new PathError('path resolves outside the workspace')
      }
      await handle.close()
      handle = next
      real = nextReal
    }
  } catch (error) {
    await handle.close().catch(() => {})
    throw error
  }
  return pinned(handle, real)
}

/** The real path of directory `relDir`, made when `create` is set (see {@link pinDirectory}). */
export async function ensureDirectory(
  root: string,
  relDir: string,
  create: boolean,
  created?: string[],
): Promise<string> {
  const dir = await pinDirectory(root, relDir, create, created)
  await dir.close()
  return dir.real
}

/** Splits a normalised path into its parent and last component. */
export function splitRel(rel: string): { parent: string; name: string } {
  const i = rel.lastIndexOf('/')
  return i < 0 ? { parent: '', name: rel } : { parent: rel.slice(0, i), name: rel.slice(i + 1) }
}

/**
 * Where to write `rel`: its parent directory, pinned (made when missing), and the entry name in
 * it. When the entry is a symlink that resolves inside the root the write goes to the link's
 * target, as a read would follow it; a link leading outside or nowhere is refused. The caller
 * closes `dir`.
 */
export async function writeSlot(
  root: string,
  rel: string,
  options: { create?: boolean; created?: string[] } = {},
): Promise<{ dir: PinnedDir; name: string }> {
  const { parent, name } = splitRel(rel)
  const dir = await pinDirectory(root, parent, options.create !== false, options.created)
  try {
    const entry = await fsp.lstat(`${dir.path}/${name}`).catch(() => null)
    if (!entry?.isSymbolicLink()) return { dir, name }
    const target = await realOrNull(`${dir.path}/${name}`)
    if (target === null) throw new PathError('path is a dangling symlink')
    if (!isInside(root, target)) throw new PathError('path resolves outside the workspace')
    await dir.close()
    const rel2 = target.slice(root.length + 1)
    if (!rel2 || rel2 === rel) throw new PathError('path is a symlink loop')
    return writeSlot(root, rel2, { create: false })
  } catch (error) {
    await dir.close()
    throw error
  }
}

/**
 * The entry `rel` itself (not what a final symlink points to) in its pinned parent: for
 * deleting or renaming an entry, which changes only the parent directory. The caller closes `dir`.
 */
export async function entryInParent(
  root: string,
  rel: string,
): Promise<{ dir: PinnedDir; abs: string; stat: import('node:fs').Stats | null }> {
  const { parent, name } = splitRel(rel)
  const dir = await pinDirectory(root, parent, false)
  const abs = `${dir.path}/${name}`
  return { dir, abs, stat: await fsp.lstat(abs).catch(() => null) }
}

/**
 * Reads the UTF-8 file `rel` under `root`; null when it does not exist. A file (or a parent) that
 * resolves outside the workspace is refused (400 `invalid_path`), never read.
 */
export async function readContainedText(root: string, rel: string): Promise<string | null> {
  const opened = await openForRead(root, rel)
  if (!opened) return null
  try {
    return await opened.handle.readFile('utf8')
  } finally {
    await opened.handle.close()
  }
}

/**
 * Removes the entry `rel` under `root` (a directory with its contents when `recursive`), through
 * its pinned parent: a parent that resolves outside the workspace is refused (400
 * `invalid_path`), and a final symlink is removed itself, never what it points to. A missing
 * entry or parent is not an error.
 */
export async function removeContained(root: string, rel: string, options: { recursive?: boolean } = {}): Promise<void> {
  let entry: Awaited<ReturnType<typeof entryInParent>>
  try {
    entry = await entryInParent(root, rel)
  } catch (error) {
    if (error instanceof ApiError && error.code === 'file_not_found') return
    throw error
  }
  try {
    if (!entry.stat) return
    if (entry.stat.isDirectory()) await fsp.rm(entry.abs, { recursive: options.recursive === true, force: true })
    else await fsp.unlink(entry.abs)
    await entry.dir.sync()
  } finally {
    await entry.dir.close()
  }
}
