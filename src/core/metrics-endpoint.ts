/**
 * `GET /metrics`: the registry in the Prometheus text format, behind a bearer token when one is
 * configured (compared in constant time). Declared as a route of the surface when it is served on
 * the main listener; {@link metricsListenerFetch} serves it alone on `SERVICE_METRICS_LISTEN`.
 * @module
 */
import { bearerToken } from './bearer-token.ts'
import { coreError } from './core-errors.ts'
import { errorResponse } from './errors.ts'
import { METRICS_CONTENT_TYPE, type MetricsRegistry } from './metrics-registry.ts'
import type { RequestObserver } from './request-metrics.ts'
import type { AnyRoute } from './route.ts'
import { secretsEqual } from './secrets.ts'

/** What a surface gets when metrics are on. */
export interface SurfaceMetrics {
  /** Where the surface registers its gauges (one line each: `registry.gauge(name, help, read)`). */
  readonly registry: MetricsRegistry
  /** Told about every routed request (see `dispatch.ts`). */
  readonly requests: RequestObserver
  /** Present when `/metrics` is served on the surface's own listener. */
  readonly route?: { token?: string }
}

/** The scrape's answer, or 401 when a token is configured and the request does not carry it. */
async function scrape(registry: MetricsRegistry, token: string | undefined, request: Request): Promise<Response> {
  if (token !== undefined && !secretsEqual(bearerToken(request), token)) {
    throw coreError('unauthorized', 'A metrics scrape needs the bearer token set in SERVICE_METRICS_TOKEN', {
      headers: { 'www-authenticate': 'Bearer realm="metrics"' },
    })
  }
  return new Response(await registry.render(), {
    headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' },
  })
}

/** The `/metrics` route of a surface (none when metrics are off or served elsewhere). */
export function metricsRoutes<Rule>(publicRule: Rule, metrics: SurfaceMetrics | undefined): AnyRoute<Rule>[] {
  const route = metrics?.route
  if (!metrics || !route) return []
  return [
    {
      method: 'GET',
      path: '/metrics',
      operationId: 'getMetrics',
      summary: 'Metrics in the Prometheus text format',
      description:
        'Served only when metrics are on (`SERVICE_METRICS=1`). When `SERVICE_METRICS_TOKEN` is set, send it as `Authorization: Bearer <token>`. See docs/metrics.md for every series.',
      tags: ['system'],
      auth: publicRule,
      responses: { 200: { description: 'Prometheus text exposition format 0.0.4', contentType: 'text/plain' } },
      errors: [401],
      handler: ({ request }) => scrape(metrics.registry, route.token, request),
    },
  ]
}

/** A whole listener's handler for `SERVICE_METRICS_LISTEN`: `/metrics`, and 404 for anything else. */
export function metricsListenerFetch(
  registry: MetricsRegistry,
  token: string | undefined,
): (request: Request) => Promise<Response> {
  return async (request) => {
    const path = new URL(request.url).pathname
    const headers = { 'x-content-type-options': 'nosniff' }
    if (path !== '/metrics') return errorResponse(coreError('not_found', 'Not found'), headers)
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return errorResponse(coreError('method_not_allowed', 'Only GET', { headers: { allow: 'GET, HEAD' } }), headers)
    try {
      return await scrape(registry, token, request)
    } catch (error) {
      return errorResponse(error as never, headers)
    }
  }
}
