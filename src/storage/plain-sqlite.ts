/**
 * A SQLite database used through plain SQL statements, for a store small enough to need no query
 * builder (the workspace server's state: tokens, events, audit).
 *
 * Why not kysely (`database.ts`): evaluating it costs a compiled server about 5 MB of resident
 * memory and JIT work at every start (README.md, "Workspace memory"), for a dozen fixed statements
 * on one engine. Statements run synchronously on one connection, prepared once per SQL text. The
 * embedded migrations are the same kysely migrations with the same record, applied through
 * `database.ts`, which is loaded only when one is pending (a first start, an upgrade).
 * @module
 */
import type { MigrationSet } from './database.ts'
import { normalizeParam } from './bound-values.ts'
import type { RawSqlite } from './open-sqlite.ts'
import { openSqliteFile, schemaIsCurrent } from './sqlite-file.ts'

/** What a write statement changed. */
export interface RunResult {
  changes: number
  lastInsertRowid: number
}

/** An open database of plain statements. Values are bound positionally (`?`). */
export interface PlainSqlite {
  /** Every row of a query. */
  all<Row>(sql: string, ...params: unknown[]): Row[]
  /** The first row of a query, or undefined. */
  get<Row>(sql: string, ...params: unknown[]): Row | undefined
  /** Runs a statement that returns no rows. */
  run(sql: string, ...params: unknown[]): RunResult
  /** Closes the connection; later calls do nothing. */
  close(): Promise<void>
}

/** Opens the SQLite file at `path` (or `:memory:`) and applies any pending `migrations`. */
export async function openPlainSqlite(options: { path: string; migrations: MigrationSet }): Promise<PlainSqlite> {
  const raw = await openSqliteFile(options.path)
  if (!schemaIsCurrent(raw, options.migrations)) {
    try {
      const { migrateSqlite } = await import('./database.ts')
      await migrateSqlite(raw, options.migrations)
    } catch (error) {
      raw.close()
      throw error
    }
  }
  return plainSqlite(raw)
}

function plainSqlite(raw: RawSqlite): PlainSqlite {
  const statements = new Map<string, ReturnType<RawSqlite['prepare']>>()
  const prepared = (sql: string) => {
    let statement = statements.get(sql)
    if (!statement) statements.set(sql, (statement = raw.prepare(sql)))
    return statement
  }
  let closed = false
  return {
    all: <Row>(sql: string, ...params: unknown[]) => prepared(sql).all(params.map(normalizeParam)) as Row[],
    get: <Row>(sql: string, ...params: unknown[]) =>
      prepared(sql).all(params.map(normalizeParam))[0] as Row | undefined,
    run(sql, ...params) {
      const { changes, lastInsertRowid } = prepared(sql).run(params.map(normalizeParam))
      return { changes: Number(changes), lastInsertRowid: Number(lastInsertRowid) }
    },
    async close() {
      if (closed) return
      closed = true
      statements.clear()
      raw.close()
    },
  }
}
