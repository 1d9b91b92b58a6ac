/**
 * The two folders a workspace exchanges whole files through: the inbox
 * (`.opencode/service/inbox/`, uploads from clients) and the outbox
 * (`.opencode/service/outbox/`, artifacts the agent produced). Items are addressed by id =
 * base64url of the path relative to the folder; a decoded id passes the same path checks as any
 * client path, and reads are confined to the folder by real path.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { join } from 'node:path'
import { isInside, isNotFound } from '../../storage/fs.ts'
import { assertNotTemp, isTempName, normalizeRelPath, openForRead, PathError } from '../base/workspace-path.ts'
import { workspaceError, type WorkspaceErrorCode } from '../workspace-errors.ts'

/** Workspace-relative folder of inbox uploads. */
export const INBOX_DIR = '.opencode/service/inbox'
/** Workspace-relative folder of artifacts. */
export const OUTBOX_DIR = '.opencode/service/outbox'

/** One listed item. */
export interface DropItem {
  id: string
  /** Path relative to the folder. */
  path: string
  name: string
  size: number
  updatedAt: number
}

/** The id of a folder-relative path. */
export function itemId(rel: string): string {
  return Buffer.from(rel, 'utf8').toString('base64url')
}

/** The folder-relative path of an id; throws {@link PathError} when it is not a valid id. */
export function pathOfId(id: string): string {
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(id)) throw new PathError('not a valid item id')
  const rel = normalizeRelPath(Buffer.from(id, 'base64url').toString('utf8'), 'item id')
  assertNotTemp(rel)
  return rel
}

/** The folder's real path, or null when it does not exist (or is not inside the workspace). */
async function folderReal(root: string, folder: string): Promise<string | null> {
  try {
    const real = await fsp.realpath(join(root, folder))
    return isInside(root, real) && (await fsp.stat(real)).isDirectory() ? real : null
  } catch (error) {
    if (isNotFound(error)) return null
    throw error
  }
}

/** Every regular file in the folder (recursively, no symlinks, no temp files), newest first. */
export async function listFolder(root: string, folder: string): Promise<DropItem[]> {
  const base = await folderReal(root, folder)
  if (!base) return []
  const items: DropItem[] = []
  const visit = async (abs: string, rel: string): Promise<void> => {
    let entries: import('node:fs').Dirent[]
    try {
      entries = await fsp.readdir(abs, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      if (isTempName(entry.name)) continue
      const childRel = rel ? `${rel}/${entry.name}` : entry.name
      if (entry.isDirectory()) await visit(join(abs, entry.name), childRel)
      else if (entry.isFile()) {
        const st = await fsp.lstat(join(abs, entry.name)).catch(() => null)
        if (st?.isFile())
          items.push({ id: itemId(childRel), path: childRel, name: entry.name, size: st.size, updatedAt: st.mtimeMs })
      }
    }
  }
  await visit(base, '')
  return items.sort((a, b) => b.updatedAt - a.updatedAt || (a.path < b.path ? -1 : 1))
}

/** Opens an item for download: the file must exist, be regular and resolve inside the folder. */
export async function openItem(
  root: string,
  folder: string,
  id: string,
  codes: { invalid: WorkspaceErrorCode; missing: WorkspaceErrorCode },
) {
  let rel: string
  try {
    rel = pathOfId(id)
  } catch (error) {
    throw workspaceError(codes.invalid, error instanceof Error ? error.message : 'invalid id')
  }
  const base = await folderReal(root, folder)
  if (!base) throw workspaceError(codes.missing, 'Item not found')
  const opened = await openForRead(base, rel).catch((error) => {
    if (error instanceof PathError) throw workspaceError(codes.missing, 'Item not found')
    throw error
  })
  if (!opened) throw workspaceError(codes.missing, 'Item not found')
  const st = await opened.handle.stat()
  if (!st.isFile()) {
    await opened.handle.close()
    throw workspaceError(codes.missing, 'Item not found')
  }
  return { handle: opened.handle, size: st.size, name: rel.split('/').pop()!, rel }
}
