/**
 * The sign-in and sign-up throttle, shared by every instance on the database: failed attempts per
 * account and per client address in a fixed window. Keys are hashes (`account:`/`address:` plus
 * the value), so the table holds no email or address in clear.
 */
import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sign_in_throttle')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('window_started_at', 'text', (c) => c.notNull())
    .addCheckConstraint('sign_in_throttle_failures_positive', sql`failures > 0`)
    .execute()
  await db.schema
    .createIndex('sign_in_throttle_window_idx')
    .on('sign_in_throttle')
    .column('window_started_at')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sign_in_throttle').execute()
}
