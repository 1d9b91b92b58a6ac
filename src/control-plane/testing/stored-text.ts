/**
 * Everything the database stores, as text, for tests that prove a secret is not kept in clear:
 * the SQLite file and its write-ahead log, or every row of every table on PostgreSQL.
 * @module
 */
import { readFileSync, existsSync } from 'node:fs'
import { sql } from 'kysely'
import type { ControlPlaneApp } from '../app.ts'

/** The stored bytes (SQLite) or rows (PostgreSQL) of the app's database, as one string. */
export async function storedText(app: ControlPlaneApp): Promise<string> {
  const { database } = app
  if (database.engine === 'sqlite') {
    return [database.path, `${database.path}-wal`]
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file).toString('latin1'))
      .join('')
  }
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(
    database.db,
  )
  const parts: string[] = []
  for (const { table_name } of tables.rows) {
    const rows = await sql`select * from ${sql.table(table_name)}`.execute(database.db)
    parts.push(JSON.stringify(rows.rows))
  }
  return parts.join('\n')
}
