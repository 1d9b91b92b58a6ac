/**
 * Request counts and latency by route template, method and status class: what `dispatch.ts`
 * reports for every routed request when metrics are on. Labels come only from the route table and
 * a fixed list of methods, so no client can grow the number of series.
 * @module
 */
import type { MetricsRegistry } from './metrics-registry.ts'

/** Told about each routed request once its response (or a stream's headers) is ready. */
export interface RequestObserver {
  /** `route` is the declared path template (`/v1/members/:id`) or `unmatched`. */
  observe(method: string, route: string, status: number, seconds: number): void
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx']

/** The label for a request that matched no route (404, 405): one series, not one per path. */
export const UNMATCHED_ROUTE = 'unmatched'

/** Registers the request series on `registry` and returns the observer dispatch calls. */
export function requestMetrics(registry: MetricsRegistry): RequestObserver {
  const total = registry.counter(
    'service_http_requests_total',
    'Routed HTTP requests by route template, method and status class.',
    ['route', 'method', 'status_class'],
  )
  const duration = registry.histogram(
    'service_http_request_duration_seconds',
    'Time from routing to the response headers (for event streams, until the stream opened), by route template and method.',
    ['route', 'method'],
  )
  return {
    observe(method, route, status, seconds) {
      const m = METHODS.has(method) ? method : 'other'
      const statusClass = CLASSES[Math.floor(status / 100) - 1] ?? 'other'
      total.inc({ route, method: m, status_class: statusClass })
      duration.observe({ route, method: m }, seconds)
    },
  }
}
