/**
 * Composes a surface's route declarations into one Fetch handler.
 *
 * A request passes, in order: its request id (`request-id.ts`), where it goes (`request-target.ts`:
 * refused when not a URL or with dot segments), a CORS preflight answered before routing
 * (`cors.ts`), the surface's URL rewrite and HEAD-as-GET, then dispatch (`dispatch.ts`: the route
 * table of `router.ts`, params, auth through the surface's `SurfaceAuth`, query and body
 * validation, the handler, response shaping, errors through `failure-response.ts`), and finally
 * the HEAD body dropped, CORS headers, the request id on responses the pipeline did not build,
 * and the request log. Handlers only parse, call domain code, and shape a response.
 * @module
 */
import { corsStep, isPreflight, preflightResponse, type CorsPolicy } from './cors.ts'
import { createDispatcher, type Dispatcher } from './dispatch.ts'
import { errorResponse } from './errors.ts'
import { failureResponse } from './failure-response.ts'
import type { Logger } from './logger.ts'
import { bindPeer, type PeerLookup } from './peer-address.ts'
import { requestIdOf, stampForeign } from './request-id.ts'
import { DOT_SEGMENTS, dotSegments, invalidTarget, locate, located, NOWHERE, type Where } from './request-target.ts'
import { bindRequestedPath } from './requested-path.ts'
import type { RequestObserver } from './request-metrics.ts'
import type { AnyRoute } from './route.ts'
import { createRouteTable, type RouteTable } from './router.ts'
import type { SurfaceAuth } from './surface-auth.ts'
import type { ValidationPolicy } from './validation.ts'

export { impliedErrorStatuses, type SurfaceAuth } from './surface-auth.ts'

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
  /** Request metrics by route template (absent: metrics are off and nothing is timed). */
  observe?: RequestObserver
}

/** A composed surface. */
export interface HttpApp {
  fetch(request: Request, peer?: PeerLookup): Response | Promise<Response>
  /** The compiled route table, exposed so tests can compare registered routes with the document. */
  readonly router: RouteTable
  /**
   * Routes declared `direct` (see `RouteSpec.direct`), each with a handler for a GET on exactly its
   * path, for a listener that can route by path itself. Empty while CORS or the request log is on:
   * then every request needs the whole pipeline.
   */
  readonly direct: ReadonlyArray<DirectRoute>
}

/** A route the listener may answer by itself: a GET on exactly `path` goes to `fetch`. */
export interface DirectRoute {
  readonly path: string
  fetch(request: Request): Response | Promise<Response>
}

/** Header names that must never appear in a request log line. Exported for tests. */
export const NEVER_LOGGED_HEADERS = ['authorization', 'x-api-key', 'x-service-host-token', 'cookie']

type Kind = 'routed' | 'head' | 'preflight'

/** Builds the Fetch handler for a surface. */
export function createHttpApp<Rule, Principal>(options: HttpAppOptions<Rule, Principal>): HttpApp {
  const { logger, rewrite, requestLog } = options
  const table = createRouteTable(options.routes)
  const { dispatch, dispatchTo, stamped } = createDispatcher({
    table,
    auth: options.auth,
    validation: options.validation,
    logger,
    observe: options.observe,
  })
  const cors = corsStep(options.cors)

  /** Everything after dispatch: HEAD bodies, CORS, the request id on foreign responses, the log. */
  const finish = (
    incoming: Request,
    where: Where,
    requestId: string,
    kind: Kind,
    started: number,
    produced: Response,
  ): Response => {
    let response = produced
    // Cancel the GET body a HEAD does not send, so a proxied or streamed body releases its source.
    if (kind === 'head') {
      response.body?.cancel().catch(() => {})
      response = new Response(null, response)
    }
    if (kind !== 'preflight') response = cors(incoming, response)
    if (!stamped(response)) response = stampForeign(response, requestId)
    if (requestLog) {
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

  const handle = (incoming: Request, peer?: PeerLookup): Response | Promise<Response> => {
    const started = requestLog ? performance.now() : 0
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

  // Not an async function: a route that answers synchronously (health, cached reads) returns its
  // Response directly, and the listener skips a promise per request.
  const fetch = (incoming: Request, peer?: PeerLookup): Response | Promise<Response> => {
    try {
      return handle(incoming, peer)
    } catch (error) {
      // Only a defect can land here (routing errors are shaped in dispatch); answer like one, with
      // the headers every response carries.
      const requestId = requestIdOf(incoming)
      const response = failureResponse(error, incoming, requestId, logger)
      response.headers.set('x-request-id', requestId)
      response.headers.set('x-content-type-options', 'nosniff')
      return response
    }
  }

  return { fetch, router: table as RouteTable, direct: directRoutes(options, dispatchTo, stamped) }
}

/** Where a request the listener matched exactly goes; its URL object is built only if the handler asks. */
class MatchedPath implements Where {
  #parsed: URL | undefined
  constructor(
    readonly pathname: string,
    private readonly request: Request,
  ) {}
  url(): URL {
    this.#parsed ??= new URL(this.request.url)
    return this.#parsed
  }
}

/**
 * The `direct` routes' handlers. What the pipeline would add is known in advance for them: no
 * rewrite, nothing for HEAD (the listener drops the body; other methods go through `fetch`), no
 * CORS headers (none are configured), no log line; so each answers with dispatch alone and the request id stamped.
 */
function directRoutes<Rule, Principal>(
  options: HttpAppOptions<Rule, Principal>,
  dispatchTo: Dispatcher['dispatchTo'],
  stamped: Dispatcher['stamped'],
): DirectRoute[] {
  const declared = options.routes.filter((route) => route.direct)
  for (const route of declared) {
    if (route.method !== 'GET' || /[:*]/.test(route.path) || route.params || route.query || route.body)
      throw new Error(`${route.method} ${route.path}: only a GET on a fixed path with no inputs can be direct`)
  }
  if (options.requestLog || options.cors.origins.length > 0) return []
  return declared.map((route) => {
    const path = route.path
    return {
      path,
      fetch(request) {
        const requestId = requestIdOf(request)
        const result = dispatchTo(route, request, requestId, new MatchedPath(path, request))
        if (result instanceof Promise) return result.then((out) => (stamped(out) ? out : stampForeign(out, requestId)))
        return stamped(result) ? result : stampForeign(result, requestId)
      },
    }
  })
}
