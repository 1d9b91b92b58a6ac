/**
 * A SQLite database that one process owns and writes through a few fixed statements: the
 * workspace server's state (issued tokens, events, the audit log).
 *
 * Why not kysely, as the control plane does: the workspace server runs on a person's desktop and
 * its whole state is three tables written by a dozen fixed statements, with no second engine to
 * abstract. Evaluating kysely and running its query builder cost a compiled workspace server
 * 4.3 MB of resident memory over the same work on the runtime's SQLite (2026-11-27, a compiled
 * server opening a database and answering; see bench/results/history.md, "Issue 15, fifth round"), about a
 * tenth of its idle footprint. So the statements are SQL text run as cached prepared statements
 * on `open-sqlite.ts` directly. SQLite calls are synchronous, so one connection serves reads and
 * writes without interleaving, and a transaction is a plain function call.
 *
 * Migrations are recorded in the table kysely's migrator keeps (`migration-record.ts`, same
 * columns), so a state database written by an earlier version, which migrated through kysely,
 * opens as current, and one written by this version opens in an earlier one.
 * @module
 */
import { cachedStatements } from './cached-statements.ts'
import { MIGRATION_RECORD_TABLES, recordedMigrations, recordsExactly } from './migration-record.ts'
import type { RawSqlite } from './open-sqlite.ts'
import { openSqliteFile } from './open-sqlite-file.ts'

/** An open local database. Every call runs to completion before it returns. */
export interface LocalDatabase {
  /** The file, or `:memory:`. */
  readonly path: string
  /** The rows a statement returns (a select, or a write with `returning`). */
  all<Row>(sql: string, params?: ReadonlyArray<unknown>): Row[]
  /** The first row a statement returns, if any. */
  first<Row>(sql: string, params?: ReadonlyArray<unknown>): Row | undefined
  /** Runs a write; returns how many rows it changed. */
  run(sql: string, params?: ReadonlyArray<unknown>): number
  /** Runs `work` in one write transaction: committed when it returns, rolled back when it throws. */
  transaction<T>(work: () => T): T
  close(): void
}

/** One schema step; `up` runs inside the transaction that records it (SQLite DDL is transactional). */
export interface LocalMigration {
  up(db: { exec(sql: string): void }): void
}

/** Migrations keyed by name; names sort lexically into apply order. */
export type LocalMigrationSet = Record<string, LocalMigration>

/** Options for {@link openLocalDatabase}. */
export interface OpenLocalDatabaseOptions {
  /** The SQLite file (its directory is created, owner-only), or `:memory:`. */
  path: string
  migrations: LocalMigrationSet
}

/** Opens (creating if needed) the database and applies the migrations it has not recorded. */
export async function openLocalDatabase(options: OpenLocalDatabaseOptions): Promise<LocalDatabase> {
  const { path } = options
  const raw = cachedStatements(await openSqliteFile(path), 64)
  try {
    const db = localDatabase(raw, path)
    migrate(db, raw, options.migrations)
    return db
  } catch (error) {
    raw.close()
    throw error
  }
}

function localDatabase(raw: RawSqlite, path: string): LocalDatabase {
  let inTransaction = false
  let closed = false
  const all = <Row>(sql: string, params: ReadonlyArray<unknown> = []) => raw.prepare(sql).all(params) as Row[]
  return {
    path,
    all,
    first: <Row>(sql: string, params: ReadonlyArray<unknown> = []) => all<Row>(sql, params)[0],
    run: (sql, params = []) => Number(raw.prepare(sql).run(params).changes),
    transaction<T>(work: () => T): T {
      if (inTransaction) throw new Error('local database: transactions do not nest')
      inTransaction = true
      try {
        // Immediate: take the write lock up front, so a second process waits (busy_timeout) at
        // the start instead of failing at its first write with a snapshot it cannot upgrade.
        // Prepared like any statement: an exec would also empty the statement cache.
        raw.prepare('begin immediate').run([])
        try {
          const result = work()
          raw.prepare('commit').run([])
          return result
        } catch (error) {
          try {
            raw.prepare('rollback').run([])
          } catch {
            // SQLite already rolled back (it does on some errors); the work's error is the one to report.
          }
          throw error
        }
      } finally {
        inTransaction = false
      }
    },
    close() {
      if (closed) return
      closed = true
      raw.close()
    },
  }
}

/**
 * Applies, in one transaction, every embedded migration not yet recorded, in name order. A
 * recorded name this version does not know means a newer version wrote the database: refused
 * rather than guessed at, as kysely's migrator does.
 */
function migrate(db: LocalDatabase, raw: RawSqlite, migrations: LocalMigrationSet): void {
  if (recordsExactly(recordedMigrations(raw), Object.keys(migrations))) return
  db.transaction(() => {
    for (const statement of MIGRATION_RECORD_TABLES) raw.exec(statement)
    // Read again under the write lock: another process may have migrated while this one waited.
    const applied = new Set(recordedMigrations(raw) ?? [])
    const unknown = [...applied].filter((name) => !(name in migrations))
    if (unknown.length > 0)
      throw new Error(
        `database migration failed: ${db.path} was migrated by a newer version (${unknown.join(', ')} unknown here)`,
      )
    for (const name of Object.keys(migrations).sort()) {
      if (applied.has(name)) continue
      try {
        migrations[name]!.up(raw)
      } catch (error) {
        throw new Error(`database migration ${name} failed: ${(error as Error).message ?? error}`)
      }
      db.run('insert into "kysely_migration" ("name", "timestamp") values (?, ?)', [name, new Date().toISOString()])
    }
  })
}
