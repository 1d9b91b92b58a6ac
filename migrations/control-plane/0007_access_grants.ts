/**
 * Access grants on catalog resources (config objects, plugins, marketplaces, skill hubs, model
 * providers) in one table keyed by resource type and id. A grant names exactly one principal:
 * a member, a team or the whole organization; `principal_key` (`member:<id>`, `team:<id>`,
 * `org`) makes "one grant per principal per resource" a unique constraint. Visibility checks
 * start from the caller's principals, hence the `(org_id, resource_type, <principal>, resource_id)`
 * indexes.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('access_grant')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('member_id', 'text')
    .addColumn('team_id', 'text')
    .addColumn('org_wide', 'integer', (c) => c.notNull())
    .addColumn('principal_key', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_by_member_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('access_grant_principal_unique', ['resource_type', 'resource_id', 'principal_key'])
    .execute()
  await db.schema
    .createIndex('access_grant_resource_idx')
    .on('access_grant')
    .columns(['resource_type', 'resource_id', 'id'])
    .execute()
  await db.schema
    .createIndex('access_grant_member_idx')
    .on('access_grant')
    .columns(['org_id', 'resource_type', 'member_id', 'resource_id'])
    .execute()
  await db.schema
    .createIndex('access_grant_team_idx')
    .on('access_grant')
    .columns(['org_id', 'resource_type', 'team_id', 'resource_id'])
    .execute()
  await db.schema
    .createIndex('access_grant_org_wide_idx')
    .on('access_grant')
    .columns(['org_id', 'resource_type', 'org_wide', 'resource_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('access_grant').execute()
}
