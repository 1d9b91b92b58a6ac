/**
 * `delivery.changed` in the change feed: written in the transaction of any audited change that
 * may change what reaches someone (an assignment, a version of a delivered object, an archive, a
 * grant, a team membership, a Worker's delivery, a provider of a Worker), naming whom it concerns:
 * `{scope: 'organization'}`, `{scope: 'team', teamIds}`, `{scope: 'member', memberIds}` or
 * `{scope: 'worker', workerIds}` (one event per scope that applies; an organization-wide change
 * makes team and member events redundant). `cause` is the audited action.
 *
 * Each event's audience is whom it names (stored with it, `events/change-audience.ts`); a Worker
 * sees nothing else in the feed. The event says that the set *may* have changed: a client re-reads
 * `GET /v1/me/delivery` and compares the digest.
 * @module
 */
import type { Deps } from '../deps.ts'
import { audienceOfKey, type AudienceEntry } from '../events/change-audience.ts'
import { appendChange } from '../events/change-feed.ts'
import type { Db } from '../schema.ts'
import { DELIVERY_CHANGED } from './delivery-feed-filter.ts'

/** Facts of an audited action (the audit's `AuditData`). */
type AuditData = Record<string, string | number | boolean | null>

/** Whom a change concerns. */
interface Audience {
  org: boolean
  teamIds: Set<string>
  memberIds: Set<string>
  workerIds: Set<string>
}

type PrincipalRow = { member_id: string | null; team_id: string | null; org_wide: number }

function addPrincipals(audience: Audience, rows: readonly PrincipalRow[]): void {
  for (const row of rows) {
    if (row.org_wide === 1) audience.org = true
    else if (row.team_id) audience.teamIds.add(row.team_id)
    else if (row.member_id) audience.memberIds.add(row.member_id)
  }
}

/** An assignment's `principal_key` (`org`, `team:<id>`, `member:<id>`) as a principal row. */
function principalOfKey(key: string): PrincipalRow {
  const to = audienceOfKey(key)
  if ('teamId' in to) return { member_id: null, team_id: to.teamId, org_wide: 0 }
  if ('memberId' in to) return { member_id: to.memberId, team_id: null, org_wide: 0 }
  return { member_id: null, team_id: null, org_wide: 1 }
}

const fromWorkers = (audience: Audience, rows: ReadonlyArray<{ worker_id: string }>) => {
  for (const row of rows) audience.workerIds.add(row.worker_id)
}

/** Where each container kind is assigned: its assignment table and the column naming it. */
const CONTAINERS = {
  hub: { table: 'skill_hub_assignment', column: 'hub_id' },
  plugin: { table: 'plugin_assignment', column: 'plugin_id' },
} as const

/** Everyone the containers of `kind` reach: their assignments' principals and the Workers given them. */
async function containerAudience(
  db: Db,
  audience: Audience,
  kind: keyof typeof CONTAINERS,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return
  const { table, column } = CONTAINERS[kind]
  addPrincipals(
    audience,
    await db.selectFrom(table).select(['member_id', 'team_id', 'org_wide']).where(column, 'in', ids).execute(),
  )
  fromWorkers(
    audience,
    await db
      .selectFrom('worker_delivery')
      .select('worker_id')
      .where('kind', '=', kind)
      .where('target_id', 'in', ids)
      .execute(),
  )
}

const hubAudience = (db: Db, audience: Audience, hubIds: readonly string[]) =>
  containerAudience(db, audience, 'hub', hubIds)
const pluginAudience = (db: Db, audience: Audience, pluginIds: readonly string[]) =>
  containerAudience(db, audience, 'plugin', pluginIds)

/** Everyone an object reaches: grants on it (skills), the hubs and plugins holding it. */
async function objectAudience(db: Db, audience: Audience, objectId: string): Promise<void> {
  const object = await db
    .selectFrom('config_object')
    .select('object_type')
    .where('id', '=', objectId)
    .executeTakeFirst()
  if (!object) return
  if (object.object_type === 'skill') {
    addPrincipals(
      audience,
      await db
        .selectFrom('access_grant')
        .select(['member_id', 'team_id', 'org_wide'])
        .where('resource_type', '=', 'config_object')
        .where('resource_id', '=', objectId)
        .execute(),
    )
    const hubs = await db
      .selectFrom('skill_hub_skill')
      .select('hub_id')
      .where('config_object_id', '=', objectId)
      .execute()
    await hubAudience(
      db,
      audience,
      hubs.map((h) => h.hub_id),
    )
  }
  const plugins = await db
    .selectFrom('plugin_config_object')
    .select('plugin_id')
    .where('config_object_id', '=', objectId)
    .execute()
  await pluginAudience(
    db,
    audience,
    plugins.map((p) => p.plugin_id),
  )
}

type Target = { type: string; id: string }
type Resolver = (db: Db, audience: Audience, target: Target, data: AuditData | undefined) => Promise<void>

const text = (data: AuditData | undefined, key: string): string | null =>
  typeof data?.[key] === 'string' ? (data[key] as string) : null

const hubAssignment: Resolver = async (db, audience, _target, data) => {
  // An unassignment is recorded after its row is gone and names the principal it reached.
  const key = text(data, 'principalKey')
  if (key) {
    addPrincipals(audience, [principalOfKey(key)])
    return
  }
  const id = text(data, 'assignmentId')
  if (!id) return
  addPrincipals(
    audience,
    await db
      .selectFrom('skill_hub_assignment')
      .select(['member_id', 'team_id', 'org_wide'])
      .where('id', '=', id)
      .execute(),
  )
}

const pluginAssignment: Resolver = async (db, audience, _target, data) => {
  const id = text(data, 'assignmentId')
  if (!id) return
  addPrincipals(
    audience,
    await db
      .selectFrom('plugin_assignment')
      .select(['member_id', 'team_id', 'org_wide'])
      .where('id', '=', id)
      .execute(),
  )
}

const hub: Resolver = (db, audience, target) => hubAudience(db, audience, [target.id])
const plugin: Resolver = (db, audience, target) => pluginAudience(db, audience, [target.id])
const object: Resolver = (db, audience, target) => objectAudience(db, audience, target.id)

/** A grant delivers only skills: it concerns its principal when it is on a skill. */
const grant: Resolver = async (db, audience, target, data) => {
  const id = text(data, 'grantId')
  if (target.type !== 'config_object' || !id) return
  const rows = await db
    .selectFrom('access_grant as g')
    .innerJoin('config_object as co', 'co.id', 'g.resource_id')
    .select(['g.member_id', 'g.team_id', 'g.org_wide'])
    .where('g.id', '=', id)
    .where('co.object_type', '=', 'skill')
    .execute()
  addPrincipals(audience, rows)
}

const teamMember: Resolver = async (_db, audience, _target, data) => {
  const id = text(data, 'memberId')
  if (id) audience.memberIds.add(id)
}

/** The team's members, named one by one: once the team is gone a team scope would match nobody. */
const teamDeleted: Resolver = async (db, audience, target) => {
  const rows = await db.selectFrom('team_member').select('member_id').where('team_id', '=', target.id).execute()
  for (const row of rows) audience.memberIds.add(row.member_id)
}

const provider: Resolver = async (db, audience, target) =>
  fromWorkers(
    audience,
    await db
      .selectFrom('worker_delivery')
      .select('worker_id')
      .where('kind', '=', 'llm_provider')
      .where('target_id', '=', target.id)
      .execute(),
  )

const worker: Resolver = async (_db, audience, target) => {
  audience.workerIds.add(target.id)
}

/** Audited actions that may change a delivered set, and how to find whom. */
const RESOLVERS: Record<string, Resolver> = {
  'skill_hub.assigned': hubAssignment,
  'skill_hub.unassigned': hubAssignment,
  'skill_hub.skill_added': hub,
  'skill_hub.skill_removed': hub,
  'skill_hub.deleted': hub,
  'plugin.assigned': pluginAssignment,
  'plugin.unassigned': pluginAssignment,
  'plugin.member_added': plugin,
  'plugin.member_removed': plugin,
  'plugin.archived': plugin,
  'plugin.restored': plugin,
  'plugin.deleted': plugin,
  'config_object.created': object,
  'config_object.version_added': object,
  'config_object.archived': object,
  'config_object.restored': object,
  'config_object.deleted': object,
  'access.granted': grant,
  'access.revoked': grant,
  'team.member_added': teamMember,
  'team.member_removed': teamMember,
  'team.deleted': teamDeleted,
  'llm_provider.updated': provider,
  'llm_provider.deleted': provider,
  'worker.delivery_updated': worker,
}

/**
 * Appends the `delivery.changed` events an audited action implies, in its transaction (called by
 * `recordAudit`; deletions record their audit before deleting, so the rows naming whom are there).
 */
export async function announceDelivery(
  deps: Pick<Deps, 'now' | 'notifier'>,
  trx: Db,
  orgId: string,
  action: string,
  target: Target,
  data: AuditData | undefined,
): Promise<void> {
  const resolve = RESOLVERS[action]
  if (!resolve) return
  const audience = emptyAudience()
  await resolve(trx, audience, target, data)
  await appendAudience(deps, trx, orgId, audience, action)
}

/**
 * One set of `delivery.changed` events for many objects changed together without an audit row
 * each (a connector sync's batch of new versions and objects): everyone any of them reaches.
 */
export async function announceObjectsDelivery(
  deps: Pick<Deps, 'now' | 'notifier'>,
  trx: Db,
  orgId: string,
  objectIds: readonly string[],
  cause: string,
): Promise<void> {
  if (objectIds.length === 0) return
  const audience = emptyAudience()
  for (const id of objectIds) await objectAudience(trx, audience, id)
  await appendAudience(deps, trx, orgId, audience, cause)
}

const emptyAudience = (): Audience => ({ org: false, teamIds: new Set(), memberIds: new Set(), workerIds: new Set() })

async function appendAudience(
  deps: Pick<Deps, 'now' | 'notifier'>,
  trx: Db,
  orgId: string,
  audience: Audience,
  action: string,
): Promise<void> {
  const events: Array<{ data: Record<string, unknown>; to: AudienceEntry[] }> = []
  if (audience.org) events.push({ data: { scope: 'organization' }, to: [{ to: { org: true } }] })
  else {
    const teamIds = [...audience.teamIds].sort()
    const memberIds = [...audience.memberIds].sort()
    if (teamIds.length)
      events.push({ data: { scope: 'team', teamIds }, to: teamIds.map((teamId) => ({ to: { teamId } })) })
    if (memberIds.length)
      events.push({ data: { scope: 'member', memberIds }, to: memberIds.map((memberId) => ({ to: { memberId } })) })
  }
  const workerIds = [...audience.workerIds].sort()
  if (workerIds.length)
    events.push({ data: { scope: 'worker', workerIds }, to: workerIds.map((workerId) => ({ to: { workerId } })) })
  for (const event of events)
    await appendChange(deps, trx, {
      orgId,
      kind: DELIVERY_CHANGED,
      subject: null,
      data: { ...event.data, cause: action },
      audience: event.to,
    })
}
