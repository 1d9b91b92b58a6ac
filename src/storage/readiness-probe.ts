/**
 * Whether this instance can serve, for `GET /ready`: its database answers and records every
 * migration this build embeds. One query does both (the migrator's record is read), with the same
 * bounds as the `/health` probe: at most one query per interval however often probes poll, one in
 * flight, and a deadline, so a database that stopped answering makes `/ready` say so within a
 * second instead of holding the probe for the pool's connect timeout.
 *
 * Recorded migrations this build does not know are not a failure: a newer instance of a rolling
 * update applied them, and migrations only add (see docs/deployment.md, "Upgrades").
 * @module
 */
import { sql, type Kysely } from 'kysely'

/** The outcome of each check. */
export interface ReadinessChecks {
  /** `unavailable`: the database did not answer within the deadline, or refused. */
  database: 'ok' | 'unavailable'
  /** `behind`: migrations this build needs are not recorded; `unknown` while the database is unavailable. */
  migrations: 'ok' | 'behind' | 'unknown'
}

/** What `/ready` reports. */
export interface Readiness {
  ready: boolean
  checks: ReadinessChecks
  /** Names of the checks that failed (empty when ready). */
  failed: Array<keyof ReadinessChecks>
  /** The migrations missing from the record, when `migrations` is `behind`. */
  missingMigrations?: string[]
}

/** Options for {@link readinessProbe}. */
export interface ReadinessProbeOptions {
  /** A result younger than this is reused (default 1,000 ms). */
  intervalMs?: number
  /** A probe that has not answered by then counts as unavailable (default 1,000 ms). */
  timeoutMs?: number
}

const UNAVAILABLE: Readiness = {
  ready: false,
  checks: { database: 'unavailable', migrations: 'unknown' },
  failed: ['database'],
}

/** Judges the recorded migration names against the embedded ones. */
function judge(recorded: ReadonlySet<string>, embedded: ReadonlyArray<string>): Readiness {
  const missing = embedded.filter((name) => !recorded.has(name))
  if (missing.length === 0) return { ready: true, checks: { database: 'ok', migrations: 'ok' }, failed: [] }
  return {
    ready: false,
    checks: { database: 'ok', migrations: 'behind' },
    failed: ['migrations'],
    missingMigrations: missing,
  }
}

/** A readiness check over `db` for the migrations named `embedded`. */
export function readinessProbe(
  db: Kysely<any>,
  embedded: ReadonlyArray<string>,
  options: ReadinessProbeOptions = {},
): () => Readiness | Promise<Readiness> {
  const intervalMs = options.intervalMs ?? 1_000
  const timeoutMs = options.timeoutMs ?? 1_000
  let last: { result: Readiness; at: number } | undefined
  // While a query is pending no second one starts: a database that swallows connections never ties
  // up more than one pool slot for probes.
  let query: Promise<Readiness> | undefined
  let waiting: Promise<Readiness> | undefined
  const probe = async (): Promise<Readiness> => {
    query ??= sql<{ name: string }>`select name from kysely_migration`
      .execute(db)
      .then(
        (out) => judge(new Set(out.rows.map((row) => row.name)), embedded),
        // No record table at all: nothing was ever migrated here.
        (error) =>
          /kysely_migration/.test(String((error as Error)?.message)) && /exist|no such table/i.test(String(error))
            ? judge(new Set(), embedded)
            : UNAVAILABLE,
      )
      .then((result) => {
        last = { result, at: performance.now() }
        return result
      })
      .finally(() => {
        query = undefined
      })
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<Readiness>((resolve) => {
      timer = setTimeout(() => resolve(UNAVAILABLE), timeoutMs)
    })
    try {
      const result = await Promise.race([query, late])
      last = { result, at: performance.now() }
      return result
    } finally {
      clearTimeout(timer)
    }
  }
  return () => {
    if (last && performance.now() - last.at < intervalMs) return last.result
    waiting ??= probe().finally(() => {
      waiting = undefined
    })
    return waiting
  }
}
