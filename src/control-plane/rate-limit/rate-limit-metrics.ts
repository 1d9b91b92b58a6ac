/**
 * The rate limiter's series: requests refused per credential kind, buckets held, and the number
 * of instances this one divides the budget by. Read on each scrape; nothing is counted twice per
 * request.
 * @module
 */
import type { SurfaceMetrics } from '../../core/metrics-endpoint.ts'
import type { CredentialRateLimiter } from './credential-rate-limiter.ts'
import type { RefusalCounts } from './rate-limited-auth.ts'

/** Registers the limiter's series on `metrics.registry`. */
export function registerRateLimitMetrics(
  metrics: SurfaceMetrics,
  limiter: CredentialRateLimiter,
  refused: RefusalCounts,
): void {
  const { registry } = metrics
  registry.counterFrom(
    'service_rate_limited_requests_total',
    'Requests refused with 429 rate_limited by the per-credential limit, by credential kind.',
    () => Object.entries(refused).map(([credential, value]) => ({ labels: { credential }, value })),
    ['credential'],
  )
  registry.gauge(
    'service_rate_limit_buckets',
    'Credentials with a rate-limit bucket in this instance (refilled ones are dropped).',
    () => limiter.size,
  )
  registry.gauge(
    'service_rate_limit_instances',
    'Live control-plane instances the per-credential budget is divided by.',
    () => limiter.instances,
  )
}
