/**
 * The control plane's own gauges, read on each scrape: the database pool, durable jobs by family
 * and state, Workers by state, change-feed subscribers, their delivery lag and open event streams. Counts are over
 * the whole database (every organization); no label carries an id.
 * @module
 */
import type { Kysely } from 'kysely'
import type { SurfaceMetrics } from '../../core/metrics-endpoint.ts'
import type { Sample } from '../../core/metrics-registry.ts'
import type { StreamRegistry } from '../../core/sse.ts'
import type { Database } from '../../storage/database.ts'
import type { Notifier } from '../../storage/notifier.ts'
import { ChangeSubscriptions } from '../events/change-feed.ts'
import type { ControlPlaneDb } from '../schema.ts'

/**
 * Buckets of the change feed's delivery lag, in seconds: a wake-up on this instance takes
 * milliseconds, one through PostgreSQL's notifications tens of milliseconds, and a missed one
 * waits for the streams' 5 s fallback poll.
 */
export const DELIVERY_LAG_BUCKETS: ReadonlyArray<number> = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/**
 * Change-feed subscriptions that also count their subscribers (read by the metrics scrape) and
 * observe the delivery lag of live streams once metrics are registered.
 */
export class CountedChangeSubscriptions extends ChangeSubscriptions {
  #count = 0
  lag: { observe(value: number): void } | null = null
  constructor(notifier: Notifier) {
    super(notifier)
  }
  override delivered(lagSeconds: number): void {
    this.lag?.observe(Math.max(0, lagSeconds))
  }
  override subscribe(orgId: string, wake: () => void): () => void {
    const unsubscribe = super.subscribe(orgId, wake)
    this.#count++
    let done = false
    return () => {
      if (done) return
      done = true
      this.#count--
      unsubscribe()
    }
  }
  /** Live subscriptions (one per open change-feed stream or long poll). */
  get count(): number {
    return this.#count
  }
}

/** Registers the control plane's gauges on `metrics.registry`. */
export function registerControlPlaneMetrics(
  metrics: SurfaceMetrics,
  parts: {
    database: Database<ControlPlaneDb>
    changeSubscriptions: CountedChangeSubscriptions
    streams: StreamRegistry
    now: () => number
  },
): void {
  const { registry } = metrics
  const { database, streams, changeSubscriptions } = parts
  const db = database.db as Kysely<any>
  const engine = { engine: database.engine }
  registry.gauge(
    'service_database_pool_connections',
    'Database connections the pool has (SQLite: the writer and the reader).',
    () => [{ labels: engine, value: database.stats().size }],
    ['engine'],
  )
  registry.gauge(
    'service_database_pool_in_use',
    'Database connections in use (SQLite: the writer held).',
    () => [{ labels: engine, value: database.stats().inUse }],
    ['engine'],
  )
  registry.gauge(
    'service_database_pool_waiting',
    'Callers waiting for a database connection (SQLite: for the writer).',
    () => [{ labels: engine, value: database.stats().waiting }],
    ['engine'],
  )
  registry.counterFrom(
    'service_database_query_errors_total',
    'Database statements that failed (constraint violations and serialization retries included).',
    () => [{ labels: engine, value: database.stats().queryErrors }],
    ['engine'],
  )
  registry.gauge(
    'service_jobs',
    'Durable jobs by family (kind) and state, every organization.',
    async () => {
      const rows = await db
        .selectFrom('job')
        .select(['kind', 'status'])
        .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
        .groupBy(['kind', 'status'])
        .execute()
      return rows.map((row): Sample => ({ labels: { family: row.kind, state: row.status }, value: Number(row.n) }))
    },
    ['family', 'state'],
  )
  registry.gauge(
    'service_jobs_oldest_queued_age_seconds',
    'Age of the oldest queued job of each family, in seconds.',
    async () => {
      const rows = await db
        .selectFrom('job')
        .select('kind')
        .select((eb) => eb.fn.min<string>('created_at').as('oldest'))
        .where('status', '=', 'queued')
        .groupBy('kind')
        .execute()
      const now = parts.now()
      return rows.map(
        (row): Sample => ({
          labels: { family: row.kind },
          value: Math.max(0, (now - Date.parse(row.oldest)) / 1000),
        }),
      )
    },
    ['family'],
  )
  registry.gauge(
    'service_workers',
    'Hosted Workers by state, every organization.',
    async () => {
      const rows = await db
        .selectFrom('worker')
        .select('state')
        .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
        .groupBy('state')
        .execute()
      return rows.map((row): Sample => ({ labels: { state: row.state }, value: Number(row.n) }))
    },
    ['state'],
  )
  changeSubscriptions.lag = registry
    .histogram(
      'service_change_feed_delivery_lag_seconds',
      "Seconds from a change's write (its createdAt) to a live change-feed stream on this instance sending it; changes written before the stream opened are not counted.",
      [],
      DELIVERY_LAG_BUCKETS,
    )
    .child({})
  registry.gauge(
    'service_change_feed_subscribers',
    'Open change-feed subscriptions on this instance.',
    () => changeSubscriptions.count,
  )
  registry.gauge('service_sse_streams_open', 'Server-sent event streams open on this instance.', () => streams.size)
}
