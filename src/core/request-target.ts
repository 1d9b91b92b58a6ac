/**
 * Where a request goes: its path, found without parsing the URL (most routes never need the URL
 * object), and the refusals of targets that do not name a resource (not a URL, dot segments).
 * @module
 */
import { coreError } from './core-errors.ts'

/** A request's path, with its parsed URL built only if something asks for it. */
export interface Where {
  pathname: string
  url(): URL
}

/** {@link locate}'s answer for a path with dot segments: refused before routing. */
export const DOT_SEGMENTS = 'dot-segments' as const

/** True for `.` and `..`, the segments the URL parser would resolve against their parent. */
const isDotSegment = (segment: string): boolean => segment === '.' || segment === '..'

/**
 * True when a path has a `.` or `..` segment, spelled literally or percent-encoded (`%2e%2e`,
 * `.%2E`). The URL parser would resolve it against the parent, so `/objects/x/versions/%2e%2e`
 * would route to the object itself. Bun resolves them before the request reaches us (its
 * `request.url` is already parsed); Deno and in-process callers hand them over as sent.
 */
function hasDotSegment(pathname: string): boolean {
  if (!pathname.includes('.') && !pathname.includes('%2')) return false
  return pathname.split(/[/\\]/).some((segment) => segment.length <= 6 && isDotSegment(segment.replace(/%2e/gi, '.')))
}

/**
 * Finds the path of an absolute request URL by index arithmetic; the URL object is made lazily.
 * Returns null for anything that is not an absolute http(s) URL the URL parser accepts: with an
 * invalid Host header Bun hands over the raw request target instead, where a `://` inside the path
 * or query would otherwise be taken for the scheme's and another route's path read after it.
 */
export function locate(href: string): Where | typeof DOT_SEGMENTS | null {
  const authority = href.startsWith('http://') ? 7 : href.startsWith('https://') ? 8 : -1
  if (authority < 0) return null
  const slash = href.indexOf('/', authority)
  let end = href.length
  const query = href.indexOf('?', slash < 0 ? authority : slash)
  if (query >= 0) end = query
  const hash = href.indexOf('#', slash < 0 ? authority : slash)
  if (hash >= 0 && hash < end) end = hash
  let parsed: URL | undefined
  const url = () => (parsed ??= new URL(href))
  const pathname = slash >= 0 && slash < end ? href.slice(slash, end) : ''
  if (hasDotSegment(pathname)) return DOT_SEGMENTS
  // Anything unusual (no path, backslashes) takes the URL parser's normalisation.
  if (pathname === '' || pathname.includes('\\')) {
    try {
      return { pathname: url().pathname, url }
    } catch {
      return null
    }
  }
  return { pathname, url }
}

/** Stands in for the location of a request whose target is not a URL (see {@link locate}). */
export const NOWHERE: Where = {
  pathname: '(invalid request target)',
  url: () => {
    throw invalidTarget()
  },
}

/** A rewritten URL's location (the rewrite only shortens a path that already passed {@link locate}). */
export const located = (where: ReturnType<typeof locate>): Where => (where && where !== DOT_SEGMENTS ? where : NOWHERE)

/** 400 for a path with a dot segment. */
export const dotSegments = () =>
  coreError('invalid_path', 'The request path has a "." or ".." segment (also when percent-encoded)')

/** 400 for a request target that is not a URL. */
export const invalidTarget = () =>
  coreError('invalid_request_target', 'The request target is not a valid URL (check the Host header)')

/**
 * Decodes params, or returns null when one does not name a resource once decoded: a malformed
 * escape, or a dot segment (`%2e%2e` is `..`, `a%2F..` climbs out of `a`), which a handler joining
 * the id into a path or URL would resolve against its parent.
 */
export function decodeParams(raw: Record<string, string>): Record<string, string> | null {
  const out: Record<string, string> = {}
  for (const key in raw) {
    const value = raw[key]!
    if (!value.includes('%')) {
      out[key] = value
      continue
    }
    let decoded: string
    try {
      decoded = decodeURIComponent(value)
    } catch {
      return null
    }
    // An encoded slash can be part of a name (`%40acme%2Fextra` is the npm package @acme/extra);
    // a dot segment never is.
    if (decoded.split(/[/\\]/).some(isDotSegment)) return null
    out[key] = decoded
  }
  return out
}
