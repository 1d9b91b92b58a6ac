/**
 * Config objects and their append-only version history. Lists filter by organization plus one of
 * type, status, source mode or connector instance and page by id, so each filter has an index
 * `(org_id, <filter>, id)`. Versions are numbered per object with a unique constraint: two
 * writers appending on the same base version cannot both succeed. `config_object_term` is the
 * text-search index (words of the title, description and latest content), so `q` is answered
 * by an index range scan instead of scanning rows.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('config_object')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('object_type', 'text', (c) => c.notNull())
    .addColumn('source_mode', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('connector_instance_id', 'text')
    .addColumn('created_by_member_id', 'text')
    .addColumn('latest_version_id', 'text')
    .addColumn('version_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('archived_at', 'text')
    .addColumn('deleted_at', 'text')
    .execute()
  await db.schema.createIndex('config_object_org_id_idx').on('config_object').columns(['org_id', 'id']).execute()
  await db.schema
    .createIndex('config_object_org_type_idx')
    .on('config_object')
    .columns(['org_id', 'object_type', 'id'])
    .execute()
  await db.schema
    .createIndex('config_object_org_status_idx')
    .on('config_object')
    .columns(['org_id', 'status', 'id'])
    .execute()
  await db.schema
    .createIndex('config_object_org_source_idx')
    .on('config_object')
    .columns(['org_id', 'source_mode', 'id'])
    .execute()
  await db.schema
    .createIndex('config_object_org_connector_idx')
    .on('config_object')
    .columns(['org_id', 'connector_instance_id', 'id'])
    .execute()

  await db.schema
    .createTable('config_object_version')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('config_object_id', 'text', (c) => c.notNull().references('config_object.id').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('raw_source_text', 'text')
    .addColumn('normalized_payload', 'text', (c) => c.notNull())
    .addColumn('created_via', 'text', (c) => c.notNull())
    .addColumn('created_by_member_id', 'text')
    .addColumn('connector_sync_event_id', 'text')
    .addColumn('source_revision_ref', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('config_object_version_number_unique', ['config_object_id', 'number'])
    .execute()
  await db.schema
    .createIndex('config_object_version_object_idx')
    .on('config_object_version')
    .columns(['config_object_id', 'id'])
    .execute()

  await db.schema
    .createTable('config_object_term')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('term', 'text', (c) => c.notNull())
    .addColumn('config_object_id', 'text', (c) => c.notNull().references('config_object.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('config_object_term_pk', ['org_id', 'term', 'config_object_id'])
    .execute()
  await db.schema
    .createIndex('config_object_term_object_idx')
    .on('config_object_term')
    .columns(['config_object_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('config_object_term').execute()
  await db.schema.dropTable('config_object_version').execute()
  await db.schema.dropTable('config_object').execute()
}
