/**
 * Atomic file writes for client-supplied paths: `writeFileAtomic`'s temp + fsync + rename, with
 * one more step it has no hook for: just before the rename the receiving directory is checked to
 * still be the real, contained directory the path resolved to, so a parent swapped for a symlink
 * during the write cannot redirect the file out of the workspace. The temp file carries
 * `TEMP_PREFIX`, which catalog listings hide, and is removed on any failure.
 * @module
 */
import { randomBytes } from 'node:crypto'
import * as fsp from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { TEMP_PREFIX } from '../../storage/fs.ts'
import { assertDirStillInside } from './workspace-path.ts'

/** A temp path next to `target`. */
export function tempPathFor(target: string, tag = ''): string {
  return join(dirname(target), `${TEMP_PREFIX}${tag}${basename(target).slice(0, 48)}.${randomBytes(6).toString('hex')}`)
}

/** fsyncs a directory so a rename in it survives a crash (best effort where unsupported). */
export async function syncDirectory(dir: string): Promise<void> {
  let handle: fsp.FileHandle | undefined
  try {
    handle = await fsp.open(dir, 'r')
    await handle.sync()
  } catch {
    // Some platforms cannot fsync a directory; the rename itself is still atomic.
  } finally {
    await handle?.close().catch(() => {})
  }
}

/**
 * Writes `data` to the temp file `temp` (created exclusively) and fsyncs it. Chunks from an async
 * source are written as they arrive, so nothing is held whole in memory.
 */
export async function writeTemp(temp: string, data: Uint8Array | string | AsyncIterable<Uint8Array>): Promise<number> {
  const handle = await fsp.open(temp, 'wx', 0o644)
  let bytes = 0
  try {
    if (typeof data === 'string' || data instanceof Uint8Array) {
      await handle.writeFile(data)
      bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength
    } else {
      for await (const chunk of data) {
        await handle.write(chunk)
        bytes += chunk.byteLength
      }
    }
    await handle.sync()
    await handle.close()
    return bytes
  } catch (error) {
    await handle.close().catch(() => {})
    await fsp.rm(temp, { force: true }).catch(() => {})
    throw error
  }
}

/** Renames a finished temp file over `target` after re-checking its directory, then syncs the directory. */
export async function commitTemp(root: string, temp: string, target: string): Promise<void> {
  try {
    await assertDirStillInside(root, dirname(target))
    await fsp.rename(temp, target)
  } catch (error) {
    await fsp.rm(temp, { force: true }).catch(() => {})
    throw error
  }
  await syncDirectory(dirname(target))
}

/** Writes `data` to `target` (already resolved by `prepareWriteTarget`) atomically. */
export async function writeContained(root: string, target: string, data: Uint8Array | string): Promise<void> {
  const temp = tempPathFor(target)
  await writeTemp(temp, data)
  await commitTemp(root, temp, target)
}
