/**
 * Connection deadlines and concurrency caps, shared by both modes and read from the environment.
 *
 * Why environment-only: the listener is built before either surface's config file is read, and
 * the same operator knobs must exist in both modes. Defaults are at most 30 s so a client that
 * stalls on purpose holds a socket for a bounded time; event streams are exempt (they carry their
 * own heartbeats).
 * @module
 */
import { readFileSync } from 'node:fs'
import * as v from 'valibot'
import { envSchemas, envValue, type Env } from './settings.ts'

/** Resolved limits, in seconds and counts. */
export interface RequestLimits {
  /** A request whose body stops arriving for this long is answered 408 and its socket closed. */
  bodyIdleTimeoutSeconds: number
  /** An idle keep-alive connection (and a response nobody reads) is closed after this long. */
  idleTimeoutSeconds: number
  /** Requests in progress from one client address before new ones get 503 with Retry-After. */
  maxRequestsPerAddress: number
  /** Requests in progress in total before new ones get 503 with Retry-After. */
  maxRequests: number
}

/** Defaults, documented in docs/configuration.md ("Connection limits"). */
export const REQUEST_LIMIT_DEFAULTS = {
  bodyIdleTimeoutSeconds: 15,
  idleTimeoutSeconds: 10,
  maxRequestsPerAddress: 64,
  maxRequests: 1024,
} as const

/** Descriptors kept free for the database, the watcher, logs and the sidecar when deriving the total cap. */
const DESCRIPTOR_RESERVE = 64

const seconds = (max: number) =>
  v.pipe(envSchemas.positiveInt, v.maxValue(max, `must be at most ${max} seconds`)) as unknown as v.GenericSchema<
    string,
    number
  >

/**
 * The soft limit on open files (Linux `/proc/self/limits`), or null where it cannot be read. Every
 * request in progress holds a socket, so a total cap above this limit would let stalled clients
 * starve the process of descriptors before the cap ever refused one.
 */
export function openFileLimit(limitsText?: string): number | null {
  let text = limitsText
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8')
    } catch {
      return null
    }
  }
  const soft = /^Max open files\s+(\d+|unlimited)/m.exec(text)?.[1]
  return soft === undefined || soft === 'unlimited' ? null : Number(soft)
}

/** Reads the limits from `SERVICE_*` variables; a bad value is a ConfigError (exit 2). */
export function loadRequestLimits(env: Env, descriptorLimit = openFileLimit()): RequestLimits {
  const bodyIdle = envValue(env, 'SERVICE_BODY_IDLE_TIMEOUT', seconds(3600))
  // Bun accepts at most 255 s for its idle timeout.
  const idle = envValue(env, 'SERVICE_IDLE_TIMEOUT', seconds(255))
  const perAddress = envValue(env, 'SERVICE_MAX_REQUESTS_PER_ADDRESS', envSchemas.positiveInt)
  const total = envValue(env, 'SERVICE_MAX_REQUESTS', envSchemas.positiveInt)
  let maxRequests = total ?? REQUEST_LIMIT_DEFAULTS.maxRequests
  // An explicit setting is the operator's call; the default never exceeds what descriptors allow.
  if (total === undefined && descriptorLimit !== null)
    maxRequests = Math.max(16, Math.min(maxRequests, descriptorLimit - DESCRIPTOR_RESERVE))
  return {
    bodyIdleTimeoutSeconds: bodyIdle ?? REQUEST_LIMIT_DEFAULTS.bodyIdleTimeoutSeconds,
    idleTimeoutSeconds: idle ?? REQUEST_LIMIT_DEFAULTS.idleTimeoutSeconds,
    maxRequestsPerAddress: Math.min(perAddress ?? REQUEST_LIMIT_DEFAULTS.maxRequestsPerAddress, maxRequests),
    maxRequests,
  }
}
