/**
 * Single sign-on with an organization's OpenID Connect provider (issue 33 §1) and the
 * organization's admission policy (§2).
 *
 * - `sso_connection`: one per organization; the client secret is sealed with the secret box.
 * - `sso_domain`: an email domain claimed by one organization's connection (unique, so a domain
 *   can never route people to two providers).
 * - `sso_identity`: the link (issuer, subject) → user; accounts are found by it, never by email.
 * - `sso_login`: one sign-in attempt: state (hashed), nonce and PKCE verifier (sealed), kept
 *   server-side for minutes and used once; after the callback it carries a one-time hand-off code
 *   (hashed) that the console exchanges for a session.
 * - `org_admission_policy`: ways in, domain allowlist, `require_sso`, with a version for
 *   lost-update protection. No row means the defaults (every way in, any domain, no SSO rule).
 * - `user_session.sso_org_id`: the organization whose provider signed this session in; null for
 *   a password session.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sso_connection')
    .addColumn('org_id', 'text', (c) => c.primaryKey())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_secret_sealed', 'text', (c) => c.notNull())
    /** JSON array of lower-case domains. */
    .addColumn('allowed_domains', 'text', (c) => c.notNull())
    .addColumn('default_role', 'text', (c) => c.notNull())
    .addColumn('default_team_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('sso_domain')
    .addColumn('domain', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('sso_domain_org_idx').on('sso_domain').column('org_id').execute()
  await db.schema
    .createTable('sso_identity')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_sign_in_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('sso_identity_issuer_subject_key', ['issuer', 'subject'])
    .execute()
  await db.schema.createIndex('sso_identity_user_idx').on('sso_identity').columns(['user_id', 'issuer']).execute()
  await db.schema
    .createTable('sso_login')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('state_hash', 'text', (c) => c.notNull().unique())
    .addColumn('secrets_sealed', 'text', (c) => c.notNull())
    .addColumn('return_to', 'text', (c) => c.notNull())
    /** Set when a signed-in person links their account (explicit linking). */
    .addColumn('link_user_id', 'text')
    /** `started | authenticated | done`. */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('handoff_hash', 'text', (c) => c.unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('sso_login_expires_idx').on('sso_login').column('expires_at').execute()
  await db.schema
    .createTable('org_admission_policy')
    .addColumn('org_id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('allow_invitation', 'integer', (c) => c.notNull())
    .addColumn('allow_sso_jit', 'integer', (c) => c.notNull())
    .addColumn('allow_scim', 'integer', (c) => c.notNull())
    /** JSON array of lower-case domains; empty: any domain. */
    .addColumn('allowed_domains', 'text', (c) => c.notNull())
    .addColumn('require_sso', 'integer', (c) => c.notNull())
    .addColumn('updated_by_member_id', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.alterTable('user_session').addColumn('sso_org_id', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('user_session').dropColumn('sso_org_id').execute()
  await db.schema.dropTable('org_admission_policy').execute()
  await db.schema.dropTable('sso_login').execute()
  await db.schema.dropTable('sso_identity').execute()
  await db.schema.dropTable('sso_domain').execute()
  await db.schema.dropTable('sso_connection').execute()
}
