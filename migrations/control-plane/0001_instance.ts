/**
 * Instance metadata: one row identifying this control-plane database, so backups and logs can be
 * matched to the deployment that wrote them.
 */
import type { Kysely } from 'kysely'
import { sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('instance')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('schema_note', 'text')
    .execute()
  const id = `cp_${crypto.randomUUID().replace(/-/g, '')}`
  await sql`insert into instance (id, created_at, schema_note) values (${id}, ${new Date().toISOString()}, ${'service-server control plane'})`.execute(
    db,
  )
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('instance').execute()
}
