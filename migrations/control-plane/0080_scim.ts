/**
 * SCIM 2.0 provisioning: per-organization bearer tokens (stored as SHA-256 only), the SCIM User
 * resources an identity provider manages (each links an account to the organization; the
 * membership exists while the resource is active), and SCIM attributes of teams provisioned as
 * Groups.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('scim_token')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('start', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_by_user_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .execute()
  await db.schema.createIndex('scim_token_org_idx').on('scim_token').columns(['org_id', 'id']).execute()

  await db.schema
    .createTable('scim_user')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('app_user.id').onDelete('cascade'))
    /** Lower-cased userName (the account's email), for case-insensitive `eq` and uniqueness. */
    .addColumn('user_name', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text')
    .addColumn('display_name', 'text')
    .addColumn('given_name', 'text')
    .addColumn('family_name', 'text')
    /** JSON array of the `emails` the provider sent. */
    .addColumn('emails', 'text')
    .addColumn('active', 'integer', (c) => c.notNull())
    /** 1 when provisioning created the account (then its name follows the resource). */
    .addColumn('created_account', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('scim_user_org_user_uq', ['org_id', 'user_id'])
    .addUniqueConstraint('scim_user_org_name_uq', ['org_id', 'user_name'])
    .execute()
  await db.schema.createIndex('scim_user_org_external_idx').on('scim_user').columns(['org_id', 'external_id']).execute()
  await db.schema.createIndex('scim_user_org_display_idx').on('scim_user').columns(['org_id', 'display_name']).execute()

  await db.schema
    .createTable('scim_group')
    .addColumn('team_id', 'text', (c) => c.primaryKey().references('team.id').onDelete('cascade'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text')
    .execute()
  await db.schema
    .createIndex('scim_group_org_external_idx')
    .on('scim_group')
    .columns(['org_id', 'external_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('scim_group').execute()
  await db.schema.dropTable('scim_user').execute()
  await db.schema.dropTable('scim_token').execute()
}
