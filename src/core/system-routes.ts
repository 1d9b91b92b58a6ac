/**
 * Routes every surface serves the same way: `/health` and `/openapi.json`.
 * @module
 */
import * as v from 'valibot'
import { jsonResponse } from './errors.ts'
import type { AnyRoute } from './route.ts'

/** `GET /health` body. */
export const HealthSchema = v.object({
  ok: v.literal(true),
  version: v.string(),
  mode: v.picklist(['workspace', 'control-plane']),
  uptimeMs: v.number(),
})

/** Builds the system routes for a surface, given its public auth rule and its document. */
export function systemRoutes<Rule>(options: {
  mode: 'workspace' | 'control-plane'
  version: string
  publicRule: Rule
  startedAt: number
  openapi: () => Record<string, unknown>
}): AnyRoute<Rule>[] {
  return [
    {
      method: 'GET',
      path: '/health',
      operationId: 'getHealth',
      summary: 'Reachability check',
      description: 'Proves the server answers; says nothing about configuration or authority.',
      tags: ['system'],
      auth: options.publicRule,
      responses: { 200: HealthSchema },
      handler: () => ({
        ok: true,
        version: options.version,
        mode: options.mode,
        uptimeMs: Math.round(performance.now() - options.startedAt),
      }),
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
