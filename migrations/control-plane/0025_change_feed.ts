/**
 * The organization change feed behind `GET /v1/events`: what changed (config objects, grants,
 * hub assignments, connector syncs, Workers), numbered per organization without gaps. The number
 * is taken from `change_feed_head` in the writing transaction, so two instances appending to one
 * organization serialize on that row and the numbers follow commit order: a subscriber that has
 * seen N never later meets an event below N.
 */
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('change_feed_head')
    .addColumn('org_id', 'text', (c) => c.primaryKey().references('organization.id').onDelete('cascade'))
    .addColumn('last_seq', 'integer', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('change_event')
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text')
    .addColumn('subject_id', 'text')
    .addColumn('data', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('change_event_pk', ['org_id', 'seq'])
    .addCheckConstraint('change_event_seq_positive', sql`seq > 0`)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('change_event').execute()
  await db.schema.dropTable('change_feed_head').execute()
}
