/**
 * Where an audited action came from: null for the HTTP API (every row written before), `mcp` for a
 * tool call on the MCP endpoint. The same domain functions serve both, so the origin is the only
 * way an administrator can tell an agent's change from a person's.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_event').addColumn('origin', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_event').dropColumn('origin').execute()
}
