/**
 * The latest version's summary (number is `version_count`) kept on the object row, so a list
 * page reads one index range of one table instead of joining every row to its version.
 * Written only by the store's insert and append, in the transaction that writes the version.
 */
import type { Kysely } from 'kysely'
import { sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('config_object').addColumn('latest_created_via', 'text').execute()
  await db.schema.alterTable('config_object').addColumn('latest_created_by_member_id', 'text').execute()
  await db.schema.alterTable('config_object').addColumn('latest_source_revision_ref', 'text').execute()
  await db.schema.alterTable('config_object').addColumn('latest_created_at', 'text').execute()
  // Rows written before this migration take the summary from their latest version.
  for (const column of ['created_via', 'created_by_member_id', 'source_revision_ref', 'created_at']) {
    await sql`update config_object set ${sql.ref(`latest_${column}`)} = (select ${sql.ref(`v.${column}`)} from config_object_version v where v.id = config_object.latest_version_id)`.execute(
      db,
    )
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of [
    'latest_created_at',
    'latest_source_revision_ref',
    'latest_created_by_member_id',
    'latest_created_via',
  ]) {
    await db.schema.alterTable('config_object').dropColumn(column).execute()
  }
}
