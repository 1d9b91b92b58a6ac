/**
 * Plugins (named bundles of config objects) and marketplaces (catalogs of plugins), with their
 * membership tables. A membership exists or not: removing one deletes the row (the audit trail
 * keeps the history), so re-adding is a plain insert guarded by the unique pair.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['plugin', 'marketplace']) {
    await db.schema
      .createTable(table)
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('created_by_member_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('archived_at', 'text')
      .execute()
    await db.schema.createIndex(`${table}_org_id_idx`).on(table).columns(['org_id', 'id']).execute()
    await db.schema.createIndex(`${table}_org_status_idx`).on(table).columns(['org_id', 'status', 'id']).execute()
  }
  await db.schema
    .createTable('plugin_config_object')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('plugin_id', 'text', (c) => c.notNull().references('plugin.id').onDelete('cascade'))
    .addColumn('config_object_id', 'text', (c) => c.notNull().references('config_object.id').onDelete('cascade'))
    .addColumn('membership_source', 'text', (c) => c.notNull())
    .addColumn('connector_mapping_id', 'text')
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('plugin_config_object_unique', ['plugin_id', 'config_object_id'])
    .execute()
  await db.schema
    .createIndex('plugin_config_object_plugin_idx')
    .on('plugin_config_object')
    .columns(['plugin_id', 'id'])
    .execute()
  await db.schema
    .createIndex('plugin_config_object_object_idx')
    .on('plugin_config_object')
    .columns(['config_object_id', 'plugin_id'])
    .execute()
  await db.schema
    .createTable('marketplace_plugin')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('marketplace_id', 'text', (c) => c.notNull().references('marketplace.id').onDelete('cascade'))
    .addColumn('plugin_id', 'text', (c) => c.notNull().references('plugin.id').onDelete('cascade'))
    .addColumn('membership_source', 'text', (c) => c.notNull())
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('marketplace_plugin_unique', ['marketplace_id', 'plugin_id'])
    .execute()
  await db.schema
    .createIndex('marketplace_plugin_marketplace_idx')
    .on('marketplace_plugin')
    .columns(['marketplace_id', 'id'])
    .execute()
  await db.schema
    .createIndex('marketplace_plugin_plugin_idx')
    .on('marketplace_plugin')
    .columns(['plugin_id', 'marketplace_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('marketplace_plugin').execute()
  await db.schema.dropTable('plugin_config_object').execute()
  await db.schema.dropTable('marketplace').execute()
  await db.schema.dropTable('plugin').execute()
}
