/**
 * Routes every surface serves the same way: `/health` (liveness), `/ready` (readiness) and
 * `/openapi.json`.
 * @module
 */
import * as v from 'valibot'
import { jsonResponse, PreEncodedJson } from './errors.ts'
import type { AnyRoute } from './route.ts'

/** `GET /health` body. */
export const HealthSchema = v.object({
  ok: v.literal(true),
  version: v.string(),
  mode: v.picklist(['workspace', 'control-plane']),
  uptimeMs: v.number(),
  /** Control plane only: whether its database answered recently (`unavailable`: writes answer 503). */
  database: v.optional(v.picklist(['ok', 'unavailable'])),
})

/** `GET /ready` body, with 200 and with 503. */
export const ReadySchema = v.object({
  /** True when this instance can serve; load balancers and Kubernetes readiness probes read the status. */
  ready: v.boolean(),
  /** Each check's outcome (the control plane: `database`, `migrations`; the workspace server has none). */
  checks: v.object({
    database: v.optional(v.picklist(['ok', 'unavailable'])),
    migrations: v.optional(v.picklist(['ok', 'behind', 'unknown'])),
  }),
  /** The checks that failed. */
  failed: v.array(v.picklist(['database', 'migrations'])),
  /** Migrations this build needs that the database does not record (`migrations: behind`). */
  missingMigrations: v.optional(v.array(v.string())),
})

/** What `/ready` reports; answered from a bounded, cached probe (never a query per request). */
export type ReadinessCheck = () => v.InferOutput<typeof ReadySchema> | Promise<v.InferOutput<typeof ReadySchema>>

/** A cheap database check for `/health` (cached, answered without a promise when recent; never a query per request). */
export type DatabaseHealthCheck = () => 'ok' | 'unavailable' | Promise<'ok' | 'unavailable'>

/** Builds the system routes for a surface, given its public auth rule and its document. */
export function systemRoutes<Rule>(options: {
  mode: 'workspace' | 'control-plane'
  version: string
  publicRule: Rule
  startedAt: number
  openapi: () => Record<string, unknown>
  /** When given, `/health` reports the database state (still 200: the process itself answers). */
  database?: DatabaseHealthCheck
  /** `/ready`'s checks; absent: ready whenever the process answers (the workspace server). */
  ready?: ReadinessCheck
}): AnyRoute<Rule>[] {
  // Load balancers poll /health: its body is written from a constant prefix (the same bytes
  // JSON.stringify makes of HealthSchema's fields in this order) instead of serialising an object.
  const prefix = `{"ok":true,"version":${JSON.stringify(options.version)},"mode":${JSON.stringify(options.mode)},"uptimeMs":`
  const healthBody = (database?: 'ok' | 'unavailable') => {
    const uptimeMs = Math.round(performance.now() - options.startedAt)
    return new PreEncodedJson(
      database === undefined ? `${prefix}${uptimeMs}}` : `${prefix}${uptimeMs},"database":"${database}"}`,
    )
  }
  const alwaysReady = new PreEncodedJson('{"ready":true,"checks":{},"failed":[]}')
  const readyResponse = (out: v.InferOutput<typeof ReadySchema>) =>
    jsonResponse(out, { status: out.ready ? 200 : 503, headers: { 'cache-control': 'no-store' } })
  return [
    {
      method: 'GET',
      path: '/health',
      operationId: 'getHealth',
      summary: 'Reachability check',
      description:
        'Proves the server answers; says nothing about configuration or authority. The control plane adds `database`: `unavailable` while its database cannot be reached (requests that need it answer 503 `database_unavailable`).',
      tags: ['system'],
      auth: options.publicRule,
      responses: { 200: HealthSchema },
      direct: true,
      // Synchronous unless the database probe is due: a promise per poll showed in /health's throughput.
      handler: () => {
        const state = options.database?.()
        return state instanceof Promise ? state.then(healthBody) : healthBody(state)
      },
    },
    {
      method: 'GET',
      path: '/ready',
      operationId: 'getReady',
      summary: 'Readiness check',
      description:
        'Whether this instance can serve: 200 when it can, 503 naming the failed check otherwise. The control plane checks that its database answers within a second and records every migration this build needs (a bounded probe, at most one query a second however often this is polled). Use it for load balancers and Kubernetes readiness probes; `/health` is the liveness check (docs/deployment.md). Not rate limited.',
      tags: ['system'],
      auth: options.publicRule,
      responses: {
        200: ReadySchema,
        503: { description: 'Not ready: `failed` names the checks', schema: ReadySchema },
      },
      handler: () => {
        if (!options.ready) return alwaysReady
        const out = options.ready()
        return out instanceof Promise ? out.then(readyResponse) : readyResponse(out)
      },
    },
    {
      method: 'GET',
      path: '/openapi.json',
      operationId: 'getOpenApi',
      summary: 'This OpenAPI 3.1 document',
      tags: ['system'],
      auth: options.publicRule,
      responses: { 200: { description: 'OpenAPI 3.1 document', schema: v.record(v.string(), v.unknown()) } },
      handler: () => jsonResponse(options.openapi(), { headers: { 'cache-control': 'no-cache' } }),
    },
  ]
}
