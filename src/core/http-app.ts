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
import { ApiError, errorResponse, errors, jsonResponse } from './errors.ts'
import { newId } from './ids.ts'
import type { Logger } from './logger.ts'
import { describeResponse, isRawBody, type AnyRoute } from './route.ts'
import { parseWith, queryObject, readJsonObject, type ValidationPolicy } from './validation.ts'

/** How a surface authenticates requests and documents that. */
export interface SurfaceAuth<Rule, Principal> {
  /** Resolves the caller for a route's rule, or throws an ApiError (401/403/429). */
  authenticate(request: Request, rule: Rule, url: URL): Principal | Promise<Principal>
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
  /** Log one line per request (default true). */
  requestLog?: boolean
  /**
   * Maps an incoming URL onto the route table (e.g. the `/w/:id/...` mount), or returns null to
   * leave it. Runs before routing so aliases need no duplicate declarations.
   */
  rewrite?: (url: URL) => URL | null
}

/** A composed surface. */
export interface HttpApp {
  fetch(request: Request): Promise<Response>
  /** The underlying itty router, exposed so tests can compare registered routes with the document. */
  readonly router: RouterType
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Header names that must never appear in a request log line. Exported for tests. */
export const NEVER_LOGGED_HEADERS = ['authorization', 'x-api-key', 'x-service-host-token', 'cookie']

/** Returns a response whose headers can be changed (fetch() responses have immutable headers). */
export function mutable(response: Response): Response {
  try {
    response.headers.set('x-mutable-probe', '1')
    response.headers.delete('x-mutable-probe')
    return response
  } catch {
    return new Response(response.body, response)
  }
}

function decodeParams(raw: Record<string, string>): Record<string, string> | null {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(raw)) {
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

/** Builds the Fetch handler for a surface. */
export function createHttpApp<Rule, Principal>(options: HttpAppOptions<Rule, Principal>): HttpApp {
  const router = Router()
  const { auth, validation, logger } = options
  const patterns: Array<{ method: string; regex: RegExp }> = []

  for (const route of options.routes) {
    const status = successStatus(route)
    const handler = async (request: Request & { params?: Record<string, string>; requestId?: string }) => {
      const url = new URL(request.url)
      const params = decodeParams(request.params ?? {})
      if (!params) throw errors.notFound()
      const principal = await auth.authenticate(request, route.auth, url)
      const parsedParams = route.params ? parseWith(route.params as v.GenericSchema, params, 404, 'not_found', 'path parameter') : params
      const query = route.query ? parseWith(route.query as v.GenericSchema, queryObject(url), validation.status, validation.queryCode, 'query parameter') : {}
      let body: unknown = undefined
      if (route.body && !isRawBody(route.body)) {
        const raw = await readJsonObject(request, validation)
        body = parseWith(route.body as v.GenericSchema, raw, validation.status, validation.bodyCode, 'request body')
      }
      const result = await route.handler({
        request,
        url,
        params: parsedParams,
        query,
        body,
        principal,
        requestId: request.requestId ?? '',
        log: logger,
      } as never)
      if (result instanceof Response) return result
      if (result === undefined || status === 204) return new Response(null, { status })
      return jsonResponse(result, { status })
    }
    const method = route.method.toLowerCase() as 'get'
    router[method](route.path, handler)
    const last = router.routes[router.routes.length - 1]!
    patterns.push({ method: route.method, regex: last[1] as RegExp })
  }

  const allowedMethods = (pathname: string): string[] => {
    const methods = new Set<string>()
    for (const p of patterns) if (p.regex.test(pathname)) methods.add(p.method)
    if (methods.has('GET')) methods.add('HEAD')
    return [...methods]
  }

  const route = async (request: Request, requestId: string): Promise<Response> => {
    try {
      const response: Response | undefined = await router.fetch(request)
      if (response) return response
      const pathname = new URL(request.url).pathname
      const allow = allowedMethods(pathname)
      if (allow.length > 0) {
        return errorResponse(new ApiError(405, 'method_not_allowed', `Method ${request.method} not allowed`, { headers: { allow: [...allow, 'OPTIONS'].join(', ') } }))
      }
      return errorResponse(errors.notFound())
    } catch (error) {
      if (error instanceof ApiError) return errorResponse(error)
      if (request.signal.aborted) {
        return errorResponse(new ApiError(499, 'request_aborted', 'Client closed the request'))
      }
      logger.error('unhandled error', { requestId, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) })
      return errorResponse(errors.internal())
    }
  }

  const fetch = async (incoming: Request): Promise<Response> => {
    const started = performance.now()
    const offered = incoming.headers.get('x-request-id')
    const requestId = offered && REQUEST_ID.test(offered) ? offered : newId('req')
    const url = new URL(incoming.url)
    let response: Response
    if (isPreflight(incoming)) {
      response = preflightResponse(options.cors, incoming)
    } else {
      const rewritten = options.rewrite?.(url) ?? null
      const isHead = incoming.method === 'HEAD'
      let request = incoming
      if (isHead || rewritten) {
        request = new Request(rewritten ?? url, { method: isHead ? 'GET' : incoming.method, headers: incoming.headers, body: isHead ? null : incoming.body, signal: incoming.signal, duplex: 'half' } as RequestInit)
      }
      ;(request as Request & { requestId?: string }).requestId = requestId
      response = mutable(await route(request, requestId))
      if (isHead) response = new Response(null, response)
      response = applyCors(options.cors, incoming, response)
    }
    response.headers.set('x-request-id', requestId)
    response.headers.set('x-content-type-options', 'nosniff')
    if (options.requestLog !== false) {
      logger.info('request', { method: incoming.method, path: url.pathname, status: response.status, ms: Math.round((performance.now() - started) * 10) / 10, requestId })
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

export { describeResponse }
