/**
 * Atomic file writes for client-supplied paths: `writeFileAtomic`'s temp + fsync + rename +
 * directory fsync, done inside a pinned directory (see `pinDirectory`): the temp file is created
 * and renamed through the held-open parent, so a parent swapped for a symlink during the write
 * cannot redirect the file out of the workspace. Temp files carry `TEMP_PREFIX` (catalog
 * listings hide them) and are removed on any failure.
 * @module
 */
import { randomBytes } from '../../core/random-bytes.ts'
import type { Stats } from 'node:fs'
import * as fsp from 'node:fs/promises'
import { TEMP_PREFIX, writeData } from '../../storage/fs.ts'
import { writeSlot, type PinnedDir } from './workspace-path.ts'

/** A fresh temp file name for `name`. */
export function tempName(name: string, tag = ''): string {
  return `${TEMP_PREFIX}${tag}${name.slice(0, 48)}.${randomBytes(6).toString('hex')}`
}

/**
 * How a temp file stands in for the file it will replace: `mode` sets its permission bits exactly
 * (no umask); `replacing` is that file's lstat (see {@link replacedFile}).
 */
export interface TempOptions {
  mode?: number
  replacing?: Stats | null
}

/**
 * Writes `data` to the new file `path` (created exclusively) and fsyncs it. Chunks from an async
 * source are written as they arrive, so nothing is held whole in memory. Returns the byte count.
 *
 * When it replaces a file it takes that file's permission bits (an `opencode.json` kept 0600 for
 * its provider keys must not become world-readable, nor a script lose its execute bit, because the
 * server rewrote it; set-id bits are not carried over), and a modification time at least 1 ms
 * later: revisions are `floor(mtimeMs):size` and the kernel's clock is coarse, so two same-size
 * writes in one tick would share a revision and a stale `ifMatchRevision` would pass.
 */
export async function writeTemp(
  path: string,
  data: Uint8Array | string | AsyncIterable<Uint8Array>,
  options: TempOptions = {},
): Promise<number> {
  const handle = await fsp.open(path, 'wx', 0o644)
  try {
    const mode = options.mode ?? (options.replacing ? options.replacing.mode & 0o777 : undefined)
    if (mode !== undefined) await handle.chmod(mode)
    const bytes = await writeData(handle, data)
    if (options.replacing) {
      const before = Math.floor(options.replacing.mtimeMs)
      const st = await handle.stat()
      if (Math.floor(st.mtimeMs) <= before) await handle.utimes(st.atime, new Date(before + 1))
    }
    await handle.sync()
    await handle.close()
    return bytes
  } catch (error) {
    await handle.close().catch(() => {})
    await fsp.rm(path, { force: true }).catch(() => {})
    throw error
  }
}

/** The lstat of the regular file `name` in `dir` that a write will replace, or null. */
export async function replacedFile(dir: PinnedDir, name: string): Promise<Stats | null> {
  const st = await fsp.lstat(`${dir.path}/${name}`).catch(() => null)
  return st?.isFile() ? st : null
}

/** Renames `from` (any path) to `name` in the pinned `dir` and syncs the directory. */
export async function placeInto(dir: PinnedDir, from: string, name: string): Promise<void> {
  await fsp.rename(from, `${dir.path}/${name}`)
  await dir.sync()
}

/** Writes `data` to workspace path `rel` atomically; parents are made (pushed to `created`). */
export async function writeContained(
  root: string,
  rel: string,
  data: Uint8Array | string,
  created?: string[],
): Promise<void> {
  const { dir, name } = await writeSlot(root, rel, { created })
  try {
    const temp = `${dir.path}/${tempName(name)}`
    await writeTemp(temp, data, { replacing: await replacedFile(dir, name) })
    try {
      await placeInto(dir, temp, name)
    } catch (error) {
      await fsp.rm(temp, { force: true }).catch(() => {})
      throw error
    }
  } finally {
    await dir.close()
  }
}
