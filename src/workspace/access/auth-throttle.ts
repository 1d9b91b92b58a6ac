/**
 * Per-address throttling of failed authentication: after `maxFailures` bad credentials inside
 * `windowSeconds`, that address is refused with 429 and `Retry-After` for `lockoutSeconds`, so a
 * token cannot be guessed by hammering the server. Successful requests do not reset the count:
 * otherwise a caller holding any valid token could interleave guesses indefinitely.
 * @module
 */

/** Throttle settings (config key `authThrottle`). */
export interface AuthThrottleSettings {
  maxFailures: number
  windowSeconds: number
  lockoutSeconds: number
}

/** Defaults: 10 failures per minute lock the address out for a minute. */
export const DEFAULT_AUTH_THROTTLE: AuthThrottleSettings = { maxFailures: 10, windowSeconds: 60, lockoutSeconds: 60 }

interface Bucket {
  failures: number[]
  lockedUntil: number
}

/** Tracks failures per address; memory is bounded by pruning idle buckets. */
export class AuthThrottle {
  readonly #settings: AuthThrottleSettings
  readonly #now: () => number
  readonly #buckets = new Map<string, Bucket>()
  #latestLockout = 0

  constructor(settings: AuthThrottleSettings = DEFAULT_AUTH_THROTTLE, now: () => number = Date.now) {
    this.#settings = settings
    this.#now = now
  }

  /**
   * True while any address is locked out. Looking up a caller's address costs a native call per
   * request, so the authenticator only asks for it when this is true (or after a failure).
   */
  anyLocked(): boolean {
    return this.#latestLockout > this.#now()
  }

  /** Seconds the address must wait, or 0 when it may try. */
  retryAfter(address: string): number {
    const bucket = this.#buckets.get(address)
    if (!bucket) return 0
    const wait = bucket.lockedUntil - this.#now()
    return wait > 0 ? Math.ceil(wait / 1000) : 0
  }

  /** Records a failed attempt; returns the lockout in seconds if this failure triggered one. */
  fail(address: string): number {
    const now = this.#now()
    const windowStart = now - this.#settings.windowSeconds * 1000
    let bucket = this.#buckets.get(address)
    if (!bucket) {
      if (this.#buckets.size >= 10_000) this.#prune(now)
      bucket = { failures: [], lockedUntil: 0 }
      this.#buckets.set(address, bucket)
    }
    bucket.failures = bucket.failures.filter((t) => t > windowStart)
    bucket.failures.push(now)
    if (bucket.failures.length >= this.#settings.maxFailures) {
      bucket.lockedUntil = now + this.#settings.lockoutSeconds * 1000
      this.#latestLockout = Math.max(this.#latestLockout, bucket.lockedUntil)
      bucket.failures = []
      return this.#settings.lockoutSeconds
    }
    return 0
  }

  #prune(now: number): void {
    const windowStart = now - this.#settings.windowSeconds * 1000
    for (const [address, bucket] of this.#buckets) {
      if (bucket.lockedUntil <= now && bucket.failures.every((t) => t <= windowStart)) this.#buckets.delete(address)
    }
  }
}
