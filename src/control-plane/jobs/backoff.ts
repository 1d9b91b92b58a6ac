/**
 * Retry delay: capped exponential backoff with jitter, so retries of many failed jobs spread out
 * instead of arriving together, and a long outage never pushes the next attempt past the cap.
 * @module
 */

/** Backoff parameters. */
export interface BackoffPolicy {
  /** Delay after the first failed attempt. */
  baseMs: number
  /** Upper bound of any delay (before jitter). */
  capMs: number
  /** Relative jitter: the delay is multiplied by a factor in [1 - jitter, 1 + jitter]. */
  jitter: number
}

/** The delay before attempt `attempt + 1`, given `attempt` failed attempts so far (1-based). */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1)
  const raw = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(exponent, 40))
  const factor = 1 - policy.jitter + 2 * policy.jitter * random()
  return Math.max(0, Math.round(Math.min(policy.capMs * (1 + policy.jitter), raw * factor)))
}
