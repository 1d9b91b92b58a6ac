/**
 * Token buckets per credential, in this instance's memory, each holding this instance's share of
 * the configured budget: with `n` live instances on one database every bucket refills at
 * `rate / n` and holds at most `burst / n`, so a credential whose requests a load balancer spreads
 * over the instances gets the configured budget in total and never more. Nothing is written to
 * the database per request; the share follows the live-instance count (instance-count.ts).
 *
 * Why not shared counters: a write (or a round trip) per request on PostgreSQL costs more than the
 * requests this protects, and counters flushed every second still let a burst through on every
 * instance before the flush. The price of local shares is that a client pinned to one instance
 * (sticky sessions) gets `1/n` of the budget; the limit is never exceeded, only under-used.
 *
 * Memory is bounded: a bucket that has refilled is the same as no bucket and is dropped by the
 * sweep, and over `maxTracked` buckets the oldest are dropped first.
 * @module
 */

/** One credential's bucket. */
interface Bucket {
  tokens: number
  /** Monotonic ms of the last refill. */
  at: number
}

/** What {@link CredentialRateLimiter.take} decided, in the terms of the RateLimit headers. */
export interface RateDecision {
  allowed: boolean
  /** Requests left now, in the whole budget (this instance's share × instances). */
  remaining: number
  /** Seconds until the bucket is full again (`t` of the RateLimit header). */
  resetSeconds: number
  /** Refused only: seconds until one request is allowed (Retry-After). */
  retryAfterSeconds: number
}

/** Options for {@link CredentialRateLimiter}. */
export interface LimiterOptions {
  ratePerSecond: number
  burst: number
  maxTracked: number
  /** Monotonic clock in ms (default `performance.now`): wall-clock jumps must not refill buckets. */
  clock?: () => number
}

/** Per-credential token buckets holding this instance's share of the budget. */
export class CredentialRateLimiter {
  readonly #buckets = new Map<string, Bucket>()
  readonly #clock: () => number
  readonly #options: LimiterOptions
  #instances = 1
  /** Tokens per ms and capacity of this instance's share. */
  #perMs = 0
  #capacity = 0

  constructor(options: LimiterOptions) {
    this.#options = options
    this.#clock = options.clock ?? (() => performance.now())
    this.#resize()
  }

  /** Live instances sharing the budget (at least 1). */
  get instances(): number {
    return this.#instances
  }

  /** Buckets held now. */
  get size(): number {
    return this.#buckets.size
  }

  /** Divides the budget over `count` live instances from now on. */
  setInstances(count: number): void {
    const next = Math.max(1, Math.floor(count))
    if (next === this.#instances) return
    this.#instances = next
    this.#resize()
  }

  #resize(): void {
    this.#perMs = this.#options.ratePerSecond / 1000 / this.#instances
    // At least one request per instance, or a small burst over many instances would refuse everything.
    this.#capacity = Math.max(1, this.#options.burst / this.#instances)
  }

  /** Takes one token from `key`'s bucket. */
  take(key: string): RateDecision {
    const now = this.#clock()
    let bucket = this.#buckets.get(key)
    if (bucket === undefined) {
      if (this.#buckets.size >= this.#options.maxTracked) this.#evict(now)
      bucket = { tokens: this.#capacity, at: now }
      this.#buckets.set(key, bucket)
    } else {
      bucket.tokens = Math.min(this.#capacity, bucket.tokens + (now - bucket.at) * this.#perMs)
      bucket.at = now
    }
    const allowed = bucket.tokens >= 1
    if (allowed) bucket.tokens -= 1
    const scale = this.#instances
    return {
      allowed,
      remaining: Math.floor(bucket.tokens * scale),
      resetSeconds: Math.ceil((this.#capacity - bucket.tokens) / this.#perMs / 1000),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / this.#perMs / 1000)),
    }
  }

  /** Drops buckets that have refilled (they equal a fresh one). Returns how many were dropped. */
  sweep(now = this.#clock()): number {
    let dropped = 0
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + (now - bucket.at) * this.#perMs >= this.#capacity) {
        this.#buckets.delete(key)
        dropped++
      }
    }
    return dropped
  }

  /** Over the cap: refilled buckets first, then the oldest, down to 90 % of the cap. */
  #evict(now: number): void {
    this.sweep(now)
    const target = Math.floor(this.#options.maxTracked * 0.9)
    for (const key of this.#buckets.keys()) {
      if (this.#buckets.size <= target) break
      this.#buckets.delete(key)
    }
  }
}
