/**
 * The skill bundle: a skill as OpenCode lays it out, `.opencode/skills/<name>/SKILL.md` plus the
 * files it ships beside it (`scripts/` the agent runs, `references/` it reads, `assets/` it uses).
 * Both surfaces hold, check, hash and put skills on the wire through this module, so a folder
 * exported from a workspace, stored by the control plane and written into another workspace comes
 * back byte for byte with the same executable bits.
 *
 * Rules every bundle obeys, wherever it came from (JSON, a zip, a git repository, a disk):
 * - paths are relative, `/`-separated and normalized (`./` and empty segments dropped); `..`,
 *   absolute paths, backslashes, control characters and the segments `.git`, `node_modules` and
 *   `.DS_Store` are refused; SKILL.md itself travels as the skill's text, not as a file;
 * - only regular files: a symlink or device is refused, never followed;
 * - an executable flag per file, read from and restored to the mode bits (0755 / 0644);
 * - limits on the number of files, the bytes of one file and the bytes of the whole skill.
 * @module
 */
import type { ApiError } from '../core/errors.ts'
import { createSha256, sha256Hex } from '../core/sha256.ts'
import { opencodeError } from './opencode-errors.ts'

/** The skill's markdown file, at the folder's root. */
export const SKILL_FILE = 'SKILL.md'

/** How large a skill may be. SKILL.md counts as one file and towards the bytes of the skill. */
export interface SkillLimits {
  /** Files per skill, SKILL.md included. */
  maxFiles: number
  /** Bytes of any one file. */
  maxFileBytes: number
  /** Bytes of all files of the skill together. */
  maxBytes: number
}

/** Defaults: 200 files, 5 MiB per file, 20 MiB per skill. */
export const DEFAULT_SKILL_LIMITS: SkillLimits = {
  maxFiles: 200,
  maxFileBytes: 5 * 1024 * 1024,
  maxBytes: 20 * 1024 * 1024,
}

/** One file of a skill besides SKILL.md. */
export interface BundleFile {
  /** Normalized path relative to the skill folder. */
  path: string
  bytes: Uint8Array
  executable: boolean
}

/**
 * A file as a client sends it: `contentBase64`, or `content` (UTF-8 text) so that what the server
 * returns can be sent back unchanged; `sha256`, when given, must match the bytes.
 */
export interface WireFileIn {
  path: string
  contentBase64?: string
  content?: string
  encoding?: 'utf8' | 'base64'
  executable?: boolean
  sha256?: string
}

/**
 * A file as the server returns it: `content` is the text (`encoding: 'utf8'`) or the bytes in
 * base64 (`'base64'`); base64 files repeat it as the deprecated `contentBase64`.
 */
export interface WireFileOut {
  path: string
  content: string
  encoding: 'utf8' | 'base64'
  contentBase64?: string
  executable: boolean
  sha256: string
}

/** A file's listing entry (no content). */
export interface FileListing {
  path: string
  bytes: number
  executable: boolean
  sha256: string
}

/** Path segments that never travel with a skill: VCS data, dependencies, OS litter. */
const EXCLUDED_SEGMENT = /^(\.git|node_modules|\.DS_Store)$/i
const MAX_PATH_LENGTH = 512

function badPath(path: string, reason: string): ApiError {
  return opencodeError('invalid_skill_file_path', `Skill file path ${JSON.stringify(path)} is not allowed: ${reason}`, {
    details: { path, reason },
  })
}

/**
 * Normalizes a skill-relative path or throws 422 `invalid_skill_file_path` with the path and why.
 * `allowSkillFile` lets SKILL.md itself through (zip and folder readers); on the wire it is the
 * skill's text and is refused as a file.
 */
export function normalizeSkillPath(raw: string, options: { allowSkillFile?: boolean } = {}): string {
  if (typeof raw !== 'string' || raw === '') throw badPath(String(raw), 'empty')
  if (raw.length > MAX_PATH_LENGTH) throw badPath(raw.slice(0, 80), `longer than ${MAX_PATH_LENGTH} characters`)
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw badPath(raw, 'control characters')
  if (raw.includes('\\')) throw badPath(raw, 'backslashes are not path separators here; use /')
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw)) throw badPath(raw, 'absolute path')
  const parts = raw.split('/').filter((part) => part !== '' && part !== '.')
  if (parts.length === 0) throw badPath(raw, 'empty')
  for (const part of parts) {
    if (part === '..') throw badPath(raw, '.. leaves the skill folder')
    if (EXCLUDED_SEGMENT.test(part)) throw badPath(raw, `${part} never travels with a skill`)
  }
  const path = parts.join('/')
  if (path === SKILL_FILE && !options.allowSkillFile)
    throw badPath(raw, 'SKILL.md is the skill text itself; send it as the content, not as a file')
  return path
}

/** True for a path segment a folder reader skips silently (VCS data, dependencies, OS litter). */
export function isExcludedSegment(name: string): boolean {
  return EXCLUDED_SEGMENT.test(name)
}

/** True when a file's mode bits make it executable for anyone. */
export function executableFromMode(mode: number): boolean {
  return (mode & 0o111) !== 0
}

/** The permission bits a file is written with. */
export function modeFor(executable: boolean): number {
  return executable ? 0o755 : 0o644
}

const TEXT = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The bytes as text when they are UTF-8 that re-encodes to the same bytes, else null. */
export function utf8OrNull(bytes: Uint8Array): string | null {
  try {
    return TEXT.decode(bytes)
  } catch {
    return null
  }
}

/** Files sorted by path (code-unit order), so listings, hashes and renders are stable. */
export function sortFiles<T extends { path: string }>(files: T[]): T[] {
  return [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/**
 * Checks a whole bundle against the limits: 422 `skill_file_duplicate`, 422
 * `skill_too_many_files`, 413 `skill_file_too_large` and 413 `skill_too_large`, each naming the
 * limit, its value and (for one file) the path. Also refuses a file and a folder of the same name.
 */
export function checkBundle(skillMdBytes: number, files: BundleFile[], limits: SkillLimits): void {
  const seen = new Set<string>()
  for (const file of files) {
    if (seen.has(file.path))
      throw opencodeError('skill_file_duplicate', `Skill file ${file.path} appears twice`, {
        details: { path: file.path },
      })
    seen.add(file.path)
  }
  for (const path of seen) {
    const parts = path.split('/')
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/')
      if (seen.has(dir) || dir === SKILL_FILE)
        throw opencodeError('skill_file_duplicate', `${dir} is both a file and a folder of the skill`, {
          details: { path: dir },
        })
    }
  }
  const count = files.length + 1
  if (count > limits.maxFiles)
    throw opencodeError(
      'skill_too_many_files',
      `The skill has ${count} files; at most ${limits.maxFiles} are allowed`,
      {
        details: { limit: 'maxFiles', max: limits.maxFiles, count },
      },
    )
  if (skillMdBytes > limits.maxFileBytes) throw fileTooLarge(SKILL_FILE, skillMdBytes, limits)
  let total = skillMdBytes
  for (const file of files) {
    if (file.bytes.byteLength > limits.maxFileBytes) throw fileTooLarge(file.path, file.bytes.byteLength, limits)
    total += file.bytes.byteLength
  }
  if (total > limits.maxBytes) throw skillTooLarge(total, limits)
}

/** 413 `skill_file_too_large` naming the path, its size and the limit. */
export function fileTooLarge(path: string, size: number, limits: SkillLimits): ApiError {
  return opencodeError(
    'skill_file_too_large',
    `Skill file ${path} is ${size} bytes; at most ${limits.maxFileBytes} are allowed per file`,
    { details: { limit: 'maxFileBytes', max: limits.maxFileBytes, path, size } },
  )
}

/** 413 `skill_too_large` naming the total and the limit. */
export function skillTooLarge(size: number, limits: SkillLimits): ApiError {
  return opencodeError('skill_too_large', `The skill is ${size} bytes; at most ${limits.maxBytes} are allowed`, {
    details: { limit: 'maxBytes', max: limits.maxBytes, size },
  })
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function invalidFile(path: string, message: string): ApiError {
  return opencodeError('invalid_skill_file', `Skill file ${path}: ${message}`, { details: { path } })
}

function wireBytes(path: string, file: WireFileIn, limits: SkillLimits): Uint8Array {
  // `{content, encoding}` (the shape the server returns), or the deprecated `{contentBase64}`;
  // a returned base64 file carrying both (equal) is accepted so it can be sent back unchanged.
  const valid =
    file.content === undefined
      ? file.contentBase64 !== undefined && file.encoding === undefined
      : file.contentBase64 === undefined || (file.encoding === 'base64' && file.contentBase64 === file.content)
  if (!valid) throw invalidFile(path, 'give content (with encoding utf8 or base64) or, deprecated, contentBase64')
  const base64 = file.content === undefined ? file.contentBase64 : file.encoding === 'base64' ? file.content : undefined
  if (base64 === undefined) {
    const bytes = new Uint8Array(Buffer.from(file.content!, 'utf8'))
    if (bytes.byteLength > limits.maxFileBytes) throw fileTooLarge(path, bytes.byteLength, limits)
    return bytes
  }
  const b64 = base64.replace(/\s+/g, '')
  if (b64.length % 4 !== 0 || !BASE64.test(b64)) throw invalidFile(path, 'content is not valid base64')
  // Refuse before decoding: a huge string need not be decoded to know it is over the limit.
  const size = (b64.length / 4) * 3 - (b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0)
  if (size > limits.maxFileBytes) throw fileTooLarge(path, size, limits)
  return new Uint8Array(Buffer.from(b64, 'base64'))
}

/**
 * Decodes files a client sent into a checked, path-sorted bundle. Base64 that is not canonical is
 * 422 `invalid_skill_file` (a lenient decoder would silently drop characters and store bytes the
 * client never meant), as is a `sha256` that does not match (422 `skill_file_checksum_mismatch`).
 */
export function decodeWireFiles(skillMdBytes: number, files: WireFileIn[], limits: SkillLimits): BundleFile[] {
  if (files.length + 1 > limits.maxFiles)
    throw opencodeError(
      'skill_too_many_files',
      `The skill has ${files.length + 1} files; at most ${limits.maxFiles} are allowed`,
      { details: { limit: 'maxFiles', max: limits.maxFiles, count: files.length + 1 } },
    )
  const out = files.map((file) => {
    const path = normalizeSkillPath(file.path)
    const bytes = wireBytes(path, file, limits)
    if (file.sha256 !== undefined && file.sha256.toLowerCase() !== sha256Hex(bytes))
      throw opencodeError('skill_file_checksum_mismatch', `Skill file ${path}: sha256 does not match its bytes`, {
        details: { path, expected: file.sha256, actual: sha256Hex(bytes) },
      })
    return { path, bytes, executable: file.executable === true }
  })
  checkBundle(skillMdBytes, out, limits)
  return sortFiles(out)
}

/** A file for the wire: `content` as text when it is UTF-8 (else base64, named by `encoding`); with its sha-256. */
export function encodeWireFile(file: BundleFile): WireFileOut {
  const text = utf8OrNull(file.bytes)
  const sha256 = sha256Hex(file.bytes)
  if (text !== null) return { path: file.path, content: text, encoding: 'utf8', executable: file.executable, sha256 }
  const base64 = Buffer.from(file.bytes).toString('base64')
  return {
    path: file.path,
    content: base64,
    encoding: 'base64',
    contentBase64: base64,
    executable: file.executable,
    sha256,
  }
}

/** A bundle file as a client would send it (base64, so any bytes pass through unchanged). */
export function toWireIn(file: BundleFile): WireFileIn {
  return { path: file.path, contentBase64: Buffer.from(file.bytes).toString('base64'), executable: file.executable }
}

/** The listing of a file. */
export function listingOf(file: BundleFile): FileListing {
  return { path: file.path, bytes: file.bytes.byteLength, executable: file.executable, sha256: sha256Hex(file.bytes) }
}

/**
 * The content hash of a whole skill: SKILL.md's bytes plus, per file in path order, its path,
 * executable flag and sha-256. Equal hashes mean equal folders, so an unchanged skill adds no
 * version and an unchanged import writes nothing.
 */
export function bundleHash(skillMd: string | Uint8Array, files: BundleFile[]): string {
  const hash = createSha256()
  hash.update('skill-bundle/1\0')
  hash.update(sha256Hex(skillMd))
  for (const file of sortFiles(files)) {
    hash.update(`\0${file.path}\0${file.executable ? 'x' : '-'}\0${sha256Hex(file.bytes)}`)
  }
  return hash.hex()
}

/** Files stored as JSON text (portable across databases): bytes as base64. */
export interface StoredFile {
  path: string
  contentBase64: string
  executable: boolean
}

/** Bundle files to their stored form. */
export function toStored(files: BundleFile[]): StoredFile[] {
  return sortFiles(files).map((f) => ({
    path: f.path,
    contentBase64: Buffer.from(f.bytes).toString('base64'),
    executable: f.executable,
  }))
}

/** Stored files back to bundle files. */
export function fromStored(files: StoredFile[]): BundleFile[] {
  return files.map((f) => ({
    path: f.path,
    bytes: new Uint8Array(Buffer.from(f.contentBase64, 'base64')),
    executable: f.executable,
  }))
}
