/**
 * Every state-changing request is audited (issue 33 §4): an event may have no organization (a
 * refused sign-in, a sign-up without an invitation), and says how the request ended (`outcome`
 * success|denied|failed, `error_code`), which request it was (`request_id`) and which declared route
 * (`route`, e.g. `DELETE /v1/teams/:teamId`; never a query string). Indexes serve the list filters
 * with an equality (actor, action, target; the others narrow an `(org_id, id)` scan, which ids
 * make a time-ordered scan) and the retention sweep (`created_at`). Each index costs every audited
 * write, so there are no more of them.
 *
 * SQLite cannot drop a NOT NULL constraint, so there the table is rebuilt with its rows; nothing
 * references it.
 */
import { type Kysely, sql } from 'kysely'
import { engineOf } from '../../src/storage/database.ts'

const NEW_COLUMNS: Array<[string, string]> = [
  ['outcome', "text not null default 'success'"],
  ['error_code', 'text'],
  ['request_id', 'text'],
  ['route', 'text'],
]

export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) === 'sqlite') {
    await sql`create table audit_event_rebuilt (
      id text primary key,
      org_id text references organization(id) on delete cascade,
      action text not null,
      actor_user_id text,
      actor_member_id text,
      credential_kind text not null,
      api_key_id text,
      target_type text not null,
      target_id text not null,
      data text,
      created_at text not null,
      origin text,
      outcome text not null default 'success',
      error_code text,
      request_id text,
      route text
    )`.execute(db)
    await sql`insert into audit_event_rebuilt (id, org_id, action, actor_user_id, actor_member_id, credential_kind,
      api_key_id, target_type, target_id, data, created_at, origin)
      select id, org_id, action, actor_user_id, actor_member_id, credential_kind, api_key_id, target_type,
      target_id, data, created_at, origin from audit_event`.execute(db)
    await sql`drop table audit_event`.execute(db)
    await sql`alter table audit_event_rebuilt rename to audit_event`.execute(db)
    await db.schema.createIndex('audit_event_org_id_idx').on('audit_event').columns(['org_id', 'id']).execute()
  } else {
    await sql`alter table audit_event alter column org_id drop not null`.execute(db)
    for (const [name, type] of NEW_COLUMNS)
      await sql`alter table audit_event add column ${sql.raw(name)} ${sql.raw(type)}`.execute(db)
  }
  const indexes: Array<[string, string[]]> = [
    ['audit_event_org_actor_idx', ['org_id', 'actor_user_id', 'id']],
    ['audit_event_org_action_idx', ['org_id', 'action', 'id']],
    ['audit_event_org_target_idx', ['org_id', 'target_type', 'target_id', 'id']],
    ['audit_event_created_idx', ['created_at']],
    ['audit_event_request_idx', ['request_id']],
  ]
  for (const [name, columns] of indexes) await db.schema.createIndex(name).on('audit_event').columns(columns).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const name of [
    'audit_event_org_actor_idx',
    'audit_event_org_action_idx',
    'audit_event_org_target_idx',
    'audit_event_created_idx',
    'audit_event_request_idx',
  ])
    await db.schema.dropIndex(name).execute()
  await sql`delete from audit_event where org_id is null`.execute(db)
  for (const [name] of NEW_COLUMNS) await db.schema.alterTable('audit_event').dropColumn(name).execute()
  if (engineOf(db) === 'postgres') await sql`alter table audit_event alter column org_id set not null`.execute(db)
}
