/**
 * Inbox uploads: a `multipart/form-data` body whose `file` part is streamed to a temp file in the
 * inbox (never held in memory), bounded by `inbox.maxBytes` (413 `file_too_large` with
 * `{maxBytes, size}`; the whole body, every part counted, may exceed it only by
 * {@link FRAMING_ALLOWANCE}), then, after approval unless the host exempted the inbox, renamed
 * into place. The target is `?path=`, else the `path` field, else the file name, checked like
 * every client path and always inside the inbox: its parent is walked from the inbox's real path
 * (as downloads are confined), and an existing entry of that name must be a regular file; a
 * symlink (even one leading elsewhere in the workspace) is neither followed nor replaced.
 * @module
 */
import * as fsp from 'node:fs/promises'
import type { ApiError } from '../../core/errors.ts'
import { placeInto, tempName, writeTemp } from '../base/atomic-write.ts'
import {
  assertNotTemp,
  normalizeRelPath,
  PathError,
  pinDirectory,
  splitRel,
  type PinnedDir,
} from '../base/workspace-path.ts'
import { INBOX_DIR } from '../artifacts/drop-folder.ts'
import { multipartBoundary, readMultipart } from './multipart-stream.ts'
import { workspaceError } from '../workspace-errors.ts'

/** An upload received and staged, waiting to be committed. */
export interface StagedUpload {
  /** Path relative to the inbox. */
  rel: string
  /** Workspace-relative path. */
  workspaceRel: string
  /** Name of the staged temp file in the inbox folder. */
  temp: string
  bytes: number
}

async function* limited(
  data: AsyncIterable<Uint8Array>,
  maxBytes: number,
  declared: number | null,
): AsyncGenerator<Uint8Array> {
  let total = 0
  for await (const chunk of data) {
    total += chunk.byteLength
    if (total > maxBytes) throw tooLarge(maxBytes, Math.max(total, declared ?? 0))
    yield chunk
  }
}

/**
 * What the multipart framing (boundaries, part headers, small fields such as `path`) may add to
 * `maxBytes`: a body declared or read beyond `maxBytes` plus this is refused with 413.
 */
export const FRAMING_ALLOWANCE = 64 * 1024

/** The 413 every oversize upload gets. */
export function tooLarge(maxBytes: number, size: number): ApiError {
  return workspaceError('file_too_large', `File is larger than ${maxBytes} bytes`, { details: { maxBytes, size } })
}

/** Reads the request and stages the file; the caller commits or discards it. */
export async function receiveUpload(
  root: string,
  request: Request,
  queryPath: string | undefined,
  maxBytes: number,
): Promise<StagedUpload> {
  const boundary = multipartBoundary(request.headers.get('content-type'))
  if (!boundary) throw workspaceError('invalid_payload', 'Expected multipart/form-data')
  const declared = Number(request.headers.get('content-length') ?? NaN)
  // Multipart framing adds a few hundred bytes; anything far beyond the limit is refused unread,
  // and a body without (or with a lying) Content-Length is cut off once it gets there.
  const bodyLimit = maxBytes + FRAMING_ALLOWANCE
  if (Number.isFinite(declared) && declared > bodyLimit) throw tooLarge(maxBytes, declared)
  if (queryPath !== undefined) assertNotTemp(normalizeRelPath(queryPath))
  const inbox = await pinDirectory(root, INBOX_DIR, true)
  let temp: string | null = null
  let bytes = 0
  let filename: string | undefined
  let fieldPath: string | undefined
  try {
    await readMultipart(
      request.body,
      boundary,
      {
        onField: (name, value) => {
          if (name === 'path') fieldPath = value
        },
        onFile: async (info, data) => {
          if (info.name !== 'file' || temp !== null) return
          filename = info.filename
          const staging = tempName('upload', 'in-')
          bytes = await writeTemp(
            `${inbox.path}/${staging}`,
            limited(data, maxBytes, Number.isFinite(declared) ? declared : null),
          )
          temp = staging
        },
      },
      {
        bytes: bodyLimit,
        error: (read) => tooLarge(maxBytes, Math.max(read, Number.isFinite(declared) ? declared : 0)),
      },
    )
    if (temp === null) throw workspaceError('file_required', 'Form field "file" is required')
    const raw = queryPath ?? fieldPath ?? filename
    const rel = normalizeRelPath(raw ?? '', 'path')
    assertNotTemp(rel)
    return { rel, workspaceRel: `${INBOX_DIR}/${rel}`, temp, bytes }
  } catch (error) {
    if (temp) await fsp.rm(`${inbox.path}/${temp}`, { force: true }).catch(() => {})
    throw error
  } finally {
    await inbox.close()
  }
}

/**
 * The directory `rel` (inbox-relative) lands in, pinned and made when missing. The inbox is pinned
 * inside the workspace; the parent is then walked from the inbox's real path, so a symlinked
 * component leading out of the inbox (even elsewhere in the workspace) is refused, as downloads
 * are. The caller closes `dir` unless it is `inbox`.
 */
async function inboxParent(inbox: PinnedDir, rel: string): Promise<{ dir: PinnedDir; name: string }> {
  const { parent, name } = splitRel(rel)
  if (parent === '') return { dir: inbox, name }
  try {
    return { dir: await pinDirectory(inbox.real, parent, true), name }
  } catch (error) {
    if (error instanceof PathError && error.message === 'path resolves outside the workspace')
      throw new PathError('path resolves outside the inbox')
    throw error
  }
}

/**
 * Moves a staged upload into place (atomic rename between pinned directories). The rename acts on
 * the entry itself and never follows a final symlink; an existing symlink or other non-regular
 * file there is refused (409 `inbox_target_not_regular`), a directory with 409 `invalid_path`.
 */
export async function commitUpload(root: string, upload: StagedUpload): Promise<void> {
  // The staged file is re-found through the pinned inbox, so a swapped inbox cannot feed the rename.
  const inbox = await pinDirectory(root, INBOX_DIR, false)
  try {
    const { dir, name } = await inboxParent(inbox, upload.rel)
    try {
      const entry = await fsp.lstat(`${dir.path}/${name}`).catch(() => null)
      if (entry?.isDirectory()) throw workspaceError('invalid_path', 'A directory exists at that path', { status: 409 })
      if (entry && !entry.isFile()) {
        const what = entry.isSymbolicLink() ? 'a symlink' : 'a special file'
        throw workspaceError(
          'inbox_target_not_regular',
          `The inbox holds ${what} at that path; uploads only create or replace regular files`,
        )
      }
      await placeInto(dir, `${inbox.path}/${upload.temp}`, name)
    } finally {
      if (dir !== inbox) await dir.close()
    }
  } finally {
    await inbox.close()
  }
}

/**
 * Opens a staged upload for reading (through the pinned inbox), so the approval can describe the
 * bytes that would land; the caller closes it.
 */
export async function openStaged(root: string, upload: StagedUpload): Promise<fsp.FileHandle> {
  const inbox = await pinDirectory(root, INBOX_DIR, false)
  try {
    return await fsp.open(`${inbox.path}/${upload.temp}`, fsp.constants.O_RDONLY | fsp.constants.O_NOFOLLOW)
  } finally {
    await inbox.close()
  }
}

/** Removes a staged upload that will not be committed. */
export async function discardUpload(root: string, upload: StagedUpload): Promise<void> {
  const inbox = await pinDirectory(root, INBOX_DIR, false).catch(() => null)
  if (!inbox) return
  try {
    await fsp.rm(`${inbox.path}/${upload.temp}`, { force: true })
  } catch {
    // Left behind as a hidden temp file; listings never show it.
  } finally {
    await inbox.close()
  }
}
