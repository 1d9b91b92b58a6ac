/**
 * Dynamically registered OAuth clients (RFC 7591; MCP clients) and authorization requests of the
 * authorization code grant with PKCE. A request is created by `GET /oauth/authorize`, decided on
 * the console's consent page, and its code (stored as SHA-256 only) is exchanged once, bound to the
 * client, the redirect URI, the PKCE challenge and the resource.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_client')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    /** JSON array of exact redirect URIs. */
    .addColumn('redirect_uris', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('address_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('oauth_client_address_idx')
    .on('oauth_client')
    .columns(['address_hash', 'created_at'])
    .execute()

  await db.schema
    .createTable('oauth_authorization')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('resource', 'text')
    .addColumn('state', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.unique())
    .addColumn('org_id', 'text')
    .addColumn('member_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('grant_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('oauth_authorization_expires_idx')
    .on('oauth_authorization')
    .column('expires_at')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_authorization').execute()
  await db.schema.dropTable('oauth_client').execute()
}
