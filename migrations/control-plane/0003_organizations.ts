/**
 * Organizations, their members, invitations and API keys. Every org-owned table is indexed on
 * (org_id, id) because lists page by key-set over that pair and ids sort by creation time.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organization')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('member')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('app_user.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('member_org_user_unique', ['org_id', 'user_id'])
    .execute()
  await db.schema.createIndex('member_org_id_idx').on('member').columns(['org_id', 'id']).execute()
  await db.schema.createIndex('member_user_idx').on('member').columns(['user_id', 'id']).execute()

  await db.schema
    .createTable('invitation')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('invited_by_member_id', 'text')
    .addColumn('accepted_by_user_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('closed_at', 'text')
    .execute()
  await db.schema.createIndex('invitation_org_id_idx').on('invitation').columns(['org_id', 'id']).execute()
  await db.schema.createIndex('invitation_email_idx').on('invitation').columns(['email', 'status']).execute()

  await db.schema
    .createTable('api_key')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    // Plain ids, not foreign keys: a key outlives its member's removal as a disabled record.
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('start', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('disabled_at', 'text')
    .addColumn('disabled_reason', 'text')
    .execute()
  await db.schema.createIndex('api_key_org_id_idx').on('api_key').columns(['org_id', 'id']).execute()
  await db.schema.createIndex('api_key_member_idx').on('api_key').columns(['member_id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('api_key').execute()
  await db.schema.dropTable('invitation').execute()
  await db.schema.dropTable('member').execute()
  await db.schema.dropTable('organization').execute()
}
