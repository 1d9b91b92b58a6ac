/**
 * What a gated write would change, as the approver sees it: per path the action (create, update,
 * delete), sizes and sha256 digests, and for text under {@link DIFF_LIMITS} a unified diff of the
 * current content against the proposed one. Current content is read contained (symlinks resolved
 * and checked inside the workspace, the final component never followed), so a description can
 * never show a file outside it; a path that resolves outside fails the write before approval.
 * MCP header, environment, OAuth secret and URL credential values in the project config are
 * masked as `GET …/config` masks them, since approval events also reach workspace viewers.
 * @module
 */
import type { FileHandle } from 'node:fs/promises'
import { ApiError } from '../../core/errors.ts'
import { unifiedDiff } from '../../core/unified-diff.ts'
import { createSha256, sha256Hex } from '../../core/sha256.ts'
import { parseJsoncObject, setJsoncPath } from '../config/jsonc-document.ts'
import { OPENCODE_CONFIG_FILES } from '../config/workspace-layout.ts'
import { maskMcpMap } from '../config/mcp-maps.ts'
import { openForRead } from '../base/workspace-path.ts'

/** Bounds on what a description carries, so an approval stays small enough to read and to store. */
export const DIFF_LIMITS = {
  /** Larger content on either side is described by size and sha256 only. */
  fileBytes: 64 * 1024,
  /** More differing lines than this, and the diff is left out. */
  edits: 2000,
  /** Diff text across all paths of one approval; paths past it get size and sha256 only. */
  totalChars: 256 * 1024,
  /** Paths described per approval; a larger batch lists the rest only in the approval's `paths`. */
  entries: 1000,
}

/**
 * The content a write leaves at one path: bytes, text, nothing (deleted), a staged file, a new
 * directory, or whatever is now at another workspace path (a rename).
 */
export type ProposedContent =
  | string
  | Uint8Array
  | null
  | { staged: FileHandle }
  | { directory: true }
  | { movedFrom: string }

/** One path a write would change, as the writer proposes it. */
export interface ProposedChange {
  /** Workspace-relative path. */
  path: string
  after: ProposedContent
  /** The execute bit the write sets, when it sets one (skill files). */
  executable?: boolean
}

/** Size and digest of one side of a change. */
export interface ContentDigest {
  bytes: number
  /** Null when the content holds masked secrets (a digest of them could be checked against guesses). */
  sha256: string | null
}

/** One path of a described change (the approval's `changes` field). */
export interface DescribedChange {
  path: string
  action: 'create' | 'update' | 'delete'
  before: ContentDigest | null
  after: ContentDigest | null
  /** Unified diff (`---`/`+++`/`@@` hunks) of the text, present unless `diffOmitted` says why not. */
  diff?: string
  diffOmitted?: 'binary' | 'too_large' | 'total_limit' | 'directory' | 'secrets'
  /** True when secret values in the diff read `********`. */
  masked?: boolean
  /** Present when the write flips the file's execute bit, or creates an executable file (`before: false`). */
  executable?: { before: boolean; after: boolean }
}

interface Side {
  exists: boolean
  directory: boolean
  executable?: boolean
  bytes: number
  sha256: string
  /** The content when it is small enough to diff, else null. */
  data: Uint8Array | null
}

const MISSING: Side = { exists: false, directory: false, bytes: 0, sha256: '', data: null }

async function readSide(handle: FileHandle): Promise<Side> {
  const st = await handle.stat()
  if (st.isDirectory()) return { exists: true, directory: true, bytes: 0, sha256: '', data: null }
  const executable = (st.mode & 0o111) !== 0
  const hash = createSha256()
  const chunks: Uint8Array[] = []
  let bytes = 0
  const buffer = Buffer.alloc(64 * 1024)
  let position = 0
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position)
    if (bytesRead === 0) break
    position += bytesRead
    const chunk = buffer.subarray(0, bytesRead)
    hash.update(chunk)
    bytes += bytesRead
    if (bytes <= DIFF_LIMITS.fileBytes) chunks.push(Buffer.from(chunk))
  }
  return {
    exists: true,
    directory: false,
    executable,
    bytes,
    sha256: hash.hex(),
    data: bytes <= DIFF_LIMITS.fileBytes ? Buffer.concat(chunks) : null,
  }
}

async function currentSide(root: string, rel: string): Promise<Side> {
  const opened = await openForRead(root, rel)
  if (!opened) return MISSING
  try {
    return await readSide(opened.handle)
  } finally {
    await opened.handle.close()
  }
}

async function proposedSide(root: string, after: ProposedContent): Promise<Side> {
  if (after === null) return MISSING
  if (typeof after === 'object' && 'staged' in after) return readSide(after.staged)
  if (typeof after === 'object' && 'directory' in after) return { ...MISSING, exists: true, directory: true }
  if (typeof after === 'object' && 'movedFrom' in after) return currentSide(root, after.movedFrom)
  const data = typeof after === 'string' ? Buffer.from(after) : after
  return {
    exists: true,
    directory: false,
    bytes: data.byteLength,
    sha256: sha256Hex(data),
    data: data.byteLength <= DIFF_LIMITS.fileBytes ? data : null,
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function textOf(data: Uint8Array): string | null {
  if (data.includes(0)) return null
  try {
    return utf8.decode(data)
  } catch {
    return null
  }
}

/** Leaf paths where `masked` differs from `plain`. */
function maskedPaths(plain: unknown, masked: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  if (plain === masked) return []
  if (typeof plain === 'object' && plain !== null && typeof masked === 'object' && masked !== null) {
    return Object.keys(masked).flatMap((key) =>
      maskedPaths((plain as Record<string, unknown>)[key], (masked as Record<string, unknown>)[key], [...at, key]),
    )
  }
  return [at]
}

/** The config text with MCP secrets masked in place (comments and layout kept); null if it does not parse. */
async function maskConfigText(text: string): Promise<{ text: string; masked: boolean } | null> {
  let data: Record<string, unknown>
  try {
    data = await parseJsoncObject(text, 'opencode.json')
  } catch {
    return null
  }
  if (!('mcp' in data)) return { text, masked: false }
  let out = text
  const masked = maskMcpMap(data.mcp)
  const paths = maskedPaths(data.mcp, masked)
  for (const path of paths) {
    const value = path.reduce<unknown>((node, key) => (node as Record<string, unknown>)?.[key], masked)
    out = await setJsoncPath(out, ['mcp', ...path], value)
  }
  return { text: out, masked: paths.length > 0 }
}

function digest(side: Side, masked: boolean): ContentDigest | null {
  return side.exists && !side.directory ? { bytes: side.bytes, sha256: masked ? null : side.sha256 } : null
}

/**
 * Describes what the proposed changes would do to the workspace at `root`; paths whose content
 * would not change are left out, and past {@link DIFF_LIMITS}`.entries` the rest. Throws 400 `invalid_path` when a path resolves outside, unless
 * `perItem` (a batch whose items fail one by one when applied): such a path is then left out.
 */
export async function describeChanges(
  root: string,
  proposed: ProposedChange[],
  options: { perItem?: boolean } = {},
): Promise<DescribedChange[]> {
  const out: DescribedChange[] = []
  let budget = DIFF_LIMITS.totalChars
  for (const { path, after, executable } of proposed) {
    if (out.length >= DIFF_LIMITS.entries) break
    let a: Side
    let b: Side
    try {
      ;[a, b] = [await currentSide(root, path), await proposedSide(root, after)]
    } catch (error) {
      if (options.perItem && error instanceof ApiError) continue
      throw error
    }
    if (!a.exists && !b.exists) continue
    const flips = a.exists && b.exists && executable !== undefined && a.executable !== executable
    if (a.exists && b.exists && a.directory === b.directory && a.sha256 === b.sha256 && !flips) continue
    const action = !a.exists ? 'create' : !b.exists ? 'delete' : 'update'
    const change: DescribedChange = { path, action, before: null, after: null }
    const config = (OPENCODE_CONFIG_FILES as readonly string[]).includes(path)
    let masked = false
    if (a.directory || b.directory) change.diffOmitted = 'directory'
    else if ((a.exists && !a.data) || (b.exists && !b.data)) change.diffOmitted = 'too_large'
    else {
      let before = a.exists ? textOf(a.data as Uint8Array) : null
      let next = b.exists ? textOf(b.data as Uint8Array) : null
      if ((a.exists && before === null) || (b.exists && next === null)) change.diffOmitted = 'binary'
      else {
        if (config) {
          // A config that cannot be parsed cannot be masked: its text is not shown.
          const [mb, ma] = [
            before === null ? null : await maskConfigText(before),
            next === null ? null : await maskConfigText(next),
          ]
          if ((before !== null && !mb) || (next !== null && !ma)) masked = true
          before = mb?.text ?? null
          next = ma?.text ?? null
          masked ||= Boolean(mb?.masked || ma?.masked)
        }
        const unmaskable = masked && ((a.exists && before === null) || (b.exists && next === null))
        const diff = unmaskable ? null : unifiedDiff(path, before, next, { maxEdits: DIFF_LIMITS.edits })
        if (unmaskable) change.diffOmitted = 'secrets'
        else if (diff === null) change.diffOmitted = 'too_large'
        else if (diff.length > budget) change.diffOmitted = 'total_limit'
        else {
          change.diff = diff
          budget -= diff.length
        }
      }
    }
    change.before = digest(a, masked)
    change.after = digest(b, masked)
    if (masked) change.masked = true
    if (flips) change.executable = { before: Boolean(a.executable), after: Boolean(executable) }
    // A new file written executable says so: its sizes and digest alone would not show it.
    else if (!a.exists && b.exists && !b.directory && executable === true)
      change.executable = { before: false, after: true }
    out.push(change)
  }
  return out
}
