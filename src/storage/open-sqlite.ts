/**
 * Runtime seam for SQLite: bun:sqlite on Bun, node:sqlite on Deno (and Node ≥ 22.5).
 *
 * Returns the tiny structural shape kysely's SqliteDialect needs, plus `exec` for pragmas.
 * Parameter normalisation (booleans, dates) lives one layer up in `sqlite-connection.ts`,
 * so this file stays the only place that knows which driver is underneath.
 * @module
 */
import type { SqliteDatabase, SqliteStatement } from 'kysely'

declare const Bun: any

/** A driver-neutral SQLite handle. */
export interface RawSqlite extends SqliteDatabase {
  exec(sql: string): void
}

/** Opens (creating if needed) a SQLite database file, or `:memory:`. */
export async function openSqlite(path: string): Promise<RawSqlite> {
  if (typeof Bun !== 'undefined') {
    // A variable specifier keeps Deno and tsc from trying to resolve the `bun:` scheme.
    const specifier = 'bun:sqlite'
    const { Database } = await import(specifier)
    const db = new Database(path, { create: true, strict: true })
    return {
      exec: (sql) => {
        db.run(sql)
      },
      close: () => {
        db.close()
      },
      prepare(sql): SqliteStatement {
        const statement = db.prepare(sql)
        return {
          reader: statement.columnNames.length > 0,
          all: (params) => statement.all(...params),
          run: (params) => statement.run(...params),
          iterate: (params) => statement.iterate(...params),
        }
      },
    }
  }
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(path)
  return {
    exec: (sql) => {
      db.exec(sql)
    },
    close: () => {
      db.close()
    },
    prepare(sql): SqliteStatement {
      const statement = db.prepare(sql)
      return {
        reader: statement.columns().length > 0,
        // node:sqlite binds positional parameters only when spread.
        all: (params) => statement.all(...(params as any[])) as unknown[],
        run: (params) => statement.run(...(params as any[])) as any,
        iterate: (params) => statement.iterate(...(params as any[])) as IterableIterator<unknown>,
      }
    },
  }
}
