/**
 * Capability URLs for stock OpenCode: OpenCode fetches a member's skills from `skills.urls`
 * without credentials, so `GET /v1/me/opencode-config` hands it an unguessable path per member
 * and credential. The secret is sealed (so the same URL is handed out again, and OpenCode's cache
 * keeps working) and found by its SHA-256; it stops working with the credential or membership.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('delivery_capability')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
    .addColumn('member_id', 'text', (c) => c.notNull().references('member.id').onDelete('cascade'))
    .addColumn('credential_kind', 'text', (c) => c.notNull())
    .addColumn('credential_id', 'text', (c) => c.notNull())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('delivery_capability_credential_unique', ['credential_kind', 'credential_id', 'member_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('delivery_capability').execute()
}
