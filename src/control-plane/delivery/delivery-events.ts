/**
 * `delivery.changed` in the change feed: written in the transaction of any audited change that
 * may change what reaches someone (an assignment, a version of a delivered object, an archive, a
 * grant, a team membership, a Worker's delivery, a provider of a Worker), naming whom it concerns:
 * `{scope: 'organization'}`, `{scope: 'team', teamIds}`, `{scope: 'member', memberIds}` or
 * `{scope: 'worker', workerIds}` (one event per scope that applies; an organization-wide change
 * makes team and member events redundant). `cause` is the audited action.
 *
 * Readers see an event when it concerns them (`delivery-feed-filter.ts`); a Worker sees nothing
 * else in the feed. The event says that the set *may* have changed: a client re-reads
 * `GET /v1/me/delivery` and compares the digest.
 * @module
 */
import type { Deps } from '../deps.ts'
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

const fromWorkers = (audience: Audience, rows: ReadonlyArray<{ worker_id: string }>) => {
  for (const row of rows) audience.workerIds.add(row.worker_id)
}

async function hubAudience(db: Db, audience: Audience, hubIds: readonly string[]): Promise<void> {
  if (hubIds.length === 0) return
  addPrincipals(
    audience,
    await db
      .selectFrom('skill_hub_assignment')
      .select(['member_id', 'team_id', 'org_wide'])
      .where('hub_id', 'in', hubIds)
      .execute(),
  )
  fromWorkers(
    audience,
    await db
      .selectFrom('worker_delivery')
      .select('worker_id')
      .where('kind', '=', 'hub')
      .where('target_id', 'in', hubIds)
      .execute(),
  )
}

async function pluginAudience(db: Db, audience: Audience, pluginIds: readonly string[]): Promise<void> {
  if (pluginIds.length === 0) return
  addPrincipals(
    audience,
    await db
      .selectFrom('plugin_assignment')
      .select(['member_id', 'team_id', 'org_wide'])
      .where('plugin_id', 'in', pluginIds)
      .execute(),
  )
  fromWorkers(
    audience,
    await db
      .selectFrom('worker_delivery')
      .select('worker_id')
      .where('kind', '=', 'plugin')
      .where('target_id', 'in', pluginIds)
      .execute(),
  )
}

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
  const events: Array<Record<string, unknown>> = []
  if (audience.org) events.push({ scope: 'organization' })
  else {
    if (audience.teamIds.size) events.push({ scope: 'team', teamIds: [...audience.teamIds].sort() })
    if (audience.memberIds.size) events.push({ scope: 'member', memberIds: [...audience.memberIds].sort() })
  }
  if (audience.workerIds.size) events.push({ scope: 'worker', workerIds: [...audience.workerIds].sort() })
  for (const data of events)
    await appendChange(deps, trx, { orgId, kind: DELIVERY_CHANGED, subject: null, data: { ...data, cause: action } })
}
