/**
 * The database state `/health` reports, kept cheap: at most one `select 1` per interval however
 * often `/health` is polled (load balancers poll every instance every few seconds), one probe in
 * flight at a time, and a bounded wait, so a database that stopped answering makes `/health` say
 * `unavailable` quickly instead of holding the health check for the pool's connect timeout.
 * @module
 */
import { sql, type Kysely } from 'kysely'

/** The two states `/health` distinguishes. */
export type DatabaseState = 'ok' | 'unavailable'

/** Options for {@link databaseProbe}. */
export interface DatabaseProbeOptions {
  /** A result younger than this is reused (default 1,000 ms). */
  intervalMs?: number
  /** A probe that has not answered by then counts as unavailable (default 1,000 ms). */
  timeoutMs?: number
}

/**
 * Returns a check that answers from the last probe when it is recent (synchronously: `/health` is
 * polled far more often than anything else, and a promise per poll showed in its throughput), and
 * probes otherwise.
 */
export function databaseProbe(
  db: Kysely<any>,
  options: DatabaseProbeOptions = {},
): () => DatabaseState | Promise<DatabaseState> {
  const intervalMs = options.intervalMs ?? 1_000
  const timeoutMs = options.timeoutMs ?? 1_000
  let last: { state: DatabaseState; at: number } | undefined
  // The query itself, which may outlive the wait: while it is pending no second one starts, so a
  // database that swallows connections never ties up more than one pool slot for health checks.
  let query: Promise<DatabaseState> | undefined
  let waiting: Promise<DatabaseState> | undefined
  const probe = async (): Promise<DatabaseState> => {
    query ??= sql`select 1`
      .execute(db)
      .then(
        () => 'ok' as const,
        () => 'unavailable' as const,
      )
      .then((state) => {
        // A probe that answered after the wait (a busy pool, not a lost database) still counts.
        last = { state, at: performance.now() }
        return state
      })
      .finally(() => {
        query = undefined
      })
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<DatabaseState>((resolve) => {
      timer = setTimeout(() => resolve('unavailable'), timeoutMs)
    })
    try {
      const state = await Promise.race([query, late])
      last = { state, at: performance.now() }
      return state
    } finally {
      clearTimeout(timer)
    }
  }
  return () => {
    if (last && performance.now() - last.at < intervalMs) return last.state
    waiting ??= probe().finally(() => {
      waiting = undefined
    })
    return waiting
  }
}
