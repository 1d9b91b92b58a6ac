/**
 * Control-plane instances and the ownership of Worker runtimes. Several control planes may share
 * one database; each registers itself (`control_plane_instance`) and heartbeats, and a Worker's
 * runtime records the instance, host, process id and token generation it was started with, so
 * rotations are serialized through the row, the owner stops what it started, a restart on the
 * same host finds runtimes left by a crash, and the others notice when an owner is gone.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('control_plane_instance')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('heartbeat_at', 'text', (c) => c.notNull())
    .addColumn('stopped_at', 'text')
    .execute()
  await db.schema
    .createIndex('control_plane_instance_heartbeat_idx')
    .on('control_plane_instance')
    .columns(['stopped_at', 'heartbeat_at'])
    .execute()
  // One statement per column: SQLite's ALTER TABLE adds one column at a time.
  await db.schema.alterTable('worker').addColumn('runtime_instance_id', 'text').execute()
  await db.schema.alterTable('worker').addColumn('runtime_host', 'text').execute()
  await db.schema.alterTable('worker').addColumn('runtime_generation', 'integer').execute()
  await db.schema.createIndex('worker_runtime_instance_idx').on('worker').columns(['runtime_instance_id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('worker_runtime_instance_idx').execute()
  await db.schema.alterTable('worker').dropColumn('runtime_generation').execute()
  await db.schema.alterTable('worker').dropColumn('runtime_host').execute()
  await db.schema.alterTable('worker').dropColumn('runtime_instance_id').execute()
  await db.schema.dropTable('control_plane_instance').execute()
}
