/**
 * Who sees each change of the feed, stored with it (`src/control-plane/events/change-audience.ts`):
 * one row per principal (`org`, `member:<id>`, `team:<id>`, `perm:<permission>`), `hint` = 1 for a
 * bare `visibility.changed`. The key `(org_id, principal, seq)` is the index a member's feed
 * reads: one range per principal they are, in feed order, instead of checking every event.
 *
 * Existing events get the audience the feed gave them until now, computed from the current
 * grants, containers and assignments (readers used to decide at read time): whoever can see an
 * event's subject sees it whole; the permission kinds go to their permission; and every member
 * gets a hint for the kinds that hinted to everyone who could not see them (grants, team and
 * member changes, container membership). These lists are frozen here; new events take their
 * audience from the code.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely'

const RESOURCE_KINDS: Record<string, readonly string[]> = {
  config_object: ['created', 'version_added', 'archived', 'restored', 'deleted'],
  plugin: ['created', 'updated', 'archived', 'restored', 'deleted', 'member_added', 'member_removed'],
  marketplace: ['created', 'updated', 'archived', 'restored', 'deleted', 'plugin_added', 'plugin_removed'],
  skill_hub: ['created', 'updated', 'deleted', 'skill_added', 'skill_removed', 'assigned', 'unassigned'],
}

const PERMISSION_KINDS: Record<string, readonly string[]> = {
  'workers.read': [
    'worker.created',
    'worker.deleted',
    'worker.tokens_issued',
    'worker.tokens_revoked',
    'worker.state_changed',
  ],
  'connectors.read': ['connector_sync.requested', 'connector_sync.retried'],
}

const HINT_KINDS = [
  'plugin.member_added',
  'plugin.member_removed',
  'marketplace.plugin_added',
  'marketplace.plugin_removed',
  'skill_hub.skill_added',
  'skill_hub.skill_removed',
  'skill_hub.assigned',
  'skill_hub.unassigned',
  'access.granted',
  'access.revoked',
  'team.member_added',
  'team.member_removed',
  'member.removed',
  'member.role_changed',
]

const list = (values: readonly string[]) => sql.join(values.map((v) => sql`${v}`))

/** `select e.org_id, e.seq, <principal> as k` for each event of `kinds`, one branch per way of seeing. */
function principalBranches(type: string, kinds: readonly string[]): RawBuilder<unknown>[] {
  const events = sql`change_event e`
  const where = sql`e.kind in (${list(kinds)})`
  const grants = (t: string, ref: RawBuilder<unknown>) =>
    sql`select e.org_id, e.seq, g.principal_key as k from ${events} inner join access_grant g on g.resource_type = ${t} and g.resource_id = ${ref} where ${where}`
  const subject = sql`e.subject_id`
  const marketplaceOf = (plugin: RawBuilder<unknown>, join: RawBuilder<unknown>) =>
    sql`select e.org_id, e.seq, g.principal_key as k from ${events} ${join} inner join marketplace_plugin mp on mp.plugin_id = ${plugin} inner join marketplace mk on mk.id = mp.marketplace_id and mk.status = 'active' inner join access_grant g on g.resource_type = 'marketplace' and g.resource_id = mp.marketplace_id where ${where}`
  const none = sql``
  if (type === 'plugin') return [grants('plugin', subject), marketplaceOf(subject, none)]
  if (type === 'skill_hub')
    return [
      grants('skill_hub', subject),
      sql`select e.org_id, e.seq, a.principal_key as k from ${events} inner join skill_hub_assignment a on a.hub_id = e.subject_id where ${where}`,
    ]
  if (type !== 'config_object') return [grants(type, subject)]
  const pco = sql`inner join plugin_config_object pco on pco.config_object_id = e.subject_id`
  const shs = sql`inner join skill_hub_skill shs on shs.config_object_id = e.subject_id`
  return [
    grants('config_object', subject),
    sql`select e.org_id, e.seq, g.principal_key as k from ${events} ${pco} inner join access_grant g on g.resource_type = 'plugin' and g.resource_id = pco.plugin_id where ${where}`,
    marketplaceOf(sql`pco.plugin_id`, pco),
    sql`select e.org_id, e.seq, g.principal_key as k from ${events} ${shs} inner join access_grant g on g.resource_type = 'skill_hub' and g.resource_id = shs.hub_id where ${where}`,
    sql`select e.org_id, e.seq, a.principal_key as k from ${events} ${shs} inner join skill_hub_assignment a on a.hub_id = shs.hub_id where ${where}`,
  ]
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('change_audience')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('principal', 'text', (c) => c.notNull())
    .addColumn('hint', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('change_audience_pk', ['org_id', 'principal', 'seq'])
    .addForeignKeyConstraint('change_audience_event_fk', ['org_id', 'seq'], 'change_event', ['org_id', 'seq'], (c) =>
      c.onDelete('cascade'),
    )
    .addCheckConstraint('change_audience_hint', sql`hint in (0, 1)`)
    .execute()
  // Deleting an organization's events cascades here through (org_id, seq).
  await db.schema.createIndex('change_audience_event_idx').on('change_audience').columns(['org_id', 'seq']).execute()
  await backfill(db)
}

/** Gives every event without an audience the one readers gave it before (see the module comment). */
export async function backfill(db: Kysely<any>): Promise<void> {
  const insert = (select: RawBuilder<unknown>) =>
    sql`insert into change_audience (org_id, seq, principal, hint) ${select} on conflict do nothing`.execute(db)
  for (const [type, actions] of Object.entries(RESOURCE_KINDS)) {
    const branches = principalBranches(
      type,
      actions.map((a) => `${type}.${a}`),
    )
    await insert(sql`select distinct p.org_id, p.seq, p.k, 0 from (${sql.join(branches, sql` union `)}) p where true`)
  }
  await insert(
    sql`select distinct e.org_id, e.seq, g.principal_key, 0 from change_event e inner join access_grant g on g.resource_type = 'connector_instance' and g.resource_id = e.subject_id where e.kind = 'connector_sync.state_changed'`,
  )
  for (const [permission, kinds] of Object.entries(PERMISSION_KINDS))
    await insert(
      sql`select e.org_id, e.seq, ${`perm:${permission}`}, 0 from change_event e where e.kind in (${list(kinds)})`,
    )
  // After the whole-event rows, so a principal that sees the subject keeps the whole event.
  await insert(sql`select e.org_id, e.seq, 'org', 1 from change_event e where e.kind in (${list(HINT_KINDS)})`)
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('change_audience').execute()
}
