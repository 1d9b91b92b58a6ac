/**
 * Sign-in throttling: failed attempts are counted per account (email) and per client address in
 * a fixed window; once either count reaches its limit, sign-in for that account or address is
 * refused with 429 and `Retry-After` until the window ends, even with the right password, so
 * guessing cannot continue at full speed. A successful sign-in clears the account's count.
 *
 * Counters live in process memory: a restart forgets them, which costs an attacker a restart they
 * cannot cause. The map is bounded so a flood of distinct addresses cannot exhaust memory.
 * @module
 */

/** Throttle limits. */
export interface ThrottleLimits {
  maxFailuresPerAccount: number
  maxFailuresPerAddress: number
  windowMs: number
}

/** Default limits: 5 failures per account and 50 per address in 15 minutes. */
export const DEFAULT_THROTTLE: ThrottleLimits = {
  maxFailuresPerAccount: 5,
  maxFailuresPerAddress: 50,
  windowMs: 15 * 60_000,
}

const MAX_ENTRIES = 100_000

interface Window {
  failures: number
  startedAt: number
}

/** A per-process sign-in throttle. */
export class SignInThrottle {
  readonly #windows = new Map<string, Window>()

  constructor(
    readonly limits: ThrottleLimits,
    private readonly now: () => number,
  ) {}

  #current(key: string): Window | undefined {
    const entry = this.#windows.get(key)
    if (entry && this.now() - entry.startedAt >= this.limits.windowMs) {
      this.#windows.delete(key)
      return undefined
    }
    return entry
  }

  #keys(email: string, address: string | null): Array<[string, number]> {
    const keys: Array<[string, number]> = [[`account:${email}`, this.limits.maxFailuresPerAccount]]
    if (address) keys.push([`address:${address}`, this.limits.maxFailuresPerAddress])
    return keys
  }

  /** Seconds until sign-in is allowed again for this account or address, or 0 when allowed now. */
  retryAfterSeconds(email: string, address: string | null): number {
    let wait = 0
    for (const [key, limit] of this.#keys(email, address)) {
      const entry = this.#current(key)
      if (entry && entry.failures >= limit) wait = Math.max(wait, entry.startedAt + this.limits.windowMs - this.now())
    }
    return wait > 0 ? Math.ceil(wait / 1000) : 0
  }

  /** Records a failed attempt against the account and the address. */
  recordFailure(email: string, address: string | null): void {
    if (this.#windows.size >= MAX_ENTRIES) this.#sweep()
    for (const [key] of this.#keys(email, address)) {
      const entry = this.#current(key)
      if (entry) entry.failures++
      else this.#windows.set(key, { failures: 1, startedAt: this.now() })
    }
  }

  /** Clears the account's failures after a successful sign-in (the address keeps its count). */
  recordSuccess(email: string): void {
    this.#windows.delete(`account:${email}`)
  }

  #sweep(): void {
    for (const key of [...this.#windows.keys()]) this.#current(key)
    // Still full of live windows: drop the oldest half rather than grow without bound.
    if (this.#windows.size >= MAX_ENTRIES) {
      let drop = Math.floor(this.#windows.size / 2)
      for (const key of this.#windows.keys()) {
        if (drop-- <= 0) break
        this.#windows.delete(key)
      }
    }
  }
}
