/**
 * Idempotency keys (`Idempotency-Key` on control-plane writes): one row per caller scope and key,
 * claimed before the handler runs, counted by every transaction of the request just before it
 * commits (so "written" and "key recorded" commit together), and holding the sealed answer that a
 * repeat gets back. Rows expire (`expires_at`) and are swept in bounded batches.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_key')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('lease_until', 'text', (c) => c.notNull())
    .addColumn('commits', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'integer')
    .addColumn('answer', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_key_pk', ['scope', 'key'])
    .execute()
  await db.schema.createIndex('idempotency_key_expires_idx').on('idempotency_key').column('expires_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_key').execute()
}
