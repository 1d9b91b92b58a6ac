/**
 * Hosted Workers and their tokens. Tokens are stored as SHA-256 only; the runtime's current token
 * set is kept sealed (AES-256-GCM) on the Worker so a restart can relaunch it.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('worker')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('provisioner', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('state_reason', 'text')
    .addColumn('state_message', 'text')
    .addColumn('version', 'text')
    .addColumn('runtime_url', 'text')
    .addColumn('runtime_pid', 'integer')
    .addColumn('workspace_dir', 'text')
    .addColumn('last_heartbeat_at', 'text')
    .addColumn('last_active_at', 'text')
    .addColumn('open_session_count', 'integer')
    .addColumn('last_error_reason', 'text')
    .addColumn('last_error_message', 'text')
    .addColumn('last_error_at', 'text')
    .addColumn('provisioning_deadline_at', 'text')
    .addColumn('credentials_sealed', 'text')
    .addColumn('token_generation', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('worker_org_id_idx').on('worker').columns(['org_id', 'id']).execute()
  // Sweeps: stale heartbeats of healthy Workers, overdue provisioning.
  await db.schema
    .createIndex('worker_state_heartbeat_idx')
    .on('worker')
    .columns(['state', 'last_heartbeat_at'])
    .execute()
  await db.schema
    .createIndex('worker_state_deadline_idx')
    .on('worker')
    .columns(['state', 'provisioning_deadline_at'])
    .execute()

  await db.schema
    .createTable('worker_token')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('worker_id', 'text', (c) => c.notNull().references('worker.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute()
  await db.schema.createIndex('worker_token_worker_idx').on('worker_token').columns(['worker_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('worker_token').execute()
  await db.schema.dropTable('worker').execute()
}
