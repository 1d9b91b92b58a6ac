/**
 * The route table: compiles route patterns and finds the route for a method and path.
 *
 * Why our own instead of itty-router: we used itty only as a pattern compiler and then read its
 * internal `routes` tuples to dispatch ourselves (its `fetch` parses the URL and query on every
 * call and awaits each handler, about a third of a parameterised read). Reading a library's
 * internals breaks silently on upgrade, and what we need is small: compile each pattern once and
 * match in registration order. The pattern syntax stays the one the route declarations are written
 * in (itty's documented syntax, kept so no declaration changes): `:name` is one segment, `:name+`
 * the rest of the path (one segment or more), `*` anything, repeated slashes collapse and
 * trailing slashes are ignored. `tests/dispatch-check.ts` compares every real table with itty's
 * own first match, through its documented API.
 *
 * Matching is first-match in registration order, made cheap two ways: a path without parameters
 * is found by two Map lookups, and pattern routes are grouped in buckets by their literal
 * segments, so a request only tries the regexes of routes that share its literal segments.
 *
 * A route may serve `subroutes` (`RouteSpec.subroutes`): they get a table of their own, built when
 * the route first matches, and the first of them that matches is the match.
 * @module
 */

/** One compiled route of the table. */
export interface CompiledRoute<R> {
  method: string
  /** The declared pattern, e.g. `/v1/members/:memberId`. */
  path: string
  regex: RegExp
  route: R
}

/** A match: the route and its raw (still percent-encoded) params; `params` is null for a literal path. */
export interface RouteMatch<R> {
  route: R
  params: Record<string, string> | null
}

/** The compiled table of a surface. */
export interface RouteTable<R = unknown> {
  /** Every route in registration order (the record tests compare with the document). */
  readonly routes: ReadonlyArray<CompiledRoute<R>>
  /** The first route in registration order that matches, or null. */
  match(method: string, pathname: string): RouteMatch<R> | null
  /** The methods some route answers for this path (HEAD with GET), for 405's `Allow`. */
  allowed(pathname: string): string[]
}

/** Compiles a declared pattern to the regex that matches request paths (named groups are params). */
export function compilePattern(path: string): RegExp {
  const collapsed = path.replace(/\/+(\/|$)/g, '$1')
  const source = collapsed
    .replace(/(\/?\.?):(\w+)\+/g, '($1(?<$2>[^]+))')
    .replace(/(\/?\.?):(\w+)/g, '($1(?<$2>[^$1/]+?))')
    .replace(/\./g, '\\.')
    .replace(/(\/?)\*/g, '($1.*)?')
  return new RegExp(`^${source}/*$`)
}

/** The first segment of a declared path, as its compiled pattern sees it (repeated slashes collapsed). */
const firstSegment = (path: string): string => path.replace(/\/+(\/|$)/g, '$1').split('/')[1] ?? ''

const isLiteral = (segment: string | undefined): segment is string => segment !== undefined && !/[:*]/.test(segment)

/**
 * The bucket of a route pattern: its first and third segments when both are literal. A greedy
 * second segment (`*`, `:name+`) can cover any number of request segments, so the third request
 * segment says nothing and the route is filed under its first segment alone.
 */
function bucketOfPattern(path: string): string {
  const segments = path.split('/').filter(Boolean)
  if (!isLiteral(segments[0])) return '*'
  const greedy = segments[1] !== undefined && (segments[1].includes('*') || segments[1].endsWith('+'))
  return !greedy && isLiteral(segments[2]) ? `${segments[0]}/${segments[2]}` : segments[0]
}

/** The buckets a request path may match, most specific first (index arithmetic: this runs per request). */
function bucketsOfPath(pathname: string): string[] {
  let start = 0
  while (pathname.charCodeAt(start) === 47) start++
  if (start >= pathname.length) return ['*']
  const end0 = pathname.indexOf('/', start)
  const first = end0 < 0 ? pathname.slice(start) : pathname.slice(start, end0)
  if (end0 < 0) return [first, '*']
  const end1 = pathname.indexOf('/', end0 + 1)
  if (end1 < 0 || end1 + 1 >= pathname.length) return [first, '*']
  const end2 = pathname.indexOf('/', end1 + 1)
  const third = end2 < 0 ? pathname.slice(end1 + 1) : pathname.slice(end1 + 1, end2)
  return third ? [`${first}/${third}`, first, '*'] : [first, '*']
}

/** What the table needs of a route declaration. */
export interface Routable<R> {
  method: string
  path: string
  subroutes?: () => ReadonlyArray<R>
}

const GREEDY_TAIL = /\/:\w+\+$/

/**
 * `route`'s subroutes, refused unless the route matches every path they match, so that taking the
 * first subroute that matches is first match over the subroutes registered just before the route:
 * same method, and each path under the route's own before its greedy tail (`/sidecar/:path+` serves
 * `/sidecar/global/health`), starting there with a literal segment.
 */
function subroutesOf<R extends Routable<R>>(route: R): ReadonlyArray<R> {
  const prefix = route.path.slice(0, GREEDY_TAIL.exec(route.path)!.index + 1)
  const subroutes = route.subroutes!()
  for (const sub of subroutes) {
    if (sub.method !== route.method || !sub.path.startsWith(prefix) || !/^[^/:*]/.test(sub.path.slice(prefix.length)))
      throw new Error(`${sub.method} ${sub.path} cannot be a subroute of ${route.method} ${route.path}`)
    if (sub.subroutes) throw new Error(`${sub.method} ${sub.path}: a subroute cannot serve subroutes`)
  }
  return subroutes
}

/** Builds the table for routes given in registration order. */
export function createRouteTable<R extends Routable<R>>(routes: ReadonlyArray<R>): RouteTable<R> {
  const compiled: Array<CompiledRoute<R>> = []
  // Param-less routes by path, then method. A literal path that an earlier pattern already matches
  // belongs to that pattern (registration order), so it goes to the buckets instead.
  const exact = new Map<string, Map<string, R>>()
  // Within a bucket registration order holds; across buckets the more specific is tried first,
  // which agrees with first-match unless an earlier, less specific pattern overlaps a later one
  // (tests/dispatch-check.ts compares both on every real route table).
  const buckets = new Map<string, Array<CompiledRoute<R>>>()
  for (const route of routes) {
    if (route.subroutes && !GREEDY_TAIL.test(route.path))
      throw new Error(`${route.method} ${route.path}: only a route ending in /:name+ can serve subroutes`)
    const entry: CompiledRoute<R> = { method: route.method, path: route.path, regex: compilePattern(route.path), route }
    // Only a literal path can be shadowed, and only by a pattern that can begin with its first segment.
    // Testing just those keeps a start from running (and so compiling) nearly every pattern's regex.
    const literal = !/[:*]/.test(route.path)
    const first = literal ? firstSegment(route.path) : ''
    const shadowed =
      literal &&
      compiled.some((c) => {
        if (c.method !== route.method) return false
        const start = firstSegment(c.path)
        return (start === first || /[:*]/.test(start)) && c.regex.test(route.path)
      })
    compiled.push(entry)
    if (literal && !shadowed) {
      const key = route.path.replace(/\/+(\/|$)/g, '$1') || '/'
      let methods = exact.get(key)
      if (!methods) exact.set(key, (methods = new Map()))
      if (!methods.has(route.method)) methods.set(route.method, route)
      continue
    }
    const key = bucketOfPattern(route.path)
    let bucket = buckets.get(key)
    if (!bucket) buckets.set(key, (bucket = []))
    bucket.push(entry)
  }

  // Patterns end in `/*$`, so `/health/` is `/health`; the exact map keys have no trailing slash.
  const exactRoute = (pathname: string, method: string): R | undefined => {
    const found = exact.get(pathname)?.get(method)
    if (found || pathname.length < 2 || pathname.charCodeAt(pathname.length - 1) !== 47) return found
    let end = pathname.length - 1
    while (end > 1 && pathname.charCodeAt(end - 1) === 47) end--
    return exact.get(pathname.slice(0, end))?.get(method)
  }

  const served = new Map<R, RouteTable<R>>()
  const narrowed = (route: R, method: string, pathname: string): RouteMatch<R> | null => {
    let table = served.get(route)
    if (!table) served.set(route, (table = createRouteTable(subroutesOf(route))))
    return table.match(method, pathname)
  }

  return {
    routes: compiled,
    match(method, pathname) {
      // A route serving subroutes ends in a greedy parameter, so it is never in the exact map.
      const direct = exactRoute(pathname, method)
      if (direct) return { route: direct, params: null }
      for (const key of bucketsOfPath(pathname)) {
        const bucket = buckets.get(key)
        if (!bucket) continue
        for (const entry of bucket) {
          if (entry.method !== method) continue
          const found = entry.regex.exec(pathname)
          if (!found) continue
          const match = { route: entry.route, params: (found.groups ?? {}) as Record<string, string> }
          return entry.route.subroutes ? (narrowed(entry.route, method, pathname) ?? match) : match
        }
      }
      return null
    },
    allowed(pathname) {
      const methods = new Set<string>()
      for (const c of compiled) if (c.regex.test(pathname)) methods.add(c.method)
      if (methods.has('GET')) methods.add('HEAD')
      return [...methods]
    },
  }
}
