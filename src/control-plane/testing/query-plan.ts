/**
 * The plan a database chooses for a compiled query, for tests that check a list is answered from
 * an index without a sort. SQLite answers `explain query plan`; PostgreSQL answers `explain`, and
 * is asked with sequential scans discouraged, since on a test-sized table a scan is cheapest and
 * would hide whether a usable index exists.
 * @module
 */
import { sql, type CompiledQuery, type Kysely } from 'kysely'
import { engineOf } from '../../storage/database.ts'

/** A query plan: its text (index names appear in it) and whether it sorts rows. */
export interface QueryPlan {
  text: string
  sorts: boolean
}

/** Explains `query` on whichever engine `db` runs. */
export async function queryPlan(db: Kysely<any>, query: CompiledQuery): Promise<QueryPlan> {
  if (engineOf(db) === 'sqlite') {
    const rows = (await db.executeQuery({ ...query, sql: `explain query plan ${query.sql}` } as CompiledQuery)).rows
    const text = (rows as Array<{ detail: string }>).map((r) => r.detail).join(' | ')
    return { text, sorts: /TEMP B-TREE/.test(text) }
  }
  return db.connection().execute(async (conn) => {
    await sql`set enable_seqscan = off`.execute(conn)
    try {
      const rows = (await conn.executeQuery({ ...query, sql: `explain ${query.sql}` } as CompiledQuery)).rows
      const text = (rows as Array<Record<string, string>>).map((r) => Object.values(r)[0]).join(' | ')
      return { text, sorts: /(^|\W)Sort\b/.test(text) }
    } finally {
      await sql`reset enable_seqscan`.execute(conn)
    }
  })
}
