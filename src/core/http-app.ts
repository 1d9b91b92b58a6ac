/**
 * Composes a surface's route declarations into one Fetch handler on itty-router.
 *
 * Cross-cutting behaviour lives here once for both surfaces: request ids, CORS, HEAD-as-GET,
 * 404/405, param decoding, auth, body and query validation, error shaping, and the request log.
 * Handlers only parse, call domain code, and shape a response.
 * @module
 */
import { Router, type RouterType } from 'itty-router'
import type * as v from 'valibot'
import { applyCors, isPreflight, preflightResponse, type CorsPolicy } from './cors.ts'
import { ApiError, errorResponse, errors, PreEncodedJson } from './errors.ts'
import { randomBytes } from 'node:crypto'
import { bindPeer, type PeerLookup } from './peer-address.ts'
import { bindRequestedPath } from './requested-path.ts'
import type { Logger } from './logger.ts'
import { isRawBody, type AnyRoute } from './route.ts'
import { parseWith, queryObject, readJsonObject, type ValidationPolicy } from './validation.ts'

/** How a surface authenticates requests and documents that. */
export interface SurfaceAuth<Rule, Principal> {
  /** Resolves the caller for a route's rule, or throws an ApiError (401/403/429). */
  authenticate(request: Request, rule: Rule): Principal | Promise<Principal>
  /** OpenAPI security requirements for a rule; `[]` means public. */
  security(rule: Rule): Array<Record<string, string[]>>
  /** Error statuses a rule can produce, documented on every route that uses it. */
  statuses(rule: Rule): number[]
}

/** Options for {@link createHttpApp}. */
export interface HttpAppOptions<Rule, Principal> {
  routes: ReadonlyArray<AnyRoute<Rule, Principal>>
  auth: SurfaceAuth<Rule, Principal>
  validation: ValidationPolicy
  cors: CorsPolicy
  logger: Logger
  /** Log one line per request (default off: at high request rates the log costs about a third of the throughput). */
  requestLog?: boolean
  /**
   * Maps incoming URLs under `prefix` onto the route table (e.g. the `/w/:id/...` mount), or
   * returns null to leave them. Runs before routing so aliases need no duplicate declarations.
   */
  rewrite?: { prefix: string; map: (url: URL) => URL | null }
}

/** A composed surface. */
export interface HttpApp {
  fetch(request: Request, peer?: PeerLookup): Response | Promise<Response>
  /** The underlying itty router, exposed so tests can compare registered routes with the document. */
  readonly router: RouterType
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Header names that must never appear in a request log line. Exported for tests. */
export const NEVER_LOGGED_HEADERS = ['authorization', 'x-api-key', 'x-service-host-token', 'cookie']

/** Returns a response whose headers can be changed (fetch() responses have immutable headers). */
function writable(response: Response): Response {
  try {
    response.headers.append('vary', 'Origin')
    return response
  } catch {
    return new Response(response.body, response)
  }
}

/** The client's `X-Request-Id` when it is a safe token, else a fresh one. */
function requestIdOf(request: Request): string {
  const offered = request.headers.get('x-request-id')
  return offered && REQUEST_ID.test(offered) ? offered : nextRequestId()
}

/**
 * Gives a response not built by the pipeline (handler-made, errors, the sidecar proxy) the request
 * id and nosniff. Both are checked apart: an upstream that echoes our id must still get nosniff.
 */
function stampForeign(response: Response, requestId: string): Response {
  const headers = response.headers
  if (headers.get('x-request-id') === requestId && headers.get('x-content-type-options') === 'nosniff') return response
  let out = response
  try {
    headers.set('x-request-id', requestId)
  } catch {
    // fetch() responses (the sidecar proxy) have immutable headers.
    out = new Response(response.body, response)
    out.headers.set('x-request-id', requestId)
  }
  out.headers.set('x-content-type-options', 'nosniff')
  return out
}

/** True for `.` and `..`, the segments the URL parser would resolve against their parent. */
const isDotSegment = (segment: string): boolean => segment === '.' || segment === '..'

/**
 * Decodes params, or returns null when one does not name a resource once decoded: a malformed
 * escape, or a dot segment (`%2e%2e` is `..`, `a%2F..` climbs out of `a`), which a handler joining
 * the id into a path or URL would resolve against its parent.
 */
function decodeParams(raw: Record<string, string>): Record<string, string> | null {
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

function successStatus(route: AnyRoute): number {
  const codes = Object.keys(route.responses)
    .map(Number)
    .filter((s) => s >= 200 && s < 300)
    .sort((a, b) => a - b)
  return codes[0] ?? 200
}

// Request ids: a per-process random prefix plus a counter. Unique without a random draw per
// request (the cost showed in profiles); same 26-character shape as other ids.
// The counter runs over [36^9, 36^10), where base 36 always has exactly ten digits, so no padding.
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`
const COUNTER_FLOOR = 101_559_956_668_416 // 36^9
const COUNTER_CEILING = 3_656_158_440_062_976 // 36^10
let requestCounter = COUNTER_FLOOR
function nextRequestId(): string {
  if (++requestCounter >= COUNTER_CEILING) requestCounter = COUNTER_FLOOR
  return REQUEST_ID_PREFIX + requestCounter.toString(36)
}

/** A request's path, with its parsed URL built only if something asks for it (most routes never do). */
interface Where {
  pathname: string
  url(): URL
}

/**
 * Finds the path of an absolute request URL by index arithmetic; the URL object is made lazily.
 * Returns null for anything that is not an absolute http(s) URL the URL parser accepts: with an
 * invalid Host header Bun hands over the raw request target instead, where a `://` inside the path
 * or query would otherwise be taken for the scheme's and another route's path read after it.
 */
function locate(href: string): Where | typeof DOT_SEGMENTS | null {
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

/** {@link locate}'s answer for a path with dot segments: refused before routing. */
const DOT_SEGMENTS = 'dot-segments' as const

/** A rewritten URL's location (the rewrite only shortens a path that already passed {@link locate}). */
const located = (where: ReturnType<typeof locate>): Where => (where && where !== DOT_SEGMENTS ? where : NOWHERE)

/** Stands in for the location of a request whose target is not a URL (see {@link locate}). */
const NOWHERE: Where = {
  pathname: '(invalid request target)',
  url: () => {
    throw invalidTarget()
  },
}
const dotSegments = () =>
  errors.badRequest('invalid_path', 'The request path has a "." or ".." segment (also when percent-encoded)')
const invalidTarget = () =>
  errors.badRequest('invalid_request_target', 'The request target is not a valid URL (check the Host header)')

const isLiteral = (segment: string | undefined): segment is string => segment !== undefined && !/[:*]/.test(segment)

/**
 * The dispatch bucket of a route pattern: its first and third segments when both are literal. A
 * greedy second segment (`*`, `:name+`) can cover any number of request segments, so the third
 * request segment says nothing and the route is filed under its first segment alone.
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

/** A route as itty-router compiled it: its method and pattern regex, plus our declaration. */
interface Compiled<Rule, Principal> {
  method: string
  regex: RegExp
  route: AnyRoute<Rule, Principal>
}

const JSON_TYPE = 'application/json; charset=utf-8'

/** Builds the Fetch handler for a surface. */
export function createHttpApp<Rule, Principal>(options: HttpAppOptions<Rule, Principal>): HttpApp {
  const router = Router()
  const { auth, validation, logger } = options
  const compiled: Array<Compiled<Rule, Principal>> = []
  // Pattern routes grouped by their literal segments: a request only tests the regexes of routes
  // that share its literal segments instead of scanning the whole table. Within a bucket itty's
  // registration order holds; across buckets the more specific is tried first, which agrees with
  // itty unless an earlier, less specific pattern overlaps a later one (tests/dispatch-check.ts
  // compares both on every real route table).
  const buckets = new Map<string, Array<Compiled<Rule, Principal>>>()
  // Param-less routes are found by two Map lookups (path, then method) instead of a regex scan.
  const exact = new Map<string, Map<string, AnyRoute<Rule, Principal>>>()
  const statuses = new Map(options.routes.map((route) => [route, successStatus(route)]))

  // The last response built here with the request id already in its headers. The final step
  // compares identity instead of reading the header back (a header read allocates the Headers
  // wrapper); when requests interleave the comparison merely falls back to that read.
  let stamped: Response | undefined

  // Responses we build carry the request id and nosniff from construction; setting headers on a
  // finished Response costs more than passing them in, and so does an explicit `status: 200`.
  const jsonOut = (text: BodyInit, status: number, requestId: string): Response => {
    const headers = { 'content-type': JSON_TYPE, 'x-request-id': requestId, 'x-content-type-options': 'nosniff' }
    return (stamped = status === 200 ? new Response(text, { headers }) : new Response(text, { status, headers }))
  }

  const shape = (route: AnyRoute<Rule, Principal>, result: unknown, requestId: string): Response => {
    if (result instanceof Response) return result
    const status = statuses.get(route)!
    if (result instanceof PreEncodedJson) return jsonOut(result.body as BodyInit, status, requestId)
    if (result === undefined || status === 204) {
      return (stamped = new Response(null, {
        status,
        headers: { 'x-request-id': requestId, 'x-content-type-options': 'nosniff' },
      }))
    }
    return jsonOut(JSON.stringify(result), status, requestId)
  }

  // The invoke chain stays synchronous until something really is asynchronous (a credential
  // lookup, a body read, an async handler): each avoided await is a promise and a microtask saved
  // on every request.
  const run = (
    route: AnyRoute<Rule, Principal>,
    request: Request,
    where: Where,
    params: Record<string, string>,
    principal: Principal,
    requestId: string,
  ): Response | Promise<Response> => {
    const query = route.query
      ? parseWith(
          route.query as v.GenericSchema,
          queryObject(where.url()),
          validation.status,
          validation.queryCode,
          'query parameter',
        )
      : {}
    const call = (body: unknown) => {
      const context = {
        request,
        params,
        query,
        body,
        principal,
        requestId,
        log: logger,
        get url() {
          return where.url()
        },
      }
      const result = route.handler(context as never)
      return result instanceof Promise
        ? result.then((value) => shape(route, value, requestId))
        : shape(route, result, requestId)
    }
    if (route.body && !isRawBody(route.body)) {
      return readJsonObject(request, validation).then((raw) =>
        call(parseWith(route.body as v.GenericSchema, raw, validation.status, validation.bodyCode, 'request body')),
      )
    }
    return call(undefined)
  }

  const invoke = (
    route: AnyRoute<Rule, Principal>,
    request: Request,
    rawParams: Record<string, string> | null,
    requestId: string,
    where: Where,
  ): Response | Promise<Response> => {
    let params: Record<string, string> = {}
    if (rawParams) {
      const decoded = decodeParams(rawParams)
      if (!decoded) throw errors.notFound()
      params = (
        route.params ? parseWith(route.params as v.GenericSchema, decoded, 404, 'not_found', 'path parameter') : decoded
      ) as Record<string, string>
    }
    const principal = auth.authenticate(request, route.auth)
    return principal instanceof Promise
      ? principal.then((p) => run(route, request, where, params, p, requestId))
      : run(route, request, where, params, principal, requestId)
  }

  // itty-router is the route table of record: it compiles every pattern (and tests compare its
  // table with the document). Dispatch applies its compiled regexes directly, with itty's rules
  // (registration order, method match, named groups as params) but without its per-call URL and
  // query parsing and awaited handler loop, which cost about a third of a parameterised read.
  for (const route of options.routes) {
    router[route.method.toLowerCase() as 'get'](route.path, () => undefined)
    const entry: Compiled<Rule, Principal> = {
      method: route.method,
      regex: router.routes[router.routes.length - 1]![1] as RegExp,
      route,
    }
    // A literal path that an earlier pattern already matches belongs to that pattern in itty's
    // order; it then goes to the buckets, where registration order is kept.
    const shadowed = compiled.some((c) => c.method === route.method && c.regex.test(route.path))
    compiled.push(entry)
    if (!/[:*]/.test(route.path) && !shadowed) {
      let methods = exact.get(route.path)
      if (!methods) exact.set(route.path, (methods = new Map()))
      if (!methods.has(route.method)) methods.set(route.method, route)
      continue
    }
    const key = bucketOfPattern(route.path)
    let bucket = buckets.get(key)
    if (!bucket) buckets.set(key, (bucket = []))
    bucket.push(entry)
  }

  // itty's patterns end in `/*$`, so `/health/` is `/health`; the exact map keys have no slash.
  const exactRoute = (pathname: string, method: string): AnyRoute<Rule, Principal> | undefined => {
    const found = exact.get(pathname)?.get(method)
    if (found || pathname.length < 2 || pathname.charCodeAt(pathname.length - 1) !== 47) return found
    let end = pathname.length - 1
    while (end > 1 && pathname.charCodeAt(end - 1) === 47) end--
    return exact.get(pathname.slice(0, end))?.get(method)
  }

  const allowedMethods = (pathname: string): string[] => {
    const methods = new Set<string>()
    for (const c of compiled) if (c.regex.test(pathname)) methods.add(c.method)
    if (methods.has('GET')) methods.add('HEAD')
    return [...methods]
  }

  const failure = (error: unknown, request: Request, requestId: string): Response => {
    if (error instanceof ApiError) return errorResponse(error)
    if (request.signal.aborted) return errorResponse(new ApiError(499, 'request_aborted', 'Client closed the request'))
    logger.error('unhandled error', {
      requestId,
      error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
    })
    return errorResponse(errors.internal())
  }

  const unmatched = (request: Request, where: Where): Response => {
    const allow = allowedMethods(where.pathname)
    if (allow.length > 0) {
      return errorResponse(
        new ApiError(405, 'method_not_allowed', `Method ${request.method} not allowed`, {
          headers: { allow: [...allow, 'OPTIONS'].join(', ') },
        }),
      )
    }
    return errorResponse(errors.notFound())
  }

  const routeRequest = (
    request: Request,
    method: string,
    requestId: string,
    where: Where,
  ): Response | Promise<Response> => {
    const direct = exactRoute(where.pathname, method)
    if (direct) return invoke(direct, request, null, requestId, where)
    for (const key of bucketsOfPath(where.pathname)) {
      const bucket = buckets.get(key)
      if (!bucket) continue
      for (const entry of bucket) {
        if (entry.method !== method) continue
        const match = entry.regex.exec(where.pathname)
        if (match) return invoke(entry.route, request, (match.groups ?? {}) as Record<string, string>, requestId, where)
      }
    }
    return unmatched(request, where)
  }

  const dispatch = (
    request: Request,
    method: string,
    requestId: string,
    where: Where,
  ): Response | Promise<Response> => {
    try {
      const result = routeRequest(request, method, requestId, where)
      return result instanceof Promise ? result.catch((error) => failure(error, request, requestId)) : result
    } catch (error) {
      return failure(error, request, requestId)
    }
  }

  const rewrite = options.rewrite
  const corsActive = options.cors.origins.length > 0

  /** Everything after dispatch: HEAD bodies, CORS, the request id on foreign responses, the log. */
  const finish = (
    incoming: Request,
    where: Where,
    requestId: string,
    kind: 'routed' | 'head' | 'preflight',
    started: number,
    produced: Response,
  ): Response => {
    let response = produced
    // Cancel the GET body a HEAD does not send, so a proxied or streamed body releases its source.
    if (kind === 'head') {
      response.body?.cancel().catch(() => {})
      response = new Response(null, response)
    }
    if (kind !== 'preflight' && corsActive && incoming.headers.has('origin'))
      response = applyCors(options.cors, incoming, writable(response))
    if (response !== stamped) response = stampForeign(response, requestId)
    if (options.requestLog) {
      logger.access({
        method: incoming.method,
        path: where.pathname,
        status: response.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        requestId,
      })
    }
    return response
  }

  // Not an async function: a route that answers synchronously (health, cached reads) returns its
  // Response directly, and the listener skips a promise per request.
  const fetch = (incoming: Request, peer?: PeerLookup): Response | Promise<Response> => {
    try {
      return handle(incoming, peer)
    } catch (error) {
      // Only a defect can land here (routing errors are shaped in dispatch); answer like one, with
      // the headers every response carries.
      const requestId = requestIdOf(incoming)
      const response = failure(error, incoming, requestId)
      response.headers.set('x-request-id', requestId)
      response.headers.set('x-content-type-options', 'nosniff')
      return response
    }
  }

  const handle = (incoming: Request, peer?: PeerLookup): Response | Promise<Response> => {
    const started = options.requestLog ? performance.now() : 0
    const requestId = requestIdOf(incoming)
    const where = locate(incoming.url)
    if (!where) return finish(incoming, NOWHERE, requestId, 'routed', started, errorResponse(invalidTarget()))
    if (where === DOT_SEGMENTS)
      return finish(incoming, NOWHERE, requestId, 'routed', started, errorResponse(dotSegments()))
    const method = incoming.method
    if (method === 'OPTIONS' && isPreflight(incoming))
      return finish(incoming, where, requestId, 'preflight', started, preflightResponse(options.cors, incoming))
    const rewritten = rewrite && where.pathname.startsWith(rewrite.prefix) ? rewrite.map(where.url()) : null
    const isHead = method === 'HEAD'
    let request = incoming
    if (isHead || rewritten) {
      request = new Request(rewritten ?? where.url(), {
        method: isHead ? 'GET' : method,
        headers: incoming.headers,
        body: isHead ? null : incoming.body,
        signal: incoming.signal,
        duplex: 'half',
      } as RequestInit)
    }
    if (peer) bindPeer(request, peer)
    if (rewritten) bindRequestedPath(request, where.pathname)
    const dispatched = dispatch(
      request,
      isHead ? 'GET' : method,
      requestId,
      rewritten ? located(locate(rewritten.href)) : where,
    )
    const kind = isHead ? 'head' : 'routed'
    return dispatched instanceof Promise
      ? dispatched.then((response) => finish(incoming, where, requestId, kind, started, response))
      : finish(incoming, where, requestId, kind, started, dispatched)
  }

  return { fetch, router }
}

/** The documented error statuses for a route: its own plus those implied by auth, inputs and 500. */
export function impliedErrorStatuses<Rule>(
  route: AnyRoute<Rule>,
  auth: SurfaceAuth<Rule, unknown>,
  validation: ValidationPolicy,
): number[] {
  const statuses = new Set<number>(route.errors ?? [])
  for (const s of auth.statuses(route.auth)) statuses.add(s)
  if (route.body && !isRawBody(route.body)) {
    statuses.add(400)
    statuses.add(validation.status)
    statuses.add(413)
  }
  // The listener's guard (request-guard.ts) answers before routing: 408 `request_timeout` when a
  // body stops arriving, 503 `server_busy` over the request caps (never for /health).
  if (route.body) statuses.add(408)
  if (route.path !== '/health') statuses.add(503)
  if (route.query) statuses.add(validation.status)
  if (route.path.includes(':')) statuses.add(404)
  statuses.add(500)
  for (const s of Object.keys(route.responses).map(Number)) statuses.delete(s)
  return [...statuses].sort((a, b) => a - b)
}
