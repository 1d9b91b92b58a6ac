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
  const url = new URL(baseUrl + path + (search === '' || search === '?' ? `?${pinned}` : ''))
  // URL parsing resolves `..` and `%2e%2e`; a path that climbs above the base is refused.
  const basePath = basePathOf(baseUrl)
  if (basePath && url.pathname !== basePath && !url.pathname.startsWith(basePath + '/')) return null
  if (search === '' || search === '?') return url
  const params = new URLSearchParams(search)
  // Compare decoded, case-insensitive key names so `Directory`, `%64irectory` or `directory[]` cannot slip through.
  for (const key of [...new Set(params.keys())]) {
    const normal = key.toLowerCase().replace(/\[\]$/, '')
    if (PINNED_KEYS.includes(normal) || DROPPED_KEYS.includes(normal)) params.delete(key)
  }
  params.set('directory', directory)
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
  const match = /^\/(?:experimental\/|api\/)?session\/([^/?#]+)/.exec(rest)
  if (!match) return null
  let id: string
  try {
    id = decodeURIComponent(match[1]!)
  } catch {
    return null
  }
  return id === 'status' || id === 'active' ? null : id
}
