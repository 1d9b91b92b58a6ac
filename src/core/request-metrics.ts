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
  // Bound series per route, method and status class: a request costs two map lookups, not a key
  // built from its labels. Every key comes from the route table and the fixed lists above.
  type Bound = { inc(): void; observe(value: number): void }
  const bound = new Map<string, Map<string, Bound[]>>()
  const seriesOf = (route: string, method: string, statusIndex: number): Bound => {
    let byMethod = bound.get(route)
    if (!byMethod) bound.set(route, (byMethod = new Map()))
    let byStatus = byMethod.get(method)
    if (!byStatus) byMethod.set(method, (byStatus = []))
    let series = byStatus[statusIndex]
    if (!series) {
      const counter = total.child({ route, method, status_class: CLASSES[statusIndex] ?? 'other' })
      const histogram = duration.child({ route, method })
      series = byStatus[statusIndex] = { inc: () => counter.inc(), observe: (value) => histogram.observe(value) }
    }
    return series
  }
  return {
    observe(method, route, status, seconds) {
      const index = Math.floor(status / 100) - 1
      const series = seriesOf(route, METHODS.has(method) ? method : 'other', index >= 0 && index < 5 ? index : 5)
      series.inc()
      series.observe(seconds)
    },
  }
}
