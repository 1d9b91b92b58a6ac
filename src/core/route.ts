/**
 * A route is declared once: method, path, auth rule, schemas, documented statuses and handler.
 * The router and the OpenAPI document are both built from these declarations, so they cannot
 * disagree.
 * @module
 */
import type * as v from 'valibot'
import type { Logger } from './logger.ts'

/** HTTP methods a route may declare. HEAD is served from GET automatically. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** A documented response: a JSON schema, or another media type described in prose. */
export type ResponseSpec =
  | v.GenericSchema
  | {
      description: string
      /** JSON body schema (default content type application/json). */
      schema?: v.GenericSchema
      /** A non-JSON media type, e.g. `text/event-stream` or `application/octet-stream`. */
      contentType?: string
      /** Response headers worth documenting, name → description. */
      headers?: Record<string, string>
      /**
       * The same answer as Server-Sent Events when the client sends `Accept: text/event-stream`:
       * the schema of each event's JSON `data:`. Documented as a second media type of the response.
       */
      events?: v.GenericSchema
    }

/** A request body that the handler reads itself (multipart upload, streamed bytes). */
export interface RawBodySpec {
  raw: true
  contentType: string
  description: string
  required?: boolean
  /** The JSON the handler expects, for the document only (a handler that reads JSON in its own error format: SCIM). */
  schema?: v.GenericSchema
}

/** Everything a handler receives: parsed inputs, the authenticated principal and request metadata. */
export interface HandlerContext<P, Q, B, Principal> {
  request: Request
  url: URL
  params: P
  query: Q
  body: B
  principal: Principal
  requestId: string
  log: Logger
}

type Out<S> = S extends v.GenericSchema ? v.InferOutput<S> : Record<string, never>
type BodyOut<S> = S extends v.GenericSchema ? v.InferOutput<S> : undefined

/** A route declaration. `Rule` is the surface's auth rule type; `Principal` what its auth returns. */
export interface RouteSpec<Rule, Principal, PS = undefined, QS = undefined, BS = undefined> {
  method: HttpMethod
  /** itty-router pattern, e.g. `/workspace/:id/skills/:name`; `:rest+` captures the remainder. */
  path: string
  /** Stable operation id for the OpenAPI document (camelCase). */
  operationId: string
  summary: string
  description?: string
  tags?: string[]
  auth: Rule
  params?: PS
  query?: QS
  body?: BS | RawBodySpec
  /** Documented statuses. The first 2xx is used when a handler returns plain data. */
  responses: Record<number, ResponseSpec>
  /** Extra error statuses this route can return (auth, validation and 500 are added automatically). */
  errors?: number[]
  /**
   * Lets the listener's own router answer this route where the runtime has one (Bun's `routes`),
   * before URL parsing, the request guard and the route table. Why: load balancers and desktop
   * clients poll `/health` far more often than anything else, and the generic path costs about a
   * quarter of its throughput (bench/README.md, `/health` against its contract ceiling). Only for a
   * public GET on a fixed path with no params, query or body; `createHttpApp` refuses anything
   * else, and routes every such request through the whole pipeline while CORS or the request log is on.
   */
  direct?: true
  /**
   * Declarations this route serves, matched at request time before it answers itself. Each has the
   * route's method and a path under its own, which ends in a greedy `/:name+`; the route answers
   * what none of them matches (first match among them, as if each were registered just before it).
   * Why: a large generated family of routes (the sidecar allow-list, hundreds of declarations)
   * registered one by one costs every start megabytes and tens of milliseconds, although most
   * servers never receive one of them. The router builds their table on the first request the
   * route matches; the document and every list of declared routes include them (`declaredRoutes`).
   * Called more than once: return the same declarations each time. Never `direct`.
   */
  subroutes?: () => ReadonlyArray<AnyRoute<Rule, Principal>>
  handler: (ctx: HandlerContext<Out<PS>, Out<QS>, BodyOut<BS>, Principal>) => unknown | Promise<unknown>
}

/** The erased form stored in route tables. */
// deno-lint-ignore no-explicit-any
export type AnyRoute<Rule = any, Principal = any> = RouteSpec<Rule, Principal, any, any, any>

/** Declares a route with full inference of params, query, body and principal types. */
export function defineRoute<
  Rule,
  Principal,
  PS extends v.GenericSchema | undefined = undefined,
  QS extends v.GenericSchema | undefined = undefined,
  BS extends v.GenericSchema | undefined = undefined,
>(spec: RouteSpec<Rule, Principal, PS, QS, BS>): RouteSpec<Rule, Principal, PS, QS, BS> {
  return spec
}

/**
 * Every declaration of a route list, each route's `subroutes` just before it: what the document
 * lists, and what a request can be dispatched to.
 */
export function declaredRoutes<R extends { subroutes?: () => ReadonlyArray<R> }>(routes: ReadonlyArray<R>): R[] {
  const out: R[] = []
  for (const route of routes) {
    if (route.subroutes) out.push(...route.subroutes())
    out.push(route)
  }
  return out
}

/** True when a body spec is a raw (handler-read) body rather than a JSON schema. */
export function isRawBody(body: unknown): body is RawBodySpec {
  return typeof body === 'object' && body !== null && (body as RawBodySpec).raw === true
}

/** Normalises a response spec into its documented parts. */
export function describeResponse(spec: ResponseSpec): {
  description: string
  schema?: v.GenericSchema
  contentType: string
  headers?: Record<string, string>
  events?: v.GenericSchema
} {
  if ('kind' in spec && (spec as v.GenericSchema).kind === 'schema') {
    return { description: 'Success', schema: spec as v.GenericSchema, contentType: 'application/json' }
  }
  const described = spec as Exclude<ResponseSpec, v.GenericSchema>
  return {
    description: described.description,
    schema: described.schema,
    contentType: described.contentType ?? 'application/json',
    headers: described.headers,
    events: described.events,
  }
}

/**
 * Fixes a surface's rule and principal types once, so each route only infers its own schemas:
 * `const route = routeFactory<WorkspaceRule, Principal>()` then `route({...})`.
 */
export function routeFactory<Rule, Principal>() {
  return <
    PS extends v.GenericSchema | undefined = undefined,
    QS extends v.GenericSchema | undefined = undefined,
    BS extends v.GenericSchema | undefined = undefined,
  >(
    spec: RouteSpec<Rule, Principal, PS, QS, BS>,
  ): AnyRoute<Rule, Principal> => spec as AnyRoute<Rule, Principal>
}
