/**
 * Opens a kysely database over SQLite with the project's pragmas and runs embedded migrations.
 *
 * Why here and not in the seam: normalising bound values (booleans → 0/1, Date → ISO text) is the
 * same for every driver; bun:sqlite throws on Date and node:sqlite throws on booleans, so we never
 * let either reach the driver.
 * @module
 */
import { Kysely, SqliteAdapter, SqliteDialect, type DialectAdapter } from 'kysely'
import type { Migration } from 'kysely/migration'
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { openSqlite, type RawSqlite } from './open-sqlite.ts'

/** Migrations keyed by name; names sort lexically into apply order. */
export type MigrationSet = Record<string, Migration>

/** An open database: the kysely handle plus a way to close it exactly once. */
export interface Database<DB> {
  readonly db: Kysely<DB>
  readonly path: string
  close(): Promise<void>
}

/** Converts a value kysely is about to bind into something both SQLite drivers accept. */
export function normalizeParam(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0
  if (value instanceof Date) return value.toISOString()
  if (value === undefined) return null
  return value
}

/** How many distinct prepared statements are kept; the hot set of a server is far smaller. */
const STATEMENT_CACHE_SIZE = 512

function normalizing(raw: RawSqlite): RawSqlite {
  // Preparing costs a large share of a small query; kysely prepares on every execution, so we keep
  // the statements of recently seen SQL text (LRU). Queries run one at a time on this connection.
  const cache = new Map<string, ReturnType<RawSqlite['prepare']>>()
  const fix = (params: ReadonlyArray<unknown>) => params.map(normalizeParam)
  return {
    exec: (sql) => {
      cache.clear()
      raw.exec(sql)
    },
    close: () => {
      cache.clear()
      raw.close()
    },
    prepare(sql) {
      let statement = cache.get(sql)
      if (statement) {
        cache.delete(sql)
      } else {
        statement = raw.prepare(sql)
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
      }
      cache.set(sql, statement)
      const prepared = statement
      return {
        reader: prepared.reader,
        all: (params) => prepared.all(fix(params)),
        run: (params) => prepared.run(fix(params)),
        iterate: (params) => prepared.iterate(fix(params)),
      }
    },
  }
}

/**
 * SQLite DDL is transactional, but kysely's SqliteAdapter says otherwise, so its Migrator would
 * apply migrations without a transaction and a failing one could leave half a schema behind.
 */
class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

class TransactionalSqliteDialect extends SqliteDialect {
  override createAdapter(): DialectAdapter {
    return new TransactionalSqliteAdapter()
  }
}

// The database holds hashes and encrypted secrets; other local users should not read it at all.
function restrictFileModes(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600)
  }
}

/**
 * True when every embedded migration is recorded and nothing else is: the common case on every start
 * after the first. Anything unexpected (no table yet, a recorded name we do not know) means the
 * migrator should run and decide.
 */
function schemaIsCurrent(raw: RawSqlite, migrations: MigrationSet): boolean {
  let recorded: string[]
  try {
    recorded = (raw.prepare('select name from kysely_migration order by name').all([]) as Array<{ name: string }>).map(
      (row) => row.name,
    )
  } catch {
    return false
  }
  const embedded = Object.keys(migrations).sort()
  return recorded.length === embedded.length && recorded.every((name, i) => name === embedded[i])
}

/** Options for {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** File path, or `:memory:` for tests. Parent directories are created with mode 0700. */
  path: string
  migrations: MigrationSet
}

/**
 * Opens the database, applies WAL and foreign keys, and migrates to the latest embedded version.
 * A failed migration rolls back (SQLite DDL is transactional) and rejects.
 */
export async function openDatabase<DB>(options: OpenDatabaseOptions): Promise<Database<DB>> {
  if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 })
  const raw = await openSqlite(options.path)
  raw.exec('pragma journal_mode = wal')
  raw.exec('pragma synchronous = normal')
  raw.exec('pragma foreign_keys = on')
  raw.exec('pragma busy_timeout = 5000')
  if (options.path !== ':memory:') restrictFileModes(options.path)
  const db = new Kysely<DB>({ dialect: new TransactionalSqliteDialect({ database: normalizing(raw) }) })
  if (!schemaIsCurrent(raw, options.migrations)) {
    // Loaded only when there is work to do: the migrator costs start time on every start otherwise.
    const { Migrator } = await import('kysely/migration')
    const migrator = new Migrator({ db, provider: { getMigrations: async () => options.migrations } })
    const { error, results } = await migrator.migrateToLatest()
    if (error) {
      await db.destroy()
      const failed = results?.find((r) => r.status === 'Error')?.migrationName
      throw new Error(`database migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`)
    }
  }
  let closed = false
  return {
    db,
    path: options.path,
    async close() {
      if (closed) return
      closed = true
      await db.destroy()
    },
  }
}
