/**
 * Connectors: account → instance → target → mapping, discovery results, sync events, and bindings
 * from source items to the config objects they became. Access grants on instances live in the
 * shared `access_grant` table (resource type `connector_instance`).
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('connector_account')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('connector_type', 'text', (c) => c.notNull())
    .addColumn('remote_id', 'text', (c) => c.notNull())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('credentials_sealed', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('connector_account_remote_unique', ['org_id', 'connector_type', 'remote_id'])
    .execute()
  await db.schema.createIndex('connector_account_org_idx').on('connector_account').columns(['org_id', 'id']).execute()

  await db.schema
    .createTable('connector_instance')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('connector_account_id', 'text', (c) =>
      c.notNull().references('connector_account.id').onDelete('cascade'),
    )
    .addColumn('connector_type', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('config', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('last_synced_at', 'text')
    .addColumn('last_sync_status', 'text')
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('connector_instance_name_unique', ['org_id', 'name'])
    .execute()
  await db.schema.createIndex('connector_instance_org_idx').on('connector_instance').columns(['org_id', 'id']).execute()
  await db.schema
    .createIndex('connector_instance_account_idx')
    .on('connector_instance')
    .columns(['connector_account_id', 'id'])
    .execute()

  await db.schema
    .createTable('connector_target')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text', (c) => c.notNull().references('connector_instance.id').onDelete('cascade'))
    .addColumn('connector_type', 'text', (c) => c.notNull())
    .addColumn('remote_id', 'text', (c) => c.notNull())
    .addColumn('target_kind', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('connector_target_remote_unique', ['instance_id', 'remote_id'])
    .execute()
  await db.schema
    .createIndex('connector_target_instance_idx')
    .on('connector_target')
    .columns(['instance_id', 'id'])
    .execute()

  await db.schema
    .createTable('connector_mapping')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull().references('connector_target.id').onDelete('cascade'))
    .addColumn('mapping_kind', 'text', (c) => c.notNull())
    .addColumn('selector', 'text', (c) => c.notNull())
    .addColumn('object_type', 'text', (c) => c.notNull())
    .addColumn('plugin_id', 'text')
    .addColumn('config', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('connector_mapping_selector_unique', ['target_id', 'selector', 'object_type'])
    .execute()
  await db.schema
    .createIndex('connector_mapping_target_idx')
    .on('connector_mapping')
    .columns(['target_id', 'id'])
    .execute()

  await db.schema
    .createTable('connector_discovery')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull().references('connector_target.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('source_revision', 'text')
    .addColumn('items', 'text')
    .addColumn('warnings', 'text')
    .addColumn('error_reason', 'text')
    .addColumn('error_message', 'text')
    .addColumn('job_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .execute()

  await db.schema
    .createTable('connector_sync_event')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text', (c) => c.notNull().references('connector_instance.id').onDelete('cascade'))
    .addColumn('target_id', 'text', (c) => c.notNull().references('connector_target.id').onDelete('cascade'))
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('source_revision', 'text')
    .addColumn('total_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('processed_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('unchanged_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failed_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failures', 'text')
    .addColumn('error_reason', 'text')
    .addColumn('error_message', 'text')
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('job_id', 'text')
    .addColumn('triggered_by_member_id', 'text')
    .addColumn('triggered_by_user_id', 'text')
    .addColumn('credential_kind', 'text', (c) => c.notNull())
    .addColumn('api_key_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .execute()
  // Lists: newest first per organization, optionally per instance, target or status.
  await db.schema
    .createIndex('connector_sync_event_org_idx')
    .on('connector_sync_event')
    .columns(['org_id', 'id'])
    .execute()
  await db.schema
    .createIndex('connector_sync_event_target_idx')
    .on('connector_sync_event')
    .columns(['target_id', 'id'])
    .execute()
  await db.schema
    .createIndex('connector_sync_event_instance_idx')
    .on('connector_sync_event')
    .columns(['instance_id', 'id'])
    .execute()
  await db.schema
    .createIndex('connector_sync_event_status_idx')
    .on('connector_sync_event')
    .columns(['org_id', 'status', 'id'])
    .execute()

  await db.schema
    .createTable('connector_source_binding')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull().references('connector_target.id').onDelete('cascade'))
    .addColumn('mapping_id', 'text', (c) => c.notNull().references('connector_mapping.id').onDelete('cascade'))
    .addColumn('locator', 'text', (c) => c.notNull())
    .addColumn('config_object_id', 'text', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('source_revision', 'text')
    .addColumn('last_sync_event_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('connector_source_binding_unique', ['target_id', 'mapping_id', 'locator'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'connector_source_binding',
    'connector_sync_event',
    'connector_discovery',
    'connector_mapping',
    'connector_target',
    'connector_instance',
    'connector_account',
  ]) {
    await db.schema.dropTable(table).execute()
  }
}
