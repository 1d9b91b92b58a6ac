/**
 * Per-credential rate-limit settings (config file key `rateLimit`, env `SERVICE_RATE_LIMIT*`; env
 * wins). The defaults are generous: a person's console, an MCP client or a CI job using one API
 * key stays far below them, and they stop a runaway loop or a leaked key from taking a whole
 * instance. Documented in docs/control-plane-api.md ("Rate limits").
 * @module
 */
import * as v from 'valibot'
import { envSchemas, envValue, type Env } from '../../core/settings.ts'

/** Resolved rate-limit settings. */
export interface RateLimitSettings {
  /** Off: no bucket, no header, nothing refused. */
  enabled: boolean
  /** Tokens added per second to each credential's bucket (the sustained request rate). */
  ratePerSecond: number
  /** Bucket size: requests a credential may send at once after being idle. */
  burst: number
  /** Buckets kept in memory at most; idle (full) buckets are dropped first. */
  maxTrackedCredentials: number
  /** How often the live instances are counted to divide the budget (ms). */
  instanceRefreshMs: number
}

/** Defaults, documented in docs/control-plane-api.md. */
export const RATE_LIMIT_DEFAULTS: RateLimitSettings = {
  enabled: true,
  ratePerSecond: 100,
  burst: 1000,
  maxTrackedCredentials: 100_000,
  instanceRefreshMs: 5_000,
}

const positive = (max: number) => v.optional(v.pipe(v.number(), v.minValue(0.001), v.maxValue(max)))

/** The `rateLimit` key of the control-plane config file. */
export const RateLimitFileSchema = v.strictObject({
  enabled: v.optional(v.boolean('must be true or false')),
  ratePerSecond: positive(1_000_000),
  burst: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000_000))),
  maxTrackedCredentials: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(10_000_000))),
  instanceRefreshMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(600_000))),
})

const envNumber = v.pipe(
  v.string(),
  v.regex(/^\d+(\.\d+)?$/, 'must be a positive number'),
  v.transform(Number),
  v.minValue(0.001, 'must be a positive number'),
)

/** The settings from env > file > defaults. */
export function rateLimitSettings(file: v.InferOutput<typeof RateLimitFileSchema> | undefined, env: Env) {
  const f = file ?? {}
  const settings: RateLimitSettings = {
    enabled: envValue(env, 'SERVICE_RATE_LIMIT', envSchemas.bool) ?? f.enabled ?? RATE_LIMIT_DEFAULTS.enabled,
    ratePerSecond:
      envValue(env, 'SERVICE_RATE_LIMIT_RATE', envNumber) ?? f.ratePerSecond ?? RATE_LIMIT_DEFAULTS.ratePerSecond,
    burst: envValue(env, 'SERVICE_RATE_LIMIT_BURST', envSchemas.positiveInt) ?? f.burst ?? RATE_LIMIT_DEFAULTS.burst,
    maxTrackedCredentials: f.maxTrackedCredentials ?? RATE_LIMIT_DEFAULTS.maxTrackedCredentials,
    instanceRefreshMs: f.instanceRefreshMs ?? RATE_LIMIT_DEFAULTS.instanceRefreshMs,
  }
  return settings
}
