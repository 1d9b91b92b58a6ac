/**
 * Dispatch: from a located request to the route's response. Finds the route, decodes and validates
 * the path params, authenticates for the route's rule, validates the query and the JSON body, runs
 * the handler and shapes what it returns (plain data is JSON with the route's first declared 2xx,
 * `undefined` an empty body, a `Response` is passed on). A surface whose auth has `finish` (the
 * control plane's rate limits) completes every response to an authenticated caller, errors included.
 *
 * The chain stays synchronous until something really is asynchronous (a credential lookup, a body
 * read, an async handler): each avoided await is a promise and a microtask saved per request.
 * @module
 */
import type * as v from 'valibot'
import { PreEncodedJson } from './errors.ts'
import { failureResponse, unmatchedResponse } from './failure-response.ts'
import type { Logger } from './logger.ts'
import { type RequestObserver, UNMATCHED_ROUTE } from './request-metrics.ts'
import { decodeParams, type Where } from './request-target.ts'
import { isRawBody, type AnyRoute } from './route.ts'
import type { RouteTable } from './router.ts'
import type { SurfaceAuth } from './surface-auth.ts'
import { nulPaths, parseWith, queryObject, readJsonObject, refuseNulAt, type ValidationPolicy } from './validation.ts'
import { coreError } from './core-errors.ts'

const JSON_TYPE = 'application/json; charset=utf-8'

/** The inputs of a route that declares none (shared: handlers never write to their inputs). */
const NO_INPUT = Object.freeze({}) as Record<string, never>

/**
 * What a handler receives. A class rather than an object literal: its shape is fixed and the lazy
 * `url` getter lives on the prototype, so building one per request is a plain allocation.
 */
class RouteContext<Principal> {
  body: unknown = undefined
  constructor(
    readonly request: Request,
    private readonly where: Where,
    readonly params: Record<string, string>,
    readonly query: unknown,
    readonly principal: Principal,
    readonly requestId: string,
    readonly log: Logger,
  ) {}
  get url(): URL {
    return this.where.url()
  }
}

/** What dispatch needs from the composed app. */
export interface DispatchOptions<Rule, Principal> {
  table: RouteTable<AnyRoute<Rule, Principal>>
  auth: SurfaceAuth<Rule, Principal>
  validation: ValidationPolicy
  logger: Logger
  /** Told about every routed request when metrics are on (absent: nothing is timed). */
  observe?: RequestObserver
}

/** A dispatcher, and a way to tell the responses it built (they already carry the request id). */
export interface Dispatcher {
  dispatch(request: Request, method: string, requestId: string, where: Where): Response | Promise<Response>
  /** Runs one known route (the listener already matched it): {@link Dispatcher.dispatch} without the table. */
  dispatchTo(route: AnyRoute, request: Request, requestId: string, where: Where): Response | Promise<Response>
  /** True when `response` is the last one this dispatcher built with the id and nosniff in its headers. */
  stamped(response: Response): boolean
}

/** The status of a route's plain-data answer: its first declared 2xx (200 when none). */
export function successStatus(route: AnyRoute): number {
  const codes = Object.keys(route.responses)
    .map(Number)
    .filter((s) => s >= 200 && s < 300)
    .sort((a, b) => a - b)
  return codes[0] ?? 200
}

/** Builds the dispatcher of a surface. */
export function createDispatcher<Rule, Principal>(options: DispatchOptions<Rule, Principal>): Dispatcher {
  const { table, auth, validation, logger } = options
  // Filled as routes answer: subroutes (`RouteSpec.subroutes`) are only known once they match.
  const statuses = new Map<AnyRoute<Rule, Principal>, number>()
  const statusOf = (route: AnyRoute<Rule, Principal>): number => {
    let status = statuses.get(route)
    if (status === undefined) statuses.set(route, (status = successStatus(route)))
    return status
  }

  // The last response built here with the request id already in its headers. The final step
  // compares identity instead of reading the header back (a header read allocates the Headers
  // wrapper); when requests interleave the comparison merely falls back to that read.
  let last: Response | undefined

  // Responses we build carry the request id and nosniff from construction; setting headers on a
  // finished Response costs more than passing them in, and so does an explicit `status: 200`.
  const jsonOut = (text: BodyInit, status: number, requestId: string): Response => {
    const headers = { 'content-type': JSON_TYPE, 'x-request-id': requestId, 'x-content-type-options': 'nosniff' }
    return (last = status === 200 ? new Response(text, { headers }) : new Response(text, { status, headers }))
  }

  const shape = (route: AnyRoute<Rule, Principal>, result: unknown, requestId: string): Response => {
    if (result instanceof Response) return result
    const status = statusOf(route)
    if (result instanceof PreEncodedJson) return jsonOut(result.body as BodyInit, status, requestId)
    if (result === undefined || status === 204) {
      return (last = new Response(null, {
        status,
        headers: { 'x-request-id': requestId, 'x-content-type-options': 'nosniff' },
      }))
    }
    return jsonOut(JSON.stringify(result), status, requestId)
  }

  const run = (
    route: AnyRoute<Rule, Principal>,
    request: Request,
    where: Where,
    params: Record<string, string>,
    principal: Principal,
    requestId: string,
  ): Response | Promise<Response> => {
    // Only an escaped NUL can be in a URL; handlers without a query schema may read the URL too.
    if (validation.refuseNul && request.url.includes('%00'))
      refuseNulAt(nulPaths(queryObject(where.url())), validation.status, validation.queryCode, 'query parameter')
    const query = route.query
      ? parseWith(
          route.query as v.GenericSchema,
          queryObject(where.url()),
          validation.status,
          validation.queryCode,
          'query parameter',
        )
      : NO_INPUT
    const context = new RouteContext(request, where, params, query, principal, requestId, logger)
    if (route.body && !isRawBody(route.body)) {
      return readJsonObject(request, validation).then((raw) => {
        context.body = parseWith(
          route.body as v.GenericSchema,
          raw,
          validation.status,
          validation.bodyCode,
          'request body',
        )
        return call(route, context)
      })
    }
    return call(route, context)
  }

  const call = (route: AnyRoute<Rule, Principal>, context: RouteContext<Principal>): Response | Promise<Response> => {
    const result = route.handler(context as never)
    return result instanceof Promise
      ? result.then((value) => shape(route, value, context.requestId))
      : shape(route, result, context.requestId)
  }

  // The surface's last step on responses to an authenticated caller, failures included.
  const finish = auth.finish?.bind(auth)
  const finished = (
    principal: Principal,
    route: AnyRoute<Rule, Principal>,
    request: Request,
    where: Where,
    params: Record<string, string>,
    requestId: string,
  ): Response | Promise<Response> => {
    let result: Response | Promise<Response>
    try {
      result = run(route, request, where, params, principal, requestId)
    } catch (error) {
      result = failureResponse(error, request, requestId, logger)
    }
    return result instanceof Promise
      ? result.then(
          (response) => finish!(principal, response),
          (error) => finish!(principal, failureResponse(error, request, requestId, logger)),
        )
      : finish!(principal, result)
  }

  /** Runs `route` for the request (params, auth, inputs, handler); every failure becomes our error response. */
  const invoke = (
    route: AnyRoute<Rule, Principal>,
    request: Request,
    rawParams: Record<string, string> | null,
    requestId: string,
    where: Where,
  ): Response | Promise<Response> => {
    try {
      let params: Record<string, string> = NO_INPUT
      if (rawParams) {
        const decoded = decodeParams(rawParams)
        // A NUL names nothing that can exist where the surface refuses it in every input.
        if (!decoded || (validation.refuseNul && nulPaths(decoded).length > 0))
          throw coreError('not_found', 'Not found')
        params = (
          route.params
            ? parseWith(route.params as v.GenericSchema, decoded, 404, 'not_found', 'path parameter')
            : decoded
        ) as Record<string, string>
      }
      const principal = auth.authenticate(request, route.auth)
      if (finish) {
        return principal instanceof Promise
          ? principal.then(
              (p) => finished(p, route, request, where, params, requestId),
              (error) => failureResponse(error, request, requestId, logger),
            )
          : finished(principal, route, request, where, params, requestId)
      }
      const result =
        principal instanceof Promise
          ? principal.then((p) => run(route, request, where, params, p, requestId))
          : run(route, request, where, params, principal, requestId)
      return result instanceof Promise
        ? result.catch((error) => failureResponse(error, request, requestId, logger))
        : result
    } catch (error) {
      return failureResponse(error, request, requestId, logger)
    }
  }

  const plain: Dispatcher = {
    dispatch(request, method, requestId, where) {
      const found = table.match(method, where.pathname)
      if (!found) return unmatchedResponse(request, where.pathname, table as RouteTable)
      return invoke(found.route, request, found.params, requestId, where)
    },
    dispatchTo: (route, request, requestId, where) => invoke(route, request, null, requestId, where),
    stamped: (response) => response === last,
  }
  const observer = options.observe
  if (!observer) return plain

  // With metrics on, the same steps timed and reported by route template (never the raw path).
  const timed = (
    route: string,
    method: string,
    started: number,
    result: Response | Promise<Response>,
  ): Response | Promise<Response> => {
    const report = (response: Response) => {
      observer.observe(method, route, response.status, (performance.now() - started) / 1000)
      return response
    }
    return result instanceof Promise ? result.then(report) : report(result)
  }
  return {
    dispatch(request, method, requestId, where) {
      const started = performance.now()
      const found = table.match(method, where.pathname)
      if (!found)
        return timed(UNMATCHED_ROUTE, method, started, unmatchedResponse(request, where.pathname, table as RouteTable))
      return timed(found.route.path, method, started, invoke(found.route, request, found.params, requestId, where))
    },
    dispatchTo: (route, request, requestId, where) =>
      timed(route.path, request.method, performance.now(), invoke(route, request, null, requestId, where)),
    stamped: plain.stamped,
  }
}
