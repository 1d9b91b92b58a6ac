/**
 * Pins every proxied request to the workspace's directory.
 *
 * OpenCode resolves the directory from `?directory=` first, then `x-opencode-directory`, then its
 * own cwd, so a client that could choose either value could read or drive any folder on the
 * machine. Every client-supplied `directory` query value (repeated, encoded, traversal) is removed
 * and exactly one pinned value set; the header is replaced in {@link upstreamRequestHeaders}.
 * Bodies are never touched.
 * @module
 */

/** Query keys that select a directory or workspace upstream and so are replaced or dropped. */
const PINNED_KEYS = ['directory']
/** Newer OpenCode builds route `?workspace=` to an experimental control plane; clients may not pick one. */
const DROPPED_KEYS = ['workspace']

/**
 * The upstream URL for a proxied path: `rest` is the path after the mount (`/session/x`), `search`
 * the client's raw query string (`?a=1`).
 */
export function pinnedUpstreamUrl(baseUrl: string, rest: string, search: string, directory: string): URL | null {
  const path = rest.startsWith('/') ? rest : `/${rest}`
  const pinned = `directory=${encodeURIComponent(directory)}`
  // Most requests carry no query: skip the parameter rewrite (it showed in proxy profiles).
  const v2 = path.toLowerCase().startsWith('/api/') ? `&location%5Bdirectory%5D=${encodeURIComponent(directory)}` : ''
  const url = new URL(baseUrl + path + (search === '' || search === '?' ? `?${pinned}${v2}` : ''))
  // URL parsing resolves `..` and `%2e%2e`; a path that climbs above the base is refused.
  const basePath = basePathOf(baseUrl)
  if (basePath && url.pathname !== basePath && !url.pathname.startsWith(basePath + '/')) return null
  if (search === '' || search === '?') return url
  const params = new URLSearchParams(search)
  // Compare decoded, case-insensitive key names so `Directory`, `%64irectory` or `directory[]` cannot slip through.
  for (const key of [...new Set(params.keys())]) {
    const normal = key.toLowerCase().replace(/\[\]$/, '')
    // V2 routes (`/api/*`) take the directory as a nested `location[directory]` (or `location.x`) object.
    if (PINNED_KEYS.includes(normal) || DROPPED_KEYS.includes(normal) || normal.startsWith('location'))
      params.delete(key)
  }
  params.set('directory', directory)
  if (path.toLowerCase().startsWith('/api/')) params.set('location[directory]', directory)
  url.search = params.toString()
  return url
}

/** The path below the base URL, after URL normalisation: the path the sidecar will actually route. */
export function upstreamRelativePath(url: URL, baseUrl: string): string {
  return url.pathname.slice(basePathOf(baseUrl).length) || '/'
}

const basePaths = new Map<string, string>()

/** The path part of a base URL without trailing slashes (`''` for a bare origin), memoised. */
function basePathOf(baseUrl: string): string {
  let path = basePaths.get(baseUrl)
  if (path === undefined) {
    path = new URL(baseUrl).pathname.replace(/\/+$/, '')
    if (basePaths.size > 256) basePaths.clear()
    basePaths.set(baseUrl, path)
  }
  return path
}

/**
 * The session id a path addresses (`/session/<id>…`, also the experimental and V2 prefixes), or
 * null. `/session/status` is a collection route, not a session.
 */
export function sessionIdInPath(rest: string): string | null {
  // OpenCode routes case-insensitively, so `/Session/<id>` addresses the same session.
  const match = /^\/(?:experimental\/|api\/)?session\/([^/?#]+)/i.exec(rest)
  if (!match) return null
  let id: string
  try {
    id = decodeURIComponent(match[1]!)
  } catch {
    return null
  }
  return id === 'status' || id === 'active' ? null : id
}

/**
 * Why a proxied path is refused before any check runs, or null. OpenCode's router collapses `//`,
 * ignores `;suffix` on a segment and decodes `%2F`/`%5C`, so such a path would reach a route the
 * string checks here (ownership, owner-only, event filtering) did not see; no client needs them.
 */
export function ambiguousPath(path: string): string | null {
  if (path.includes('//')) return 'empty path segment (//)'
  if (path.includes(';')) return 'semicolon in path'
  if (/%2f|%5c/i.test(path)) return 'encoded slash in path'
  return null
}
