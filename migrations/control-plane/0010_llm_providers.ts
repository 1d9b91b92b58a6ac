/**
 * Model providers an organization shares: a catalog provider or a custom endpoint, its models
 * (JSON), and its API key sealed with the server's secret box (AES-256-GCM, bound to the row id),
 * so the database file never holds the key in plaintext.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('llm_provider')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('catalog_provider_id', 'text')
    .addColumn('base_url', 'text')
    .addColumn('api', 'text', (c) => c.notNull())
    .addColumn('models', 'text', (c) => c.notNull())
    .addColumn('api_key_sealed', 'text')
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('llm_provider_org_name_unique', ['org_id', 'name'])
    .execute()
  await db.schema.createIndex('llm_provider_org_id_idx').on('llm_provider').columns(['org_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('llm_provider').execute()
}
