/**
 * Workspace-server state: issued tokens (hashes only), persisted workspace events and the audit
 * log. One small database instead of JSON files so restarts keep all three and writes are atomic.
 *
 * The statements are the ones kysely's schema builder produced for this migration in earlier
 * versions, so databases made by either have the same schema.
 */
import type { LocalMigration } from '../../src/storage/local-database.ts'

export const up: LocalMigration['up'] = (db) => {
  db.exec(
    'create table "tokens" ("id" text primary key, "hash" text not null unique, "scope" text not null, "label" text, "created_at" text not null, "expires_at" text, "last_used_at" text)',
  )
  db.exec(
    'create table "events" ("seq" integer primary key autoincrement, "id" text not null unique, "workspace_id" text not null, "type" text not null, "payload" text not null, "created_at" text not null)',
  )
  db.exec('create index "events_workspace_seq" on "events" ("workspace_id", "seq")')
  db.exec(
    'create table "audit" ("seq" integer primary key autoincrement, "id" text not null unique, "workspace_id" text not null, "actor" text not null, "action" text not null, "target" text not null, "summary" text not null, "created_at" text not null)',
  )
  db.exec('create index "audit_workspace_seq" on "audit" ("workspace_id", "seq")')
}
