/**
 * Composes a surface's route declarations into one Fetch handler on itty-router.
 *
 * Cross-cutting behaviour lives here once for both surfaces: request ids, CORS, HEAD-as-GET,
 * 404/405, param decoding, auth, body and query validation, error shaping, and the request log.
 * Handlers only parse, call domain code, and shape a response.
 * @module
 */
import { Router, type RouterType } from 'itty-router'
import * as v from 'valibot'
import { applyCors, isPreflight, preflightResponse, type CorsPolicy } from './cors.ts'
import { ApiError, errorResponse, errors, PreEncodedJson } from './errors.ts'
import { randomBytes } from 'node:crypto'
import { bindPeer, type PeerLookup } from './peer-address.ts'
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
  fetch(request: Request, peer?: PeerLookup): Promise<Response>
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

function decodeParams(raw: Record<string, string>): Record<string, string> | null {
  const out: Record<string, string> = {}
  for (const key in raw) {
    const value = raw[key]!
    if (!value.includes('%')) { out[key] = value; continue }
    try {
      out[key] = decodeURIComponent(value)
    } catch {
      return null
    }
  }
  return out
}

function successStatus(route: AnyRoute): number {
  const codes = Object.keys(route.responses).map(Number).filter((s) => s >= 200 && s < 300).sort((a, b) => a - b)
  return codes[0] ?? 200
}

// Request ids: a per-process random prefix plus a counter. Unique without a random draw per
// request (the cost showed in profiles); same 26-character shape as other ids.
const REQUEST_ID_PREFIX = randomBytes(8).toString('hex')
let requestCounter = 0
function nextRequestId(): string {
  requestCounter = (requestCounter + 1) % 3_656_158_440_062_976 // 36^10
  return `req_${REQUEST_ID_PREFIX}${requestCounter.toString(36).padStart(10, '0')}`
}

type Routed = Request & { params?: Record<string, string> }

/** A request's path, with its parsed URL built only if something asks for it (most routes never do). */
interface Where {
  pathname: string
  url(): URL
}

/** Finds the path of an absolute request URL by index arithmetic; the URL object is made lazily. */
function locate(href: string): Where {
  const scheme = href.indexOf('://')
  const slash = href.indexOf('/', scheme < 0 ? 0 : scheme + 3)
  let end = href.length
  const query = href.indexOf('?', slash < 0 ? 0 : slash)
  if (query >= 0) end = query
  const hash = href.indexOf('#', slash < 0 ? 0 : slash)
  if (hash >= 0 && hash < end) end = hash
  let parsed: URL | undefined
  const url = () => (parsed ??= new URL(href))
  // Anything unusual (no path, dot segments, backslashes) takes the URL parser's normalisation.
  if (slash < 0) return { pathname: url().pathname, url }
  const pathname = href.slice(slash, end)
  if (pathname.includes('/.') || pathname.includes('\\')) return { pathname: url().pathname, url }
  return { pathname, url }
}

const isLiteral = (segment: string | undefined): segment is string => segment !== undefined && !/[:*]/.test(segment)

/** The dispatch bucket of a route pattern: its first and third segments when both are literal. */
function bucketOfPattern(path: string): string {
  const segments = path.split('/').filter(Boolean)
  if (!isLiteral(segments[0])) return '*'
  return isLiteral(segments[2]) ? `${segments[0]}/${segments[2]}` : segments[0]
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

/** Builds the Fetch handler for a surface. */
export function createHttpApp<Rule, Principal>(options: HttpAppOptions<Rule, Principal>): HttpApp {
  const router = Router()
  const { auth, validation, logger } = options
  const patterns: Array<{ method: string; regex: RegExp }> = []
  // Dispatch routers, one per bucket of literal path segments: a request only tests the regexes of
  // routes that share its literal segments instead of scanning the whole table.
  const buckets = new Map<string, RouterType>()
  // Param-less routes are found by one Map lookup instead of a regex scan; they stay registered
  // with itty too, which remains the route table of record (and the fallback).
  const exact = new Map<string, AnyRoute<Rule, Principal>>()
  const contexts = new WeakMap<Request, { where: Where; requestId: string }>()
  const statuses = new Map(options.routes.map((route) => [route, successStatus(route)]))

  // Responses we build carry the request id and nosniff from construction; setting headers on a
  // finished Response costs more than passing them in (this path runs for every request).
  const jsonOut = (body: unknown, status: number, requestId: string): Response =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, 'x-content-type-options': 'nosniff' } })

  // The invoke chain stays synchronous until something really is asynchronous (a credential
  // lookup, a body read, an async handler): each avoided await is a promise and a microtask saved
  // on every request.
  const shape = (route: AnyRoute<Rule, Principal>, result: unknown, requestId: string): Response => {
    if (result instanceof Response) return result
    if (result instanceof PreEncodedJson) {
      return new Response(result.body as BodyInit, { status: statuses.get(route)!, headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, 'x-content-type-options': 'nosniff' } })
    }
    const status = statuses.get(route)!
    if (result === undefined || status === 204) return new Response(null, { status, headers: { 'x-request-id': requestId, 'x-content-type-options': 'nosniff' } })
    return jsonOut(result, status, requestId)
  }

  const run = (route: AnyRoute<Rule, Principal>, request: Request, where: Where, params: Record<string, string>, principal: Principal, requestId: string): Response | Promise<Response> => {
    const query = route.query ? parseWith(route.query as v.GenericSchema, queryObject(where.url()), validation.status, validation.queryCode, 'query parameter') : {}
    const call = (body: unknown) => {
      const context = { request, params, query, body, principal, requestId, log: logger, get url() { return where.url() } }
      const result = route.handler(context as never)
      return result instanceof Promise ? result.then((value) => shape(route, value, requestId)) : shape(route, result, requestId)
    }
    if (route.body && !isRawBody(route.body)) {
      return readJsonObject(request, validation).then((raw) => call(parseWith(route.body as v.GenericSchema, raw, validation.status, validation.bodyCode, 'request body')))
    }
    return call(undefined)
  }

  const invoke = (route: AnyRoute<Rule, Principal>, request: Request, rawParams: Record<string, string> | null, requestId: string, where: Where): Response | Promise<Response> => {
    let params: Record<string, string> = {}
    if (rawParams) {
      const decoded = decodeParams(rawParams)
      if (!decoded) throw errors.notFound()
      params = (route.params ? parseWith(route.params as v.GenericSchema, decoded, 404, 'not_found', 'path parameter') : decoded) as Record<string, string>
    }
    const principal = auth.authenticate(request, route.auth)
    return principal instanceof Promise
      ? principal.then((p) => run(route, request, where, params, p, requestId))
      : run(route, request, where, params, principal, requestId)
  }

  for (const route of options.routes) {
    const method = route.method.toLowerCase() as 'get'
    // The full router is the route table of record (tests compare it with the document).
    router[method](route.path, (request: Routed) => {
      const context = contexts.get(request)!
      return invoke(route, request, request.params ?? {}, context.requestId, context.where)
    })
    const last = router.routes[router.routes.length - 1]!
    patterns.push({ method: route.method, regex: last[1] as RegExp })
    const key = bucketOfPattern(route.path)
    let bucket = buckets.get(key)
    if (!bucket) buckets.set(key, (bucket = Router()))
    bucket[method](route.path, (request: Routed) => {
      const context = contexts.get(request)!
      return invoke(route, request, request.params ?? {}, context.requestId, context.where)
    })
    if (!/[:*]/.test(route.path)) exact.set(`${route.method} ${route.path}`, route)
  }

  const allowedMethods = (pathname: string): string[] => {
    const methods = new Set<string>()
    for (const p of patterns) if (p.regex.test(pathname)) methods.add(p.method)
    if (methods.has('GET')) methods.add('HEAD')
    return [...methods]
  }

  const failure = (error: unknown, request: Request, requestId: string): Response => {
    if (error instanceof ApiError) return errorResponse(error)
    if (request.signal.aborted) return errorResponse(new ApiError(499, 'request_aborted', 'Client closed the request'))
    logger.error('unhandled error', { requestId, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) })
    return errorResponse(errors.internal())
  }

  const unmatched = (request: Request, where: Where): Response => {
    const allow = allowedMethods(where.pathname)
    if (allow.length > 0) {
      return errorResponse(new ApiError(405, 'method_not_allowed', `Method ${request.method} not allowed`, { headers: { allow: [...allow, 'OPTIONS'].join(', ') } }))
    }
    return errorResponse(errors.notFound())
  }

  // Tries the buckets most specific first; chained promises rather than an async loop, because
  // this runs for every parameterised request and each async frame showed in profiles.
  const routeByPattern = (request: Request, requestId: string, where: Where): Promise<Response> => {
    contexts.set(request, { where, requestId })
    const keys = bucketsOfPath(where.pathname)
    const attempt = (index: number): Promise<Response> | Response => {
      for (let i = index; i < keys.length; i++) {
        const bucket = buckets.get(keys[i]!)
        if (bucket) return (bucket.fetch(request) as Promise<Response | undefined>).then((response) => response ?? attempt(i + 1))
      }
      return unmatched(request, where)
    }
    return Promise.resolve(attempt(0))
  }

  const dispatch = (request: Request, requestId: string, where: Where): Response | Promise<Response> => {
    try {
      const direct = exact.get(`${request.method} ${where.pathname}`)
      const result = direct ? invoke(direct, request, null, requestId, where) : routeByPattern(request, requestId, where)
      return result instanceof Promise ? result.catch((error) => failure(error, request, requestId)) : result
    } catch (error) {
      return failure(error, request, requestId)
    }
  }

  const rewrite = options.rewrite

  const fetch = async (incoming: Request, peer?: PeerLookup): Promise<Response> => {
    const started = performance.now()
    const offered = incoming.headers.get('x-request-id')
    const requestId = offered && REQUEST_ID.test(offered) ? offered : nextRequestId()
    const where = locate(incoming.url)
    let response: Response
    if (incoming.method === 'OPTIONS' && isPreflight(incoming)) {
      response = preflightResponse(options.cors, incoming)
    } else {
      const rewritten = rewrite && where.pathname.startsWith(rewrite.prefix) ? rewrite.map(where.url()) : null
      const isHead = incoming.method === 'HEAD'
      let request = incoming
      if (isHead || rewritten) {
        request = new Request(rewritten ?? where.url(), { method: isHead ? 'GET' : incoming.method, headers: incoming.headers, body: isHead ? null : incoming.body, signal: incoming.signal, duplex: 'half' } as RequestInit)
      }
      if (peer) bindPeer(request, peer)
      const dispatched = dispatch(request, requestId, rewritten ? locate(rewritten.href) : where)
      response = dispatched instanceof Promise ? await dispatched : dispatched
      // Cancel the GET body a HEAD does not send, so a proxied or streamed body releases its source.
      if (isHead) { response.body?.cancel().catch(() => {}); response = new Response(null, response) }
      if (options.cors.origins.length > 0 && incoming.headers.has('origin')) response = applyCors(options.cors, incoming, writable(response))
    }
    if (response.headers.get('x-request-id') !== requestId) {
      try {
        response.headers.set('x-request-id', requestId)
      } catch {
        // fetch() responses (the sidecar proxy) have immutable headers.
        response = new Response(response.body, response)
        response.headers.set('x-request-id', requestId)
      }
      response.headers.set('x-content-type-options', 'nosniff')
    }
    if (options.requestLog) {
      logger.access({ method: incoming.method, path: where.pathname, status: response.status, ms: Math.round((performance.now() - started) * 10) / 10, requestId })
    }
    return response
  }

  return { fetch, router }
}

/** The documented error statuses for a route: its own plus those implied by auth, inputs and 500. */
export function impliedErrorStatuses<Rule>(route: AnyRoute<Rule>, auth: SurfaceAuth<Rule, unknown>, validation: ValidationPolicy): number[] {
  const statuses = new Set<number>(route.errors ?? [])
  for (const s of auth.statuses(route.auth)) statuses.add(s)
  if (route.body && !isRawBody(route.body)) { statuses.add(400); statuses.add(validation.status); statuses.add(413) }
  if (route.query) statuses.add(validation.status)
  if (route.path.includes(':')) statuses.add(404)
  statuses.add(500)
  for (const s of Object.keys(route.responses).map(Number)) statuses.delete(s)
  return [...statuses].sort((a, b) => a - b)
}

