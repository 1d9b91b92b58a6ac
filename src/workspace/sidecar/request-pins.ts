/**
 * Pins the parts of a proxied request that directory pinning alone cannot: file paths in the query
 * or path, and session ids, directories and working directories inside JSON bodies.
 *
 * OpenCode resolves a file path against the pinned directory, but a path may be absolute, climb out
 * with `..`, or pass through a symlink planted inside the workspace. Each such path is resolved here
 * with symlinks followed (the nearest existing ancestor for paths that do not exist yet) and must
 * stay inside the workspace's real path, before anything is forwarded. Body fields are checked or
 * rewritten as the allow-list row says; a body that a row pins must be a JSON object of at most
 * {@link MAX_PINNED_BODY_BYTES}.
 * @module
 */
import { realpathSync } from 'node:fs'
import { dirname, isAbsolute, resolve, sep } from 'node:path'
import type { ApiError } from '../../core/errors.ts'
import { canonicalDirectory } from './session-guard.ts'
import { workspaceError } from '../workspace-errors.ts'

/** How a request body is pinned to the workspace (JSON field paths, dot-separated). */
export interface BodyPins {
  /** Session ids that must belong to the workspace (404 `session_not_found` otherwise). */
  sessions?: string[]
  /** Directory fields rewritten to the workspace directory. */
  directories?: string[]
  /** Paths (absolute or workspace-relative) that must resolve inside the workspace, symlinks followed. */
  paths?: string[]
  /** Fields removed before forwarding (workspace selectors of OpenCode's experimental control plane). */
  drop?: string[]
}

/** Largest request body read for pinning; prompt bodies with inline files stay well below. */
export const MAX_PINNED_BODY_BYTES = 1024 * 1024

/** 400 `invalid_path`: a requested file resolves outside the workspace (as the native file routes answer). */
function outside(field: string): ApiError {
  return workspaceError('invalid_path', 'The path resolves outside the workspace', { details: { field } })
}

/** The real path of `target`, following symlinks of its nearest existing ancestor. */
function realTarget(target: string): string {
  let current = target
  const rest: string[] = []
  for (;;) {
    try {
      const real = realpathSync.native(current)
      return rest.length ? resolve(real, ...rest.reverse()) : real
    } catch {
      const parent = dirname(current)
      if (parent === current) return target
      rest.push(current.slice(parent.length + (parent.endsWith(sep) ? 0 : 1)))
      current = parent
    }
  }
}

/** Throws 400 `invalid_path` unless `path` (absolute or relative to `directory`) stays inside it. */
export function assertInsideWorkspace(directory: string, path: string, field: string): void {
  if (path.includes('\0')) throw outside(field)
  const root = canonicalDirectory(directory)
  const target = realTarget(isAbsolute(path) ? resolve(path) : resolve(root, path))
  if (target !== root && !target.startsWith(root.endsWith(sep) ? root : root + sep)) throw outside(field)
}

/** Checks every query parameter named in `names` (all values of repeated keys). */
export function pinQueryPaths(search: string, names: readonly string[], directory: string): void {
  if (search === '' || search === '?') return
  const params = new URLSearchParams(search)
  for (const [key, value] of params) {
    if (names.includes(key.toLowerCase().replace(/\[\]$/, ''))) assertInsideWorkspace(directory, value, `query.${key}`)
  }
}

/** Checks a greedy path tail (`/api/fs/read/<tail>`), still percent-encoded. */
export function pinTailPath(tail: string, directory: string): void {
  let decoded: string
  try {
    decoded = decodeURIComponent(tail)
  } catch {
    throw outside('path')
  }
  assertInsideWorkspace(directory, decoded.replace(/^\/+/, ''), 'path')
}

type Json = Record<string, unknown>

function getField(body: Json, path: string): { holder: Json; key: string; value: unknown } | null {
  const keys = path.split('.')
  let holder: unknown = body
  for (const key of keys.slice(0, -1)) {
    if (!holder || typeof holder !== 'object' || Array.isArray(holder)) return null
    holder = (holder as Json)[key]
  }
  if (!holder || typeof holder !== 'object' || Array.isArray(holder)) return null
  const key = keys[keys.length - 1]!
  return { holder: holder as Json, key, value: (holder as Json)[key] }
}

/** Reads a request body that a row pins: JSON object (or empty), bounded. */
export async function readPinnedBody(request: Request): Promise<Json | null> {
  if (!request.body) return null
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > MAX_PINNED_BODY_BYTES) {
      await reader.cancel().catch(() => {})
      throw workspaceError('payload_too_large', `Request body over ${MAX_PINNED_BODY_BYTES} bytes`)
    }
    chunks.push(value)
  }
  const text = new TextDecoder().decode(Buffer.concat(chunks))
  if (text.trim() === '') return null
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw workspaceError('invalid_payload', 'Request body is not valid JSON')
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw workspaceError('invalid_payload', 'Request body must be a JSON object')
  return parsed as Json
}

/**
 * Applies a row's body pins in place: directories are set to the workspace, selectors dropped, paths
 * checked and made absolute. Returns the session ids the body names (the caller checks their ownership).
 */
export function pinBody(body: Json, pins: BodyPins, directory: string): string[] {
  for (const path of pins.drop ?? []) {
    const field = getField(body, path)
    if (field && field.key in field.holder) delete field.holder[field.key]
  }
  for (const path of pins.directories ?? []) {
    const field = getField(body, path)
    if (field) field.holder[field.key] = directory
    else if (path.includes('.')) {
      // `location` absent or not an object: the session is created with the pinned location.
      const [head] = path.split('.')
      if (body[head!] === undefined) body[head!] = { [path.slice(head!.length + 1)]: directory }
      else throw workspaceError('invalid_payload', `Body field ${head} must be an object`)
    }
  }
  for (const path of pins.paths ?? []) {
    const field = getField(body, path)
    if (field?.value === undefined || field.value === null) continue
    if (typeof field.value !== 'string') throw workspaceError('invalid_payload', `Body field ${path} must be a string`)
    assertInsideWorkspace(directory, field.value, `body.${path}`)
    // OpenCode resolves a relative cwd against its own process directory, not the pinned one.
    if (!isAbsolute(field.value)) field.holder[field.key] = resolve(directory, field.value)
  }
  const sessions: string[] = []
  for (const path of pins.sessions ?? []) {
    const field = getField(body, path)
    if (field?.value === undefined || field.value === null) continue
    if (typeof field.value !== 'string') throw workspaceError('invalid_payload', `Body field ${path} must be a string`)
    sessions.push(field.value)
  }
  return sessions
}
