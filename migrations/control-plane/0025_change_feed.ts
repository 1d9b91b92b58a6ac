/**
 * The organization change feed behind `GET /v1/events`: what changed (config objects, grants,
 * hub assignments, connector syncs, Workers), numbered so that, within an organization, numbers
 * follow commit order: a subscriber that has seen N never later meets an event below N.
 *
 * How the number is taken differs by engine, and only in `appendChange`: on PostgreSQL from a
 * sequence while holding a per-organization advisory lock until commit (no shared row, so
 * concurrent SERIALIZABLE writers never abort on it); on SQLite, where one writer runs at a time,
 * as the organization's highest number plus one.
 */
import { sql, type Kysely } from 'kysely'
import { engineOf } from '../../src/storage/database.ts'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('change_event')
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text')
    .addColumn('subject_id', 'text')
    .addColumn('data', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('change_event_pk', ['org_id', 'seq'])
    .addCheckConstraint('change_event_seq_positive', sql`seq > 0`)
    .execute()
  if (engineOf(db) === 'postgres') await sql`create sequence change_event_seq`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  if (engineOf(db) === 'postgres') await sql`drop sequence if exists change_event_seq`.execute(db)
  await db.schema.dropTable('change_event').execute()
}
