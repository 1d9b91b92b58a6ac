/**
 * Counts unauthenticated misses per client address (a token nobody holds, a capability secret that
 * does not exist) in a fixed window, so a client guessing or replaying dead credentials costs a
 * map read after the first few instead of a database lookup each. In memory per instance: it
 * protects each instance's database work; it is not an account lockout.
 * @module
 */

/** Limits of the throttle. */
export interface MissThrottleLimits {
  /** Misses allowed per address per window. */
  maxMisses: number
  windowMs: number
  /** Addresses tracked at most (the oldest windows are dropped first). */
  maxAddresses: number
}

/** The defaults: 60 misses a minute per address, 10,000 addresses. */
export const DEFAULT_MISS_LIMITS: MissThrottleLimits = { maxMisses: 60, windowMs: 60_000, maxAddresses: 10_000 }

/** Misses per address in the current window. */
export class MissThrottle {
  readonly #windows = new Map<string, { start: number; misses: number }>()

  constructor(
    private readonly now: () => number,
    private readonly limits: MissThrottleLimits = DEFAULT_MISS_LIMITS,
  ) {}

  /** Milliseconds until `address` may be checked again, or 0 when it may be now. */
  blockedFor(address: string | null): number {
    const window = this.#windows.get(address ?? 'local')
    if (!window) return 0
    const left = window.start + this.limits.windowMs - this.now()
    if (left <= 0) {
      this.#windows.delete(address ?? 'local')
      return 0
    }
    return window.misses >= this.limits.maxMisses ? left : 0
  }

  /** Records a miss from `address`. */
  miss(address: string | null): void {
    const key = address ?? 'local'
    const now = this.now()
    const window = this.#windows.get(key)
    if (window && window.start + this.limits.windowMs > now) {
      window.misses++
      return
    }
    this.#windows.delete(key)
    if (this.#windows.size >= this.limits.maxAddresses) {
      // Maps iterate in insertion order: the first key has the oldest window.
      const oldest = this.#windows.keys().next().value
      if (oldest !== undefined) this.#windows.delete(oldest)
    }
    this.#windows.set(key, { start: now, misses: 1 })
  }
}
