/**
 * Sign-in throttling: failed attempts are counted per account (email) and per client address in
 * a fixed window; once either count reaches its limit, sign-in for that account or address is
 * refused with 429 and `Retry-After` until the window ends, even with the right password, so
 * guessing cannot continue at full speed. A successful sign-in clears the account's count.
 *
 * The counts live in the database, so every instance behind a load balancer adds to the same
 * window and any of them answers 429; a restart forgets nothing. Each failure is one atomic
 * upsert, so concurrent failures on different instances are all counted. Keys are hashed: the
 * table holds no email or address in clear. Expired windows are deleted as failures arrive.
 * @module
 */
import { createHash } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import type { ControlPlaneDb } from '../schema.ts'

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

/** One expired-window sweep per this many recorded failures keeps the table small without a timer. */
const SWEEP_EVERY = 64

function hashKey(kind: 'account' | 'address', value: string): string {
  return createHash('sha256').update(`${kind}:${value}`).digest('base64url')
}

/** A sign-in throttle shared by every instance on one database. */
export class SignInThrottle {
  #sinceSweep = 0

  constructor(
    readonly limits: ThrottleLimits,
    private readonly now: () => number,
    private readonly db: Kysely<ControlPlaneDb>,
  ) {}

  #keys(email: string, address: string | null): Array<[string, number]> {
    const keys: Array<[string, number]> = [[hashKey('account', email), this.limits.maxFailuresPerAccount]]
    if (address) keys.push([hashKey('address', address), this.limits.maxFailuresPerAddress])
    return keys
  }

  #windowStartCutoff(): string {
    return new Date(this.now() - this.limits.windowMs).toISOString()
  }

  /** Seconds until sign-in is allowed again for this account or address, or 0 when allowed now. */
  async retryAfterSeconds(email: string, address: string | null): Promise<number> {
    const keys = this.#keys(email, address)
    const rows = await this.db
      .selectFrom('sign_in_throttle')
      .select(['key', 'failures', 'window_started_at'])
      .where(
        'key',
        'in',
        keys.map(([key]) => key),
      )
      .where('window_started_at', '>', this.#windowStartCutoff())
      .execute()
    let wait = 0
    for (const row of rows) {
      const limit = keys.find(([key]) => key === row.key)?.[1] ?? Number.POSITIVE_INFINITY
      if (row.failures >= limit) {
        wait = Math.max(wait, Date.parse(row.window_started_at) + this.limits.windowMs - this.now())
      }
    }
    return wait > 0 ? Math.ceil(wait / 1000) : 0
  }

  /** Records a failed attempt against the account and the address (one upsert each). */
  async recordFailure(email: string, address: string | null): Promise<void> {
    const now = new Date(this.now()).toISOString()
    const cutoff = this.#windowStartCutoff()
    for (const [key] of this.#keys(email, address)) {
      // An expired window restarts at 1 in the same statement; all SET expressions read the old row.
      await this.db
        .insertInto('sign_in_throttle')
        .values({ key, failures: 1, window_started_at: now })
        .onConflict((conflict) =>
          conflict.column('key').doUpdateSet({
            failures: sql<number>`case when sign_in_throttle.window_started_at <= ${cutoff} then 1 else sign_in_throttle.failures + 1 end`,
            window_started_at: sql<string>`case when sign_in_throttle.window_started_at <= ${cutoff} then ${now} else sign_in_throttle.window_started_at end`,
          }),
        )
        .execute()
    }
    if (++this.#sinceSweep >= SWEEP_EVERY) {
      this.#sinceSweep = 0
      await this.db.deleteFrom('sign_in_throttle').where('window_started_at', '<=', cutoff).execute()
    }
  }

  /** Clears the account's failures after a successful sign-in (the address keeps its count). */
  async recordSuccess(email: string): Promise<void> {
    await this.db.deleteFrom('sign_in_throttle').where('key', '=', hashKey('account', email)).execute()
  }
}
