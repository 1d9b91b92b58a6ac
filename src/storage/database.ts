/**
 * Opens a kysely database, SQLite (a file, the embedded default) or PostgreSQL (a URL, for several
 * instances), and runs the one set of embedded migrations on either.
 *
 * Engine differences are settled here and in the two seams, never at a query: bound values are
 * normalised the same way for every driver (booleans → 0/1, Date → ISO text; bun:sqlite throws on
 * Date and node:sqlite on booleans, and PostgreSQL's integer columns refuse `true`), counts come
 * back as numbers, and on PostgreSQL every transaction is SERIALIZABLE and retried on a
 * serialization failure, so the read-then-write transactions written against SQLite's one
 * connection keep their meaning when a pool runs them side by side.
 * @module
 */
import { type DialectAdapter, type Driver, Kysely, PostgresDialect, SqliteAdapter, SqliteDialect } from 'kysely'
import type { Migration } from 'kysely/migration'
import type { MaybePromise } from '../core/maybe-promise.ts'
import { cachedStatements } from './cached-statements.ts'
import { recordedMigrations, recordsExactly } from './migration-record.ts'
import { openSqlite, type RawSqlite } from './open-sqlite.ts'
import { openSqliteFile } from './open-sqlite-file.ts'
import { SqliteReadWriteDriver } from './sqlite-driver.ts'
import type { PostgresPoolOptions } from './open-postgres.ts'
import { localNotifier, postgresNotifier, type Notifier } from './notifier.ts'
import { retryingTransactions } from './serializable-transactions.ts'

export type { Notifier } from './notifier.ts'
export { normalizeParam } from './bound-values.ts'

/** Migrations keyed by name; names sort lexically into apply order. */
export type MigrationSet = Record<string, Migration>

/** Which engine a database runs on. */
export type Engine = 'sqlite' | 'postgres'

/** An open database: the kysely handle plus a way to close it exactly once. */
export interface Database<DB> {
  readonly db: Kysely<DB>
  readonly engine: Engine
  /** The SQLite file, or the PostgreSQL URL without its password: safe to log. */
  readonly path: string
  /** Cross-instance wake-ups (LISTEN/NOTIFY on PostgreSQL, in-process on SQLite). */
  readonly notifier: Notifier
  /** The connection pool and failed statements so far, read by the metrics scrape. */
  stats(): DatabaseStats
  close(): Promise<void>
}

/** What {@link Database.stats} reports. On SQLite the pool is the writer (one at a time) plus the reader. */
export interface DatabaseStats {
  /** Connections open or allowed (PostgreSQL: open now; SQLite: writer and reader). */
  size: number
  inUse: number
  /** Callers waiting for a connection (SQLite: for the writer). */
  waiting: number
  /** Statements that failed since start (constraint violations and serialization retries included). */
  queryErrors: number
}

/**
 * SQLite DDL is transactional, but kysely's SqliteAdapter says otherwise, so its Migrator would
 * apply migrations without a transaction and a failing one could leave half a schema behind.
 */
class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
  // The driver (sqlite-driver.ts) holds its writer for one lease at a time itself, and reads need
  // no lock at all, so kysely must not add its own single-connection lock around every query.
  override get supportsMultipleConnections(): boolean {
    return true
  }
}

class TransactionalSqliteDialect extends SqliteDialect {
  constructor(private readonly driver: SqliteReadWriteDriver) {
    super({ database: driver.writer })
  }
  override createDriver(): Driver {
    return this.driver
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalSqliteAdapter()
  }
}

/** How each handle's plain reads may skip kysely's executor (see {@link directReads}). */
const readers = new WeakMap<Kysely<any>, DirectReads>()

/** Runs a compiled plain select; synchronous on SQLite's read connection. */
export type DirectReads = (sql: string, parameters: ReadonlyArray<unknown>) => MaybePromise<unknown[]>

/**
 * Runs compiled plain selects of `db` (the handle itself, not a transaction) past kysely's executor,
 * or null when the handle has no such path (`:memory:`, a transaction, a handle with plugins). On
 * SQLite they run on its read connection and answer synchronously; on PostgreSQL on a pooled
 * connection. For the hottest reads (the session lookup on every request, prepared pages): kysely's
 * executor costs more than such a query; the answer is the same, from the last committed state.
 */
export function directReads(db: Kysely<any>): DirectReads | null {
  return readers.get(db) ?? null
}

/**
 * Shows `observer` every statement `db` reads directly until the returned function is called:
 * those reads pass no executor a test could wrap (tests check the plans of what a route ran).
 */
export function watchDirectReads(
  db: Kysely<any>,
  observer: (sql: string, parameters: ReadonlyArray<unknown>) => void,
): () => void {
  const reader = readers.get(db)
  if (!reader) return () => {}
  readers.set(db, (sql, parameters) => {
    observer(sql, parameters)
    return reader(sql, parameters)
  })
  return () => readers.set(db, reader)
}

/** Options for {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** SQLite file path, or `:memory:` for tests. Parent directories are created with mode 0700. */
  path: string
  migrations: MigrationSet
  /** A `postgres://` or `postgresql://` URL: opens PostgreSQL instead of the SQLite file. */
  url?: string
  /** PostgreSQL pool settings (defaults: 10 connections, 15 s statements, 5 s to connect). */
  postgres?: Partial<Omit<PostgresPoolOptions, 'url'>>
}

/** True for a URL that names PostgreSQL. */
export function isPostgresUrl(url: string | undefined | null): url is string {
  return typeof url === 'string' && /^postgres(ql)?:\/\//i.test(url)
}

/** Default PostgreSQL pool settings; see docs/deployment.md for sizing against max_connections. */
export const POSTGRES_DEFAULTS = { poolSize: 10, statementTimeoutMs: 15_000, connectTimeoutMs: 5_000 }

async function migrate<DB>(db: Kysely<DB>, migrations: MigrationSet): Promise<void> {
  // Loaded only when there is work to do: the migrator costs start time on every start otherwise.
  const { Migrator } = await import('kysely/migration')
  // Unordered: migrations developed side by side may land with numbers below one already applied.
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    allowUnorderedMigrations: true,
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName
    throw new Error(`database migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`)
  }
}

/**
 * Opens the database and migrates to the latest embedded version. A failed migration rolls back
 * (DDL is transactional on both engines) and rejects. On PostgreSQL, kysely's migrator holds an
 * advisory lock while it works, so instances started together migrate once and the rest wait.
 */
export async function openDatabase<DB>(options: OpenDatabaseOptions): Promise<Database<DB>> {
  if (options.url !== undefined) return openPostgres<DB>(options.url, options)
  const raw = await openSqliteFile(options.path)
  // Reads outside transactions take a second connection (see sqlite-driver.ts); a `:memory:`
  // database cannot have one (it would be another, empty database).
  let reader: RawSqlite | null = null
  if (options.path !== ':memory:') {
    reader = cachedStatements(await openSqlite(options.path))
    reader.exec('pragma busy_timeout = 5000')
    reader.exec('pragma query_only = on')
  }
  const driver = new SqliteReadWriteDriver(cachedStatements(raw), reader)
  const db = retryingTransactions(new Kysely<DB>({ dialect: new TransactionalSqliteDialect(driver) }), {
    serializable: false,
  })
  if (reader) readers.set(db, (sql, parameters) => reader.prepare(sql).all(parameters) as unknown[])
  if (!recordsExactly(recordedMigrations(raw), Object.keys(options.migrations))) {
    try {
      await migrate(db, options.migrations)
    } catch (error) {
      await db.destroy()
      throw error
    }
  }
  const notifier = localNotifier()
  let closed = false
  return {
    db,
    engine: 'sqlite',
    path: options.path,
    notifier,
    stats: () => driver.stats(),
    async close() {
      if (closed) return
      closed = true
      notifier.close()
      await db.destroy()
    },
  }
}

async function openPostgres<DB>(url: string, options: OpenDatabaseOptions): Promise<Database<DB>> {
  if (!isPostgresUrl(url)) throw new Error('database URL must start with postgres:// or postgresql://')
  const settings = { ...POSTGRES_DEFAULTS, ...options.postgres }
  // Loaded only here: evaluating `pg` pulls in node:net, tls, dns, crypto and stream, which cost
  // every SQLite-only process (the workspace server, above all) resident memory for nothing.
  const { checkPostgres, openPostgresPool } = await import('./open-postgres.ts')
  await checkPostgres(url, settings.connectTimeoutMs)
  const handle = openPostgresPool({ url, ...settings })
  const db = retryingTransactions(new Kysely<DB>({ dialect: new PostgresDialect({ pool: handle.pool }) }), {
    serializable: true,
  })
  try {
    await migrate(db, options.migrations)
  } catch (error) {
    await db.destroy()
    throw error
  }
  readers.set(db, handle.read)
  const notifier = postgresNotifier(handle, db)
  let closed = false
  return {
    db,
    engine: 'postgres',
    path: handle.safeUrl,
    notifier,
    stats: () => handle.stats(),
    async close() {
      if (closed) return
      closed = true
      await notifier.close()
      await db.destroy()
    },
  }
}

/** The engine a kysely handle runs on, for the few places (migrations) that must know. */
export function engineOf(db: Kysely<any>): Engine {
  return db.getExecutor().adapter instanceof SqliteAdapter ? 'sqlite' : 'postgres'
}
