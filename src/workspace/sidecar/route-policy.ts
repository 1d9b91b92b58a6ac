/**
 * Applies the allow-list (`route-table.ts`) to one forwarded request: which row the path the sidecar
 * will actually route belongs to, and whether the caller may send it.
 *
 * The classification runs on the normalised, lower-cased upstream path (OpenCode routes letter case
 * loosely), independently of which of our route declarations matched, so a path that reaches a row
 * by another spelling gets that row's rules, and one that reaches no row is treated as unlisted.
 * @module
 */
import type { ApiError } from '../../core/errors.ts'
import type { Principal } from '../access/auth.ts'
import { scopeRank } from '../access/scopes.ts'
import { SIDECAR_ROUTES, type SidecarRole, type SidecarRouteEntry } from './route-table.ts'
import { workspaceError } from '../workspace-errors.ts'

interface Compiled {
  entry: SidecarRouteEntry
  regex: RegExp
}

function compile(entry: SidecarRouteEntry): Compiled {
  const source = entry.path
    .toLowerCase()
    .split('/')
    .map((segment) => {
      if (segment.startsWith(':')) return segment.endsWith('+') ? '.+' : '[^/]+'
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('/')
  return { entry, regex: new RegExp(`^${source}/?$`) }
}

// Rows grouped by method and first segment: a request is compared with a handful of patterns, not all.
// Built by the first proxied request: a server without a sidecar never needs these ~190 regexes.
let index: Map<string, Compiled[]> | undefined

function rowIndex(): Map<string, Compiled[]> {
  if (index) return index
  index = new Map()
  for (const entry of SIDECAR_ROUTES) {
    const key = `${entry.method} ${entry.path.split('/')[1]!.toLowerCase()}`
    let list = index.get(key)
    if (!list) index.set(key, (list = []))
    list.push(compile(entry))
  }
  return index
}

/** A classified request: its row and the row's path parameters (raw, still percent-encoded). */
export interface Classified {
  entry: SidecarRouteEntry
  params: Record<string, string>
}

/** The allow-list row `method path` reaches (path normalised, any letter case), or null when unlisted. */
export function classifySidecarRequest(method: string, path: string): Classified | null {
  const lower = path.toLowerCase()
  const first = lower.split('/')[1] ?? ''
  const list = rowIndex().get(`${method === 'HEAD' ? 'GET' : method} ${first}`)
  if (!list) return null
  for (const compiled of list) {
    if (!compiled.regex.test(lower)) continue
    // Parameters are read back from the original spelling: ids are case-sensitive upstream values.
    const params: Record<string, string> = {}
    const segments = path.split('/')
    const patternSegments = compiled.entry.path.split('/')
    for (let i = 0; i < patternSegments.length; i++) {
      const segment = patternSegments[i]!
      if (!segment.startsWith(':')) continue
      const name = segment.slice(1).replace(/\+$/, '')
      params[name] = segment.endsWith('+') ? segments.slice(i).join('/') : (segments[i] ?? '')
    }
    return { entry: compiled.entry, params }
  }
  return null
}

const ROLE_SCOPE: Record<SidecarRole, 'viewer' | 'collaborator' | 'owner'> = {
  viewer: 'viewer',
  collaborator: 'collaborator',
  owner: 'owner',
}

/** 403 `sidecar_route_not_allowed`: the route is not on the allow-list and the caller is not the host. */
export function routeNotAllowed(method: string, path: string, scope: string | null): ApiError {
  return workspaceError(
    'sidecar_route_not_allowed',
    'This sidecar route is not on the allow-list; only the host may call it',
    { details: { method, path, required: 'owner', scope } },
  )
}

/**
 * Throws when `principal` may not send the request: a read-only server refuses state changes
 * (403 `read_only`), an unlisted route needs owner scope (403 `sidecar_route_not_allowed`), a listed
 * one needs its row's role (403 `forbidden` with `details.required`).
 */
export function assertSidecarAllowed(input: {
  method: string
  path: string
  classified: Classified | null
  principal: Principal
  readOnly: boolean
}): void {
  const { classified, principal } = input
  const isRead = input.method === 'GET' || input.method === 'HEAD'
  if (!classified) {
    if (principal.scope !== 'owner') throw routeNotAllowed(input.method, input.path, principal.scope)
    if (input.readOnly && !isRead) throw workspaceError('read_only', 'Server is read-only')
    return
  }
  const { entry } = classified
  if (input.readOnly && entry.changesState) throw workspaceError('read_only', 'Server is read-only')
  const required = ROLE_SCOPE[entry.role]
  if (scopeRank(principal.scope) < scopeRank(required)) {
    throw workspaceError(
      'forbidden',
      required === 'owner'
        ? 'This sidecar route needs the host (an owner token or the host token)'
        : 'This sidecar route needs a collaborator token',
      { details: { required, scope: principal.scope } },
    )
  }
}
