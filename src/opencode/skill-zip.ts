/**
 * Skill folders out of a zip archive, for uploads of one skill or several. The archive holds a
 * SKILL.md at its root (one skill) or one folder per skill (`<name>/SKILL.md` beside its files,
 * at any depth). Everything is checked before anything is stored, and the caller imports all the
 * skills or none:
 * - the archive's size is capped by the caller; the entry count is checked from the central
 *   directory before inflating (422 `zip_too_many_entries`);
 * - entries are inflated by fflate in small compressed steps with a running byte count, so a bomb
 *   (a 1 KB entry that inflates to gigabytes) is stopped within one step of passing the limit
 *   and never allocates past it (413 `zip_bomb`, `skill_file_too_large`);
 * - names that leave the archive (`..`, absolute, backslashes) are 422 `zip_entry_escapes`,
 *   symlinks 422 `zip_entry_symlink`, devices and other non-files 422 `zip_entry_not_file`, the
 *   same name twice 422 `zip_duplicate_entry`, encrypted entries and unknown compression 422
 *   `invalid_zip`; `.git`, `node_modules`, `.DS_Store` and macOS `__MACOSX` entries are skipped.
 * @module
 */
import { Unzip, UnzipInflate, type UnzipFile } from 'fflate'
import type { ApiError } from '../core/errors.ts'
import {
  type BundleFile,
  checkBundle,
  executableFromMode,
  fileTooLarge,
  isExcludedSegment,
  normalizeSkillPath,
  SKILL_FILE,
  type SkillLimits,
  sortFiles,
  utf8OrNull,
} from './skill-bundle.ts'
import { readZipEntries } from './zip-entries.ts'
import { opencodeError, type OpencodeErrorCode } from './opencode-errors.ts'

/** Limits of an uploaded archive, beside each skill's own limits. */
export interface ZipLimits {
  /** Bytes of the archive as uploaded. */
  maxZipBytes: number
  /** Entries in the archive, folders included. */
  maxEntries: number
  /** Bytes of all entries once inflated. */
  maxInflatedBytes: number
}

/** Defaults: a 50 MiB archive of at most 2,000 entries inflating to at most 100 MiB. */
export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxZipBytes: 50 * 1024 * 1024,
  maxEntries: 2000,
  maxInflatedBytes: 100 * 1024 * 1024,
}

/** One skill folder found in an archive. */
export interface ZipSkill {
  /** The folder's path in the archive ('' for a SKILL.md at the root). */
  folder: string
  /** The folder's own name, or null at the root (then the frontmatter names the skill). */
  folderName: string | null
  skillMd: string
  files: BundleFile[]
}

/** Compressed bytes fed to the inflater per step: deflate expands at most ~1032×, so ≤ ~4 MiB out. */
const STEP = 4096

const S_IFMT = 0o170000
const S_IFREG = 0o100000
const S_IFDIR = 0o040000
const S_IFLNK = 0o120000

function zipError(code: OpencodeErrorCode, message: string, details: Record<string, unknown>): ApiError {
  return opencodeError(code, message, { details })
}

function skipped(name: string): boolean {
  return name.split('/').some((part) => part === '__MACOSX' || isExcludedSegment(part))
}

/** Inflates every file entry with running caps; returns name → bytes. */
function inflateAll(zip: Uint8Array, limits: SkillLimits & ZipLimits, wanted: Set<string>): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>()
  let failure: ApiError | null = null
  let total = 0
  let seen = 0
  const unzip = new Unzip((file: UnzipFile) => {
    seen++
    if (seen > limits.maxEntries && !failure)
      failure = zipError('zip_too_many_entries', `The archive has more than ${limits.maxEntries} entries`, {
        limit: 'maxEntries',
        max: limits.maxEntries,
      })
    if (failure || !wanted.has(file.name)) return
    if (file.compression !== 0 && file.compression !== 8) {
      failure = zipError('invalid_zip', `Entry ${file.name} uses an unsupported compression method`, {
        path: file.name,
      })
      return
    }
    const chunks: Uint8Array[] = []
    let size = 0
    file.ondata = (error, chunk, final) => {
      if (failure) return
      if (error) {
        failure = zipError('invalid_zip', `Entry ${file.name} is corrupt`, { path: file.name })
        return
      }
      size += chunk.byteLength
      total += chunk.byteLength
      if (size > limits.maxFileBytes) {
        failure = fileTooLarge(file.name, size, limits)
        file.terminate()
        return
      }
      if (total > limits.maxInflatedBytes) {
        failure = zipError(
          'zip_bomb',
          `The archive inflates past ${limits.maxInflatedBytes} bytes; refused as a zip bomb`,
          { limit: 'maxInflatedBytes', max: limits.maxInflatedBytes, path: file.name },
        )
        file.terminate()
        return
      }
      chunks.push(chunk)
      if (final) out.set(file.name, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))
    }
    file.start()
  })
  unzip.register(UnzipInflate)
  try {
    for (let at = 0; at < zip.byteLength && !failure; at += STEP) {
      const end = Math.min(at + STEP, zip.byteLength)
      unzip.push(zip.subarray(at, end), end === zip.byteLength)
    }
  } catch {
    if (!failure) failure = zipError('invalid_zip', 'The archive is corrupt', {})
  }
  if (failure) throw failure
  return out
}

/**
 * Reads the skill folders of an archive, all checked against `limits`; throws on the first
 * problem (nothing is returned half-read). 422 `zip_no_skill` when no SKILL.md is found, 422
 * `zip_entry_outside_skill` for a file that belongs to no skill folder, 422 `zip_nested_skill`
 * for a skill folder inside another.
 */
export function readSkillZip(zip: Uint8Array, limits: SkillLimits & ZipLimits): ZipSkill[] {
  if (zip.byteLength > limits.maxZipBytes)
    throw zipError('zip_too_large', `The archive is ${zip.byteLength} bytes; at most ${limits.maxZipBytes}`, {
      limit: 'maxZipBytes',
      max: limits.maxZipBytes,
      size: zip.byteLength,
    })
  const entries = readZipEntries(zip, limits.maxEntries)
  const names = new Set<string>()
  const files: Array<{ name: string; path: string; executable: boolean }> = []
  for (const entry of entries) {
    if (names.has(entry.name))
      throw zipError('zip_duplicate_entry', `The archive holds ${entry.name} twice`, { path: entry.name })
    names.add(entry.name)
    if (entry.encrypted) throw zipError('invalid_zip', `Entry ${entry.name} is encrypted`, { path: entry.name })
    const isDir = entry.name.endsWith('/') || (entry.mode !== null && (entry.mode & S_IFMT) === S_IFDIR)
    let path: string
    try {
      path = normalizeSkillPath(entry.name.replace(/\/+$/, ''), { allowSkillFile: true })
    } catch (error) {
      if (skipped(entry.name)) continue
      throw zipError('zip_entry_escapes', `Entry ${JSON.stringify(entry.name)} is not a safe relative path`, {
        path: entry.name,
        reason: (error as ApiError).details ? ((error as ApiError).details as { reason: string }).reason : 'invalid',
      })
    }
    if (skipped(path)) continue
    const type = entry.mode === null ? null : entry.mode & S_IFMT
    if (type === S_IFLNK)
      throw zipError('zip_entry_symlink', `Entry ${path} is a symbolic link; skills hold regular files only`, {
        path,
      })
    if (isDir) continue
    if (type !== null && type !== 0 && type !== S_IFREG)
      throw zipError('zip_entry_not_file', `Entry ${path} is not a regular file`, { path })
    files.push({ name: entry.name, path, executable: entry.mode !== null && executableFromMode(entry.mode) })
  }
  const roots = files
    .filter((f) => f.path === SKILL_FILE || f.path.endsWith(`/${SKILL_FILE}`))
    .map((f) => f.path.slice(0, -SKILL_FILE.length).replace(/\/$/, ''))
  if (roots.length === 0)
    throw zipError('zip_no_skill', 'The archive holds no SKILL.md; put each skill in a folder with its SKILL.md', {})
  for (const a of roots)
    for (const b of roots)
      if (a !== b && (a === '' || b.startsWith(`${a}/`)))
        throw zipError('zip_nested_skill', `Skill folder ${b || '/'} is inside skill folder ${a || '/'}`, {
          path: b,
        })
  const rootOf = (path: string) => roots.find((root) => root === '' || path.startsWith(`${root}/`))
  for (const file of files)
    if (rootOf(file.path) === undefined)
      throw zipError('zip_entry_outside_skill', `Entry ${file.path} belongs to no skill folder`, {
        path: file.path,
      })
  const bytes = inflateAll(zip, limits, new Set(files.map((f) => f.name)))
  return roots.map((root) => {
    const mine = files.filter((f) => rootOf(f.path) === root)
    const rel = (path: string) => (root === '' ? path : path.slice(root.length + 1))
    const md = mine.find((f) => rel(f.path) === SKILL_FILE)!
    const mdBytes = bytes.get(md.name)
    if (!mdBytes) throw zipError('invalid_zip', `Entry ${md.path} could not be read`, { path: md.path })
    const skillMd = utf8OrNull(mdBytes)
    if (skillMd === null) throw zipError('invalid_zip', `${md.path} is not UTF-8 text`, { path: md.path })
    const others: BundleFile[] = mine
      .filter((f) => f !== md)
      .map((f) => {
        const data = bytes.get(f.name)
        if (!data) throw zipError('invalid_zip', `Entry ${f.path} could not be read`, { path: f.path })
        return { path: rel(f.path), bytes: data, executable: f.executable }
      })
    checkBundle(mdBytes.byteLength, others, limits)
    return {
      folder: root,
      folderName: root === '' ? null : root.slice(root.lastIndexOf('/') + 1),
      skillMd,
      files: sortFiles(others),
    }
  })
}
