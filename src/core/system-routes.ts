/**
 * Routes every surface serves the same way: `/health` and `/openapi.json`.
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
