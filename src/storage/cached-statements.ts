/**
 * Prepared statements kept by SQL text, with bound values normalised, over a raw SQLite handle.
 *
 * Why: preparing costs a large share of a small query, and both kysely (which prepares on every
 * execution) and the workspace's fixed statements run the same few texts again and again, so the
 * statements of recently seen SQL text are kept (LRU). Statements run one at a time on a
 * connection, so one cached statement is never bound twice at once.
 * @module
 */
import { normalizeParam } from './bound-values.ts'
import type { RawSqlite } from './open-sqlite.ts'

/** How many distinct prepared statements are kept; the hot set of a server is far smaller. */
export const STATEMENT_CACHE_SIZE = 512

/** `raw` with its statements cached by text and its bound values normalised (`bound-values.ts`). */
export function cachedStatements(raw: RawSqlite, size: number = STATEMENT_CACHE_SIZE): RawSqlite {
  const cache = new Map<string, ReturnType<RawSqlite['prepare']>>()
  const fix = (params: ReadonlyArray<unknown>) => params.map(normalizeParam)
  return {
    // A schema change invalidates prepared statements, so any exec (DDL, pragmas) starts afresh.
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
        if (cache.size >= size) cache.delete(cache.keys().next().value!)
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
