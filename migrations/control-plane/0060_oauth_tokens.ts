/**
 * The authorization server's device requests, grants and tokens (issue 30 §1). A grant is one
 * approval (a member, an organization, a client, scopes, a resource); its tokens are the access
 * and refresh tokens issued under it, each stored as SHA-256 only. Refresh tokens rotate: an
 * exchanged one is kept with `ended_at` so presenting it again is recognised as reuse and ends the
 * whole grant. Grants are not deleted with the member: they are revoked in the same transaction,
 * so lists and the audit keep saying why a token stopped working.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_device_request')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('device_code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('resource', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('interval_seconds', 'integer', (c) => c.notNull())
    .addColumn('last_polled_at', 'text')
    .addColumn('org_id', 'text')
    .addColumn('member_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('decided_at', 'text')
    .addColumn('grant_id', 'text')
    // A hash of the requesting address, to bound the pending requests one address may hold.
    .addColumn('address_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('oauth_device_request_address_idx')
    .on('oauth_device_request')
    .columns(['address_hash', 'expires_at'])
    .execute()
  await db.schema
    .createIndex('oauth_device_request_expires_idx')
    .on('oauth_device_request')
    .column('expires_at')
    .execute()

  await db.schema
    .createTable('oauth_grant')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('resource', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('revoked_reason', 'text')
    .execute()
  await db.schema.createIndex('oauth_grant_org_idx').on('oauth_grant').columns(['org_id', 'id']).execute()
  await db.schema.createIndex('oauth_grant_member_idx').on('oauth_grant').columns(['member_id', 'id']).execute()

  await db.schema
    .createTable('oauth_token')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grant.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text')
    .execute()
  await db.schema.createIndex('oauth_token_grant_idx').on('oauth_token').columns(['grant_id', 'kind']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_token').execute()
  await db.schema.dropTable('oauth_grant').execute()
  await db.schema.dropTable('oauth_device_request').execute()
}
