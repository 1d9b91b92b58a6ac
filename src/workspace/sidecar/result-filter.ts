/**
 * Drops search results that live outside the workspace.
 *
 * OpenCode's finders walk the pinned directory but follow symlinked folders inside it (verified with
 * 1.18.33: `/find/file` listed a file of a folder linked in from outside), so a planted symlink would
 * show names and, for text search, lines of files elsewhere on the machine. The answers of the rows
 * marked `filterResults` are read (bounded), each result's path is resolved inside the workspace with
 * symlinks followed, and results that leave it are removed before the answer is relayed.
 * @module
 */
import { assertInsideWorkspace } from './request-pins.ts'
import { workspaceError } from '../workspace-errors.ts'

/** Largest search answer filtered; a bigger one is refused rather than relayed unfiltered. */
export const MAX_FILTERED_BYTES = 16 * 1024 * 1024

function inside(directory: string, path: string): boolean {
  try {
    // Finder paths are relative to the pinned directory even when they start with `/` (V2 lists the root as `/`).
    const relative = path.startsWith(directory) ? path : path.replace(/^\/+/, '')
    assertInsideWorkspace(directory, relative || '.', 'result')
    return true
  } catch {
    return false
  }
}

/** The path a result names (a string, `{path}`, `{path: {text}}` or `{location: {uri}}`), or null. */
function pathOf(item: unknown): string | null {
  if (typeof item === 'string') return item
  if (!item || typeof item !== 'object') return null
  const record = item as { path?: unknown; location?: { uri?: unknown } }
  if (typeof record.path === 'string') return record.path
  if (record.path && typeof record.path === 'object' && typeof (record.path as { text?: unknown }).text === 'string')
    return (record.path as { text: string }).text
  const uri = record.location?.uri
  if (typeof uri === 'string' && uri.startsWith('file:')) {
    try {
      // Evaluated on first use: only search results carry file URLs, and `node:url` costs every start memory.
      return (process.getBuiltinModule('node:url') as typeof import('node:url')).fileURLToPath(uri)
    } catch {
      return null
    }
  }
  return null
}

function keep(directory: string, list: unknown[]): unknown[] {
  return list.filter((item) => {
    const path = pathOf(item)
    return path === null || inside(directory, path)
  })
}

/** Filters a search answer (an array, or an object with a `data` array); other shapes pass unchanged. */
export function filterResults(directory: string, body: unknown): unknown {
  if (Array.isArray(body)) return keep(directory, body)
  if (body && typeof body === 'object' && Array.isArray((body as { data?: unknown }).data))
    return { ...(body as object), data: keep(directory, (body as { data: unknown[] }).data) }
  return body
}

/** Reads, filters and rebuilds a JSON search response; non-JSON or failed answers pass unchanged. */
export async function filteredResponse(response: Response, directory: string, headers: Headers): Promise<Response> {
  if (!response.ok || !(response.headers.get('content-type') ?? '').includes('json')) {
    return new Response(response.body, { status: response.status, headers })
  }
  const declared = Number(response.headers.get('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared > MAX_FILTERED_BYTES) {
    await response.body?.cancel().catch(() => {})
    throw workspaceError('sidecar_response_too_large', 'The search answer is too large to filter')
  }
  const text = await response.text()
  if (text.length > MAX_FILTERED_BYTES)
    throw workspaceError('sidecar_response_too_large', 'The search answer is too large to filter')
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw workspaceError('sidecar_response_failed', 'The sidecar answered a search with invalid JSON')
  }
  headers.set('content-type', 'application/json')
  return new Response(JSON.stringify(filterResults(directory, body)), { status: response.status, headers })
}
