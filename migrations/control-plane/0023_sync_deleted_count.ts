/**
 * Sync events count the config objects they soft-deleted because their source item disappeared.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('connector_sync_event')
    .addColumn('deleted_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('connector_sync_event').dropColumn('deleted_count').execute()
}
